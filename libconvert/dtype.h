/* libconvert/dtype.h: every element type the IR knows, with its on-disk facts.
 *
 * Plain types hold one element per `type_size` bytes. Block-quantized types hold
 * `block_size` elements per `type_size` bytes; a row's innermost dimension must be
 * a multiple of block_size. Names are safetensors' spellings for the plain types
 * and ggml's upper-case names for the block types. */
#ifndef LC_LIBCONVERT_DTYPE_H
#define LC_LIBCONVERT_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef enum lc_dtype {
    LC_DT_INVALID = 0,
    /* plain */
    LC_DT_BOOL, LC_DT_U8, LC_DT_I8, LC_DT_F8_E5M2, LC_DT_F8_E4M3, LC_DT_F8_E8M0,
    LC_DT_F8_E4M3FNUZ, LC_DT_F8_E5M2FNUZ, LC_DT_I16, LC_DT_U16,
    LC_DT_F16, LC_DT_BF16, LC_DT_I32, LC_DT_U32, LC_DT_F32, LC_DT_F64, LC_DT_I64, LC_DT_U64,
    /* ggml block types */
    LC_DT_Q4_0, LC_DT_Q4_1, LC_DT_Q5_0, LC_DT_Q5_1, LC_DT_Q8_0, LC_DT_Q8_1,
    LC_DT_Q2_K, LC_DT_Q3_K, LC_DT_Q4_K, LC_DT_Q5_K, LC_DT_Q6_K, LC_DT_Q8_K,
    LC_DT_IQ2_XXS, LC_DT_IQ2_XS, LC_DT_IQ3_XXS, LC_DT_IQ1_S, LC_DT_IQ4_NL, LC_DT_IQ3_S,
    LC_DT_IQ2_S, LC_DT_IQ4_XS, LC_DT_IQ1_M, LC_DT_TQ1_0, LC_DT_TQ2_0, LC_DT_MXFP4,
    LC_DT_NVFP4, LC_DT_Q1_0, LC_DT_Q2_0,
    LC_DT_COUNT
} lc_dtype;

typedef struct lc_dtype_info {
    const char *name;        /* "F32", "BF16", "Q4_K" */
    const char *st_name;     /* safetensors spelling, NULL when safetensors lacks it */
    int         gguf_id;     /* ggml type id, -1 when GGUF lacks it */
    uint32_t    block_size;  /* elements per block; 1 for plain types */
    uint32_t    type_size;   /* bytes per block */
    bool        is_float;    /* plain floating point */
    bool        is_signed;   /* plain signed integer */
} lc_dtype_info;

/* Facts for `t`; a zeroed entry with name "INVALID" for out-of-range values. */
const lc_dtype_info *lc_dtype_get(lc_dtype t);
static inline const char *lc_dtype_name(lc_dtype t);
bool lc_dtype_is_quant(lc_dtype t);                 /* block_size > 1 */

/* Lookups; LC_DT_INVALID when unknown. Name matching is exact (case-sensitive). */
lc_dtype lc_dtype_from_st_name(const char *name, size_t len);
lc_dtype lc_dtype_from_gguf(uint32_t id);
lc_dtype lc_dtype_from_name(const char *name);      /* "F16", "Q8_0"; case-insensitive */

/* Bytes that `nelem` elements of the innermost row occupy; false when nelem is not a
 * multiple of the block size or the product overflows. */
bool lc_dtype_row_bytes(lc_dtype t, uint64_t nelem, uint64_t *bytes);

static inline const char *lc_dtype_name(lc_dtype t) { return lc_dtype_get(t)->name; }

#endif
