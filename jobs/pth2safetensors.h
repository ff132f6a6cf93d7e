/* jobs/pth2safetensors.h: the pth2safetensors job. Converts a PyTorch checkpoint (zip
 * or legacy .pth/.pt/.bin) to one safetensors file, or a sharded Hugging Face folder
 * to a folder of safetensors shards plus model.safetensors.index.json; or, writing
 * nothing, lists its tensors or every global its pickles name. The pickle is
 * interpreted, never run: a global off the allowlist stops the job. */
#ifndef LC_JOBS_PTH2SAFETENSORS_H
#define LC_JOBS_PTH2SAFETENSORS_H

#include "formats/pth.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"

typedef enum lc_job_pth2st_mode {
    LC_PTH2ST_CONVERT = 0,   /* write OUT */
    LC_PTH2ST_LIST,          /* the tensors (the result's model) */
    LC_PTH2ST_SCAN,          /* every global the pickles name (on_ref), then check the
                              * checkpoint loads */
} lc_job_pth2st_mode;

typedef struct lc_job_pth2st_opts {
    const char        *in;       /* a checkpoint, or a sharded folder or its index */
    const char        *out;      /* CONVERT: a .safetensors file, or for a sharded IN a
                                  * folder (created when absent) */
    lc_job_pth2st_mode mode;
    lc_pth_opts        pth;      /* which dict holds the tensors, --dedupe */
    lc_dtype           cast;     /* F32, F16, BF16: floating tensors cast to it;
                                  * LC_DT_INVALID keeps every dtype */
    int                threads;  /* 0: one per core (at most 8) */
    lc_pth_scan_fn     on_ref;   /* SCAN: called for each global as the scan meets it
                                  * (a pickle may name any number: streamed, never
                                  * held); NULL: none */
    void              *ref_ctx;
} lc_job_pth2st_opts;

/* LIST's answer: the checkpoint's tensors. */
typedef struct lc_job_pth2st_result {
    lc_model *model;            /* LIST: the checkpoint as loaded (owned), or NULL */
} lc_job_pth2st_result;

/* Frees the model and zeroes r; NULL-safe. */
void lc_job_pth2st_result_free(lc_job_pth2st_result *r);

/* Runs the job (res may be NULL: LIST then only loads). Every file written has "format": "pt" in __metadata__, as
 * safetensors' convert script writes, and appears atomically. Codes: lc_pth_load's and
 * lc_safetensors_write's, LC_E_IO when OUT's folder cannot be made; in SCAN mode
 * LC_E_FORBIDDEN when a global is off the allowlist (every global given to on_ref first),
 * else what loading returns. p may be NULL. */
lc_code lc_job_pth2safetensors(const lc_job_pth2st_opts *o, lc_progress *p,
                               lc_job_pth2st_result *res, lc_error *err);

#endif
