/* libconvert/inspect.c: text and JSON reports over any lc_model. */
#include "libconvert/inspect.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "libconvert/escape.h"
#include "libconvert/json.h"

#define TEXT_ARRAY_ITEMS 8   /* items shown before "... (N items)" */
#define TEXT_STRING_BYTES 96 /* bytes of a string shown before "..." */

static lc_code flush_buf(FILE *f, lc_json_buf *b, lc_error *err) {
    if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the report: %s", strerror(errno));
    b->len = 0;
    return LC_OK;
}

static lc_code put_float(lc_json_buf *b, double x, bool f32, lc_error *err) {
    if (isnan(x) || isinf(x))
        return lc_json_put(b, "null", 4, err);
    return lc_json_printf(b, err, f32 ? "%.9g" : "%.17g", x);
}

/* A quoted string: for a report (`display`), escaped for a terminal too. */
static lc_code put_str(lc_json_buf *b, const char *s, size_t len, bool display, lc_error *err) {
    return display ? lc_json_put_display(b, s, len, err) : lc_json_put_string(b, s, len, err);
}

#define FLUSH_AT (64u << 10)   /* bytes a printer with a sink holds before handing them on */

/* Where a long array's text goes between items: NULL to keep it all in b. */
typedef struct sink {
    lc_code (*flush)(void *ctx, lc_json_buf *b, lc_error *err);
    void    *ctx;
} sink;

/* One value; `full` prints everything (JSON), otherwise long parts are summarised;
 * `display` for a report a person may read on a terminal. With `out`, b is handed on
 * between array items once it holds FLUSH_AT bytes, so an array of millions of items
 * never sits in memory as text. */
static lc_code put_value(lc_json_buf *b, const lc_value *v, bool full, bool display,
                         const sink *out, lc_error *err) {
    switch (v->type) {
    case LC_VT_U8: case LC_VT_U16: case LC_VT_U32: case LC_VT_U64:
        return lc_json_printf(b, err, "%" PRIu64, v->u);
    case LC_VT_I8: case LC_VT_I16: case LC_VT_I32: case LC_VT_I64:
        return lc_json_printf(b, err, "%" PRId64, v->i);
    case LC_VT_F32: case LC_VT_F64:
        return put_float(b, v->f, v->type == LC_VT_F32, err);
    case LC_VT_BOOL:
        return lc_json_printf(b, err, "%s", v->b ? "true" : "false");
    case LC_VT_STRING: {
        size_t len = (size_t)v->str.len;
        if (full || len <= TEXT_STRING_BYTES)
            return put_str(b, v->str.ptr, len, display, err);
        size_t cut = TEXT_STRING_BYTES; /* back off to a UTF-8 boundary */
        while (cut > 0 && ((uint8_t)v->str.ptr[cut] & 0xc0) == 0x80)
            cut--;
        LC_TRY(put_str(b, v->str.ptr, cut, display, err));
        return lc_json_printf(b, err, "... (%zu bytes)", len);
    }
    case LC_VT_ARRAY: {
        uint64_t shown = v->arr.count;
        if (!full && shown > TEXT_ARRAY_ITEMS)
            shown = TEXT_ARRAY_ITEMS;
        LC_TRY(lc_json_put(b, "[", 1, err));
        for (uint64_t k = 0; k < shown; k++) {
            if (k)
                LC_TRY(lc_json_put(b, ", ", 2, err));
            const lc_value item = lc_value_arr_get(v, k);   /* a view, never cleared */
            LC_TRY(put_value(b, &item, full, display, out, err));
            if (out && b->len >= FLUSH_AT)
                LC_TRY(out->flush(out->ctx, b, err));
        }
        if (shown < v->arr.count)
            LC_TRY(lc_json_printf(b, err, ", ... (%" PRIu64 " %s items)", v->arr.count,
                                  lc_vtype_name(v->arr.elem)));
        return lc_json_put(b, "]", 1, err);
    }
    default:
        return lc_json_put(b, "null", 4, err);
    }
}

lc_code lc_inspect_value_json(lc_json_buf *b, const lc_value *v, lc_error *err) {
    return put_value(b, v, true, false, NULL, err);
}

lc_code lc_inspect_value_json_to(lc_json_buf *b, const lc_value *v,
                                 lc_code (*flush)(void *ctx, lc_json_buf *b, lc_error *err),
                                 void *ctx, lc_error *err) {
    const sink out = { flush, ctx };
    return put_value(b, v, true, false, flush ? &out : NULL, err);
}

/* The report's sink: b's bytes go to the FILE. */
static lc_code flush_file(void *f, lc_json_buf *b, lc_error *err) {
    return flush_buf(f, b, err);
}

static lc_code put_shape(lc_json_buf *b, const lc_tensor *t, lc_error *err) {
    LC_TRY(lc_json_put(b, "[", 1, err));
    for (uint32_t d = 0; d < t->ndim; d++)
        LC_TRY(lc_json_printf(b, err, d ? ", %" PRIu64 : "%" PRIu64, t->shape[d]));
    return lc_json_put(b, "]", 1, err);
}

static uint64_t total_bytes(const lc_model *m) {
    uint64_t sum = 0;
    for (size_t i = 0; i < lc_model_tensor_count(m); i++)
        sum += lc_model_tensor(m, i)->nbytes;
    return sum;
}

/* Elements of every tensor; and bits per weight as llama.cpp prints a model's BPW: its
 * tensors' bytes x 8 over their elements (0 for a model without elements). */
static uint64_t total_weights(const lc_model *m) {
    uint64_t sum = 0, k;
    for (size_t i = 0; i < lc_model_tensor_count(m); i++)
        if (lc_tensor_numel(lc_model_tensor(m, i), &k))
            sum += k;
    return sum;
}

static double bits_per_weight(const lc_model *m) {
    const uint64_t w = total_weights(m);
    return w ? (double)total_bytes(m) * 8.0 / (double)w : 0.0;
}

/* A mixture of experts: <arch>.expert_count and .expert_used_count (0 when absent) and
 * the stacks of experts (3-D "*_exps.*" tensors, llama.cpp's names for them). */
typedef struct experts { uint64_t count, used; size_t stacks; } experts;

static uint64_t arch_u(const lc_model *m, const char *suffix) {
    const lc_value *a = lc_model_find_meta(m, "general.architecture");
    char key[160];
    if (!a || a->type != LC_VT_STRING)
        return 0;
    snprintf(key, sizeof key, "%.100s.%s", a->str.ptr, suffix);
    const lc_value *v = lc_model_find_meta(m, key);
    return v && (v->type == LC_VT_U32 || v->type == LC_VT_U64) ? v->u : 0;
}

static experts find_experts(const lc_model *m) {
    experts e = { arch_u(m, "expert_count"), arch_u(m, "expert_used_count"), 0 };
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        e.stacks += t->ndim == 3 && strstr(t->name, "_exps.") != NULL;
    }
    return e;
}

/* "Q8_0 x30, F32 x9": how many tensors of each dtype, in dtype order. */
static lc_code put_type_counts(lc_json_buf *b, const lc_model *m, bool json, lc_error *err) {
    size_t count[LC_DT_COUNT] = { 0 };
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_dtype t = lc_model_tensor(m, i)->dtype;
        if ((unsigned)t < LC_DT_COUNT)
            count[t]++;
    }
    bool first = true;
    for (int t = 0; t < LC_DT_COUNT; t++) {
        if (!count[t])
            continue;
        if (json)
            LC_TRY(lc_json_printf(b, err, "%s\"%s\": %zu", first ? "" : ", ",
                                  lc_dtype_name((lc_dtype)t), count[t]));
        else
            LC_TRY(lc_json_printf(b, err, "%s%s x%zu", first ? "" : ", ",
                                  lc_dtype_name((lc_dtype)t), count[t]));
        first = false;
    }
    return LC_OK;
}

/* Rules a lenient open found broken (lc_model_warning): "refused" ones make our
 * readers refuse the file, "note" ones the spec or llama.cpp. One escaped line each. */
static lc_code text_warnings(lc_json_buf *b, const lc_model *m, lc_error *err) {
    const size_t n = lc_model_warning_count(m), dropped = lc_model_warnings_dropped(m);
    if (n == 0)
        return LC_OK;
    size_t refused = 0;
    for (size_t i = 0; i < n; i++)
        refused += lc_model_warning(m, i)->refused;
    if (refused)
        LC_TRY(lc_json_printf(b, err, "warnings: %zu (%zu refused: our readers refuse the "
                              "file)\n", n + dropped, refused));
    else
        LC_TRY(lc_json_printf(b, err, "warnings: %zu (notes: our readers take the file, the "
                              "spec or llama.cpp do not)\n", n + dropped));
    for (size_t i = 0; i < n; i++) {
        const lc_warning *w = lc_model_warning(m, i);
        char line[1024];
        lc_err_format(&w->e, line, sizeof line);
        LC_TRY(lc_json_printf(b, err, "  %-7s %s: %s\n", w->refused ? "refused" : "note",
                              w->rule, line));
    }
    if (dropped)
        LC_TRY(lc_json_printf(b, err, "  ... and %zu more\n", dropped));
    return LC_OK;
}

static lc_code json_warnings(lc_json_buf *b, const lc_model *m, lc_error *err) {
    LC_TRY(lc_json_put(b, ", \"warnings\": [", 15, err));
    for (size_t i = 0; i < lc_model_warning_count(m); i++) {
        const lc_warning *w = lc_model_warning(m, i);
        LC_TRY(lc_json_put(b, i ? ", {\"rule\": " : "{\"rule\": ", i ? 11 : 9, err));
        LC_TRY(lc_json_put_display(b, w->rule, strlen(w->rule), err));
        LC_TRY(lc_json_printf(b, err, ", \"refused\": %s, \"offset\": ",
                              w->refused ? "true" : "false"));
        if (w->e.offset != LC_NO_OFFSET)
            LC_TRY(lc_json_printf(b, err, "%" PRIu64, w->e.offset));
        else
            LC_TRY(lc_json_put(b, "null", 4, err));
        LC_TRY(lc_json_put(b, ", \"where\": ", 11, err));
        LC_TRY(lc_json_put_display(b, w->e.where, strlen(w->e.where), err));
        LC_TRY(lc_json_put(b, ", \"message\": ", 13, err));
        LC_TRY(lc_json_put_display(b, w->e.msg, strlen(w->e.msg), err));
        LC_TRY(lc_json_put(b, "}", 1, err));
    }
    return lc_json_printf(b, err, "], \"warnings_dropped\": %zu",
                          lc_model_warnings_dropped(m));
}

static lc_code text_report(FILE *f, const lc_model *m, const lc_inspect_info *info,
                           lc_json_buf *b, lc_error *err) {
    char path[1024];
    lc_escape(path, sizeof path, info->path, strlen(info->path));
    LC_TRY(lc_json_printf(b, err, "file:     %s\nformat:   %s\n", path, info->format));
    if (info->file_size)
        LC_TRY(lc_json_printf(b, err, "size:     %" PRIu64 " bytes\n", info->file_size));
    if (info->header_size)
        LC_TRY(lc_json_printf(b, err, "header:   %" PRIu64 " bytes\n", info->header_size));
    LC_TRY(text_warnings(b, m, err));
    size_t nmeta = lc_model_meta_count(m), n = lc_model_tensor_count(m);
    LC_TRY(lc_json_printf(b, err, "metadata: %zu key%s\n", nmeta, nmeta == 1 ? "" : "s"));
    for (size_t i = 0; i < nmeta; i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        LC_TRY(lc_json_put(b, "  ", 2, err));
        LC_TRY(lc_json_put_display(b, kv->key, strlen(kv->key), err));
        LC_TRY(lc_json_printf(b, err, " (%s) = ", lc_vtype_name(kv->val.type)));
        LC_TRY(put_value(b, &kv->val, false, true, NULL, err));
        LC_TRY(lc_json_put(b, "\n", 1, err));
        LC_TRY(flush_buf(f, b, err));
    }
    LC_TRY(lc_json_printf(b, err, "tensors:  %zu (%" PRIu64 " bytes of data)\n", n,
                          total_bytes(m)));
    if (n) {
        LC_TRY(lc_json_printf(b, err, "weights:  %" PRIu64 " (%.2f bits per weight; ",
                              total_weights(m), bits_per_weight(m)));
        LC_TRY(put_type_counts(b, m, false, err));
        LC_TRY(lc_json_put(b, ")\n", 2, err));
    }
    const experts ex = find_experts(m);
    if (ex.count)
        LC_TRY(lc_json_printf(b, err, "experts:  %" PRIu64 " per layer, %" PRIu64 " used per "
                              "token (%zu stacked tensor%s)\n", ex.count, ex.used, ex.stacks,
                              ex.stacks == 1 ? "" : "s"));
    /* Columns as wide as the longest quoted name, within reason, and the longest dtype
     * name (8 at least: F8_E4M3FNUZ is 11). */
    int w = 4, wd = 8;
    for (size_t i = 0; i < n; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        const int d = (int)strlen(lc_dtype_name(t->dtype));
        wd = d > wd ? d : wd;
        if (w >= 64)
            continue;
        lc_json_buf nm = {0};
        LC_TRY(lc_json_put_display(&nm, t->name, strlen(t->name), err));
        w = (int)nm.len > w ? ((int)nm.len < 64 ? (int)nm.len : 64) : w;
        lc_json_buf_free(&nm);
    }
    if (n)
        LC_TRY(lc_json_printf(b, err, "  %-*s %-*s %-20s %12s %12s\n", w, "name", wd, "dtype",
                              "shape", "bytes", "offset"));
    for (size_t i = 0; i < n; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        lc_json_buf nm = {0}, sh = {0};
        lc_code rc = lc_json_put_display(&nm, t->name, strlen(t->name), err);
        if (rc == LC_OK)
            rc = put_shape(&sh, t, err);
        if (rc == LC_OK) {
            /* The quoted, escaped name: safe on a terminal whatever the file says. */
            rc = lc_json_printf(b, err, "  %-*s %-*s %-20s %12" PRIu64 " ", w, nm.data, wd,
                                lc_dtype_name(t->dtype), sh.data, t->nbytes);
        }
        lc_json_buf_free(&nm);
        lc_json_buf_free(&sh);
        LC_TRY(rc);
        if (t->file_offset != LC_NO_OFFSET)
            LC_TRY(lc_json_printf(b, err, "%12" PRIu64 "\n", t->file_offset));
        else
            LC_TRY(lc_json_printf(b, err, "%12s\n", "-"));
        LC_TRY(flush_buf(f, b, err));
    }
    return flush_buf(f, b, err);
}

static lc_code json_report(FILE *f, const lc_model *m, const lc_inspect_info *info,
                           lc_json_buf *b, lc_error *err) {
    LC_TRY(lc_json_put(b, "{\"file\": ", 9, err));
    LC_TRY(lc_json_put_display(b, info->path, strlen(info->path), err));
    LC_TRY(lc_json_put(b, ", \"format\": ", 12, err));
    LC_TRY(lc_json_put_display(b, info->format, strlen(info->format), err));
    LC_TRY(lc_json_printf(b, err, ", \"file_size\": %" PRIu64 ", \"header_size\": %" PRIu64,
                          info->file_size, info->header_size));
    LC_TRY(json_warnings(b, m, err));
    LC_TRY(lc_json_put(b, ", \"metadata\": {", 15, err));
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        if (i)
            LC_TRY(lc_json_put(b, ", ", 2, err));
        LC_TRY(lc_json_put_display(b, kv->key, strlen(kv->key), err));
        LC_TRY(lc_json_put(b, ": ", 2, err));
        const sink out = { flush_file, f };
        LC_TRY(put_value(b, &kv->val, true, true, &out, err));
        LC_TRY(flush_buf(f, b, err));
    }
    LC_TRY(lc_json_printf(b, err, "}, \"weights\": %" PRIu64 ", \"bits_per_weight\": %.6g, "
                          "\"tensor_types\": {", total_weights(m), bits_per_weight(m)));
    LC_TRY(put_type_counts(b, m, true, err));
    const experts ex = find_experts(m);
    if (ex.count)
        LC_TRY(lc_json_printf(b, err, "}, \"experts\": {\"count\": %" PRIu64 ", \"used\": %"
                              PRIu64 ", \"stacked_tensors\": %zu", ex.count, ex.used, ex.stacks));
    LC_TRY(lc_json_put(b, "}, \"tensors\": [", 15, err));
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        LC_TRY(lc_json_put(b, i ? ",\n  {\"name\": " : "\n  {\"name\": ", i ? 13 : 12, err));
        LC_TRY(lc_json_put_display(b, t->name, strlen(t->name), err));
        LC_TRY(lc_json_printf(b, err, ", \"dtype\": \"%s\", \"shape\": ", lc_dtype_name(t->dtype)));
        LC_TRY(put_shape(b, t, err));
        LC_TRY(lc_json_printf(b, err, ", \"nbytes\": %" PRIu64 ", \"offset\": ", t->nbytes));
        if (t->file_offset != LC_NO_OFFSET)
            LC_TRY(lc_json_printf(b, err, "%" PRIu64 "}", t->file_offset));
        else
            LC_TRY(lc_json_put(b, "null}", 5, err));
        LC_TRY(flush_buf(f, b, err));
    }
    LC_TRY(lc_json_put(b, "]}\n", 3, err));
    return flush_buf(f, b, err);
}

lc_code lc_inspect_print_text(FILE *f, const lc_model *m, const lc_inspect_info *info,
                              lc_error *err) {
    lc_json_buf b = {0};
    lc_code rc = text_report(f, m, info, &b, err);
    lc_json_buf_free(&b);
    if (rc == LC_OK && fflush(f) != 0)
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the report: %s", strerror(errno));
    return rc;
}

lc_code lc_inspect_print_json(FILE *f, const lc_model *m, const lc_inspect_info *info,
                              lc_error *err) {
    lc_json_buf b = {0};
    lc_code rc = json_report(f, m, info, &b, err);
    lc_json_buf_free(&b);
    if (rc == LC_OK && fflush(f) != 0)
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the report: %s", strerror(errno));
    return rc;
}
