/* jobs/pth2safetensors.c: checkpoint -> safetensors, one file or one per shard. */
#include "jobs/pth2safetensors.h"

#include "formats/safetensors.h"
#include "libconvert/alloc.h"
#include "libconvert/outdir.h"
#include "libconvert/convert.h"

void lc_job_pth2st_result_free(lc_job_pth2st_result *r) {
    if (!r)
        return;
    lc_model_free(r->model);
    r->model = NULL;
}

/* lc_pth_scan wants a function: the caller's, or one that drops every global. */
static void no_ref(void *ctx, const lc_pth_ref *r) {
    (void)ctx;
    (void)r;
}

/* As safetensors' convert script: "format": "pt" in the metadata. */
static lc_code write_one(lc_model *m, const char *path, const lc_job_pth2st_opts *o,
                         lc_progress *p, lc_error *err) {
    lc_st_write_opts wo = { .stringify_meta = true,    /* epoch = 5 becomes "5" */
                            .threads = o->threads };
    LC_TRY(lc_model_set_meta_str(m, "format", "pt", err));
    if (o->cast != LC_DT_INVALID)
        LC_TRY(lc_model_cast(m, o->cast, NULL, err));  /* lazy: converts while writing */
    return lc_safetensors_write(m, path, &wo, p, err);
}

/* A sharded IN (the whole index checked by the caller): one output per shard in the
 * folder o->out, then the index that names them. */
/* Sharded: one safetensors file per shard plus the index, built in a temporary folder
 * beside OUT and put in place only when every file is complete (libconvert/outdir.h),
 * so a failure or a signal leaves OUT as it was. */
static lc_code write_shards(const lc_job_pth2st_opts *o, lc_progress *p, lc_error *err) {
    char **files = NULL, path[4096], name[1024];
    size_t n = 0;
    lc_outdir *dir = NULL;
    lc_pth_index_out *ix = lc_pth_index_out_new();
    if (!ix)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = lc_outdir_open(o->out, &dir, err);
    if (rc == LC_OK)
        rc = lc_pth_index_shards(o->in, &files, &n, err);
    for (size_t i = 0; i < n; i++) {
        lc_model *m = NULL;
        lc_pth_shard_out_name(files[i], name, sizeof name);
        if (rc == LC_OK && (rc = lc_outdir_file(dir, name, path, sizeof path, err)) == LC_OK &&
            (rc = lc_pth_load(files[i], &o->pth, &m, err)) == LC_OK &&
            (rc = write_one(m, path, o, p, err)) == LC_OK)
            rc = lc_pth_index_out_add(ix, m, name, err);
        if (rc != LC_OK)   /* a source's failure: an offset in this shard */
            lc_err_context(err, files[i], NULL);
        lc_model_free(m);
        lc_free(files[i]);
    }
    lc_free(files);
    if (rc == LC_OK)
        rc = lc_outdir_file(dir, "model.safetensors.index.json", path, sizeof path, err);
    if (rc == LC_OK)
        rc = lc_pth_index_out_write(ix, path, err);
    lc_pth_index_out_free(ix);
    if (rc == LC_OK)
        return lc_outdir_commit(dir, err);
    lc_outdir_abort(dir);
    return rc;
}

lc_code lc_job_pth2safetensors(const lc_job_pth2st_opts *o, lc_progress *p,
                               lc_job_pth2st_result *res, lc_error *err) {
    if (res)
        res->model = NULL;
    if (o->mode == LC_PTH2ST_SCAN)
        return lc_pth_scan(o->in, o->on_ref ? o->on_ref : no_ref, o->ref_ctx, err);
    lc_model *m = NULL;
    lc_code rc = lc_pth_load(o->in, &o->pth, &m, err);   /* a sharded IN: every shard */
    if (rc == LC_OK && o->mode == LC_PTH2ST_LIST) {
        if (res) {
            res->model = m;     /* the list is its tensors */
            m = NULL;
        }
    } else if (rc == LC_OK && lc_pth_is_index(o->in))
        rc = write_shards(o, p, err);
    else if (rc == LC_OK && (rc = write_one(m, o->out, o, p, err)) != LC_OK)
        lc_err_context(err, o->in, NULL);   /* a source's failure: an offset in the input */
    lc_model_free(m);
    return rc;
}
