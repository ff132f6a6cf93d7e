/* jobs/model_inspect.h: the model-inspect job. Opens any model file the library reads
 * (a safetensors file or sharded checkpoint, a GGUF, a PyTorch checkpoint; formats/
 * any.h tells which) for the report of its format, header size, metadata and tensor
 * table (name, dtype, shape, bytes, file offset) as text or as one JSON object
 * (libconvert/inspect.h, printed by the caller). A GGUF is opened leniently: a file llama.cpp or the spec
 * would refuse is still shown, with a warning for each rule it breaks; when our own
 * readers refuse it, the report is printed and the job then fails with that error. */
#ifndef LC_JOBS_MODEL_INSPECT_H
#define LC_JOBS_MODEL_INSPECT_H


#include "libconvert/error.h"
#include "libconvert/inspect.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"

typedef struct lc_job_inspect_opts {
    const char *path;    /* the file (or a sharded checkpoint's folder or index) */
} lc_job_inspect_opts;

/* What the report shows: the model as opened and where it came from. The report itself
 * is libconvert/inspect.h's (lc_inspect_print_text, lc_inspect_print_json). */
typedef struct lc_job_inspect_result {
    lc_model        *model;     /* opened leniently (owned), or NULL */
    lc_inspect_info  info;      /* the path, format, file and header sizes */
} lc_job_inspect_result;

/* Frees the model and zeroes r; NULL-safe. */
void lc_job_inspect_result_free(lc_job_inspect_result *r);

/* Runs the job into *res (may be NULL: only checks that PATH opens). Codes: the reader's
 * (lc_model_open_any_lenient); a refusal it only recorded comes back too, with *res
 * filled, since the report shows such a file and then fails with that error. p is
 * unused today (opening reads headers only); it is here so that every job is called
 * the same way. */
lc_code lc_job_model_inspect(const lc_job_inspect_opts *o, lc_progress *p,
                             lc_job_inspect_result *res, lc_error *err);

#endif
