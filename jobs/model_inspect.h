/* jobs/model_inspect.h: the model-inspect job. Opens any model file the library reads
 * (a safetensors file or sharded checkpoint, a GGUF, a PyTorch checkpoint; formats/
 * any.h tells which) and prints its format, header size, metadata and tensor table
 * (name, dtype, shape, bytes, file offset) as text or as one JSON object
 * (libconvert/inspect.h). A GGUF is opened leniently: a file llama.cpp or the spec
 * would refuse is still shown, with a warning for each rule it breaks; when our own
 * readers refuse it, the report is printed and the job then fails with that error. */
#ifndef LC_JOBS_MODEL_INSPECT_H
#define LC_JOBS_MODEL_INSPECT_H

#include <stdbool.h>
#include <stdio.h>

#include "libconvert/error.h"
#include "libconvert/progress.h"

typedef struct lc_job_inspect_opts {
    const char *path;    /* the file (or a sharded checkpoint's folder or index) */
    bool        json;    /* one JSON object instead of text */
    FILE       *print;   /* where the report goes; NULL only checks that PATH opens */
} lc_job_inspect_opts;

/* Runs the job. Codes: the reader's (lc_model_open_any_lenient; a refusal it only
 * recorded comes back after the report), and LC_E_IO when the report cannot be written. p is unused today (opening reads headers only); it is
 * here so that every job is called the same way. */
lc_code lc_job_model_inspect(const lc_job_inspect_opts *o, lc_progress *p, lc_error *err);

#endif
