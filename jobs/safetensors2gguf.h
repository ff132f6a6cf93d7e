/* jobs/safetensors2gguf.h: the safetensors2gguf job. A Hugging Face model folder
 * (config.json beside the weights) or Meta's original layout becomes a GGUF that
 * llama.cpp runs, as convert_hf_to_gguf.py writes it (hf/hf.h), with optional
 * metadata overrides, a default output name from the naming convention, and a dry run
 * that prints the plan instead of writing. A bare .safetensors file becomes a GGUF
 * container instead: the same tensors, dtypes GGUF lacks widened losslessly and
 * recorded, no architecture; gguf2safetensors reverses it.
 * Out types: f32, f16, bf16 and q8_0 are convert_hf_to_gguf.py's own (every 2-D weight
 * of that type); every other llama-quantize TYPE (q4_0, q4_k_m, q6_k, ...) converts
 * with the source's 16-bit type and quantizes in the same streaming pass with
 * llama-quantize's per-tensor rules (jobs/gguf_quantize.h), so the file equals
 * converting and then running llama-quantize, with no intermediate file.
 * Split options write the file as the parts llama.cpp's gguf-split makes of it (or one
 * part of them: --part K/N), for a folder and a bare file alike. */
#ifndef LC_JOBS_SAFETENSORS2GGUF_H
#define LC_JOBS_SAFETENSORS2GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf_split.h"
#include "hf/hf.h"
#include "jobs/gguf_quantize.h"
#include "libconvert/error.h"
#include "libconvert/progress.h"
#include "quant/ftype.h"

typedef struct lc_job_st2gguf_opts {
    const char        *in;           /* a folder, or a bare .safetensors file */
    const char        *out;          /* the .gguf; for a folder IN may be NULL or a
                                      * folder: then Name-SizeLabel-TYPE.gguf in it
                                      * (NULL: in IN) */
    lc_hf_opts         hf;           /* outtype, pre, vocab_only; hf.plan is the
                                      * result's (dry_run) */
    const lc_ftype    *quantize;     /* a llama-quantize TYPE beyond the converter's own
                                      * (lc_job_st2gguf_outtype sets it), or NULL */
    const char *const *overrides;    /* "KEY=TYPE:VALUE" (hf/meta.h), applied in
                                      * order after the model is built */
    size_t             n_overrides;
    bool               dry_run;      /* plan the tensors, the keys and OUT (the
                                      * result); write nothing */
    bool               folder_options; /* the caller gave options only a folder takes */
    int                threads;      /* 0: one per core (at most 8) */
    const char        *device;       /* --device (quant/device.h): where a folder's tensors
                                      * are cast and quantized, same bytes; NULL: cpu */
    lc_gguf_split_opts split;        /* --split-max-*, --part, --skip-existing: OUT as the
                                      * parts gguf-split makes of it, named from OUT less
                                      * ".gguf" (formats/gguf_split.h) */
} lc_job_st2gguf_opts;

/* What a dry run plans (a run that writes leaves it empty). A failed dry run keeps what
 * it had planned: the rows made, and the model once it has its keys. */
typedef struct lc_job_st2gguf_result {
    bool        dry_run;
    char       *out;            /* OUT as resolved (the default name for a folder; owned) */
    lc_hf_plan  plan;           /* the folder's tensors, as converted (not with a TYPE) */
    lc_model   *model;          /* the model as built: its keys and tensors (owned) */
    bool        out_planned;    /* OUT (and its parts) planned */
    char      **part_paths;     /* with split options: the parts' names (owned) */
    size_t     *part_tensors;   /* and their tensor counts */
    uint32_t    n_parts;        /* 0: OUT alone */
    bool        quantized;      /* a llama-quantize TYPE: the plan is `quantize` */
    lc_job_quantize_result quantize;
} lc_job_st2gguf_result;

/* Frees what r owns and zeroes it; NULL-safe. */
void lc_job_st2gguf_result_free(lc_job_st2gguf_result *r);

/* Resolves --outtype NAME into o: "auto", a converter type (hf.outtype), or any other
 * TYPE libconvert can write (quantize). LC_E_ARG listing the names otherwise. */
lc_code lc_job_st2gguf_outtype(const char *name, lc_job_st2gguf_opts *o, lc_error *err);

/* The --outtype names offered, '|'-separated, lower case, "auto" last, into buf. */
void lc_job_st2gguf_outtypes(char *buf, size_t cap);

/* Whether the options fit IN before anything is read: a folder takes everything; a
 * bare file needs OUT and no folder_options (--device is one); a well-formed --device.
 * LC_E_ARG saying which when not. */
lc_code lc_job_safetensors2gguf_check(const lc_job_st2gguf_opts *o, lc_error *err);

/* Runs the job (checking first, then opening the device: lc_qdev_open's codes, before
 * anything is read); OUT appears atomically; a dry run fills *res (may be NULL
 * otherwise; on failure it keeps the plan's rows made before it, as the tool printed
 * them while it built). Codes: lc_hf_to_gguf's,
 * lc_hf_meta_override's (LC_E_ARG), lc_safetensors_load's, lc_gguf_bare_encode's and
 * the writer's. A failure while reading the source names IN. p may be NULL. */
lc_code lc_job_safetensors2gguf(const lc_job_st2gguf_opts *o, lc_progress *p,
                                lc_job_st2gguf_result *res, lc_error *err);

#endif
