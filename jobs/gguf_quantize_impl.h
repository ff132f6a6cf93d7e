/* jobs/gguf_quantize_impl.h: what the gguf-quantize job's files share (private to
 * jobs/gguf_quantize*.c). */
#ifndef LC_JOBS_GGUF_QUANTIZE_IMPL_H
#define LC_JOBS_GGUF_QUANTIZE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf_split.h"
#include "formats/gguf_imatrix.h"
#include "jobs/gguf_quantize.h"
#include "libconvert/model.h"
#include "quant/mix.h"

/* The lazy tensors between an input tensor and an output tensor live in one model per
 * stage, named as the tensor (so every error names the tensor a person knows). */
enum { QJ_SOURCE = 0,   /* pread views of a GGUF input's tensors */
       QJ_CHECKED,      /* the input as read, checked as ggml's loader checks it */
       QJ_F32,          /* widened or dequantized to F32 */
       QJ_CONVERTED,    /* quantized or cast to the output type */
       LC_QJ_STAGES };

/* One tensor of the output. */
typedef struct qj_row {
    const lc_tensor *in;
    lc_tensor       *out;
    lc_mix_choice    c;
    uint32_t         part;      /* the input part it is read from (0 unless split) */
    size_t           im_entry;  /* its importance matrix entry, or SIZE_MAX */
} qj_row;

typedef struct job {
    const lc_job_quantize_opts *o;
    lc_model *in;                   /* the input; owned by out once handed */
    lc_model *stage[LC_QJ_STAGES];  /* owned by out once handed */
    lc_model *out;                  /* the output, or its first part (keep_split) */
    lc_model **parts;               /* keep_split: the output's parts, [0] == out; the
                                     * others are freed before out */
    uint32_t  n_parts;              /* output files: 1, or the parts with keep_split */
    char    **part_paths;           /* keep_split: their names (owned) */
    lc_gguf_split *split;           /* a GGUF input's parts (count 1: not split) */
    lc_gguf_split_set *set;         /* --split-max-*: the output's parts (their paths are
                                     * part_paths; rows[i].part is the output part) */
    uint32_t  kept;                 /* --skip-existing: outputs already there, kept */
    int       fd;                   /* IN opened again for pread, or -1 (an HF folder,
                                     * a split input: each part's map descriptor) */
    lc_qdev  *dev;                  /* where conversions run; NULL: the CPU */
    bool      own_dev;              /* opened by the job (closed with it) */
    bool      handed;
    lc_mix_opts     mo;
    lc_mix_pattern *patterns;       /* --tensor-type, parsed */
    char          **pattern_text;   /* their PATTERN parts (owned) */
    size_t          n_patterns;
    qj_row   *rows;                 /* in output order */
    size_t    n_rows;
    uint64_t  bytes_in, bytes_out, elements;
    size_t    fallbacks;
    double    started;              /* seconds, CLOCK_MONOTONIC */
    lc_imatrix *im;                 /* --imatrix, or NULL */
    bool     *im_kept;              /* per entry: left by --include/--exclude-weights */
    size_t    im_n_kept;            /* 0: quantized as without a matrix */
    size_t    im_used;              /* tensors that use an entry */
} job;

/* F32, F16, BF16, or a block type with kernels. */
bool lc_job_quantize_writable(lc_dtype t);

/* Parses one --override-kv into key (cap >= 128) and the value llama_model_quantize
 * writes. LC_E_ARG when malformed. */
lc_code lc_job_quantize_override(const char *arg, char *key, size_t cap, lc_value *v,
                                 lc_error *err);

/* Picks every tensor's type (quant/mix.h) in llama-quantize's order (its loader's; with
 * keep_split, input part by part in file order) and adds it to j->out (or its part of
 * j->parts) with its lazy source; fills j->rows and the totals. Checks every choice first:
 * LC_E_UNSUPPORTED for a type without kernels or data that cannot be converted,
 * LC_E_ARG for requantizing without allow_requantize (where = tensor). */
lc_code lc_job_quantize_plan(job *j, const lc_mix_model *mm, lc_error *err);

/* --imatrix: opens o->imatrix, applies --exclude/--include-weights and checks every kept
 * weight is finite (jobs/gguf_quantize_imatrix.c). Errors name the file and entry. */
lc_code lc_job_quantize_imatrix_load(job *j, lc_error *err);

/* The quantize.imatrix.* keys the output gets (up to 4, in llama-quantize's order; none
 * when no entry is kept): keys[i] and vals[i] for i < *n (the caller owns the values). */
lc_code lc_job_quantize_imatrix_meta(const job *j, const char *keys[4], lc_value vals[4],
                                     size_t *n, lc_error *err);

/* The entry tensor s uses when converted to `to` (*entry, SIZE_MAX for none), checked
 * against its shape. LC_E_MALFORMED naming the file and entry when the sizes differ. */
lc_code lc_job_quantize_imatrix_for(job *j, const lc_tensor *s, lc_dtype to, size_t *entry,
                                    lc_error *err);

/* Makes t read cur quantized to `to`, weighted by entry's importance vectors. */
lc_code lc_job_quantize_imatrix_view(const job *j, lc_tensor *t, const lc_tensor *cur,
                                     lc_dtype to, size_t entry, lc_error *err);

/* What the job did, for the caller (lc_job_quantize_result): copies, so it outlives
 * the job. LC_E_NOMEM (r zeroed). */
lc_code lc_job_quantize_result_fill(const job *j, const char *out, lc_job_quantize_result *r,
                                    lc_error *err);

#endif
