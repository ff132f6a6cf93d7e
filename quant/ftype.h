/* quant/ftype.h: llama.cpp's file types, the one place that knows their ids and names.
 *
 * A file type says what most weights of a GGUF model are: GGUF's general.file_type (u32)
 * holds its id, llama-quantize takes its name as the type argument, and the GGUF
 * file-name convention (gguf-py's naming_convention, as convert_hf_to_gguf.py and
 * llama-quantize name their outputs) ends with the same name: Name-SizeLabel-Q4_K_M.gguf.
 * Ids are llama.h's enum llama_ftype (LLAMA_FTYPE_*) and gguf-py's LlamaFileType, as
 * pinned by llama-cpp-python 0.3.36's vendored llama.cpp (scripts/bootstrap-llama.sh);
 * the unit tests check every pair against those literal values. Names are llama-quantize's
 * (tools/quantize/quantize.cpp QUANT_OPTIONS), which are LlamaFileType's member names
 * without MOSTLY_/ALL_.
 *
 * Some file types are one block type for (almost) every weight (Q8_0); the K-quant
 * "mixes" (Q4_K_M, ...) give some tensors other types by role and layer, in the rules of
 * llama.cpp's llama_tensor_get_type (quant/mix.h); even the plain ones give output.weight
 * Q6_K. */
#ifndef LC_QUANT_FTYPE_H
#define LC_QUANT_FTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/dtype.h"

enum {
    LC_FTYPE_MIX = 1u << 0,     /* per-tensor rules pick other types for some tensors */
    LC_FTYPE_OUTTYPE = 1u << 1, /* safetensors2gguf --outtype offers it */
};

typedef struct lc_ftype {
    uint32_t    id;     /* LLAMA_FTYPE_*: general.file_type */
    const char *name;   /* "Q4_K_M", "F16", "BF16": llama-quantize's and the file names' */
    lc_dtype    base;   /* the type most weights get (llama-quantize's default_type);
                         * LC_DT_INVALID where libconvert/dtype.h lacks it */
    unsigned    flags;  /* LC_FTYPE_* */
} lc_ftype;

/* Rows, in a fixed order (plain floats first, then by id); i >= lc_ftype_count() gives
 * NULL. Rows are static: valid for the life of the process. */
size_t lc_ftype_count(void);
const lc_ftype *lc_ftype_at(size_t i);

/* The row with id `id`; NULL for ids llama.cpp does not define (4-6 and 33-35 were
 * removed from it, LLAMA_FTYPE_GUESSED is a flag, not a type). */
const lc_ftype *lc_ftype_by_id(uint32_t id);

/* The row named `name`, case-insensitive ("q8_0", "Q4_K_M"); also llama-quantize's
 * aliases Q3_K, Q4_K, Q5_K for the _M mixes. NULL when unknown or NULL. */
const lc_ftype *lc_ftype_by_name(const char *name);

/* The file type of a file whose weights are mostly `t`: llama.cpp's guess in
 * llama_model_loader (F32 -> ALL_F32, Q4_K -> Q4_K_M, ...). NULL for dtypes it does not
 * map (integers, Q8_1, Q8_K, MXFP4...). */
const lc_ftype *lc_ftype_for_dtype(lc_dtype t);

/* True when libconvert can write every tensor this file type asks for today: its base
 * is F32, F16 or BF16, or it is a block type whose rules (quant/mix.h) give a dense model
 * only types that have kernels (lc_quant_supported), fallbacks included, and need no
 * importance matrix (lc_mix_ftype_writable). */
bool lc_ftype_available(const lc_ftype *f);

/* The same with an importance matrix (lc_mix_ftype_writable_imatrix): the types that
 * need one count once their kernels exist. */
bool lc_ftype_available_imatrix(const lc_ftype *f);

/* Writes the names of the rows that have every flag in `flags` (and, with
 * `available_only`, are available), in row order, separated by `sep`, lower-case when
 * `lower` ("f32|f16|bf16|q8_0" for LC_FTYPE_OUTTYPE): for --help text and error
 * messages. `sep` NULL means none. Like snprintf: returns the length of the whole list,
 * writes at most cap - 1 bytes and a NUL when cap > 0 (buf may be NULL when cap is 0). */
size_t lc_ftype_names(unsigned flags, bool available_only, bool lower, const char *sep,
                      char *buf, size_t cap);

#endif
