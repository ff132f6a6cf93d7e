/* infer/infer_ops.c: the steps infer.c's and infer_gemma4.c's blocks share (declared in
 * infer_impl.h): the tapped weight product, row norms, the gated FFN, expert routing,
 * and reading a 1-D tensor. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "infer/infer_impl.h"
#include "libconvert/alloc.h"

lc_code lc_infer_mm_tapped(lc_infer *c, const lc_infer_mat *w, const float *bias,
                           const float *x, size_t n, float *y, lc_error *err) {
    if (c->tap && w->role != LC_ROLE_NONE)
        LC_TRY(c->tap(c->tap_user, w->role, w->layer, w->expert, x, n, (size_t)w->cols, err));
    return lc_infer_matmul(&c->mm, w, bias, x, n, y, err);
}

void lc_infer_rmsnorm_rows(float *xb, const float *x, const float *w, size_t n,
                           uint32_t width, float eps) {
    for (size_t t = 0; t < n; t++)
        lc_infer_rmsnorm(xb + t * width, x + t * width, w, width, eps);
}

lc_code lc_infer_gated_ffn(lc_infer *c, const lc_infer_mat *gate, const lc_infer_mat *up,
                           const lc_infer_mat *down, const float *h, size_t n, float *hb,
                           float *hb2, float *out, lc_error *err) {
    LC_TRY(lc_infer_mm_tapped(c, gate, NULL, h, n, hb, err));
    LC_TRY(lc_infer_mm_tapped(c, up, NULL, h, n, hb2, err));
    const size_t count = n * (size_t)gate->rows;
    if (c->act == LC_ACT_GELU_TANH)
        lc_infer_geglu(hb, hb, hb2, count);
    else
        lc_infer_swiglu(hb, hb, hb2, count);
    return lc_infer_mm_tapped(c, down, NULL, hb, n, out, err);
}

/* Token t's experts: softmax over the router's logits, the n_expert_used largest
 * (torch.topk: larger first, ties to the lower index), renormalised when asked. */
void lc_infer_route_token(const lc_infer *c, float *p, int32_t *chosen, float *weight) {
    lc_infer_softmax(p, c->n_expert);
    double sum = 0;
    for (uint32_t j = 0; j < c->n_expert_used; j++) {
        int32_t best = -1;
        for (uint32_t e = 0; e < c->n_expert; e++) {
            bool taken = false;
            for (uint32_t i = 0; i < j; i++)
                taken |= chosen[i] == (int32_t)e;
            if (!taken && (best < 0 || p[e] > p[best]))
                best = (int32_t)e;
        }
        chosen[j] = best;
        weight[j] = p[best];
        sum += weight[j];
    }
    for (uint32_t j = 0; c->norm_topk && j < c->n_expert_used; j++)
        weight[j] = (float)(weight[j] / sum);
}

/* (infer_impl.h) `add`: gemma's + 1 of its transformers spelling */
lc_code lc_infer_read_vector(const lc_tensor *t, uint64_t n, float add, float **out,
                             lc_error *err) {
    *out = NULL;
    if (!t)
        return LC_OK;
    lc_infer_mat v;
    LC_TRY(lc_infer_mat_init(&v, t, err));
    float *buf = lc_malloc_array((size_t)n, sizeof(float));
    uint8_t *raw = lc_malloc((size_t)v.row_bytes ? (size_t)v.row_bytes : 1);
    lc_code rc = LC_OK;
    if (!buf || !raw)
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " floats", n);
    else if (v.rows != 1 || v.cols != n)
        rc = lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, t->name, "tensor %.100s is not a "
                        "vector of %" PRIu64 " elements", t->name, n);
    else
        rc = lc_infer_mat_rows(&v, 0, 1, buf, raw, err);
    lc_free(raw);
    if (rc != LC_OK) {
        lc_free(buf);
        return rc;
    }
    for (uint64_t i = 0; add != 0 && i < n; i++)
        buf[i] += add;
    *out = buf;
    return LC_OK;
}
