/* jobs/pth2safetensors.h: the pth2safetensors job. Converts a PyTorch checkpoint (zip
 * or legacy .pth/.pt/.bin) to one safetensors file, or a sharded Hugging Face folder
 * to a folder of safetensors shards plus model.safetensors.index.json; or, writing
 * nothing, lists its tensors or every global its pickles name. The pickle is
 * interpreted, never run: a global off the allowlist stops the job. */
#ifndef LC_JOBS_PTH2SAFETENSORS_H
#define LC_JOBS_PTH2SAFETENSORS_H

#include <stdio.h>

#include "formats/pth.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/progress.h"

typedef enum lc_job_pth2st_mode {
    LC_PTH2ST_CONVERT = 0,   /* write OUT */
    LC_PTH2ST_LIST,          /* print "name\tdtype\tshape" per tensor */
    LC_PTH2ST_SCAN,          /* print "entry @ 0xOFF: module.name allowed|FORBIDDEN" per
                              * global, then check the checkpoint loads */
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
    FILE              *print;    /* LIST and SCAN lines go here; NULL prints nothing */
} lc_job_pth2st_opts;

/* Runs the job. Every file written has "format": "pt" in __metadata__, as
 * safetensors' convert script writes, and appears atomically. Codes: lc_pth_load's and
 * lc_safetensors_write's, LC_E_IO when OUT's folder cannot be made; in SCAN mode
 * LC_E_FORBIDDEN when a global is off the allowlist (every global printed first),
 * else what loading returns. p may be NULL. */
lc_code lc_job_pth2safetensors(const lc_job_pth2st_opts *o, lc_progress *p, lc_error *err);

#endif
