/* infer/matmul_attend.c: causal attention of a whole sequence, threaded over heads
 * (matmul.h). */
#include "infer/matmul.h"

#include <string.h>

#include "infer/blocks.h"
#include "infer/matmul_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/parallel.h"

typedef struct att_job {
    float *att;
    const float *q, *k, *v;
    size_t n, window;
    uint32_t n_heads, n_kv_heads, hd;
    float scale;
    lc_infer_tile_fn tile;
    float *scratch;             /* [workers, per] */
    size_t per;                 /* floats of one worker's scratch */
} att_job;

/* The first position query t sees. */
static size_t first_seen(size_t t, size_t window) {
    return window && t + 1 > window ? t + 1 - window : 0;
}

static void one_head(const att_job *j, uint32_t h, float *scr) {
    const size_t n = j->n, hd = j->hd, B = LC_ATTEND_BLOCK;
    const size_t q_dim = (size_t)j->n_heads * hd, kv_dim = (size_t)j->n_kv_heads * hd;
    const size_t off = (size_t)(h / (j->n_heads / j->n_kv_heads)) * hd;   /* its kv head */
    float *kg = scr;                    /* [n, hd] the head's keys, contiguous */
    float *vt = kg + n * hd;            /* [hd, nr] a block's values, transposed */
    float *qb = vt + n * hd;            /* [B, hd] the block's queries */
    float *ob = qb + B * hd;            /* [B, hd] their outputs */
    float *sc = ob + B * hd;            /* [B, nr] their scores, then weights */
    for (size_t s = 0; s < n; s++)
        memcpy(kg + s * hd, j->k + s * kv_dim + off, hd * sizeof(float));
    for (size_t t0 = 0; t0 < n; t0 += B) {
        const size_t nb = n - t0 < B ? n - t0 : B;
        const size_t ks = first_seen(t0, j->window), nr = t0 + nb - ks;   /* keys [ks, t0+nb) */
        for (size_t i = 0; i < nb; i++)
            memcpy(qb + i * hd, j->q + (t0 + i) * q_dim + (size_t)h * hd, hd * sizeof(float));
        j->tile(kg + ks * hd, nr, qb, nb, hd, sc, nr);  /* sc[i, s - ks] = k_s . q_t */
        for (size_t i = 0; i < nb; i++) {
            const size_t t = t0 + i, lo = first_seen(t, j->window) - ks, hi = t - ks;
            float *row = sc + i * nr;
            for (size_t s = lo; s <= hi; s++)
                row[s] *= j->scale;
            lc_infer_softmax(row + lo, hi + 1 - lo);
            for (size_t s = 0; s < lo; s++)     /* outside the causal window: weight 0 */
                row[s] = 0;
            for (size_t s = hi + 1; s < nr; s++)
                row[s] = 0;
        }
        for (size_t s = 0; s < nr; s++) {
            const float *vs = j->v + (ks + s) * kv_dim + off;
            for (size_t d = 0; d < hd; d++)
                vt[d * nr + s] = vs[d];
        }
        j->tile(vt, hd, sc, nb, nr, ob, hd);    /* ob[i, d] = sum_s w_i,s v_s,d */
        for (size_t i = 0; i < nb; i++)
            memcpy(j->att + (t0 + i) * q_dim + (size_t)h * hd, ob + i * hd, hd * sizeof(float));
    }
}

/* Heads [begin, end) on worker `index` (its slice of the scratch). */
static lc_code run_heads(void *ctx, size_t index, size_t begin, size_t end, lc_error *err) {
    const att_job *j = ctx;
    (void)err;
    for (size_t h = begin; h < end; h++)
        one_head(j, (uint32_t)h, j->scratch + index * j->per);
    return LC_OK;
}

lc_code lc_infer_attend(float *att, const float *q, const float *k, const float *v, size_t n,
                        uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, float scale,
                        size_t window, int threads, lc_error *err) {
    if (n == 0 || n_heads == 0)
        return LC_OK;
    const size_t workers = lc_parallel_workers(n_heads, 1, threads < 1 ? 1 : threads);
    const size_t B = LC_ATTEND_BLOCK, hd = head_dim;
    const size_t per = 2 * n * hd + 2 * B * hd + B * n;
    float *scratch = per <= SIZE_MAX / sizeof(float) / workers
                   ? lc_malloc_array(workers * per, sizeof(float)) : NULL;
    if (!scratch)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the attention of %zu "
                       "tokens on %zu threads", n, workers);
    att_job j = { .att = att, .q = q, .k = k, .v = v, .n = n, .window = window,
                  .n_heads = n_heads, .n_kv_heads = n_kv_heads, .hd = head_dim,
                  .scale = scale, .tile = lc_infer_tile(), .scratch = scratch, .per = per };
    /* One head at a time, claimed in order; at most `workers` workers, as the scratch. */
    const lc_code rc = lc_parallel_for(n_heads, 1, (int)workers, run_heads, &j, err);
    lc_free(scratch);
    return rc;
}
