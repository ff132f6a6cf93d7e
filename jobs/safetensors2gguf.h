/* jobs/safetensors2gguf.h: the safetensors2gguf job. A Hugging Face model folder
 * (config.json beside the weights) or Meta's original layout becomes a GGUF that
 * llama.cpp runs, as convert_hf_to_gguf.py writes it (hf/hf.h), with optional
 * metadata overrides, a default output name from the naming convention, and a dry run
 * that prints the plan instead of writing. A bare .safetensors file becomes a GGUF
 * container instead: the same tensors, dtypes GGUF lacks widened losslessly and
 * recorded, no architecture; gguf2safetensors reverses it. */
#ifndef LC_JOBS_SAFETENSORS2GGUF_H
#define LC_JOBS_SAFETENSORS2GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hf/hf.h"
#include "libconvert/error.h"
#include "libconvert/progress.h"

typedef struct lc_job_st2gguf_opts {
    const char        *in;           /* a folder, or a bare .safetensors file */
    const char        *out;          /* the .gguf; for a folder IN may be NULL or a
                                      * folder: then Name-SizeLabel-TYPE.gguf in it
                                      * (NULL: in IN) */
    lc_hf_opts         hf;           /* outtype, pre, vocab_only; hf.plan is set from
                                      * dry_run */
    const char *const *overrides;    /* "KEY=TYPE:VALUE" (hf/meta.h), applied in
                                      * order after the model is built */
    size_t             n_overrides;
    bool               dry_run;      /* print the tensor plan, the keys and OUT; write
                                      * nothing */
    FILE              *print;        /* where dry_run prints; NULL prints nothing */
    bool               folder_options; /* the caller gave options only a folder takes */
    int                threads;      /* 0: one per core (at most 8) */
} lc_job_st2gguf_opts;

/* Whether the options fit IN before anything is read: a folder takes everything; a
 * bare file needs OUT and no folder_options. LC_E_ARG saying which when not. */
lc_code lc_job_safetensors2gguf_check(const lc_job_st2gguf_opts *o, lc_error *err);

/* Runs the job (checking first); OUT appears atomically. Codes: lc_hf_to_gguf's,
 * lc_hf_meta_override's (LC_E_ARG), lc_safetensors_load's, lc_gguf_bare_encode's and
 * the writer's. A failure while reading the source names IN. p may be NULL. */
lc_code lc_job_safetensors2gguf(const lc_job_st2gguf_opts *o, lc_progress *p, lc_error *err);

#endif
