/* jobs/ffi.h: flat entry points for callers from other languages (the Python package,
 * python/libconvert, through ctypes).
 *
 * A foreign caller can mirror only what is plain: integers, pointers, strings and
 * small structs that hold nothing else. The jobs' options and result structs hold
 * nested structs and fields that grow with each tool, so each job has here one args
 * struct of plain fields whose layout is the contract with python/libconvert/_lib.py
 * (change both together), and a job's result comes back as the text the tool prints
 * from it (the same printers): the JSON of --json, parsed by the caller, so the figures
 * the caller sees are the tool's own. Models cross as opaque lc_model pointers, their
 * metadata as GGUF wire bytes (one format both sides already speak), tensors as a
 * table of plain entries.
 *
 * Every function takes `lc_error *err` last and returns an lc_code, as the library
 * does. Strings the library returns through `char **` are lc_ffi_free'd by the caller. */
#ifndef LC_JOBS_FFI_H
#define LC_JOBS_FFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/pth.h"
#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"

/* Bumped whenever a struct or a signature below changes; the caller checks it. */
#define LC_FFI_ABI 3
int lc_ffi_abi(void);

/* Frees what a call below returned through `char **` or `uint8_t **`; NULL-safe. */
void lc_ffi_free(void *p);

/* ---- reading ---- */

/* Opens PATH as formats/any.h does (format chosen by its bytes; a folder or an index is
 * a sharded checkpoint; a split GGUF is read whole from its first part), or with the
 * reader FORMAT names ("safetensors", "gguf", "pth"; NULL or "": chosen by the bytes),
 * as a tool that takes one format reads any file. A PyTorch checkpoint's contiguous
 * stored tensors are views of the mapped file (lc_pth_opts.zero_copy) and `pth` (may be
 * NULL) chooses its state dict. *format gets the format's static name. Codes as
 * lc_model_open_any; LC_E_ARG for an unknown FORMAT. */
lc_code lc_ffi_open(const char *path, const char *format, const lc_pth_opts *pth,
                    lc_model **out, const char **format_out, uint64_t *header_size,
                    lc_error *err);

/* One tensor as a foreign caller sees it. Borrowed: valid until lc_model_free. */
typedef struct lc_ffi_tensor {
    const char      *name;
    int32_t          dtype;              /* lc_dtype */
    uint32_t         ndim;
    uint64_t         shape[LC_MAX_DIMS]; /* outermost first */
    uint64_t         nbytes;
    const void      *data;               /* the bytes as stored, or NULL: read them */
    uint64_t         file_offset;        /* where data starts in its mapped file (so
                                          * data - file_offset is the map), or
                                          * LC_NO_OFFSET */
    const lc_tensor *t;                  /* for lc_tensor_read */
} lc_ffi_tensor;

/* Every tensor name in order, each followed by a NUL, into buf (cap bytes); *need =
 * the bytes they take (call again with that much room when cap is smaller). */
void lc_ffi_names(const lc_model *m, char *buf, size_t cap, size_t *need);

/* Fills out[0..min(n, cap)) with the model's tensors in order; *n = their count. */
void lc_ffi_tensors(const lc_model *m, lc_ffi_tensor *out, size_t cap, size_t *n);

/* The model's metadata as GGUF writes it after its counts: per entry a u64 key length,
 * the key, a u32 value type and the value (strings a u64 length and bytes, arrays a u32
 * item type, a u64 count and the items), little-endian. *n_kv = the entry count. */
lc_code lc_ffi_meta_encode(const lc_model *m, uint8_t **buf, size_t *len, uint64_t *n_kv,
                           lc_error *err);

/* ---- writing ---- */

/* A new model holding the N_KV entries of KV (lc_ffi_meta_encode's layout), read by the
 * GGUF reader itself (so every GGUF rule on keys and values holds) and no tensor.
 * LC_E_MALFORMED / LC_E_TRUNCATED / LC_E_OVERFLOW as the reader says, offsets into KV. */
lc_code lc_ffi_model_from_meta(const uint8_t *kv, size_t len, uint64_t n_kv, lc_model **out,
                               lc_error *err);

/* Appends a string entry KEY = VALUE (any bytes: safetensors' metadata). */
lc_code lc_ffi_model_set_str(lc_model *m, const char *key, const char *val, size_t len,
                             lc_error *err);

/* Appends tensor NAME whose NBYTES bytes are at DATA, borrowed: DATA must stay valid and
 * unchanged until the model is freed. LC_E_ARG when NBYTES is not what DTYPE and SHAPE
 * take; lc_model_add_tensor's codes. */
lc_code lc_ffi_add_tensor(lc_model *m, const char *name, int32_t dtype, uint32_t ndim,
                          const uint64_t *shape, const void *data, uint64_t nbytes,
                          lc_error *err);

/* lc_gguf_write and lc_safetensors_write with their options spelled out. p may be NULL. */
lc_code lc_ffi_write_gguf(const lc_model *m, const char *path, int threads, lc_progress *p,
                          lc_error *err);
lc_code lc_ffi_write_safetensors(const lc_model *m, const char *path, bool stringify_meta,
                                 int threads, lc_progress *p, lc_error *err);

/* ---- arrays ---- */

/* lc_quantize_rows_imatrix (IMATRIX NULL: none) and lc_dequantize_rows over NROWS rows,
 * split between `threads` workers (libconvert/parallel.h; 0: one per core, at most 8) in
 * ranges of about a million values: the same bytes for any count. Their codes. */
lc_code lc_ffi_quantize_rows(int32_t to, const float *x, void *y, uint64_t nrows,
                             uint64_t ncols, const float *imatrix, int threads,
                             lc_error *err);
lc_code lc_ffi_dequantize_rows(int32_t from, const void *x, float *y, uint64_t nrows,
                               uint64_t ncols, int threads, lc_error *err);

/* ---- jobs ---- */

/* safetensors2gguf: a Hugging Face or Meta folder, or a bare .safetensors file, to GGUF. */
typedef struct lc_ffi_to_gguf_args {
    const char        *in, *out;       /* out NULL: the default name (a folder only) */
    const char        *outtype;        /* "f16", "q8_0", "q4_k_m", "auto", ...; NULL: auto */
    const char        *pre;            /* tokenizer.ggml.pre override, or NULL */
    const char *const *overrides;      /* "KEY=TYPE:VALUE" */
    size_t             n_overrides;
    int32_t            vocab_only, dry_run;
    int32_t            threads;
} lc_ffi_to_gguf_args;
/* Runs lc_job_safetensors2gguf; with dry_run, *plan gets what the tool prints (may be
 * NULL otherwise). */
lc_code lc_ffi_to_gguf(const lc_ffi_to_gguf_args *a, lc_progress *p, char **plan,
                       lc_error *err);

/* gguf2safetensors. dtype: lc_dtype (F32, F16, BF16) or 0 (LC_DT_INVALID): kept. */
lc_code lc_ffi_gguf_to_safetensors(const char *in, const char *out, int32_t dtype,
                                   int threads, lc_progress *p, lc_error *err);

/* safetensors-rewrite: a file or a sharded checkpoint into one file; cast as above. */
lc_code lc_ffi_safetensors_rewrite(const char *in, const char *out, int32_t cast,
                                   bool stringify_meta, int threads, lc_progress *p,
                                   lc_error *err);

/* pth2safetensors (CONVERT mode). */
typedef struct lc_ffi_pth_args {
    const char *in, *out;
    const char *key;                   /* lc_pth_opts.key */
    int32_t     dedupe, allow_expand;
    int32_t     cast;                  /* lc_dtype or 0 */
    int32_t     threads;
} lc_ffi_pth_args;
lc_code lc_ffi_pth_to_safetensors(const lc_ffi_pth_args *a, lc_progress *p, lc_error *err);

/* gguf-quantize. *report gets the JSON object the tool prints with --json (the plan and
 * the summary), also for a dry run. */
typedef struct lc_ffi_quantize_args {
    const char        *in, *out;       /* out NULL: llama-quantize's default name */
    const char        *ftype;          /* a llama-quantize TYPE name or id */
    const char        *output_type, *token_embd_type;   /* ggml type names, or NULL */
    const char *const *tensor_types;   /* "PATTERN=TYPE", first match wins */
    size_t             n_tensor_types;
    const char *const *overrides;      /* "KEY=TYPE:VALUE" */
    size_t             n_overrides;
    const char        *imatrix;        /* llama-imatrix's GGUF or .dat, or NULL */
    const char *const *include_weights;    /* --include-weights NAME */
    size_t             n_include;
    const char *const *exclude_weights;    /* --exclude-weights NAME */
    size_t             n_exclude;
    int32_t            pure, leave_output, allow_requantize, keep_split, dry_run;
    int32_t            threads;
} lc_ffi_quantize_args;
/* LC_E_ARG for what the tool calls a usage error (an unknown TYPE, a malformed
 * pattern), then the job's codes. */
lc_code lc_ffi_quantize(const lc_ffi_quantize_args *a, lc_progress *p, char **report,
                        lc_error *err);

/* model-verify. *report gets the JSON object `model-verify --json` prints; *pass the
 * verdict. */
typedef struct lc_ffi_verify_args {
    const char *src, *dst;
    const char *tokens, *text, *file;  /* at most one; NULL: the bundled text */
    uint64_t    max_tokens;            /* 0: the tool's default */
    int32_t     layers;
    int32_t     threads;
    const char *report_html;           /* an HTML page to write too, or NULL */
    const char *imatrix;               /* --imatrix, or NULL */
} lc_ffi_verify_args;
lc_code lc_ffi_verify(const lc_ffi_verify_args *a, lc_progress *p, bool *pass, char **report,
                      lc_error *err);

#endif
