/* jobs/gguf_split.c: gguf-split --split and --merge (see gguf_split.h); the plan and the
 * parts are formats/gguf_split.c's, shared with every other writer. */
#include "jobs/gguf_split.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/gguf.h"
#include "libconvert/alloc.h"

void lc_job_gguf_split_result_free(lc_job_gguf_split_result *r) {
    if (!r)
        return;
    for (uint32_t k = 0; r->part_paths && k < r->n_parts; k++)
        lc_free(r->part_paths[k]);
    lc_free(r->part_paths);
    lc_free(r->part_tensors);
    lc_free(r->part_bytes);
    lc_free(r->out);
    memset(r, 0, sizeof *r);
}

/* gguf-split's print_info figures: per part the size of its header (gguf_get_meta_size:
 * keys, tensor infos, padding) plus its tensors' bytes, unpadded. */
static lc_code plan(const lc_gguf_split_set *s, lc_job_gguf_split_result *r, lc_error *err) {
    if (!(r->part_paths = lc_calloc(s->count, sizeof *r->part_paths)) ||
        !(r->part_tensors = lc_calloc(s->count, sizeof *r->part_tensors)) ||
        !(r->part_bytes = lc_calloc(s->count, sizeof *r->part_bytes)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    r->n_parts = s->count;
    for (uint32_t k = 0; k < s->count; k++, r->n_figured = k) {
        uint8_t *hdr;
        size_t len;
        if (!(r->part_paths[k] = lc_strdup(s->paths[k])))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        LC_TRY(lc_gguf_header(s->models[k], &hdr, &len, NULL, err));
        lc_free(hdr);
        uint64_t total = len;
        const size_t n = lc_model_tensor_count(s->models[k]);
        for (size_t i = 0; i < n; i++)
            total += lc_model_tensor(s->models[k], i)->nbytes;
        r->part_tensors[k] = n;
        r->part_bytes[k] = total;
    }
    r->planned = true;
    return LC_OK;
}

static lc_code split(const lc_job_gguf_split_opts *o, const lc_model *m, lc_progress *p,
                     lc_job_gguf_split_result *r, lc_error *err) {
    lc_gguf_split_set *s = NULL;
    const lc_gguf_write_opts wo = { .threads = o->threads };
    LC_TRY(lc_gguf_split_set_new(m, o->out, &o->split, &s, err));
    lc_code rc = plan(s, r, err);
    if (rc == LC_OK && !o->dry_run)
        rc = lc_gguf_write_parts((const lc_model *const *)s->models,
                                 (const char *const *)s->paths, s->count, &o->split, &wo, p,
                                 &r->kept, err);
    r->only = o->split.part;
    r->tensors = lc_model_tensor_count(m);
    lc_gguf_split_set_free(s);
    return rc;
}

static lc_code merge(const lc_job_gguf_split_opts *o, const lc_model *m, lc_progress *p,
                     lc_job_gguf_split_result *r, lc_error *err) {
    lc_model *mr = NULL;
    const lc_gguf_write_opts wo = { .threads = o->threads };
    LC_TRY(lc_gguf_split_merged(m, &mr, err));
    const lc_value *c = lc_model_find_meta(m, LC_GGUF_SPLIT_COUNT);
    lc_code rc = o->dry_run ? LC_OK : lc_gguf_write(mr, o->out, &wo, p, err);
    r->n_parts = (uint32_t)c->u;
    r->tensors = lc_model_tensor_count(mr);
    lc_model_free(mr);
    return rc;
}

static lc_code run(const lc_job_gguf_split_opts *o, lc_progress *p, lc_job_gguf_split_result *r,
                   lc_error *err) {
    struct stat st;
    if (o->merge && lstat(o->out, &st) == 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "OUT %.200s exists already; gguf-split "
                       "--merge does not replace a file", o->out);
    if (o->merge && errno != ENOENT)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot look at OUT %.200s: %s", o->out,
                       strerror(errno));
    lc_model *m = NULL;
    lc_code rc = lc_gguf_split_load(o->in, &m, NULL, err);
    if (rc == LC_OK)
        rc = o->merge ? merge(o, m, p, r, err) : split(o, m, p, r, err);
    if (rc != LC_OK)
        lc_err_context(err, o->in, NULL);
    lc_model_free(m);
    return rc;
}

lc_code lc_job_gguf_split(const lc_job_gguf_split_opts *o, lc_progress *p,
                          lc_job_gguf_split_result *res, lc_error *err) {
    lc_job_gguf_split_result own;
    lc_job_gguf_split_result *r = res ? res : &own;
    *r = (lc_job_gguf_split_result){ .merge = o->merge, .dry_run = o->dry_run };
    lc_code rc = LC_OK;
    if (!(r->out = lc_strdup(o->out)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK)
        rc = run(o, p, r, err);
    if (!res)
        lc_job_gguf_split_result_free(&own);
    return rc;
}
