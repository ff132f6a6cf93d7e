/* jobs/ffi.c: the flat entry points of jobs/ffi.h. Each is a few lines over a job or a
 * reader; what a tool would print goes into a memory stream and comes back as text. */
#include "jobs/ffi.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/any.h"
#include "formats/gguf.h"
#include "formats/gguf_split.h"
#include "formats/safetensors.h"
#include "jobs/gguf2safetensors.h"
#include "jobs/gguf_quantize.h"
#include "jobs/gguf_quantize_print.h"
#include "jobs/model_verify.h"
#include "jobs/model_verify_print.h"
#include "jobs/pth2safetensors.h"
#include "jobs/safetensors2gguf.h"
#include "jobs/safetensors2gguf_print.h"
#include "jobs/safetensors_rewrite.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/input.h"
#include "libconvert/json.h"
#include "libconvert/parallel.h"
#include "quant/quant.h"

int lc_ffi_abi(void) { return LC_FFI_ABI; }

void lc_ffi_free(void *p) { lc_free(p); }

/* ---- text a printer writes from a job's result, caught in memory ---- */

typedef struct capture {
    FILE  *f;
    char  *buf;     /* open_memstream's, libc-owned */
    size_t len;
} capture;

static lc_code capture_open(capture *c, lc_error *err) {
    memset(c, 0, sizeof *c);
    c->f = open_memstream(&c->buf, &c->len);
    return c->f ? LC_OK : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot open a memory stream");
}

/* Closes the stream and hands its text to *out (lc_ffi_free), when out is not NULL. */
static lc_code capture_close(capture *c, char **out, lc_error *err) {
    lc_code rc = LC_OK;
    if (c->f && fclose(c->f) != 0)
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot grow a memory stream");
    c->f = NULL;
    if (rc == LC_OK && out) {
        if (!(*out = lc_malloc(c->len + 1)))
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        else {
            memcpy(*out, c->buf ? c->buf : "", c->len);
            (*out)[c->len] = '\0';
        }
    }
    free(c->buf);   /* libc's: open_memstream allocated it */
    c->buf = NULL;
    return rc;
}

/* A Python process runs job after job: each job's inputs are its own (libconvert/input.h),
 * not every file the process ever read, or a file read once could never be written. */
static void new_job(void) { lc_input_forget_all(); }

/* ---- reading ---- */

/* The one reader FORMAT names, as a tool of that format opens any file. */
static lc_code open_as(const char *path, const char *format, const lc_pth_opts *po,
                       lc_model **out, lc_any_info *info, lc_error *err) {
    lc_code rc;
    if (strcmp(format, "pth") == 0) {
        info->format = lc_pth_is_index(path) ? "pth-sharded" : "pth";
        return lc_pth_load(path, po, out, err);
    }
    if (strcmp(format, "safetensors") == 0) {
        if (lc_job_st_is_sharded(path)) {
            info->format = "safetensors-sharded";
            return lc_safetensors_load_index(path, out, err);
        }
        info->format = "safetensors";
        return lc_safetensors_load_hdr(path, out, &info->header_size, err);
    }
    if (strcmp(format, "gguf") != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET,
                       "unknown format '%s' (safetensors, gguf or pth)", format);
    lc_gguf_info gi;
    lc_gguf_split *split = NULL;
    info->format = "gguf";
    if ((rc = lc_gguf_open(path, 0, out, &gi, err)) != LC_OK)
        return rc;
    info->header_size = gi.data_offset;
    if ((rc = lc_gguf_split_extend(*out, path, &split, err)) == LC_OK && split->count > 1)
        info->format = "gguf-split";
    lc_gguf_split_free(split);
    if (rc != LC_OK) {
        lc_model_free(*out);
        *out = NULL;
    }
    return rc;
}

lc_code lc_ffi_open(const char *path, const char *format, const lc_pth_opts *pth,
                    lc_model **out, const char **format_out, uint64_t *header_size,
                    lc_error *err) {
    lc_pth_opts po = { 0 };
    if (pth)
        po = *pth;
    po.zero_copy = true;    /* numpy views of the mapped file, as for the other formats */
    lc_any_info info = { 0 };
    lc_code rc = format && *format ? open_as(path, format, &po, out, &info, err)
                                   : lc_model_open_any_pth(path, &po, out, &info, err);
    if (rc != LC_OK)
        lc_err_context(err, path, NULL);
    if (format_out)
        *format_out = info.format ? info.format : "";
    if (header_size)
        *header_size = info.header_size;
    return rc;
}

void lc_ffi_names(const lc_model *m, char *buf, size_t cap, size_t *need) {
    size_t at = 0, count = lc_model_tensor_count(m);
    for (size_t i = 0; i < count; i++) {
        const char *name = lc_model_tensor(m, i)->name;
        size_t len = strlen(name) + 1;
        if (at + len <= cap)
            memcpy(buf + at, name, len);
        at += len;
    }
    *need = at;
}

void lc_ffi_tensors(const lc_model *m, lc_ffi_tensor *out, size_t cap, size_t *n) {
    size_t count = lc_model_tensor_count(m);
    for (size_t i = 0; i < count && i < cap; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        lc_ffi_tensor *e = &out[i];
        e->name = t->name;
        e->dtype = (int32_t)t->dtype;
        e->ndim = t->ndim;
        memcpy(e->shape, t->shape, sizeof e->shape);
        e->nbytes = t->nbytes;
        e->data = t->data;
        e->file_offset = t->file_offset;
        e->t = t;
    }
    *n = count;
}

/* ---- metadata as GGUF wire bytes ---- */

static lc_code put_u32(lc_json_buf *b, uint32_t v, lc_error *err) {
    uint8_t x[4];
    lc_store_le32(x, v);
    return lc_json_put(b, x, 4, err);
}

static lc_code put_u64(lc_json_buf *b, uint64_t v, lc_error *err) {
    uint8_t x[8];
    lc_store_le64(x, v);
    return lc_json_put(b, x, 8, err);
}

static lc_code put_str(lc_json_buf *b, const char *s, uint64_t len, lc_error *err) {
    LC_TRY(put_u64(b, len, err));
    return lc_json_put(b, s, (size_t)len, err);
}

/* One scalar at its wire width, little-endian. */
static lc_code put_scalar(lc_json_buf *b, const lc_value *v, lc_error *err) {
    uint8_t x[8];
    size_t w = lc_vtype_size(v->type);
    switch (v->type) {
    case LC_VT_F32: {
        float f = (float)v->f;
        uint32_t u;
        memcpy(&u, &f, 4);
        lc_store_le32(x, u);
        break;
    }
    case LC_VT_F64: {
        uint64_t u;
        memcpy(&u, &v->f, 8);
        lc_store_le64(x, u);
        break;
    }
    case LC_VT_BOOL:
        x[0] = v->b ? 1 : 0;
        break;
    default:   /* integers: u and i share their bits, the low `w` bytes are the value */
        lc_store_le64(x, v->u);
        break;
    }
    return lc_json_put(b, x, w, err);
}

static lc_code put_value(lc_json_buf *b, const lc_value *v, lc_error *err) {
    if (v->type == LC_VT_STRING)
        return put_str(b, v->str.ptr, v->str.len, err);
    if (v->type != LC_VT_ARRAY)
        return put_scalar(b, v, err);
    LC_TRY(put_u32(b, (uint32_t)v->arr.elem, err));
    LC_TRY(put_u64(b, v->arr.count, err));
    if (v->arr.elem == LC_VT_STRING) {
        for (uint64_t i = 0; i < v->arr.count; i++) {
            size_t len;
            const char *s = lc_value_arr_str(v, i, &len);
            LC_TRY(put_str(b, s, len, err));
        }
        return LC_OK;
    }
    if (v->arr.elem == LC_VT_ARRAY) {
        for (uint64_t i = 0; i < v->arr.count; i++)
            LC_TRY(put_value(b, lc_value_arr_item(v, i), err));
        return LC_OK;
    }
    /* Packed scalars are already the wire's bytes (libconvert/value.h). */
    const void *data = lc_value_arr_data(v);
    return data ? lc_json_put(b, data, (size_t)v->arr.count * lc_vtype_size(v->arr.elem), err)
                : LC_OK;
}

lc_code lc_ffi_meta_encode(const lc_model *m, uint8_t **buf, size_t *len, uint64_t *n_kv,
                           lc_error *err) {
    lc_json_buf b = { 0 };
    lc_code rc = LC_OK;
    *buf = NULL;
    size_t n = lc_model_meta_count(m);
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        if ((rc = put_str(&b, kv->key, strlen(kv->key), err)) == LC_OK &&
            (rc = put_u32(&b, (uint32_t)kv->val.type, err)) == LC_OK)
            rc = put_value(&b, &kv->val, err);
    }
    if (rc == LC_OK && !b.data)
        rc = lc_json_put(&b, "", 0, err);   /* an empty model: a buffer all the same */
    if (rc != LC_OK) {
        lc_json_buf_free(&b);
        return rc;
    }
    *buf = (uint8_t *)b.data;
    *len = b.len;
    *n_kv = n;
    return LC_OK;
}

/* ---- writing ---- */

lc_code lc_ffi_model_from_meta(const uint8_t *kv, size_t len, uint64_t n_kv, lc_model **out,
                               lc_error *err) {
    /* A GGUF of no tensor: magic, version 3, 0 tensors, n_kv, the entries. */
    enum { HEAD = 24 };
    uint8_t *file = NULL;
    lc_code rc;
    *out = NULL;
    if (len > SIZE_MAX - HEAD || !(file = lc_malloc(HEAD + len)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    memcpy(file, "GGUF", 4);
    lc_store_le32(file + 4, 3);
    lc_store_le64(file + 8, 0);
    lc_store_le64(file + 16, n_kv);
    if (len)
        memcpy(file + HEAD, kv, len);
    /* Values are copied out of the buffer (the model borrows only tensor bytes). */
    rc = lc_gguf_load_mem(file, HEAD + len, out, err);
    if (rc != LC_OK && err && err->offset != LC_NO_OFFSET)
        err->offset = err->offset >= HEAD ? err->offset - HEAD : 0;  /* into KV */
    lc_free(file);
    return rc;
}

lc_code lc_ffi_model_set_str(lc_model *m, const char *key, const char *val, size_t len,
                             lc_error *err) {
    lc_value v;
    LC_TRY(lc_value_string(&v, val, len, err));
    return lc_model_add_meta(m, key, &v, err);
}

lc_code lc_ffi_add_tensor(lc_model *m, const char *name, int32_t dtype, uint32_t ndim,
                          const uint64_t *shape, const void *data, uint64_t nbytes,
                          lc_error *err) {
    lc_tensor *t;
    if (dtype <= LC_DT_INVALID || dtype >= LC_DT_COUNT)
        return lc_fail_in(err, LC_E_ARG, LC_NO_OFFSET, name, "unknown dtype %" PRId32, dtype);
    LC_TRY(lc_model_add_tensor(m, name, (lc_dtype)dtype, ndim, shape, &t, err));
    if (t->nbytes != nbytes)
        return lc_fail_in(err, LC_E_ARG, LC_NO_OFFSET, name,
                          "%" PRIu64 " bytes given, a %s tensor of this shape takes %" PRIu64,
                          nbytes, lc_dtype_name(t->dtype), t->nbytes);
    t->data = data;
    return LC_OK;
}

lc_code lc_ffi_write_gguf(const lc_model *m, const char *path, int threads, lc_progress *p,
                          lc_error *err) {
    lc_gguf_write_opts o = { .threads = threads };
    new_job();
    return lc_gguf_write(m, path, &o, p, err);
}

lc_code lc_ffi_write_safetensors(const lc_model *m, const char *path, bool stringify_meta,
                                 int threads, lc_progress *p, lc_error *err) {
    lc_st_write_opts o = { .stringify_meta = stringify_meta, .threads = threads };
    new_job();
    return lc_safetensors_write(m, path, &o, p, err);
}

/* ---- arrays ---- */

/* Rows per range: a million values or so, so that a small array takes one thread. */
#define ROWS_RANGE_VALUES (1u << 20)

typedef struct rows_job {
    lc_dtype     type;
    const void  *x;
    void        *y;
    uint64_t     ncols;
    size_t       x_row, y_row;      /* bytes per row on each side */
    const float *imatrix;
    bool         quantize;
} rows_job;

static lc_code rows_range(void *ctx, size_t worker, size_t begin, size_t end, lc_error *err) {
    const rows_job *j = ctx;
    (void)worker;
    const uint8_t *x = (const uint8_t *)j->x + begin * j->x_row;
    uint8_t *y = (uint8_t *)j->y + begin * j->y_row;
    return j->quantize
        ? lc_quantize_rows_imatrix(j->type, (const float *)x, y, end - begin, j->ncols,
                                   j->imatrix, err)
        : lc_dequantize_rows(j->type, x, (float *)y, end - begin, j->ncols, err);
}

static lc_code run_rows(rows_job *j, uint64_t nrows, int threads, lc_error *err) {
    uint64_t row_bytes;
    if (j->type <= LC_DT_INVALID || j->type >= LC_DT_COUNT ||
        !lc_dtype_row_bytes(j->type, j->ncols, &row_bytes) || nrows > SIZE_MAX ||
        row_bytes > SIZE_MAX / 2 || j->ncols > SIZE_MAX / 8)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "rows of %" PRIu64 " values are not whole "
                       "%s blocks", j->ncols, lc_dtype_name(j->type));
    j->x_row = j->quantize ? (size_t)j->ncols * 4 : (size_t)row_bytes;
    j->y_row = j->quantize ? (size_t)row_bytes : (size_t)j->ncols * 4;
    if (j->quantize) {      /* the IQ tables before the threads, not in each */
        lc_code rc = lc_quant_prepare(j->type, err);
        if (rc != LC_OK)
            return rc;
    }
    const size_t per = j->ncols >= ROWS_RANGE_VALUES ? 1 : ROWS_RANGE_VALUES / j->ncols;
    return lc_parallel_for((size_t)nrows, per, threads, rows_range, j, err);
}

lc_code lc_ffi_quantize_rows(int32_t to, const float *x, void *y, uint64_t nrows,
                             uint64_t ncols, const float *imatrix, int threads,
                             lc_error *err) {
    rows_job j = { .type = (lc_dtype)to, .x = x, .y = y, .ncols = ncols, .imatrix = imatrix,
                   .quantize = true };
    return ncols ? run_rows(&j, nrows, threads, err) : LC_OK;
}

lc_code lc_ffi_dequantize_rows(int32_t from, const void *x, float *y, uint64_t nrows,
                               uint64_t ncols, int threads, lc_error *err) {
    rows_job j = { .type = (lc_dtype)from, .x = x, .y = y, .ncols = ncols };
    return ncols ? run_rows(&j, nrows, threads, err) : LC_OK;
}

/* ---- jobs ---- */

lc_code lc_ffi_to_gguf(const lc_ffi_to_gguf_args *a, lc_progress *p, char **plan,
                       lc_error *err) {
    lc_job_st2gguf_opts o = { .in = a->in, .out = a->out };
    capture c = { 0 };
    lc_code rc;
    if (plan)
        *plan = NULL;
    if ((rc = lc_job_st2gguf_outtype(a->outtype ? a->outtype : "auto", &o, err)) != LC_OK)
        return rc;
    o.hf.pre = a->pre;
    o.hf.vocab_only = a->vocab_only != 0;
    o.overrides = a->overrides, o.n_overrides = a->n_overrides;
    o.dry_run = a->dry_run != 0;
    o.folder_options = a->pre || a->vocab_only || a->n_overrides || (a->outtype &&
                       strcmp(a->outtype, "auto") != 0);
    o.threads = a->threads;
    lc_job_st2gguf_result res = { 0 };
    new_job();
    if ((rc = lc_job_safetensors2gguf_check(&o, err)) == LC_OK)
        rc = lc_job_safetensors2gguf(&o, p, &res, err);
    /* The plan as the tool prints it, from the result. */
    if (rc == LC_OK && o.dry_run && (rc = capture_open(&c, err)) == LC_OK) {
        lc_job_st2gguf_print(&res, c.f);
        rc = capture_close(&c, plan, err);
    }
    lc_job_st2gguf_result_free(&res);
    return rc;
}

lc_code lc_ffi_gguf_to_safetensors(const char *in, const char *out, int32_t dtype,
                                   int threads, lc_progress *p, lc_error *err) {
    lc_job_gguf2st_opts o = { .in = in, .out = out, .dtype = (lc_dtype)dtype,
                              .threads = threads };
    new_job();
    return lc_job_gguf2safetensors(&o, p, err);
}

lc_code lc_ffi_safetensors_rewrite(const char *in, const char *out, int32_t cast,
                                   bool stringify_meta, int threads, lc_progress *p,
                                   lc_error *err) {
    lc_job_st_rewrite_opts o = { .in = in, .out = out, .cast = (lc_dtype)cast,
                                 .stringify_meta = stringify_meta, .threads = threads };
    new_job();
    return lc_job_safetensors_rewrite(&o, p, err);
}

lc_code lc_ffi_pth_to_safetensors(const lc_ffi_pth_args *a, lc_progress *p, lc_error *err) {
    lc_job_pth2st_opts o = { .in = a->in, .out = a->out, .mode = LC_PTH2ST_CONVERT,
                             .cast = (lc_dtype)a->cast, .threads = a->threads };
    o.pth.key = a->key;
    o.pth.dedupe = a->dedupe != 0;
    o.pth.allow_expand = a->allow_expand != 0;
    new_job();
    return lc_job_pth2safetensors(&o, p, NULL, err);
}

lc_code lc_ffi_quantize(const lc_ffi_quantize_args *a, lc_progress *p, char **report,
                        lc_error *err) {
    lc_job_quantize_opts o = {
        .in = a->in, .out = a->out, .ftype = lc_job_quantize_type(a->ftype ? a->ftype : ""),
        .pure = a->pure != 0, .leave_output = a->leave_output != 0,
        .allow_requantize = a->allow_requantize != 0, .keep_split = a->keep_split != 0,
        .dry_run = a->dry_run != 0, .output_type = a->output_type,
        .token_embd_type = a->token_embd_type, .tensor_types = a->tensor_types,
        .n_tensor_types = a->n_tensor_types, .overrides = a->overrides,
        .n_overrides = a->n_overrides, .imatrix = a->imatrix,
        .include_weights = a->include_weights, .n_include = a->n_include,
        .exclude_weights = a->exclude_weights, .n_exclude = a->n_exclude,
        .threads = a->threads,
    };
    lc_job_quantize_result res = { 0 };
    lc_code rc;
    size_t len;
    *report = NULL;
    if (!o.ftype)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "unknown TYPE '%s'",
                       a->ftype ? a->ftype : "");
    new_job();
    if ((rc = lc_job_gguf_quantize_check(&o, err)) == LC_OK)
        rc = lc_job_gguf_quantize(&o, p, &res, err);
    if (rc == LC_OK)        /* the object `gguf-quantize --json` prints, from the result */
        rc = lc_job_quantize_json(&res, report, &len, err);
    lc_job_quantize_result_free(&res);
    return rc;
}

lc_code lc_ffi_verify(const lc_ffi_verify_args *a, lc_progress *p, bool *pass, char **report,
                      lc_error *err) {
    lc_job_verify_opts o = {
        .src = a->src, .dst = a->dst, .tokens = a->tokens, .text = a->text, .file = a->file,
        .max_tokens = (size_t)a->max_tokens, .layers = a->layers != 0,
        .report = a->report_html, .threads = a->threads, .imatrix = a->imatrix,
    };
    lc_job_verify_result res;
    size_t len;
    *report = NULL;
    *pass = false;
    new_job();
    lc_code rc = lc_job_model_verify(&o, p, &res, err);
    if (rc == LC_OK)        /* the object `model-verify --json` prints, from the result */
        rc = lc_job_verify_json(&res, report, &len, err);
    if (rc == LC_OK)
        *pass = res.pass;
    lc_job_verify_result_free(&res);
    return rc;
}
