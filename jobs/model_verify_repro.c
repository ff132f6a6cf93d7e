/* jobs/model_verify_repro.c: the reproduction, what a correct conversion of SRC gives.
 *
 * A fixed KL limit per type cannot tell quantization noise from a conversion error: the
 * KL a correct Q4_K_M file has depends on how sharp the model's logits are (a 200M
 * llama with a real vocabulary measured 0.12 and 1.30 where the fixtures give 0.02).
 * So model-verify converts SRC itself, tensor by tensor, to the types DST holds, with
 * our own code (quant/'s quantizers are byte-identical to llama-quantize's, with the
 * importance matrix given with --imatrix or none; libconvert's float rounding is the
 * converter's), and
 *   1. compares DST's bytes with it (model_verify_tensors.c): equal everywhere, DST is
 *      proven to be SRC converted, whatever the KL;
 *   2. otherwise runs the forward pass on the reproduction too (model_verify_logits.c):
 *      DST's KL is judged against the reproduction's own (model_verify.c).
 * The reproduction is a lazy model: each tensor reads SRC through the RoPE row order DST
 * keeps, widened or dequantized to float32, then quantized or rounded to the type (the
 * chain gguf-quantize builds, jobs/gguf_quantize_plan.c), on demand; a proven tensor is
 * DST's own (the same bytes, read without converting). A type we cannot write (NVFP4,
 * Q1_0, Q2_0, and IQ2_XXS, IQ2_XS, IQ1_S without an --imatrix entry, which their
 * quantizers require) is stood for by the writable type nearest in bits per weight (a
 * proxy): its KL is then an estimate, and the verdict says so. */
#include "jobs/model_verify_impl.h"

#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/view.h"
#include "quant/quant.h"
#include "quant/view.h"

/* For each type we cannot write, the writable types nearest in bits per weight, the
 * first whose block divides the row. The IQ types whose quantizer requires an importance
 * matrix are here for a tensor without an --imatrix entry. */
static const struct {
    lc_dtype dt;
    lc_dtype proxy[3];
} PROXY[] = {
    { LC_DT_MXFP4,   { LC_DT_Q4_0 } },
    { LC_DT_NVFP4,   { LC_DT_Q4_0 } },
    { LC_DT_IQ2_XS,  { LC_DT_Q2_K, LC_DT_Q4_0 } },
    { LC_DT_IQ2_XXS, { LC_DT_Q2_K, LC_DT_Q4_0 } },
    { LC_DT_IQ1_S,   { LC_DT_Q2_K, LC_DT_Q4_0 } },
    { LC_DT_Q2_0,    { LC_DT_Q2_K, LC_DT_Q4_0 } },
    { LC_DT_Q1_0,    { LC_DT_Q2_K, LC_DT_Q4_0 } },
    { LC_DT_Q8_1,    { LC_DT_Q8_0 } },
    { LC_DT_Q8_K,    { LC_DT_Q8_0 } },
};

static bool writable(lc_dtype dt, bool weighted) {
    if (!lc_dtype_is_quant(dt))
        return lc_dtype_get(dt)->is_float && lc_convert_supported(LC_DT_F32, dt);
    return lc_quant_writable(dt) &&
           (weighted || lc_quant_imatrix_use(dt) != LC_IMATRIX_REQUIRES);
}

lc_dtype lc_vf_repro_type(lc_dtype dt, uint64_t cols, bool weighted, bool *proxy) {
    *proxy = false;
    if (writable(dt, weighted))
        return dt;
    for (size_t i = 0; i < sizeof PROXY / sizeof *PROXY; i++) {
        if (PROXY[i].dt != dt)
            continue;
        for (size_t k = 0; k < sizeof PROXY[i].proxy / sizeof *PROXY[i].proxy; k++) {
            const lc_dtype q = PROXY[i].proxy[k];
            if (q != LC_DT_INVALID && q != 0 && lc_quant_supported(q) &&
                cols % lc_dtype_get(q)->block_size == 0) {
                *proxy = true;
                return q;
            }
        }
    }
    return LC_DT_INVALID;
}

/* A scratch tensor of `stage` shaped like `like` with dtype dt, named uniquely. */
static lc_code step(lc_model *stage, const lc_tensor *like, lc_dtype dt, lc_tensor **t,
                    lc_error *err) {
    char name[64];
    snprintf(name, sizeof name, "#%zu", lc_model_tensor_count(stage));
    return lc_model_add_tensor(stage, name, dt, like->ndim, like->shape, t, err);
}

/* The importance vectors of one pair's reproduction: matrix m of the view is matrix
 * mat0 + m of the entry. */
typedef struct weights {
    const lc_imatrix *im;
    size_t entry;
    uint64_t mat0;
} weights;

static lc_code get_weights(void *ctx, uint64_t mat, float *out, lc_error *err) {
    const weights *w = ctx;
    return lc_imatrix_weights(w->im, w->entry, w->mat0 + mat, out, err);
}

/* t reads cur quantized to p->repro_dt, weighted as lc_vf_imatrix_assign chose. */
static lc_code weighted_view(const lc_vf_tensors *r, const lc_vf_tensor *p, lc_tensor *t,
                             const lc_tensor *cur, lc_error *err) {
    weights *w = lc_malloc(sizeof *w);
    if (!w)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    *w = (weights){ .im = r->im, .entry = p->im_entry, .mat0 = p->im_mat0 };
    const lc_quant_imatrix qi = { .get = get_weights, .free = lc_free, .ctx = w,
                                  .rows_per_matrix = p->im_rows };
    return lc_quant_view_imatrix(t, cur, p->repro_dt, &qi, err);
}

/* SRC's tensor of pair p converted the way a correct conversion would: its rows in DST's
 * order, float32, then p->repro_dt (weighted by its --imatrix vector when it has one).
 * *cur ends at the last step. */
static lc_code chain(lc_model *stage, const lc_vf_tensors *r, const lc_vf_tensor *p,
                     const lc_tensor **cur, lc_error *err) {
    lc_tensor *t;
    if (p->permuted) {
        LC_TRY(step(stage, *cur, (*cur)->dtype, &t, err));
        LC_TRY(lc_view_heads(t, *cur, p->heads, p->perm_inverse, err));
        *cur = t;
    }
    if (lc_dtype_is_quant((*cur)->dtype)) {
        LC_TRY(step(stage, *cur, LC_DT_F32, &t, err));
        LC_TRY(lc_quant_view(t, *cur, (*cur)->dtype, false, err));
        *cur = t;
    }
    if ((*cur)->dtype != LC_DT_F32 && (lc_dtype_is_quant(p->repro_dt) ||
                                       (*cur)->dtype != p->repro_dt)) {
        LC_TRY(step(stage, *cur, (*cur)->dtype, &t, err));
        LC_TRY(lc_view_forward(t, *cur, err));
        LC_TRY(lc_tensor_cast(t, LC_DT_F32, err));
        *cur = t;
    }
    if (lc_dtype_is_quant(p->repro_dt)) {
        LC_TRY(step(stage, *cur, p->repro_dt, &t, err));
        if (p->im_entry != SIZE_MAX && p->repro_dt == p->dst_dt)
            LC_TRY(weighted_view(r, p, t, *cur, err));
        else
            LC_TRY(lc_quant_view(t, *cur, p->repro_dt, true, err));
        *cur = t;
    } else if ((*cur)->dtype != p->repro_dt) {
        LC_TRY(step(stage, *cur, (*cur)->dtype, &t, err));
        LC_TRY(lc_view_forward(t, *cur, err));
        LC_TRY(lc_tensor_cast(t, p->repro_dt, err));
        *cur = t;
    }
    return LC_OK;
}

static void free_stage(void *m) { lc_model_free(m); }

static const lc_vf_tensor *pair_of(const lc_vf_tensors *r, const lc_tensor *u) {
    for (size_t i = 0; i < r->n; i++)
        if (r->t[i].dst_t == u)
            return &r->t[i];
    return NULL;
}

lc_code lc_vf_repro_build(const lc_vf_side *src, const lc_vf_side *dst,
                          const lc_vf_tensors *r, lc_model **out, lc_error *err) {
    (void)src;
    *out = NULL;
    lc_model *m = lc_model_new(), *stage = lc_model_new();
    lc_code rc = m && stage ? LC_OK : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK) {
        rc = lc_model_own(m, stage, free_stage, err);    /* frees stage on failure */
        stage = rc == LC_OK ? stage : NULL;
    }
    for (size_t i = 0; i < lc_model_tensor_count(dst->views) && rc == LC_OK; i++) {
        const lc_tensor *u = lc_model_tensor(dst->views, i), *cur = u;
        const lc_vf_tensor *p = pair_of(r, u);
        if (p && p->shape_ok && p->repro != LC_VF_REPRO_SAME && p->repro_dt != LC_DT_INVALID) {
            cur = p->src_t;
            rc = chain(stage, r, p, &cur, err);
        }
        lc_tensor *t;
        if (rc == LC_OK)
            rc = lc_model_add_tensor(m, u->name, cur->dtype, u->ndim, u->shape, &t, err);
        if (rc == LC_OK)
            rc = lc_view_forward(t, cur, err);
    }
    if (rc != LC_OK) {
        lc_model_free(m);
        return rc;
    }
    *out = m;
    return LC_OK;
}
