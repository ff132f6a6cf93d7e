/* jobs/model_inspect.c: open any model file, print what it holds. */
#include "jobs/model_inspect.h"

#include "formats/any.h"
#include "libconvert/inspect.h"

lc_code lc_job_model_inspect(const lc_job_inspect_opts *o, lc_progress *p, lc_error *err) {
    (void)p;
    lc_model *m = NULL;
    lc_any_info any;
    lc_code rc = lc_model_open_any_info(o->path, &m, &any, err);
    if (rc == LC_OK && o->print) {
        lc_inspect_info info = { o->path, any.format, any.file_size, any.header_size };
        rc = o->json ? lc_inspect_print_json(o->print, m, &info, err)
                     : lc_inspect_print_text(o->print, m, &info, err);
    }
    lc_model_free(m);
    return rc;
}
