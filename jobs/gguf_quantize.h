/* jobs/gguf_quantize.h: the gguf-quantize job. A GGUF model (or a Hugging Face folder,
 * converted in the same pass) becomes the file llama.cpp's llama-quantize writes for a
 * file type (Q8_0, Q4_K_M, ...): llama_model_quantize of the llama.cpp that
 * llama-cpp-python 0.3.36 vendors, byte for byte, with the importance matrix
 * llama-quantize --imatrix FILE would hand it or without one.
 *
 * What the output holds, as llama-quantize writes it:
 *  1. every metadata key of the input in its order, without split.no / split.count /
 *     split.tensors.count, then general.quantization_version = 2 and general.file_type
 *     (both moved to the end), then each --override-kv (moved to the end too; int
 *     values become u32 of their absolute value, float f32);
 *  2. every tensor, in llama.cpp's loader order (quant/mix.h lc_mix_order: by layer,
 *     then by name), with trailing dimensions of 1 dropped (ggml_n_dims), each of the
 *     type quant/mix.h picks: a tensor whose type does not change is copied; the others
 *     are read as F32 (F16/BF16 widened, blocks dequantized) and converted with the
 *     scalar-reference-identical kernels of quant/;
 *  3. 32-byte alignment (or the input's general.alignment), version 3.
 * ggml's data checks run on everything read and written (quant/validate.h): a NaN or an
 * infinity in the input, or a scale that overflows f16, fails the job naming the tensor
 * and the row. A Hugging Face folder is first built as safetensors2gguf builds it with
 * its default out type (the source's 16-bit type; F16 for other sources), so the result
 * equals converting and then quantizing.
 *
 * Deliberate differences from llama-quantize:
 *  - An explicit type a tensor's rows cannot hold (--output-tensor-type,
 *    --token-embedding-type, --tensor-type) is refused; llama-quantize falls back for a
 *    pattern and aborts mid-file for the others.
 *  - --tensor-type patterns are llama-quantize's ECMAScript patterns without
 *    back-references and lookaround (libconvert/regex.h: linear-time matching, at most
 *    LC_RE_MAX_STATES NFA states); --override-kv int/float values must be whole numbers
 *    (no atol/atof leniency).
 *  - Every error is found before OUT is created when it can be (types, requantizing, row
 *    lengths, importance matrices); OUT appears atomically or not at all.
 *  - --keep-split strips a trailing ".gguf" from OUT (llama-quantize strips the last
 *    five bytes when ".gguf" appears anywhere in it); the parts appear as a set or not
 *    at all, and a split input whose middle part has no tensors is refused
 *    (llama-quantize crashes on it).
 *  - Not supported: --prune-layers, COPY. Models of families arch/ does not describe
 *    are refused (the rules need each tensor's role).
 *
 * Importance matrices (--imatrix), as llama-quantize's tool loads and filters them and
 * llama_model_quantize uses them: the entries whose name contains an --exclude-weights
 * string are dropped, then only those containing an --include-weights string kept (none
 * left: as without a matrix); each kept entry's weights are its sums over its counts (1
 * where a count is 0; formats/gguf_imatrix.h); a tensor that is quantized uses the entry of
 * its name, expert k of a 3-D stack the k-th row of it; the mixes' rules that differ
 * with a matrix follow it (quant/mix.h has_imatrix); a type that needs one (IQ1, IQ2,
 * IQ3_XXS, Q2_K in Q2_K_S) is refused for a tensor without an entry; and the output gets,
 * after the --override-kv keys, quantize.imatrix.file (FILE as typed, cut to 127 bytes),
 * quantize.imatrix.dataset (the first dataset, cut to 127 bytes; when the file names
 * one), quantize.imatrix.entries_count (the kept entries) and
 * quantize.imatrix.chunks_count (when above 0), as u32 and strings. Refused with one line
 * naming FILE and the entry, before OUT is created: an entry whose size is not the
 * tensor's columns times its experts (a token embedding's is ignored, as llama.cpp
 * does), a weight that is NaN or infinite, a file cut short or malformed, and (unlike
 * llama-quantize, which goes on without weights) a matrix none of whose entries names a
 * tensor the job quantizes: an importance matrix made for another model.
 *
 * Split inputs (formats/gguf_split.h): IN is the first part; the others are found and
 * checked as llama.cpp's loader does. By default the output is one file, as above (the
 * first part's metadata, the split keys dropped). With keep_split it is split as the
 * input is, as llama_model_quantize with keep_split writes it: part k holds the tensors
 * of input part k in their file order (also the order the mixes' rules count them in),
 * named OUT-0000k-of-0000n.gguf (OUT without ".gguf"); the first part holds the
 * metadata as above followed by split.no, split.count and split.tensors.count, the
 * others those three keys only. n is the last input part with tensors (1 for an
 * unsplit input, which then gives OUT-00001-of-00001.gguf without split keys).
 *
 * With split options (formats/gguf_split.h) the one file above is written as the parts
 * gguf-split makes of it, named from OUT without ".gguf"; --part K/N writes part K only
 * (of keep_split's parts too), byte-identical to that part of the whole run, reading only
 * the tensors it holds; --skip-existing keeps a part already there when its header and
 * size are this run's, and refuses one that is not. */
#ifndef LC_JOBS_GGUF_QUANTIZE_H
#define LC_JOBS_GGUF_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf_split.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"
#include "quant/device.h"
#include "quant/ftype.h"

typedef struct lc_job_quantize_opts {
    const char     *in;             /* a GGUF model, or a Hugging Face (or Meta) folder */
    lc_model       *model;          /* or the input already built (safetensors2gguf's
                                     * folder): the job takes it over and frees it, and
                                     * `in` only names it in messages */
    const char     *out;            /* NULL: ggml-model-<TYPE>.gguf beside IN (in IN for a
                                     * folder), as llama-quantize names it; with
                                     * keep_split the prefix of the parts' names */
    const lc_ftype *ftype;          /* TYPE */
    bool            pure;           /* --pure */
    bool            leave_output;   /* --leave-output-tensor */
    bool            allow_requantize;   /* --allow-requantize */
    bool            dry_run;        /* print the plan; write nothing */
    bool            keep_split;     /* --keep-split: the output split as the input is */
    lc_gguf_split_opts split;       /* --split-max-*: the output split as gguf-split would
                                     * split the one file (formats/gguf_split.h), not with
                                     * keep_split; --part K/N and --skip-existing (with
                                     * keep_split too) */
    const char     *output_type;    /* --output-tensor-type: a ggml type name, or NULL */
    const char     *token_embd_type;    /* --token-embedding-type, or NULL */
    const char *const *tensor_types;    /* --tensor-type PATTERN=TYPE, in order */
    size_t          n_tensor_types;
    const char *const *overrides;   /* --override-kv KEY=int|float|bool|str:VALUE */
    size_t          n_overrides;
    const char     *imatrix;        /* --imatrix FILE: llama-imatrix's GGUF or legacy .dat
                                     * (formats/gguf_imatrix.h), or NULL */
    const char *const *include_weights; /* --include-weights NAME: keep only the entries
                                     * whose name contains one of these */
    size_t          n_include;
    const char *const *exclude_weights; /* --exclude-weights NAME: drop the entries whose
                                     * name contains one of these (before the include) */
    size_t          n_exclude;
    int             threads;        /* 0: one per core (at most 8) */
    const char     *device;         /* --device: "cpu" or NULL, "cuda", "cuda:N"
                                     * (quant/device.h): where tensors are converted;
                                     * the bytes are the same */
    lc_qdev        *dev;            /* or a device already open (borrowed), which wins */
} lc_job_quantize_opts;

/* One tensor of the output, as the plan shows it. */
typedef struct lc_job_quantize_row {
    char       *name;               /* owned */
    lc_dtype    from, to;           /* the input's type and the output's */
    lc_dtype    wanted;             /* the type the rules chose; not `to` when the
                                     * tensor's rows cannot hold it (a fallback) */
    const char *why;                /* "kept", "base", "rule" or "option" (static) */
    uint32_t    ndim;               /* the output's dimensions, ggml's (trailing 1s
                                     * dropped), outermost first */
    uint64_t    shape[LC_MAX_DIMS];
    uint32_t    part;               /* the output part it goes to, from 0 (part_paths) */
    uint64_t    bytes_in, bytes_out;
} lc_job_quantize_row;

/* What a run did (or, dry, would do): the plan and its totals. Printing it is
 * jobs/gguf_quantize_print.h's. */
typedef struct lc_job_quantize_result {
    char       *in, *out;           /* IN as given, OUT as resolved (owned) */
    const lc_ftype *ftype;
    bool        dry_run;
    uint32_t    in_parts;           /* the input's parts (1: not split) */
    char      **part_paths;         /* the output's parts (keep_split or split options;
                                     * owned), or NULL: OUT alone */
    uint32_t    n_parts;
    uint32_t    only;               /* --part K: K (1-based), or 0: every part */
    uint32_t    kept;               /* --skip-existing: outputs already there, kept */
    lc_job_quantize_row *rows;      /* in output order */
    size_t      n_rows;
    uint64_t    bytes_in, bytes_out, elements;
    size_t      fallbacks;          /* rows whose `to` is not `wanted` */
    char       *device;             /* where tensors were converted (lc_qdev_describe;
                                     * owned), or NULL: the CPU */
    double      seconds;            /* the run's wall time */
} lc_job_quantize_result;

/* Frees what r owns and zeroes it; NULL-safe. */
void lc_job_quantize_result_free(lc_job_quantize_result *r);

/* The file type named ARG: a llama-quantize TYPE name, case-insensitive, or its numeric
 * id (as llama-quantize accepts); NULL when there is none. */
const lc_ftype *lc_job_quantize_type(const char *arg);

/* Checks what can be checked before anything is read: a TYPE libconvert can write
 * (lc_ftype_available), known ggml type names, well-formed PATTERN=TYPE, KEY=TYPE:VALUE
 * and --device. LC_E_ARG saying which is wrong: a usage error. */
lc_code lc_job_gguf_quantize_check(const lc_job_quantize_opts *o, lc_error *err);

/* Runs the job (checking first; the device opens before anything is read or written:
 * lc_qdev_open's codes, "no CUDA device: ..."). Codes: the readers' (lc_gguf_load,
 * lc_hf_to_gguf), LC_E_UNSUPPORTED (a family without a table, split inputs, a type
 * without kernels, one that needs an importance matrix), LC_E_ARG (requantizing without
 * allow_requantize, an explicit type a tensor cannot take; where = the tensor),
 * LC_E_MALFORMED (NaN or infinity in a row: where = the tensor, the message names the
 * row), the writer's. p may be NULL; with res (may be NULL) *res gets what was done
 * (lc_job_quantize_result_free it; zeroed on failure). */
lc_code lc_job_gguf_quantize(const lc_job_quantize_opts *o, lc_progress *p,
                             lc_job_quantize_result *res, lc_error *err);

#endif
