/* jobs/gguf2safetensors.h: the gguf2safetensors job. Writes a GGUF as one safetensors
 * file. A model GGUF (general.architecture and token_embd.weight, as safetensors2gguf
 * writes from a Hugging Face folder) gets its Hugging Face tensor names back, the
 * inverse Q/K permutation and one dtype, and no metadata; any other GGUF is a
 * container: its tensors, the dtypes safetensors2gguf widened restored, its metadata
 * in __metadata__ (non-strings as JSON text). */
#ifndef LC_JOBS_GGUF2SAFETENSORS_H
#define LC_JOBS_GGUF2SAFETENSORS_H

#include <stdbool.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"

typedef struct lc_job_gguf2st_opts {
    const char *in;       /* the .gguf */
    const char *out;      /* the .safetensors */
    lc_dtype    dtype;    /* a model's tensors as F32, F16 or BF16; LC_DT_INVALID keeps
                           * F32/F16/BF16 and dequantizes block types to F32 */
    int         threads;  /* 0: one per core (at most 8) */
} lc_job_gguf2st_opts;

/* True when m (a loaded GGUF) is a model that goes back to Hugging Face names: it has
 * general.architecture and token_embd.weight. Anything else is a container, even with
 * an architecture key. */
bool lc_job_gguf_is_model(const lc_model *m);

/* Runs the job; OUT appears atomically. Codes: the GGUF reader's, lc_hf_from_gguf's,
 * lc_gguf_bare_decode's and the writer's; LC_E_ARG for a dtype with a container. A
 * failure while reading names IN. p may be NULL. */
lc_code lc_job_gguf2safetensors(const lc_job_gguf2st_opts *o, lc_progress *p, lc_error *err);

#endif
