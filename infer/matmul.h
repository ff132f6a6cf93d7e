/* infer/matmul.h: private to infer/: weight matrices read through the IR a few rows at a
 * time, and the threaded product of such a matrix with every token's activations.
 *
 * A matrix is never held whole in float32: each job converts LC_INFER_ROWS rows into its
 * thread's buffer (dequantizing block types, widening f16/bf16) and multiplies them
 * against all n token vectors, so each weight is read and converted once per forward
 * call whatever n is. A narrow matrix (a huge vocabulary's head of a small model) takes
 * as many rows per job as fill LC_INFER_NARROW floats, so that a job is not one tiny
 * read. Each output is the same float32 sum whatever the thread count and job size. */
#ifndef LC_INFER_MATMUL_H
#define LC_INFER_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "infer/infer.h"
#include "libconvert/error.h"
#include "libconvert/tensor.h"

/* A tensor read as rows of float32 (a 1-D tensor is one row, a 3-D one its outer two
 * dimensions' rows), or a run of its rows: one expert of a stack, one part of a fused
 * matrix. */
typedef struct lc_infer_mat {
    const lc_tensor *t;     /* borrowed from the model */
    uint64_t r0;            /* the first row of t this matrix is */
    uint64_t rows, cols;
    uint64_t row_bytes;     /* bytes of one row in t's dtype */
    /* What the tap (infer.h lc_infer_set_tap) is told this matrix is: its role as GGUF
     * names it (a fused matrix's role on its first part only, since the parts share their
     * input; LC_ROLE_NONE: never reported), layer and expert (UINT32_MAX: none). */
    lc_role  role;
    uint32_t layer, expert;
} lc_infer_mat;

/* Describes t as a matrix of all its rows. LC_E_UNSUPPORTED when t's dtype cannot be
 * read as float32 or t has more than 3 dimensions (where = t's name). */
lc_code lc_infer_mat_init(lc_infer_mat *w, const lc_tensor *t, lc_error *err);

/* out = rows [r0, r0 + rows) of w. LC_E_ARG when they are not all w's. */
lc_code lc_infer_mat_slice(lc_infer_mat *out, const lc_infer_mat *w, uint64_t r0,
                           uint64_t rows, lc_error *err);

/* Rows [r0, r0 + nr) of w as float32 into dst [nr, cols]. raw: scratch of nr * row_bytes
 * bytes, used when the tensor has no zero-copy view. Errors name the tensor. */
lc_code lc_infer_mat_rows(const lc_infer_mat *w, uint64_t r0, size_t nr, float *dst,
                          uint8_t *raw, lc_error *err);

/* Per-thread scratch for lc_infer_matmul: build_ / free_ pair. */
typedef struct lc_infer_mm {
    int threads;
    size_t max_cols, max_row_bytes;
    size_t wcap, rcap;      /* per thread: floats of wbuf, bytes of raw */
    float   *wbuf;          /* [threads, wcap]: >= LC_INFER_ROWS rows of max_cols floats */
    uint8_t *raw;           /* [threads, rcap]: the same rows as stored */
} lc_infer_mm;

/* The floats a job's rows fill at least, for narrow matrices. */
#define LC_INFER_NARROW 4096

lc_code lc_infer_mm_build(lc_infer_mm *mm, int threads, size_t max_cols, size_t max_row_bytes,
                          lc_error *err);
void    lc_infer_mm_free(lc_infer_mm *mm);

/* y [n, rows] = x [n, cols] w^T (+ bias [rows] when not NULL). The first failing job in
 * row order wins (where = tensor). */
lc_code lc_infer_matmul(lc_infer_mm *mm, const lc_infer_mat *w, const float *bias,
                        const float *x, size_t n, float *y, lc_error *err);

/* ---- causal attention of a whole sequence (matmul_attend.c), threaded over heads, its
 * scores and weighted values through the matmul tile.
 *
 * lc_infer_attention_ex (blocks.h) is the per-query statement of the same thing, one
 * scalar dot after another on one thread: at 512 tokens it took a third of a forward
 * call. Here each head is one job: its key and value head are copied out once into
 * contiguous rows, the queries go by blocks of LC_ATTEND_BLOCK, and for each block the
 * scores against every key up to the block's last position are one tile product, the
 * masked softmax runs per query, and the weighted sum of values is a second tile product
 * against the block's values transposed. A head's result is the same whatever the
 * thread count; it differs from lc_infer_attention_ex by float rounding only (the
 * tile's 8-lane sums). */

/* Queries per block: the waste past the diagonal is at most this many scores per query,
 * and the block's scores [LC_ATTEND_BLOCK, n] stay a few hundred KiB at n = 2048. */
#define LC_ATTEND_BLOCK 32

/* att [n, n_heads * head_dim] = for every position t and head h,
 * sum over s in [s0(t), t] of softmax_s(scale * q_t,h . k_s,g) v_s,g, g = h / (n_heads /
 * n_kv_heads), s0(t) = t + 1 - window when window > 0 and t + 1 > window, else 0.
 * q [n, n_heads * head_dim], k and v [n, n_kv_heads * head_dim]. Scratch per thread:
 * (2 n + 2 LC_ATTEND_BLOCK) head_dim + LC_ATTEND_BLOCK n floats;
 * LC_E_NOMEM when it cannot be had. */
lc_code lc_infer_attend(float *att, const float *q, const float *k, const float *v, size_t n,
                        uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, float scale,
                        size_t window, int threads, lc_error *err);

#endif
