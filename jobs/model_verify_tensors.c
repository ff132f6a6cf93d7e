/* jobs/model_verify_tensors.c: every tensor of SRC against its counterpart in DST.
 *
 * Pairs: model_verify_pairs.c (by role, layer and expert through the family's table).
 *
 * Figures: each pair is cut into jobs of about 2^18 elements (whole rows, or a block-
 * aligned part of one long row), read as float32 from both sides on `threads` threads,
 * and summed in double per job; the jobs' sums are then added in job order, so the
 * figures do not depend on the thread count. Per element or per block (expect.c) the
 * error is held to what the conversion may change; the worst ratio and where it is are
 * kept.
 *
 * Reproduction: where we can write DST's type, SRC's rows of the job (read in DST's row
 * order) are converted to it by our own code, quant/'s quantizers (byte-identical to
 * llama-quantize's, each row weighted by its --imatrix vector when it has one:
 * model_verify_imatrix.c) or libconvert's float rounding, and
 * compared with DST's bytes row by row: a tensor whose every row is equal is proven,
 * whatever its error. A tensor whose type holds every SRC value is proven when every
 * value is equal. Where DST records an importance matrix, the reproduction's own error
 * is summed too (a weighted tensor that differs is held to it). Memory: three float32
 * buffers and three raw buffers of one job per thread, and one row of weights. */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/parallel.h"
#include "libconvert/view.h"
#include "quant/quant.h"

#define JOB_ELEMS (1u << 18)
/* A long row is cut into parts of JOB_ELEMS columns: each must start on a block. */
_Static_assert(JOB_ELEMS % 256 == 0, "a multiple of every block size quant/ reads");

/* ---- statistics ---- */

typedef struct part {
    uint64_t repro_rows, repro_first;
    double   rd2;           /* the reproduction's squared error (weighted_dst pairs) */
    double   d2, a2, b2, ab;
    uint64_t n;
    double   max_abs;
    uint64_t max_at;
    double   worst;
    uint64_t worst_row, worst_col;
    uint64_t nonfinite;
} part;

typedef struct job {
    size_t   pair;
    uint64_t r0, c0;
    uint32_t nr, nc;
} job;

/* One worker's buffers: three float32 and three raw of the largest job, and one row of
 * importance weights (the widest weighted pair's). */
typedef struct scratch {
    float   *fa, *fb, *fr, *w;
    uint8_t *ra, *rb, *rq;
} scratch;

typedef struct pool {
    lc_vf_tensors *r;
    job           *jobs;
    part          *parts;
    size_t         n_jobs;
    lc_progress   *progress;
    scratch       *scratch;     /* one per worker of the parallel-for */
} pool;

/* Adds n elements (one block of a block type, a run of a row otherwise) to the sums and
 * keeps the largest ratio of an error to what the conversion may change there. */
static void scan_block(part *s, const lc_vf_expect *e, const float *a, const float *b,
                       size_t n, uint64_t row, uint64_t col, uint64_t cols) {
    double amax = 0, emax = 0;
    bool bad = false;
    uint64_t bad_at = col;
    for (size_t k = 0; k < n; k++) {
        const double x = a[k], y = b[k];
        if (!isfinite(x) || !isfinite(y)) {
            if ((isnan(x) && isnan(y)) || x == y)
                continue;               /* the same NaN-ness, the same infinity */
            if (!bad)
                bad_at = col + k;
            bad = true;
            s->nonfinite++;
            continue;
        }
        const double d = x - y, ad = fabs(d);
        s->d2 += d * d;
        s->a2 += x * x;
        s->b2 += y * y;
        s->ab += x * y;
        s->n++;
        if (ad > s->max_abs) {
            s->max_abs = ad;
            s->max_at = row * cols + col + k;
        }
        if (e->block == 1) {
            const double allowed = e->rel * fabs(x) + e->abs;
            const double q = ad == 0 ? 0 : allowed > 0 ? ad / allowed : INFINITY;
            if (q > s->worst) {
                s->worst = q;
                s->worst_row = row;
                s->worst_col = col + k;
            }
        } else {
            amax = fabs(x) > amax ? fabs(x) : amax;
            emax = ad > emax ? ad : emax;
        }
    }
    if (bad) {
        s->worst = INFINITY;
        s->worst_row = row;
        s->worst_col = bad_at;
    } else if (e->block > 1) {
        const double allowed = e->rel * amax + e->abs;
        const double q = emax == 0 ? 0 : allowed > 0 ? emax / allowed : INFINITY;
        if (q > s->worst) {
            s->worst = q;
            s->worst_row = row;
            s->worst_col = col;
        }
    }
}

/* Whether a pair's bytes are reproduced: DST's type is lossy for SRC's and we write it. */
static bool repro_bytes(const lc_vf_tensor *p) {
    return p->expect.cls != LC_DT_INVALID && p->repro_dt == p->dst_dt;
}

/* Rows [r0, r0 + nr) of fa (nc columns from c0 of rows of `cols`) quantized into rq,
 * each run of rows of one matrix weighted by its importance vector (w: a row's worth). */
static lc_code quantize_weighted(const lc_vf_tensors *r, const lc_vf_tensor *p, const job *j,
                                 uint64_t rl, const float *fa, uint8_t *rq, float *w,
                                 lc_error *err) {
    for (uint32_t i = 0; i < j->nr;) {
        const uint64_t row = j->r0 + i;
        uint32_t end = j->nr;
        if (p->im_rows != UINT64_MAX) {
            const uint64_t next = (row / p->im_rows + 1) * p->im_rows;  /* the next matrix */
            end = next - j->r0 < end ? (uint32_t)(next - j->r0) : end;
        }
        LC_TRY(lc_vf_imatrix_row(r, p, row, w, err));
        LC_TRY(lc_quantize_rows_imatrix(p->dst_dt, fa + (size_t)i * j->nc, rq + i * (size_t)rl,
                                        end - i, j->nc, w + j->c0, err));
        i = end;
    }
    return LC_OK;
}

/* SRC's rows fa [nr, nc] in DST's type into rq; each row compared with DST's raw rows
 * rb (the job's bytes as lc_vf_read_rows left them: nr rows of nc columns). */
static lc_code reproduce(const lc_vf_tensors *r, const lc_vf_tensor *p, const job *j,
                         const float *fa, const uint8_t *rb, uint8_t *rq, float *w, float *fr,
                         part *s, lc_error *err) {
    uint64_t rl;
    if (!lc_dtype_row_bytes(p->dst_dt, j->nc, &rl))
        return LC_OK;                   /* read_rows has refused it already */
    if (p->im_entry != SIZE_MAX)
        LC_TRY(quantize_weighted(r, p, j, rl, fa, rq, w, err));
    else if (lc_dtype_is_quant(p->dst_dt))
        LC_TRY(lc_quantize_rows(p->dst_dt, fa, rq, j->nr, j->nc, err));
    else
        LC_TRY(lc_convert(LC_DT_F32, fa, p->dst_dt, rq, (size_t)j->nr * j->nc, err));
    for (uint32_t i = 0; i < j->nr; i++)
        if (memcmp(rq + i * (size_t)rl, rb + i * (size_t)rl, (size_t)rl) != 0) {
            if (!s->repro_rows)
                s->repro_first = j->r0 + i;
            s->repro_rows++;
        }
    /* DST says it was weighted: should it differ, its error is held to the
     * reproduction's own (finish()). */
    if (p->weighted_dst && lc_dtype_is_quant(p->dst_dt)) {
        const size_t n = (size_t)j->nr * j->nc;
        LC_TRY(lc_dequantize_rows(p->dst_dt, rq, fr, j->nr, j->nc, err));
        for (size_t k = 0; k < n; k++)
            if (isfinite(fa[k]) && isfinite(fr[k]))
                s->rd2 += ((double)fa[k] - fr[k]) * ((double)fa[k] - fr[k]);
    }
    return LC_OK;
}

static lc_code run_job(pool *pl, const job *j, const scratch *b, part *s, lc_error *err) {
    float *fa = b->fa, *fb = b->fb;
    uint8_t *ra = b->ra, *rb = b->rb;
    const lc_vf_tensor *p = &pl->r->t[j->pair];
    uint64_t rows, cols;
    lc_vf_matrix(p->dst_t, p->permuted, &rows, &cols);
    LC_TRY(lc_vf_read_rows(p->src_t, rows, cols, j->r0, j->nr, j->c0, j->nc, p->heads,
                           p->perm_inverse, fa, ra, err));
    LC_TRY(lc_vf_read_rows(p->dst_t, rows, cols, j->r0, j->nr, j->c0, j->nc, 0, false, fb,
                           rb, err));
    memset(s, 0, sizeof *s);
    if (repro_bytes(p))
        LC_TRY(reproduce(pl->r, p, j, fa, rb, b->rq, b->w, b->fr, s, err));
    const size_t blk = p->expect.block > 1 ? p->expect.block : j->nc;
    for (uint32_t i = 0; i < j->nr; i++)
        for (size_t c = 0; c < j->nc; c += blk) {
            const size_t n = j->nc - c < blk ? j->nc - c : blk;
            scan_block(s, &p->expect, fa + (size_t)i * j->nc + c, fb + (size_t)i * j->nc + c,
                       n, j->r0 + i, j->c0 + c, cols);
        }
    return LC_OK;
}

/* Jobs [begin, end) on one worker of libconvert/parallel.h, with its buffers. */
static lc_code work(void *ctx, size_t worker, size_t begin, size_t end, lc_error *err) {
    pool *pl = ctx;
    const scratch *b = &pl->scratch[worker];
    for (size_t k = begin; k < end; k++) {
        const job *j = &pl->jobs[k];
        LC_TRY(run_job(pl, j, b, &pl->parts[k], err));
        lc_progress_add(pl->progress, (uint64_t)j->nr * j->nc * 2);
    }
    return LC_OK;
}

/* Cuts every pair of one shape into jobs. */
static lc_code make_jobs(pool *pl, uint64_t *total, lc_error *err) {
    lc_vf_tensors *r = pl->r;
    size_t cap = 0;
    *total = 0;
    for (size_t i = 0; i < r->n; i++) {
        const lc_vf_tensor *p = &r->t[i];
        if (!p->shape_ok)
            continue;
        uint64_t rows, cols;
        lc_vf_matrix(p->dst_t, p->permuted, &rows, &cols);
        /* With an importance vector, Q4_0 .. Q5_1 weigh a row by its whole mean square:
         * such rows are never cut. */
        const bool whole = p->im_entry != SIZE_MAX && lc_quant_imatrix_whole_rows(p->dst_dt);
        const uint64_t per = cols <= JOB_ELEMS ? (cols ? JOB_ELEMS / cols : 1) : 1;
        const uint64_t span = cols <= JOB_ELEMS || whole ? cols : JOB_ELEMS;
        for (uint64_t r0 = 0; r0 < rows; r0 += per)
            for (uint64_t c0 = 0; c0 < cols; c0 += span) {
                if (pl->n_jobs == cap) {
                    cap = cap ? cap * 2 : 256;
                    job *nj = lc_realloc_array(pl->jobs, cap, sizeof *nj);
                    if (!nj)
                        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
                    pl->jobs = nj;
                }
                pl->jobs[pl->n_jobs++] = (job){
                    .pair = i, .r0 = r0, .c0 = c0,
                    .nr = (uint32_t)(rows - r0 < per ? rows - r0 : per),
                    .nc = (uint32_t)(cols - c0 < span ? cols - c0 : span) };
            }
        *total += 2 * rows * cols;
    }
    return LC_OK;
}

/* Adds a job's sums to its pair's, in job order (ties keep the earlier place). */
static void merge(part *acc, const part *s) {
    if (s->repro_rows && !acc->repro_rows)
        acc->repro_first = s->repro_first;
    acc->repro_rows += s->repro_rows;
    acc->rd2 += s->rd2;
    acc->d2 += s->d2;
    acc->a2 += s->a2;
    acc->b2 += s->b2;
    acc->ab += s->ab;
    acc->n += s->n;
    acc->nonfinite += s->nonfinite;
    if (s->max_abs > acc->max_abs) {
        acc->max_abs = s->max_abs;
        acc->max_at = s->max_at;
    }
    if (s->worst > acc->worst) {
        acc->worst = s->worst;
        acc->worst_row = s->worst_row;
        acc->worst_col = s->worst_col;
    }
}

/* Every job once, on `threads` workers (-t), each with buffers for the largest job; the
 * lowest failing job's error whatever the thread count. */
static lc_code run_pool(pool *pl, int threads, lc_error *err) {
    size_t elems = 1, wcols = 1;
    for (size_t k = 0; k < pl->n_jobs; k++) {
        const size_t n = (size_t)pl->jobs[k].nr * pl->jobs[k].nc;
        elems = n > elems ? n : elems;
    }
    for (size_t i = 0; i < pl->r->n; i++) {
        const lc_vf_tensor *p = &pl->r->t[i];
        uint64_t rows, cols;
        if (p->im_entry == SIZE_MAX)
            continue;
        lc_vf_matrix(p->dst_t, p->permuted, &rows, &cols);
        wcols = cols > wcols ? (size_t)cols : wcols;
    }
    const size_t nw = lc_parallel_workers(pl->n_jobs, 1, threads);
    lc_code rc = LC_OK;
    if (!(pl->scratch = lc_calloc(nw, sizeof *pl->scratch)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the buffers");
    for (size_t i = 0; i < nw && rc == LC_OK; i++) {
        scratch *b = &pl->scratch[i];
        b->fa = lc_malloc_array(elems, sizeof *b->fa);
        b->fb = lc_malloc_array(elems, sizeof *b->fb);
        b->ra = lc_malloc_array(elems, 8);
        b->rb = lc_malloc_array(elems, 8);
        b->rq = lc_malloc_array(elems, 8);
        b->fr = lc_malloc_array(elems, sizeof *b->fr);
        b->w = lc_malloc_array(wcols, sizeof *b->w);
        if (!b->fa || !b->fb || !b->fr || !b->ra || !b->rb || !b->rq || !b->w)
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the buffers");
    }
    if (rc == LC_OK)
        rc = lc_parallel_for(pl->n_jobs, 1, threads, work, pl, err);
    for (size_t i = 0; i < nw; i++) {
        lc_free(pl->scratch[i].fa);
        lc_free(pl->scratch[i].fb);
        lc_free(pl->scratch[i].ra);
        lc_free(pl->scratch[i].rb);
        lc_free(pl->scratch[i].rq);
        lc_free(pl->scratch[i].w);
        lc_free(pl->scratch[i].fr);
    }
    lc_free(pl->scratch);
    pl->scratch = NULL;
    return rc;
}

/* The sums into figures, and the verdict of each tensor. */
static void finish(lc_vf_tensor *p, const part *s) {
    p->n = s->n;
    p->rmse = s->n ? sqrt(s->d2 / (double)s->n) : 0;
    p->max_abs = s->max_abs;
    p->max_at = s->max_at;
    p->cosine = s->a2 == 0 && s->b2 == 0 ? 1 : s->a2 == 0 || s->b2 == 0 ? 0
                                             : s->ab / sqrt(s->a2 * s->b2);
    p->snr_db = s->d2 == 0 ? INFINITY : s->a2 == 0 ? -INFINITY : 10 * log10(s->a2 / s->d2);
    p->worst = s->worst;
    p->worst_row = s->worst_row;
    p->worst_col = s->worst_col;
    p->nonfinite = s->nonfinite;
    p->rel_rmse = s->a2 > 0 ? sqrt(s->d2 / s->a2) : s->d2 > 0 ? INFINITY : 0;
    if (p->weighted_dst && repro_bytes(p) && s->repro_rows) {
        p->repro_rel_rmse = s->a2 > 0 ? sqrt(s->rd2 / s->a2) : 0;
        p->expect.rel_rmse_max = fmin(p->expect.rel_rmse_max, LC_VF_REPRO_FACTOR *
                                      p->repro_rel_rmse + LC_VF_WEIGHTED_RMSE);
    }
    p->floor_miss = !(p->cosine >= p->expect.cos_min) || !(p->rel_rmse <= p->expect.rel_rmse_max);
    p->ok = p->shape_ok && p->nonfinite == 0 && p->worst <= 1.0 && !p->floor_miss;
    if (p->floor_miss && s->b2 == 0)
        snprintf(p->diagnosis, sizeof p->diagnosis, "DST's tensor is all zeros");
    p->repro_rows = s->repro_rows;
    p->repro_first = s->repro_first;
    if (p->expect.cls == LC_DT_INVALID)
        p->repro = p->worst == 0 && p->nonfinite == 0 ? LC_VF_REPRO_SAME : LC_VF_REPRO_DIFF;
    else if (repro_bytes(p))
        p->repro = s->repro_rows ? LC_VF_REPRO_DIFF : LC_VF_REPRO_SAME;
    else
        p->repro = LC_VF_REPRO_NONE;
    /* DST's bytes are SRC's converted by our own code: within any bound by construction,
     * even where a weighted quantizer moved a block past the unweighted ones. */
    if (p->repro == LC_VF_REPRO_SAME && p->shape_ok)
        p->ok = true;
    p->snr_low = p->shape_ok && p->snr_db < p->expect.snr_lo;
}

/* Worst first: tensors outside their bound (the largest ratio first), then by SNR. */
static int by_badness(const void *x, const void *y) {
    const lc_vf_tensor *a = x, *b = y;
    if (a->ok != b->ok)
        return a->ok ? 1 : -1;
    if (!a->ok) {
        if (a->shape_ok != b->shape_ok)
            return a->shape_ok ? 1 : -1;
        if (a->worst != b->worst)
            return a->worst > b->worst ? -1 : 1;
    }
    if (a->snr_db != b->snr_db)
        return a->snr_db < b->snr_db ? -1 : 1;
    return strcmp(a->name, b->name);
}

lc_code lc_vf_tensors_compare(const lc_vf_side *src, const lc_vf_side *dst,
                              const lc_imatrix *im, const char *im_path, int threads,
                              lc_progress *p, lc_vf_tensors *r, lc_error *err) {
    memset(r, 0, sizeof *r);
    pool pl = { .r = r, .progress = p };
    part *acc = NULL;
    uint64_t total;
    lc_code rc = lc_vf_pair_up(src, dst, r, err);
    if (rc == LC_OK)
        rc = lc_vf_imatrix_assign(r, dst, im, im_path, err);
    if (rc == LC_OK)
        rc = make_jobs(&pl, &total, err);
    if (rc == LC_OK && pl.n_jobs &&
        (!(pl.parts = lc_calloc(pl.n_jobs, sizeof *pl.parts)) ||
         !(acc = lc_calloc(r->n, sizeof *acc))))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK && pl.n_jobs) {
        lc_progress_begin(p, "comparing tensors", total);
        rc = run_pool(&pl, threads, err);
        lc_progress_end(p);
    }
    if (rc == LC_OK) {
        for (size_t k = 0; k < pl.n_jobs; k++)
            merge(&acc[pl.jobs[k].pair], &pl.parts[k]);
        for (size_t i = 0; i < r->n; i++) {
            lc_vf_tensor *t = &r->t[i];
            if (t->shape_ok) {
                finish(t, &acc[i]);
            } else {                    /* nothing compared: no figures */
                t->ok = false;
                t->repro = LC_VF_REPRO_DIFF;
                t->worst = INFINITY;
                t->rmse = t->max_abs = t->cosine = t->snr_db = NAN;
            }
            if (!t->ok)
                r->n_bad++;
            r->n_proven += t->repro == LC_VF_REPRO_SAME;
            r->n_repro_diff += t->repro == LC_VF_REPRO_DIFF;
            r->n_proxied += t->repro == LC_VF_REPRO_NONE;
            if (t->ndim >= 2 && lc_vf_class_rank(t->expect.cls) > lc_vf_class_rank(r->cls))
                r->cls = t->expect.cls;
        }
        for (size_t i = 0; i < r->n && rc == LC_OK; i++)
            if (!r->t[i].ok && r->t[i].shape_ok)
                rc = lc_vf_diagnose(src, dst, r, &r->t[i], err);
        qsort(r->t, r->n, sizeof *r->t, by_badness);
    }
    lc_free(pl.jobs);
    lc_free(pl.parts);
    lc_free(acc);
    return rc;
}

bool lc_vf_tensors_proven(const lc_vf_tensors *r) {
    return r->n && r->n_proven == r->n && !r->n_extra;
}

void lc_vf_tensors_free(lc_vf_tensors *r) {
    lc_free(r->t);
    lc_model_free(r->derived);
    memset(r, 0, sizeof *r);
}
