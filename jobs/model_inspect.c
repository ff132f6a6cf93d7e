/* jobs/model_inspect.c: open any model file, print what it holds. */
#include "jobs/model_inspect.h"

#include "formats/any.h"
#include "libconvert/inspect.h"

lc_code lc_job_model_inspect(const lc_job_inspect_opts *o, lc_progress *p, lc_error *err) {
    (void)p;
    lc_model *m = NULL;
    lc_any_info any;
    /* Lenient: a file llama.cpp would refuse is still shown, with why (the warnings);
     * when our own readers refuse it, the first reason is the job's error. */
    lc_code rc = lc_model_open_any_lenient(o->path, &m, &any, err);
    if (rc == LC_OK && o->print) {
        lc_inspect_info info = { o->path, any.format, any.file_size, any.header_size };
        rc = o->json ? lc_inspect_print_json(o->print, m, &info, err)
                     : lc_inspect_print_text(o->print, m, &info, err);
    }
    const lc_warning *refusal = rc == LC_OK ? lc_model_first_refusal(m) : NULL;
    if (refusal) {
        if (err && err->code == LC_OK) {
            *err = refusal->e;
            lc_err_context(err, o->path, NULL);
        }
        rc = refusal->e.code;
    }
    lc_model_free(m);
    return rc;
}
