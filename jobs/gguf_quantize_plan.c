/* jobs/gguf_quantize_plan.c: each tensor's type and the lazy chain that makes its bytes
 * (see gguf_quantize.h), and the result that says what was done.
 *
 * The chain for one tensor, each step a lazy source reading the one before it:
 *   input -> [pread view, for a GGUF] -> checked (ggml's loader
 *   check) -> [F32: widened or dequantized] -> converted (quantized or cast) -> output,
 *   checked again (the check llama-quantize runs on each row it writes); the conversion
 *   in the middle is quant/chain.h's, which every converter of libconvert shares.
 * A tensor whose type does not change is its checked input. llama-quantize converts
 * everything through F32 the same way (llama_tensor_dequantize_impl, then
 * ggml_quantize_chunk), so the bytes are the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs/gguf_quantize_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/view.h"
#include "quant/chain.h"
#include "quant/device.h"
#include "quant/quant.h"
#include "quant/validate.h"

bool lc_job_quantize_writable(lc_dtype t) {
    return t == LC_DT_F32 || t == LC_DT_F16 || t == LC_DT_BF16 || lc_quant_writable(t);
}

static lc_code add(lc_model *m, const lc_tensor *like, lc_dtype dt, lc_tensor **t,
                   lc_error *err) {
    return lc_model_add_tensor(m, like->name, dt, like->ndim, like->shape, t, err);
}

/* Where quant/chain.h's steps for one tensor live: each in its stage's model, under the
 * tensor's name. */
typedef struct steps {
    job        *j;
    const char *name;
    size_t      im_entry;   /* its importance matrix entry, or SIZE_MAX */
} steps;

static lc_code add_step(void *ctx, lc_qchain_step step, const lc_tensor *like, lc_dtype dt,
                        lc_tensor **t, lc_error *err) {
    const steps *s = ctx;
    return lc_model_add_tensor(s->j->stage[step == LC_QCHAIN_F32 ? QJ_F32 : QJ_CONVERTED],
                               s->name, dt, like->ndim, like->shape, t, err);
}

static lc_code weighted(void *ctx, lc_tensor *t, const lc_tensor *cur, lc_dtype to,
                        lc_error *err) {
    const steps *s = ctx;
    return lc_job_quantize_imatrix_view(s->j, t, cur, to, s->im_entry, err);
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
        /* A device runs the CPU's steps with the same bytes (quant/device.h), unweighted
         * only: the weights of an importance matrix are applied on the CPU. */
        steps st = { .j = j, .name = s->name, .im_entry = im_entry };
        const lc_qchain qc = {
            .add = add_step, .quantize = im_entry != SIZE_MAX ? weighted : NULL, .ctx = &st,
            .dev = im_entry == SIZE_MAX || lc_quant_imatrix_use(to) == LC_IMATRIX_IGNORES ?
                   j->dev : NULL };
        LC_TRY(lc_qchain_to(&qc, &cur, to, err));
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

/* ---- the result ---- */

static const char *why_name(const lc_mix_choice *c, lc_dtype from) {
    if (c->type == from && c->why == LC_MIX_KEPT)
        return "kept";
    static const char *const names[] = { "kept", "base", "rule", "option" };
    return names[c->why];
}

void lc_job_quantize_result_free(lc_job_quantize_result *r) {
    if (!r)
        return;
    for (size_t i = 0; r->rows && i < r->n_rows; i++)
        lc_free(r->rows[i].name);
    lc_free(r->rows);
    for (uint32_t k = 0; r->part_paths && k < r->n_parts; k++)
        lc_free(r->part_paths[k]);
    lc_free(r->part_paths);
    lc_free(r->in);
    lc_free(r->out);
    lc_free(r->device);
    memset(r, 0, sizeof *r);
}

/* Copies of what the job's models hold, so the result outlives them. */
static lc_code fill_rows(const job *j, lc_job_quantize_result *r, lc_error *err) {
    if (!(r->rows = lc_calloc(j->n_rows ? j->n_rows : 1, sizeof *r->rows)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (; r->n_rows < j->n_rows; r->n_rows++) {
        const qj_row *q = &j->rows[r->n_rows];
        lc_job_quantize_row *w = &r->rows[r->n_rows];
        if (!(w->name = lc_strdup(q->in->name)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        w->from = q->in->dtype;
        w->to = q->c.type;
        w->wanted = q->c.wanted;
        w->why = why_name(&q->c, q->in->dtype);
        w->ndim = q->out->ndim;
        memcpy(w->shape, q->out->shape, sizeof w->shape);
        w->part = q->part;
        w->bytes_in = q->in->nbytes;
        w->bytes_out = q->out->nbytes;
    }
    return LC_OK;
}

lc_code lc_job_quantize_result_fill(const job *j, const char *out, lc_job_quantize_result *r,
                                    lc_error *err) {
    const lc_job_quantize_opts *o = j->o;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    *r = (lc_job_quantize_result){
        .ftype = o->ftype, .dry_run = o->dry_run,
        .in_parts = j->split ? j->split->count : 1, .n_parts = j->n_parts,
        .only = o->split.part, .kept = j->kept, .bytes_in = j->bytes_in,
        .bytes_out = j->bytes_out, .elements = j->elements, .fallbacks = j->fallbacks,
        .seconds = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 - j->started };
    lc_code rc = LC_OK;
    if (!(r->in = lc_strdup(o->in)) || !(r->out = lc_strdup(out)) ||
        (j->dev && !(r->device = lc_strdup(lc_qdev_describe(j->dev)))))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK && j->part_paths) {
        if (!(r->part_paths = lc_calloc(j->n_parts, sizeof *r->part_paths)))
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        for (uint32_t k = 0; rc == LC_OK && k < j->n_parts; k++)
            if (!(r->part_paths[k] = lc_strdup(j->part_paths[k])))
                rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    if (rc == LC_OK)
        rc = fill_rows(j, r, err);
    if (rc != LC_OK)
        lc_job_quantize_result_free(r);
    return rc;
}
