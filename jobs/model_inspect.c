/* jobs/model_inspect.c: open any model file for the report of what it holds. */
#include "jobs/model_inspect.h"

#include <string.h>

#include "formats/any.h"

void lc_job_inspect_result_free(lc_job_inspect_result *r) {
    if (!r)
        return;
    lc_model_free(r->model);
    memset(r, 0, sizeof *r);
}

lc_code lc_job_model_inspect(const lc_job_inspect_opts *o, lc_progress *p,
                             lc_job_inspect_result *res, lc_error *err) {
    (void)p;
    lc_model *m = NULL;
    lc_any_info any;
    if (res)
        memset(res, 0, sizeof *res);
    /* Lenient: a file llama.cpp would refuse is still shown, with why (the warnings);
     * when our own readers refuse it, the first reason is the job's error. */
    lc_code rc = lc_model_open_any_lenient(o->path, &m, &any, err);
    const bool opened = rc == LC_OK;
    const lc_warning *refusal = opened ? lc_model_first_refusal(m) : NULL;
    if (refusal) {
        if (err && err->code == LC_OK) {
            *err = refusal->e;
            lc_err_context(err, o->path, NULL);
        }
        rc = refusal->e.code;
    }
    if (opened && res) {
        res->model = m;
        res->info = (lc_inspect_info){ o->path, any.format, any.file_size, any.header_size };
        return rc;
    }
    lc_model_free(m);
    return rc;
}
