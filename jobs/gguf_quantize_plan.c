/* jobs/gguf_quantize_plan.c: each tensor's type and the lazy chain that makes its bytes
 * (see gguf_quantize.h), and the report of what was done.
 *
 * The chain for one tensor, each step a lazy source reading the one before it:
 *   input -> [pread view, for a GGUF] -> checked (ggml's loader
 *   check) -> [F32: widened or dequantized] -> converted (quantized or cast) -> output,
 *   checked again (the check llama-quantize runs on each row it writes).
 * A tensor whose type does not change is its checked input. llama-quantize converts
 * everything through F32 the same way (llama_tensor_dequantize_impl, then
 * ggml_quantize_chunk), so the bytes are the same. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs/gguf_quantize_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/escape.h"
#include "libconvert/json.h"
#include "libconvert/view.h"
#include "quant/device.h"
#include "quant/quant.h"
#include "quant/validate.h"
#include "quant/view.h"

bool lc_job_quantize_writable(lc_dtype t) {
    return t == LC_DT_F32 || t == LC_DT_F16 || t == LC_DT_BF16 || lc_quant_writable(t);
}

static lc_code add(lc_model *m, const lc_tensor *like, lc_dtype dt, lc_tensor **t,
                   lc_error *err) {
    return lc_model_add_tensor(m, like->name, dt, like->ndim, like->shape, t, err);
}

/* like, cast to `to` (nothing when it has that dtype), as a tensor of m. */
static lc_code cast(lc_model *m, const lc_tensor *like, lc_dtype to, const lc_tensor **cur,
                    lc_error *err) {
    lc_tensor *t;
    LC_TRY(add(m, like, (*cur)->dtype, &t, err));
    LC_TRY(lc_view_forward(t, *cur, err));
    LC_TRY(lc_tensor_cast(t, to, err));
    *cur = t;
    return LC_OK;
}

/* The CPU's steps from the checked input *cur to `to`: widened or dequantized to F32,
 * then quantized (weighted by importance matrix entry im_entry, unless SIZE_MAX) or
 * cast. */
static lc_code convert_on_cpu(job *j, const lc_tensor *s, lc_dtype to, size_t im_entry,
                              const lc_tensor **cur, lc_error *err) {
    lc_tensor *t;
    if (lc_dtype_is_quant(s->dtype)) {
        LC_TRY(add(j->stage[QJ_F32], s, LC_DT_F32, &t, err));
        LC_TRY(lc_quant_view(t, *cur, s->dtype, false, err));
        *cur = t;
    } else if (lc_dtype_is_quant(to)) {
        LC_TRY(cast(j->stage[QJ_F32], s, LC_DT_F32, cur, err));
    }
    if (lc_dtype_is_quant(to)) {
        LC_TRY(add(j->stage[QJ_CONVERTED], s, to, &t, err));
        if (im_entry != SIZE_MAX)
            LC_TRY(lc_job_quantize_imatrix_view(j, t, *cur, to, im_entry, err));
        else
            LC_TRY(lc_quant_view(t, *cur, to, true, err));
        *cur = t;
        return LC_OK;
    }
    return cast(j->stage[QJ_CONVERTED], s, to, cur, err);
}

/* Adds the output tensor for input s, of type `to`, with ggml's dimensions (trailing 1s
 * dropped), reading through the chain above. */
static lc_code build(job *j, const lc_tensor *s, uint32_t part, lc_dtype to,
                     size_t im_entry, lc_tensor **outp, lc_error *err) {
    const lc_tensor *cur = s;
    lc_tensor *t;
    lc_model *out = j->parts ? j->parts[part] : j->out;
    int fd;
    uint64_t off;
    if (j->fd >= 0 && s->file_offset != LC_NO_OFFSET && !j->o->dry_run) {
        LC_TRY(add(j->stage[QJ_SOURCE], s, s->dtype, &t, err));
        LC_TRY(lc_view_file(t, j->fd, s->file_offset, j->o->in, err));
        cur = t;
    } else if (j->split && j->split->count > 1 && !j->o->dry_run &&
               lc_tensor_file_range(s, &fd, &off)) {
        /* A part of a split input: read with pread from its own map's descriptor. */
        LC_TRY(add(j->stage[QJ_SOURCE], s, s->dtype, &t, err));
        LC_TRY(lc_view_file(t, fd, off, j->split->paths[part], err));
        cur = t;
    }
    uint32_t nd = s->ndim;
    while (nd > 1 && s->shape[s->ndim - nd] == 1)     /* ggml_n_dims */
        nd--;
    const uint64_t *shape = s->shape + (s->ndim - nd);
    if (j->o->dry_run)      /* sizes only: no source (the kernels may not exist yet) */
        return lc_model_add_tensor(out, s->name, to, nd, shape, outp, err);
    if (to != s->dtype) {
        LC_TRY(add(j->stage[QJ_CHECKED], s, s->dtype, &t, err));
        LC_TRY(lc_validate_view(t, cur, err));
        cur = t;
        if (j->dev && lc_qdev_supports(j->dev, s->dtype, to) &&
            (im_entry == SIZE_MAX || lc_quant_imatrix_use(to) == LC_IMATRIX_IGNORES)) {
            /* The device runs convert_on_cpu's steps, with the same bytes (quant/device.h). */
            LC_TRY(add(j->stage[QJ_CONVERTED], s, to, &t, err));
            LC_TRY(lc_qdev_view(t, cur, j->dev, err));
            cur = t;
        } else {
            LC_TRY(convert_on_cpu(j, s, to, im_entry, &cur, err));
        }
    }
    LC_TRY(lc_model_add_tensor(out, s->name, to, nd, shape, &t, err));
    LC_TRY(lc_validate_view(t, cur, err));
    *outp = t;
    return LC_OK;
}

/* What libconvert needs to turn s into c->type; *im_entry: the importance matrix entry
 * it uses (SIZE_MAX: none). */
static lc_code can_convert(job *j, const lc_tensor *s, const lc_mix_choice *c,
                           size_t *im_entry, lc_error *err) {
    const lc_dtype from = s->dtype, to = c->type;
    *im_entry = SIZE_MAX;
    if (!j->o->dry_run)
        LC_TRY(lc_job_quantize_imatrix_for(j, s, to, im_entry, err));
    if (c->needs_imatrix && !j->o->dry_run && *im_entry == SIZE_MAX)
        lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s needs an importance matrix%s", lc_dtype_name(to),
                j->im ? ", and the one given has no entry for it" : " (--imatrix)");
    else if (to == from || j->o->dry_run)   /* a dry run shows what it cannot write */
        return LC_OK;
    else if (!lc_job_quantize_writable(to))
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "%s gives it %s, which libconvert "
                "cannot write yet", j->o->ftype->name, lc_dtype_name(to));
    else if (from != LC_DT_F32 && from != LC_DT_F16 && from != LC_DT_BF16 &&
             !(lc_dtype_is_quant(from) && lc_quant_supported(from)))
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "cannot convert %s data",
                lc_dtype_name(from));
    else if (lc_dtype_is_quant(from) && !j->o->allow_requantize)
        lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s already: requantizing it to %s needs "
                "--allow-requantize", lc_dtype_name(from), lc_dtype_name(to));
    else
        return LC_OK;
    lc_err_context(err, NULL, s->name);
    return err ? err->code : LC_E_ARG;
}

typedef struct placed {
    const lc_tensor *t;
    uint32_t part;
} placed;

static int by_loader_order(const void *a, const void *b) {
    return lc_mix_order(((const placed *)a)->t->name, ((const placed *)b)->t->name);
}

lc_code lc_job_quantize_plan(job *j, const lc_mix_model *mm, lc_error *err) {
    const size_t n = lc_model_tensor_count(j->in);
    placed *order = lc_calloc(n ? n : 1, sizeof *order);
    const char **names = lc_calloc(n ? n : 1, sizeof *names);
    lc_mix *mix = NULL;
    lc_code rc = LC_OK;
    if (!order || !names || !(j->rows = lc_calloc(n ? n : 1, sizeof *j->rows))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        order[i].t = lc_model_tensor(j->in, i);
        order[i].part = j->split && i < j->split->n_tensors ? j->split->part[i] : 0;
        names[i] = order[i].t->name;
    }
    /* With keep_split llama_model_quantize sorts by (part, offset in the part): the
     * model's own order (formats/gguf_split.h), so it stays. */
    if (!j->o->keep_split)
        qsort(order, n, sizeof *order, by_loader_order);
    if ((rc = lc_mix_new(&j->mo, mm, names, n, &mix, err)) != LC_OK)
        goto done;
    /* Every choice first, so that nothing is built (or written) for a plan that fails. */
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        qj_row *r = &j->rows[i];
        r->in = order[i].t;
        r->part = order[i].part;
        if ((rc = lc_mix_pick(mix, r->in, &r->c, err)) == LC_OK)
            rc = can_convert(j, r->in, &r->c, &r->im_entry, err);
    }
    /* An importance matrix none of whose kept entries names a tensor quantized here was
     * made for another model (llama-quantize would go on without it). */
    if (rc == LC_OK && j->im && j->im_n_kept > 0 && j->im_used == 0 && !j->o->dry_run) {
        size_t first = 0;
        while (!j->im_kept[first])
            first++;
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "none of its %zu entries names a "
                     "tensor that is quantized: an importance matrix for another model?",
                     j->im_n_kept);
        lc_err_context(err, j->o->imatrix, lc_imatrix_name(j->im, first));
    }
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        qj_row *r = &j->rows[i];
        rc = build(j, r->in, r->part, r->c.type, r->im_entry, &r->out, err);
        uint64_t numel = 0;
        lc_tensor_numel(r->in, &numel);
        j->elements += numel;
        j->bytes_in += r->in->nbytes;
        j->bytes_out += rc == LC_OK ? r->out->nbytes : 0;
        j->fallbacks += r->c.type != r->c.wanted;
        j->n_rows = i + 1;
    }
done:
    lc_mix_free(mix);
    lc_free(names);
    lc_free(order);
    return rc;
}

/* ---- the report ---- */

static const char *why_name(const lc_mix_choice *c, lc_dtype from) {
    if (c->type == from && c->why == LC_MIX_KEPT)
        return "kept";
    static const char *const names[] = { "kept", "base", "rule", "option" };
    return names[c->why];
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

static void shape_text(const lc_tensor *t, char *buf, size_t cap) {
    lc_shape_format(t, buf, cap);
}

/* keep_split: the file each part goes to, its tensors and bytes. */
static void part_totals(const job *j, uint32_t k, size_t *tensors, uint64_t *bytes) {
    *tensors = 0;
    *bytes = 0;
    for (size_t i = 0; i < j->n_rows; i++)
        if (j->rows[i].part == k) {
            ++*tensors;
            *bytes += j->rows[i].out->nbytes;
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

static void print_plan(const job *j, FILE *f) {
    for (uint32_t k = 0; j->part_paths && k < j->n_parts; k++) {
        size_t tensors;
        uint64_t bytes;
        part_totals(j, k, &tensors, &bytes);
        fprintf(f, "part %" PRIu32 "/%" PRIu32 ": %s: %zu tensors, %.3f MiB of tensor data\n",
                k + 1, j->n_parts, show(j->part_paths[k]).s, tensors, mib(bytes));
    }
    for (size_t i = 0; i < j->n_rows; i++) {
        const qj_row *r = &j->rows[i];
        char shape[64], fb[48] = "";
        shape_text(r->out, shape, sizeof shape);
        if (r->c.type != r->c.wanted)
            snprintf(fb, sizeof fb, " (%s does not fit its rows)", lc_dtype_name(r->c.wanted));
        fprintf(f, "[%4zu/%4zu] %-40s %-16s %-5s -> %-5s %-6s %10.3f MiB -> %10.3f MiB%s\n",
                i + 1, j->n_rows, show(r->in->name).s, shape, lc_dtype_name(r->in->dtype),
                lc_dtype_name(r->c.type), why_name(&r->c, r->in->dtype), mib(r->in->nbytes),
                mib(r->out->nbytes), fb);
    }
}

static lc_code put_json(const job *j, const char *out, double secs, FILE *f, lc_error *err) {
    lc_json_buf b = { 0 };
    const lc_job_quantize_opts *o = j->o;
    lc_code rc = lc_json_put(&b, "{\"in\":", 6, err);
    if (rc == LC_OK)
        rc = lc_json_put_display(&b, o->in, strlen(o->in), err);
    if (rc == LC_OK)
        rc = lc_json_put(&b, ",\"out\":", 7, err);
    if (rc == LC_OK)
        rc = lc_json_put_display(&b, out, strlen(out), err);
    if (rc == LC_OK && j->split && j->split->count > 1)
        rc = lc_json_printf(&b, err, ",\"in_parts\":%" PRIu32, j->split->count);
    for (uint32_t k = 0; rc == LC_OK && j->part_paths && k < j->n_parts; k++) {
        size_t tensors;
        uint64_t bytes;
        part_totals(j, k, &tensors, &bytes);
        const char *open = k ? ",{\"path\":" : ",\"parts\":[{\"path\":";
        rc = lc_json_put(&b, open, strlen(open), err);
        if (rc == LC_OK)
            rc = lc_json_put_display(&b, j->part_paths[k], strlen(j->part_paths[k]), err);
        if (rc == LC_OK)
            rc = lc_json_printf(&b, err, ",\"tensors\":%zu,\"bytes_out\":%" PRIu64 "}%s",
                                tensors, bytes, k + 1 == j->n_parts ? "]" : "");
    }
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, ",\"type\":\"%s\",\"file_type\":%" PRIu32 ",\"dry_run\":%s,"
                            "\"tensors\":[", o->ftype->name, o->ftype->id,
                            o->dry_run ? "true" : "false");
    for (size_t i = 0; rc == LC_OK && i < j->n_rows; i++) {
        const qj_row *r = &j->rows[i];
        rc = lc_json_put(&b, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8, err);
        if (rc == LC_OK)
            rc = lc_json_put_display(&b, r->in->name, strlen(r->in->name), err);
        if (rc == LC_OK)
            rc = lc_json_put(&b, ",\"shape\":[", 10, err);
        for (uint32_t d = 0; rc == LC_OK && d < r->out->ndim; d++)
            rc = lc_json_printf(&b, err, "%s%" PRIu64, d ? "," : "", r->out->shape[d]);
        if (rc == LC_OK)
            rc = lc_json_put(&b, "]", 1, err);
        if (rc == LC_OK && j->part_paths)
            rc = lc_json_printf(&b, err, ",\"part\":%" PRIu32, r->part + 1);
        if (rc == LC_OK)
            rc = lc_json_printf(&b, err, ",\"from\":\"%s\",\"to\":\"%s\",\"wanted\":\"%s\","
                                "\"why\":\"%s\",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                                "}", lc_dtype_name(r->in->dtype), lc_dtype_name(r->c.type),
                                lc_dtype_name(r->c.wanted), why_name(&r->c, r->in->dtype),
                                r->in->nbytes, r->out->nbytes);
    }
    const double el = j->elements ? (double)j->elements : 1.0;
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, "],\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                            ",\"elements\":%" PRIu64 ",\"bpw_in\":%.4f,\"bpw_out\":%.4f,"
                            "\"fallbacks\":%zu,\"seconds\":%.3f}\n", j->bytes_in, j->bytes_out,
                            j->elements, (double)j->bytes_in * 8 / el,
                            (double)j->bytes_out * 8 / el, j->fallbacks, secs);
    if (rc == LC_OK && fwrite(b.data, 1, b.len, f) != b.len)
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the report: %s",
                     strerror(errno));
    lc_json_buf_free(&b);
    return rc;
}

lc_code lc_job_quantize_report(const job *j, const char *out, lc_error *err) {
    const lc_job_quantize_opts *o = j->o;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double secs = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 - j->started;
    if (o->print && o->json)
        LC_TRY(put_json(j, out, secs, o->print, err));
    else if (o->print && o->dry_run)
        print_plan(j, o->print);
    FILE *f = o->dry_run && !o->json ? o->print : o->summary;
    if (f) {
        const double el = j->elements ? (double)j->elements : 1.0;
        const uint32_t only = o->split.part;    /* --part K/N: part K alone */
        const uint32_t files = only || !j->part_paths ? 1 : j->n_parts;
        fprintf(f, "%s %s", o->dry_run ? "would write" : j->kept == files ? "kept (already "
                "there)" : "wrote",
                show(j->part_paths ? j->part_paths[only ? only - 1 : 0] : out).s);
        if (only) {
            size_t tensors;
            uint64_t bytes;
            part_totals(j, only - 1, &tensors, &bytes);
            fprintf(f, " (part %" PRIu32 " of %" PRIu32 ": %zu tensors, %.2f MiB)", only,
                    j->n_parts, tensors, mib(bytes));
        } else if (j->part_paths && j->n_parts > 1) {
            fprintf(f, " and %" PRIu32 " more parts", j->n_parts - 1);
        }
        if (j->kept && j->kept < files)
            fprintf(f, " (%" PRIu32 " already there: kept)", j->kept);
        fprintf(f, " as %s: %zu tensors, %.2f MiB (%.2f bpw) -> %.2f MiB (%.2f bpw)",
                o->ftype->name, j->n_rows,
                mib(j->bytes_in), (double)j->bytes_in * 8 / el, mib(j->bytes_out),
                (double)j->bytes_out * 8 / el);
        if (j->fallbacks)
            fprintf(f, ", %zu fell back", j->fallbacks);
        if (j->dev)
            fprintf(f, ", on %s", lc_qdev_describe(j->dev));
        fprintf(f, o->dry_run ? "\n" : ", %.1f s\n", secs);
    }
    return LC_OK;
}
