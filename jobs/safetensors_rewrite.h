/* jobs/safetensors_rewrite.h: the safetensors-rewrite job. Reads safetensors (one
 * file, or a sharded checkpoint's folder or model.safetensors.index.json) and writes
 * every tensor and the metadata as one safetensors file, laid out byte for byte as the
 * reference writer lays it out; lossless unless asked to cast. */
#ifndef LC_JOBS_SAFETENSORS_REWRITE_H
#define LC_JOBS_SAFETENSORS_REWRITE_H

#include <stdbool.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/progress.h"

typedef struct lc_job_st_rewrite_opts {
    const char *in;              /* a .safetensors file, a folder, or an index */
    const char *out;             /* the .safetensors written */
    lc_dtype    cast;            /* F32, F16, BF16: floating tensors cast to it, rounding
                                  * to nearest even; LC_DT_INVALID keeps every dtype */
    bool        stringify_meta;  /* non-string metadata as JSON text, not refused */
    int         threads;         /* 0: one per core (at most 8) */
} lc_job_st_rewrite_opts;

/* True when PATH is read as a sharded checkpoint: a folder, or a name ending in
 * ".index.json". */
bool lc_job_st_is_sharded(const char *path);

/* Runs the job; OUT appears atomically. Codes: the safetensors reader's and writer's,
 * lc_model_cast's. p may be NULL. */
lc_code lc_job_safetensors_rewrite(const lc_job_st_rewrite_opts *o, lc_progress *p,
                                   lc_error *err);

#endif
