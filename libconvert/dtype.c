/* libconvert/dtype.c: the dtype table, indexed by lc_dtype (ggml's type_traits idea).
 * Block sizes and bytes per block follow ggml-common.h; tests check the table against
 * gguf-py's GGML_QUANT_SIZES. */
#include "libconvert/dtype.h"

#include <strings.h>
#include <string.h>

#include "libconvert/bytes.h"

#define PLAIN(N, ST, ID, SZ, FL, SG) { N, ST, ID, 1, SZ, FL, SG }
#define BLOCK(N, ID, BS, SZ) { N, NULL, ID, BS, SZ, false, false }

static const lc_dtype_info g_info[LC_DT_COUNT] = {
    [LC_DT_INVALID]  = { "INVALID", NULL, -1, 0, 0, false, false },
    [LC_DT_BOOL]     = PLAIN("BOOL", "BOOL", -1, 1, false, false),
    [LC_DT_U8]       = PLAIN("U8", "U8", -1, 1, false, false),
    [LC_DT_I8]       = PLAIN("I8", "I8", 24, 1, false, true),
    [LC_DT_F8_E5M2]  = PLAIN("F8_E5M2", "F8_E5M2", -1, 1, true, false),
    [LC_DT_F8_E4M3]  = PLAIN("F8_E4M3", "F8_E4M3", -1, 1, true, false),
    [LC_DT_F8_E8M0]  = PLAIN("F8_E8M0", "F8_E8M0", -1, 1, true, false),
    [LC_DT_F8_E4M3FNUZ] = PLAIN("F8_E4M3FNUZ", "F8_E4M3FNUZ", -1, 1, true, false),
    [LC_DT_F8_E5M2FNUZ] = PLAIN("F8_E5M2FNUZ", "F8_E5M2FNUZ", -1, 1, true, false),
    [LC_DT_I16]      = PLAIN("I16", "I16", 25, 2, false, true),
    [LC_DT_U16]      = PLAIN("U16", "U16", -1, 2, false, false),
    [LC_DT_F16]      = PLAIN("F16", "F16", 1, 2, true, false),
    [LC_DT_BF16]     = PLAIN("BF16", "BF16", 30, 2, true, false),
    [LC_DT_I32]      = PLAIN("I32", "I32", 26, 4, false, true),
    [LC_DT_U32]      = PLAIN("U32", "U32", -1, 4, false, false),
    [LC_DT_F32]      = PLAIN("F32", "F32", 0, 4, true, false),
    [LC_DT_F64]      = PLAIN("F64", "F64", 28, 8, true, false),
    [LC_DT_I64]      = PLAIN("I64", "I64", 27, 8, false, true),
    [LC_DT_U64]      = PLAIN("U64", "U64", -1, 8, false, false),
    [LC_DT_Q4_0]     = BLOCK("Q4_0", 2, 32, 18),
    [LC_DT_Q4_1]     = BLOCK("Q4_1", 3, 32, 20),
    [LC_DT_Q5_0]     = BLOCK("Q5_0", 6, 32, 22),
    [LC_DT_Q5_1]     = BLOCK("Q5_1", 7, 32, 24),
    [LC_DT_Q8_0]     = BLOCK("Q8_0", 8, 32, 34),
    [LC_DT_Q8_1]     = BLOCK("Q8_1", 9, 32, 36),
    [LC_DT_Q2_K]     = BLOCK("Q2_K", 10, 256, 84),
    [LC_DT_Q3_K]     = BLOCK("Q3_K", 11, 256, 110),
    [LC_DT_Q4_K]     = BLOCK("Q4_K", 12, 256, 144),
    [LC_DT_Q5_K]     = BLOCK("Q5_K", 13, 256, 176),
    [LC_DT_Q6_K]     = BLOCK("Q6_K", 14, 256, 210),
    [LC_DT_Q8_K]     = BLOCK("Q8_K", 15, 256, 292),
    [LC_DT_IQ2_XXS]  = BLOCK("IQ2_XXS", 16, 256, 66),
    [LC_DT_IQ2_XS]   = BLOCK("IQ2_XS", 17, 256, 74),
    [LC_DT_IQ3_XXS]  = BLOCK("IQ3_XXS", 18, 256, 98),
    [LC_DT_IQ1_S]    = BLOCK("IQ1_S", 19, 256, 50),
    [LC_DT_IQ4_NL]   = BLOCK("IQ4_NL", 20, 32, 18),
    [LC_DT_IQ3_S]    = BLOCK("IQ3_S", 21, 256, 110),
    [LC_DT_IQ2_S]    = BLOCK("IQ2_S", 22, 256, 82),
    [LC_DT_IQ4_XS]   = BLOCK("IQ4_XS", 23, 256, 136),
    [LC_DT_IQ1_M]    = BLOCK("IQ1_M", 29, 256, 56),
    [LC_DT_TQ1_0]    = BLOCK("TQ1_0", 34, 256, 54),
    [LC_DT_TQ2_0]    = BLOCK("TQ2_0", 35, 256, 66),
    [LC_DT_MXFP4]    = BLOCK("MXFP4", 39, 32, 17),
    [LC_DT_NVFP4]    = BLOCK("NVFP4", 40, 64, 36),
    [LC_DT_Q1_0]     = BLOCK("Q1_0", 41, 128, 18),
    [LC_DT_Q2_0]     = BLOCK("Q2_0", 42, 64, 18),
};

const lc_dtype_info *lc_dtype_get(lc_dtype t) {
    if ((unsigned)t >= LC_DT_COUNT)
        return &g_info[LC_DT_INVALID];
    return &g_info[t];
}

bool lc_dtype_is_quant(lc_dtype t) { return lc_dtype_get(t)->block_size > 1; }

lc_dtype lc_dtype_from_st_name(const char *name, size_t len) {
    for (int t = 1; t < LC_DT_COUNT; t++) {
        const char *s = g_info[t].st_name;
        if (s && strlen(s) == len && memcmp(s, name, len) == 0)
            return (lc_dtype)t;
    }
    return LC_DT_INVALID;
}

lc_dtype lc_dtype_from_gguf(uint32_t id) {
    for (int t = 1; t < LC_DT_COUNT; t++)
        if (g_info[t].gguf_id >= 0 && (uint32_t)g_info[t].gguf_id == id)
            return (lc_dtype)t;
    return LC_DT_INVALID;
}

lc_dtype lc_dtype_from_name(const char *name) {
    for (int t = 1; t < LC_DT_COUNT; t++)
        if (strcasecmp(g_info[t].name, name) == 0)
            return (lc_dtype)t;
    return LC_DT_INVALID;
}

bool lc_dtype_row_bytes(lc_dtype t, uint64_t nelem, uint64_t *bytes) {
    const lc_dtype_info *d = lc_dtype_get(t);
    if (d->block_size == 0 || nelem % d->block_size != 0)
        return false;
    return !lc_mul_u64(nelem / d->block_size, d->type_size, bytes);
}
