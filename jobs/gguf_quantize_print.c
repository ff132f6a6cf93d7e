/* jobs/gguf_quantize_print.c: the plan, the summary line and the JSON object of a
 * gguf-quantize run (see gguf_quantize_print.h). Every figure comes from the result;
 * the formats are the tool's, byte for byte, since scripts and tests read them. */
#include "jobs/gguf_quantize_print.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/escape.h"
#include "libconvert/json.h"
#include "libconvert/tensor.h"

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* "[2, 3]", as lc_shape_format writes a tensor's. */
static void shape_text(const lc_job_quantize_row *w, char *buf, size_t cap) {
    lc_tensor t = { .ndim = w->ndim };
    memcpy(t.shape, w->shape, sizeof t.shape);
    lc_shape_format(&t, buf, cap);
}

/* The tensors and bytes that go to output part k. */
static void part_totals(const lc_job_quantize_result *r, uint32_t k, size_t *tensors,
                        uint64_t *bytes) {
    *tensors = 0;
    *bytes = 0;
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].part == k) {
            ++*tensors;
            *bytes += r->rows[i].bytes_out;
        }
}

/* A tensor name or path as the terminal may show it (libconvert/escape.h): a name is the
 * file author's bytes, and ESC, CR or U+202E in it would act on the terminal. A name
 * whose escaped form exceeds the buffer is cut there; --json has it whole. */
typedef struct { char s[1024]; } shown;
static shown show(const char *s) {
    shown o;
    lc_escape(o.s, sizeof o.s, s, strlen(s));
    return o;
}

void lc_job_quantize_print_plan(const lc_job_quantize_result *r, FILE *f) {
    for (uint32_t k = 0; r->part_paths && k < r->n_parts; k++) {
        size_t tensors;
        uint64_t bytes;
        part_totals(r, k, &tensors, &bytes);
        fprintf(f, "part %" PRIu32 "/%" PRIu32 ": %s: %zu tensors, %.3f MiB of tensor data\n",
                k + 1, r->n_parts, show(r->part_paths[k]).s, tensors, mib(bytes));
    }
    for (size_t i = 0; i < r->n_rows; i++) {
        const lc_job_quantize_row *w = &r->rows[i];
        char shape[64], fb[48] = "";
        shape_text(w, shape, sizeof shape);
        if (w->to != w->wanted)
            snprintf(fb, sizeof fb, " (%s does not fit its rows)", lc_dtype_name(w->wanted));
        fprintf(f, "[%4zu/%4zu] %-40s %-16s %-5s -> %-5s %-6s %10.3f MiB -> %10.3f MiB%s\n",
                i + 1, r->n_rows, show(w->name).s, shape, lc_dtype_name(w->from),
                lc_dtype_name(w->to), w->why, mib(w->bytes_in), mib(w->bytes_out), fb);
    }
}

void lc_job_quantize_print_summary(const lc_job_quantize_result *r, FILE *f) {
    const double el = r->elements ? (double)r->elements : 1.0;
    const uint32_t only = r->only;      /* --part K/N: part K alone */
    const uint32_t files = only || !r->part_paths ? 1 : r->n_parts;
    fprintf(f, "%s %s", r->dry_run ? "would write" : r->kept == files ? "kept (already "
            "there)" : "wrote",
            show(r->part_paths ? r->part_paths[only ? only - 1 : 0] : r->out).s);
    if (only) {
        size_t tensors;
        uint64_t bytes;
        part_totals(r, only - 1, &tensors, &bytes);
        fprintf(f, " (part %" PRIu32 " of %" PRIu32 ": %zu tensors, %.2f MiB)", only,
                r->n_parts, tensors, mib(bytes));
    } else if (r->part_paths && r->n_parts > 1) {
        fprintf(f, " and %" PRIu32 " more parts", r->n_parts - 1);
    }
    if (r->kept && r->kept < files)
        fprintf(f, " (%" PRIu32 " already there: kept)", r->kept);
    fprintf(f, " as %s: %zu tensors, %.2f MiB (%.2f bpw) -> %.2f MiB (%.2f bpw)",
            r->ftype->name, r->n_rows, mib(r->bytes_in), (double)r->bytes_in * 8 / el,
            mib(r->bytes_out), (double)r->bytes_out * 8 / el);
    if (r->fallbacks)
        fprintf(f, ", %zu fell back", r->fallbacks);
    if (r->device)
        fprintf(f, ", on %s", r->device);
    fprintf(f, r->dry_run ? "\n" : ", %.1f s\n", r->seconds);
}

static lc_code put_parts(const lc_job_quantize_result *r, lc_json_buf *b, lc_error *err) {
    lc_code rc = LC_OK;
    if (r->in_parts > 1)
        rc = lc_json_printf(b, err, ",\"in_parts\":%" PRIu32, r->in_parts);
    for (uint32_t k = 0; rc == LC_OK && r->part_paths && k < r->n_parts; k++) {
        size_t tensors;
        uint64_t bytes;
        part_totals(r, k, &tensors, &bytes);
        const char *open = k ? ",{\"path\":" : ",\"parts\":[{\"path\":";
        rc = lc_json_put(b, open, strlen(open), err);
        if (rc == LC_OK)
            rc = lc_json_put_display(b, r->part_paths[k], strlen(r->part_paths[k]), err);
        if (rc == LC_OK)
            rc = lc_json_printf(b, err, ",\"tensors\":%zu,\"bytes_out\":%" PRIu64 "}%s",
                                tensors, bytes, k + 1 == r->n_parts ? "]" : "");
    }
    return rc;
}

static lc_code put_row(const lc_job_quantize_result *r, size_t i, lc_json_buf *b,
                       lc_error *err) {
    const lc_job_quantize_row *w = &r->rows[i];
    lc_code rc = lc_json_put(b, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8, err);
    if (rc == LC_OK)
        rc = lc_json_put_display(b, w->name, strlen(w->name), err);
    if (rc == LC_OK)
        rc = lc_json_put(b, ",\"shape\":[", 10, err);
    for (uint32_t d = 0; rc == LC_OK && d < w->ndim; d++)
        rc = lc_json_printf(b, err, "%s%" PRIu64, d ? "," : "", w->shape[d]);
    if (rc == LC_OK)
        rc = lc_json_put(b, "]", 1, err);
    if (rc == LC_OK && r->part_paths)
        rc = lc_json_printf(b, err, ",\"part\":%" PRIu32, w->part + 1);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, ",\"from\":\"%s\",\"to\":\"%s\",\"wanted\":\"%s\","
                            "\"why\":\"%s\",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                            "}", lc_dtype_name(w->from), lc_dtype_name(w->to),
                            lc_dtype_name(w->wanted), w->why, w->bytes_in, w->bytes_out);
    return rc;
}

lc_code lc_job_quantize_json(const lc_job_quantize_result *r, char **text, size_t *len,
                             lc_error *err) {
    lc_json_buf b = { 0 };
    *text = NULL;
    *len = 0;
    lc_code rc = lc_json_put(&b, "{\"in\":", 6, err);
    if (rc == LC_OK)
        rc = lc_json_put_display(&b, r->in, strlen(r->in), err);
    if (rc == LC_OK)
        rc = lc_json_put(&b, ",\"out\":", 7, err);
    if (rc == LC_OK)
        rc = lc_json_put_display(&b, r->out, strlen(r->out), err);
    if (rc == LC_OK)
        rc = put_parts(r, &b, err);
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, ",\"type\":\"%s\",\"file_type\":%" PRIu32 ",\"dry_run\":%s,"
                            "\"tensors\":[", r->ftype->name, r->ftype->id,
                            r->dry_run ? "true" : "false");
    for (size_t i = 0; rc == LC_OK && i < r->n_rows; i++)
        rc = put_row(r, i, &b, err);
    const double el = r->elements ? (double)r->elements : 1.0;
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, "],\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                            ",\"elements\":%" PRIu64 ",\"bpw_in\":%.4f,\"bpw_out\":%.4f,"
                            "\"fallbacks\":%zu,\"seconds\":%.3f}\n", r->bytes_in, r->bytes_out,
                            r->elements, (double)r->bytes_in * 8 / el,
                            (double)r->bytes_out * 8 / el, r->fallbacks, r->seconds);
    if (rc != LC_OK) {
        lc_json_buf_free(&b);
        return rc;
    }
    *text = b.data;
    *len = b.len;
    return LC_OK;
}

lc_code lc_job_quantize_print(const lc_job_quantize_result *r, bool json, FILE *print,
                              FILE *summary, lc_error *err) {
    if (print && json) {
        char *text;
        size_t len;
        LC_TRY(lc_job_quantize_json(r, &text, &len, err));
        const bool ok = fwrite(text, 1, len, print) == len;
        lc_free(text);
        if (!ok)
            return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the report: %s",
                           strerror(errno));
    } else if (print && r->dry_run) {
        lc_job_quantize_print_plan(r, print);
    }
    FILE *f = r->dry_run && !json ? print : summary;
    if (f)
        lc_job_quantize_print_summary(r, f);
    return LC_OK;
}
