/* jobs/model_verify_print.h: model-verify's report of a run (jobs/model_verify.h), as
 * the tool prints it: the text report, or the JSON object of --json. The job prints
 * nothing; the tool and the foreign interface (jobs/ffi.h) call these with its result.
 * Names and values taken from the files are escaped for a terminal (text) or as JSON
 * \u escapes (JSON). */
#ifndef LC_JOBS_MODEL_VERIFY_PRINT_H
#define LC_JOBS_MODEL_VERIFY_PRINT_H

#include <stddef.h>
#include <stdio.h>

#include "jobs/model_verify.h"
#include "libconvert/error.h"

/* The text report to f. LC_E_IO when f takes it short; LC_E_NOMEM. */
lc_code lc_job_verify_print_text(const lc_job_verify_result *r, FILE *f, lc_error *err);

/* The JSON object with its newline to f, written as it grows (a model of many tensors
 * is never held whole). LC_E_IO, LC_E_NOMEM. */
lc_code lc_job_verify_print_json(const lc_job_verify_result *r, FILE *f, lc_error *err);

/* The same object in memory: *text (NUL-terminated, *len bytes without it; lc_free it).
 * LC_E_NOMEM. */
lc_code lc_job_verify_json(const lc_job_verify_result *r, char **text, size_t *len,
                           lc_error *err);

#endif
