/* jobs/safetensors2gguf.c: HF folder -> model GGUF, or safetensors file -> container. */
#include "jobs/safetensors2gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "formats/gguf.h"
#include "formats/gguf_bare.h"
#include "hf/meta.h"
#include "jobs/gguf_quantize.h"
#include "formats/safetensors.h"
#include "libconvert/alloc.h"

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

lc_code lc_job_safetensors2gguf_check(const lc_job_st2gguf_opts *o, lc_error *err) {
    if (o->device)
        LC_TRY(lc_qdev_parse(o->device, err));
    if (is_dir(o->in))
        return LC_OK;
    if (o->device && strcmp(o->device, "cpu") != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "a bare .safetensors input takes no "
                       "--device (its tensors are copied, not converted)");
    if (!o->out)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "a bare .safetensors input needs OUT");
    if (o->folder_options)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET,
                       "a bare .safetensors input takes no Hugging Face folder options");
    return LC_OK;
}

void lc_job_st2gguf_outtypes(char *buf, size_t cap) {
    size_t n = lc_ftype_names(0, true, true, "|", buf, cap > 5 ? cap - 5 : 0);
    snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "|auto");
}

lc_code lc_job_st2gguf_outtype(const char *name, lc_job_st2gguf_opts *o, lc_error *err) {
    const lc_ftype *f = lc_ftype_by_name(name);
    o->quantize = NULL;
    o->hf.outtype = LC_DT_INVALID;
    if (strcasecmp(name, "auto") == 0)
        return LC_OK;
    if (f && lc_ftype_available(f) && (f->flags & LC_FTYPE_OUTTYPE)) {
        o->hf.outtype = f->base;
        return LC_OK;
    }
    if (f && lc_ftype_available(f)) {
        o->quantize = f;
        return LC_OK;
    }
    char names[512];
    lc_job_st2gguf_outtypes(names, sizeof names);
    return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--outtype wants one of %s, not '%.40s'", names,
                   name);
}

void lc_job_st2gguf_result_free(lc_job_st2gguf_result *r) {
    if (!r)
        return;
    lc_free(r->out);
    lc_hf_plan_free(&r->plan);
    lc_model_free(r->model);
    for (uint32_t k = 0; r->part_paths && k < r->n_parts; k++)
        lc_free(r->part_paths[k]);
    lc_free(r->part_paths);
    lc_free(r->part_tensors);
    lc_job_quantize_result_free(&r->quantize);
    memset(r, 0, sizeof *r);
}

/* A llama-quantize TYPE: the folder as converted (source dtype), named and overridden
 * as any conversion, then quantized by the gguf-quantize job, which takes m. */
static lc_code quantize_folder(const lc_job_st2gguf_opts *o, lc_model *m, const char *out,
                               lc_qdev *dev, lc_progress *p, lc_job_st2gguf_result *res,
                               lc_error *err) {
    const lc_job_quantize_opts q = { .in = o->in, .model = m, .out = out, .ftype = o->quantize,
                                     .dry_run = o->dry_run, .threads = o->threads,
                                     .dev = dev, .split = o->split };
    lc_job_quantize_result qr;
    const lc_code rc = lc_job_gguf_quantize(&q, p, &qr, err);
    if (rc == LC_OK && res) {
        res->quantize = qr;
        res->quantized = true;
    } else {
        lc_job_quantize_result_free(&qr);
    }
    return rc;
}

/* The dry run's output: OUT, or the parts the split options make of m. */
static lc_code plan_out(const lc_job_st2gguf_opts *o, const lc_model *m,
                        lc_job_st2gguf_result *res, lc_error *err) {
    char prefix[4096];
    lc_gguf_split_set *s = NULL;
    if (!o->split.split)
        return LC_OK;
    LC_TRY(lc_gguf_split_prefix_of(res->out, prefix, sizeof prefix, err));
    LC_TRY(lc_gguf_split_set_new(m, prefix, &o->split, &s, err));
    lc_code rc = LC_OK;
    if (!(res->part_paths = lc_calloc(s->count, sizeof *res->part_paths)) ||
        !(res->part_tensors = lc_calloc(s->count, sizeof *res->part_tensors)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (uint32_t k = 0; rc == LC_OK && k < s->count; k++, res->n_parts = k) {
        res->part_tensors[k] = lc_model_tensor_count(s->models[k]);
        if (!(res->part_paths[k] = lc_strdup(s->paths[k])))
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    lc_gguf_split_set_free(s);
    return rc;
}

/* The folder: build, override, name OUT, then plan (dry run) or write. The device
 * (dev, or NULL) is used by the tensors' views: it outlives m. */
static lc_code from_folder(const lc_job_st2gguf_opts *o, lc_qdev *dev, lc_progress *p,
                           lc_job_st2gguf_result *res, lc_error *err) {
    lc_model *m = NULL;
    char name[512], path[4096];
    const char *out = o->out;
    lc_hf_opts ho = o->hf;
    const bool quantize = o->quantize && !ho.vocab_only;
    ho.plan = o->dry_run && !quantize && res ? &res->plan : NULL;
    /* A TYPE: the quantize job converts. A dry run reads nothing: its model (kept in the
     * result, past the device) plans the same tensors without it. */
    ho.device = quantize || o->dry_run ? NULL : dev;
    lc_code rc = lc_hf_to_gguf(o->in, &ho, &m, err);
    for (size_t i = 0; rc == LC_OK && i < o->n_overrides; i++)
        rc = lc_hf_meta_override(m, o->overrides[i], err);
    if (rc == LC_OK && quantize) {      /* the default name says the TYPE */
        lc_value ft = lc_value_uint(LC_VT_U32, o->quantize->id);
        rc = lc_model_set_meta(m, "general.file_type", &ft, err);
    }
    if (rc == LC_OK && (!out || is_dir(out))) {
        rc = lc_hf_default_name(m, ho.vocab_only, name, sizeof name, err);
        snprintf(path, sizeof path, "%s/%s", out ? out : o->in, name);
        out = path;
    }
    if (rc == LC_OK && res && !(res->out = lc_strdup(out)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK && quantize)
        return quantize_folder(o, m, out, dev, p, res, err);     /* takes m */
    if (rc == LC_OK && o->dry_run && res) {
        rc = plan_out(o, m, res, err);
        res->out_planned = rc == LC_OK;
        res->model = m;     /* its keys are the plan's */
        m = NULL;
    } else if (rc == LC_OK && !o->dry_run) {
        const lc_gguf_write_opts wo = { .threads = o->threads,
                                        .chunk_bytes = dev ? LC_QDEV_CHUNK_BYTES : 0 };
        rc = lc_gguf_split_write(m, out, &o->split, &wo, p, NULL, err);
        if (rc != LC_OK)
            lc_err_context(err, o->in, NULL);   /* a failed source read: the input */
    }
    lc_model_free(m);
    return rc;
}

/* A bare file: its tensors and __metadata__ as a GGUF container. */
static lc_code from_file(const lc_job_st2gguf_opts *o, lc_progress *p, lc_error *err) {
    lc_model *m = NULL;
    const lc_gguf_write_opts wo = { .threads = o->threads };
    lc_code rc = lc_safetensors_load(o->in, &m, err);
    if (rc == LC_OK)
        rc = lc_gguf_bare_encode(m, err);
    if (rc == LC_OK)
        rc = lc_gguf_split_write(m, o->out, &o->split, &wo, p, NULL, err);
    if (rc != LC_OK)
        lc_err_context(err, o->in, NULL);       /* a failed source read: the input */
    lc_model_free(m);
    return rc;
}

lc_code lc_job_safetensors2gguf(const lc_job_st2gguf_opts *o, lc_progress *p,
                                lc_job_st2gguf_result *res, lc_error *err) {
    if (res)
        *res = (lc_job_st2gguf_result){ .dry_run = o->dry_run };
    LC_TRY(lc_job_safetensors2gguf_check(o, err));
    if (!is_dir(o->in))
        return from_file(o, p, err);
    lc_qdev *dev = NULL;
    LC_TRY(lc_qdev_open(o->device, &dev, err));
    const lc_code rc = from_folder(o, dev, p, res, err);
    lc_qdev_close(dev);     /* after every view that used it */
    return rc;
}
