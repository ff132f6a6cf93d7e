/* jobs/model_verify_print.c: the public printers of a model-verify result
 * (model_verify_print.h) over the report writers of model_verify_text.c and
 * model_verify_json.c, which read the run's private figures. */
#include "jobs/model_verify_print.h"

#include "jobs/model_verify_impl.h"

/* A result without a run (zeroed, or freed) has nothing to print. */
static lc_code have_run(const lc_job_verify_result *r, lc_error *err) {
    return r && r->run ? LC_OK : lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "no model-verify result");
}

lc_code lc_job_verify_print_text(const lc_job_verify_result *r, FILE *f, lc_error *err) {
    LC_TRY(have_run(r, err));
    return lc_vf_print_text(r->run, f, err);
}

lc_code lc_job_verify_print_json(const lc_job_verify_result *r, FILE *f, lc_error *err) {
    LC_TRY(have_run(r, err));
    return lc_vf_print_json(r->run, f, err);
}

lc_code lc_job_verify_json(const lc_job_verify_result *r, char **text, size_t *len,
                           lc_error *err) {
    *text = NULL;
    *len = 0;
    LC_TRY(have_run(r, err));
    return lc_vf_json_text(r->run, text, len, err);
}
