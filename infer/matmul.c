/* infer/matmul.c: weight rows through the IR, and the threaded matmul (matmul.h). */
#include "infer/matmul.h"

#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "infer/matmul_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/convert.h"
#include "libconvert/parallel.h"
#include "libconvert/pipeline.h"
#include "quant/quant.h"

/* ---- the tile kernel ---- */

void lc_infer_tile_ref(const float *w, size_t nr, const float *x, size_t n, size_t cols,
                       float *y, size_t ldy) {
    const size_t c8 = cols & ~(size_t)7;
    for (size_t r = 0; r < nr; r++) {
        const float *wr = w + r * cols;                 /* [cols] */
        for (size_t t = 0; t < n; t++) {
            const float *xt = x + t * cols;             /* [cols] */
            float a[8] = { 0 };                         /* the 8 lanes of matmul_impl.h */
            for (size_t k = 0; k < c8; k += 8)
                for (int j = 0; j < 8; j++)
                    a[j] += wr[k + j] * xt[k + j];
            float s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
            float tl = 0;
            for (size_t k = c8; k < cols; k++)
                tl += wr[k] * xt[k];
            y[t * ldy + r] = s + tl;
        }
    }
}

static lc_infer_tile_fn g_tile;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void pick_tile(void) {
    g_tile = lc_infer_tile_ref;
#if LC_INFER_X86
    if (lc_infer_avx2_usable())
        g_tile = lc_infer_tile_avx2;
#endif
}

lc_infer_tile_fn lc_infer_tile(void) {
    pthread_once(&g_once, pick_tile);
    return g_tile;
}

/* ---- weight rows ---- */

static bool readable(lc_dtype dt) {
    return lc_dtype_is_quant(dt) ? lc_dequant_supported(dt)
                                 : lc_dtype_get(dt)->is_float && lc_convert_supported(dt, LC_DT_F32);
}

lc_code lc_infer_mat_init(lc_infer_mat *w, const lc_tensor *t, lc_error *err) {
    memset(w, 0, sizeof *w);
    if (!readable(t->dtype) || t->ndim < 1 || t->ndim > 3) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.100s: %s with %" PRIu32
                " dimensions cannot be read as float32 rows", t->name, lc_dtype_name(t->dtype),
                t->ndim);
        lc_err_context(err, NULL, t->name);
        return LC_E_UNSUPPORTED;
    }
    w->t = t;
    w->rows = t->ndim == 3 ? t->shape[0] * t->shape[1] : t->ndim == 2 ? t->shape[0] : 1;
    w->cols = t->shape[t->ndim - 1];
    if (!lc_dtype_row_bytes(t->dtype, w->cols, &w->row_bytes)) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.100s: rows of %" PRIu64
                " elements do not fit %s", t->name, w->cols, lc_dtype_name(t->dtype));
        lc_err_context(err, NULL, t->name);
        return LC_E_MALFORMED;
    }
    return LC_OK;
}

lc_code lc_infer_mat_slice(lc_infer_mat *out, const lc_infer_mat *w, uint64_t r0,
                           uint64_t rows, lc_error *err) {
    if (r0 > w->rows || rows > w->rows - r0) {
        lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.100s: rows %" PRIu64 "..%" PRIu64
                " of %" PRIu64, w->t->name, r0, r0 + rows, w->rows);
        lc_err_context(err, NULL, w->t->name);
        return LC_E_ARG;
    }
    *out = *w;
    out->r0 = w->r0 + r0;
    out->rows = rows;
    return LC_OK;
}

lc_code lc_infer_mat_rows(const lc_infer_mat *w, uint64_t r0, size_t nr, float *dst,
                          uint8_t *raw, lc_error *err) {
    const lc_tensor *t = w->t;
    const size_t len = nr * (size_t)w->row_bytes, n = nr * (size_t)w->cols;
    const uint64_t off = (w->r0 + r0) * w->row_bytes;
    const uint8_t *src;
    lc_code rc = LC_OK;
    if (t->data) {
        src = t->data + off;                            /* the mapped file, no copy */
    } else {
        if ((rc = lc_tensor_read(t, off, raw, len, err)) != LC_OK)
            goto done;
        src = raw;
    }
    if (t->dtype == LC_DT_F32)
        memcpy(dst, src, len);
    else if (lc_dtype_is_quant(t->dtype))
        rc = lc_dequantize_rows(t->dtype, src, dst, nr, (size_t)w->cols, err);
    else
        rc = lc_convert(t->dtype, src, LC_DT_F32, dst, n, err);
done:
    lc_err_context(err, NULL, t->name);
    return rc;
}

/* ---- scratch ---- */

lc_code lc_infer_mm_build(lc_infer_mm *mm, int threads, size_t max_cols, size_t max_row_bytes,
                          lc_error *err) {
    memset(mm, 0, sizeof *mm);
    mm->threads = lc_pipeline_threads(threads);
    mm->max_cols = max_cols;
    mm->max_row_bytes = max_row_bytes;
    const size_t t = (size_t)mm->threads;
    uint64_t wc, rc, nw, nr;
    if (lc_mul_u64(LC_INFER_ROWS, max_cols, &wc) || lc_mul_u64(LC_INFER_ROWS, max_row_bytes, &rc) ||
        wc > SIZE_MAX / 4 || rc > SIZE_MAX)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "rows of %zu elements are too wide",
                       max_cols);
    mm->wcap = wc > LC_INFER_NARROW ? (size_t)wc : LC_INFER_NARROW;
    mm->rcap = rc > 8 * LC_INFER_NARROW ? (size_t)rc : 8 * LC_INFER_NARROW;   /* f64 rows */
    if (lc_mul_u64(t, mm->wcap, &nw) || nw > SIZE_MAX / 4 || lc_mul_u64(t, mm->rcap, &nr) ||
        nr > SIZE_MAX)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "rows of %zu elements are too wide",
                       max_cols);
    mm->wbuf = lc_malloc_array((size_t)nw, sizeof(float));
    mm->raw = lc_malloc((size_t)nr ? (size_t)nr : 1);
    if (!mm->wbuf || !mm->raw) {
        lc_infer_mm_free(mm);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %d x %d rows of %zu "
                       "floats", (int)t, LC_INFER_ROWS, max_cols);
    }
    return LC_OK;
}

void lc_infer_mm_free(lc_infer_mm *mm) {
    lc_free(mm->wbuf);
    lc_free(mm->raw);
    mm->wbuf = NULL;
    mm->raw = NULL;
}

/* ---- the threaded product ---- */

typedef struct mm_job {
    lc_infer_mm *mm;
    const lc_infer_mat *w;
    const float *bias, *x;      /* bias [rows] or NULL; x [n, cols] */
    float *y;                   /* [n, rows] */
    size_t n;
    size_t per;                 /* rows per chunk: LC_INFER_ROWS, more for narrow rows */
    lc_infer_tile_fn tile;
} mm_job;

/* Chunks [begin, end) of rows on worker `index` (its slice of the scratch). */
static lc_code run_chunks(void *ctx, size_t index, size_t begin, size_t end, lc_error *err) {
    const mm_job *j = ctx;
    lc_infer_mm *mm = j->mm;
    const lc_infer_mat *w = j->w;
    float *wbuf = mm->wbuf + index * mm->wcap;      /* [per, cols] */
    uint8_t *raw = mm->raw + index * mm->rcap;
    for (size_t c = begin; c < end; c++) {
        const uint64_t r0 = (uint64_t)c * j->per;
        const size_t nr = (size_t)(w->rows - r0 < j->per ? w->rows - r0 : j->per);
        LC_TRY(lc_infer_mat_rows(w, r0, nr, wbuf, raw, err));
        float *yc = j->y + r0;                          /* column r0 of y [n, rows] */
        j->tile(wbuf, nr, j->x, j->n, (size_t)w->cols, yc, (size_t)w->rows);
        if (j->bias)
            for (size_t t = 0; t < j->n; t++)
                for (size_t r = 0; r < nr; r++)
                    yc[t * w->rows + r] += j->bias[r0 + r];
    }
    return LC_OK;
}

lc_code lc_infer_matmul(lc_infer_mm *mm, const lc_infer_mat *w, const float *bias,
                        const float *x, size_t n, float *y, lc_error *err) {
    if (w->cols > mm->max_cols || w->row_bytes > mm->max_row_bytes)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.100s is wider than the scratch",
                       w->t->name);
    size_t per = w->cols ? mm->wcap / (size_t)w->cols : LC_INFER_ROWS;
    if (w->row_bytes && per > mm->rcap / w->row_bytes)
        per = mm->rcap / (size_t)w->row_bytes;
    per = per < LC_INFER_ROWS ? LC_INFER_ROWS : per;
    mm_job j = { .mm = mm, .w = w, .bias = bias, .x = x, .y = y, .n = n, .per = per,
                 .tile = lc_infer_tile() };
    /* One chunk of rows at a time, claimed in order by mm->threads workers at most (the
     * scratch has a slice for each), the calling thread one of them. */
    return lc_parallel_for((size_t)((w->rows + per - 1) / per), 1, mm->threads, run_chunks,
                           &j, err);
}
