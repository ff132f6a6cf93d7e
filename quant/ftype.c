/* quant/ftype.c: the file-type table (see ftype.h). Sources, all as vendored by
 * llama-cpp-python 0.3.36: include/llama.h enum llama_ftype (ids),
 * tools/quantize/quantize.cpp QUANT_OPTIONS (names, aliases), src/llama-quant.cpp
 * llama_model_quantize_impl's default_type (base), src/llama-model-loader.cpp's guess
 * from the most common tensor type (lc_ftype_for_dtype). */
#include "quant/ftype.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "quant/mix.h"

#define MIX LC_FTYPE_MIX
#define OUT LC_FTYPE_OUTTYPE

static const lc_ftype ROWS[] = {
    { 0, "F32", LC_DT_F32, OUT },               /* LLAMA_FTYPE_ALL_F32 */
    { 1, "F16", LC_DT_F16, OUT },               /* the rest are LLAMA_FTYPE_MOSTLY_<name> */
    { 32, "BF16", LC_DT_BF16, OUT },
    { 2, "Q4_0", LC_DT_Q4_0, 0 },
    { 3, "Q4_1", LC_DT_Q4_1, 0 },
    { 7, "Q8_0", LC_DT_Q8_0, OUT },
    { 8, "Q5_0", LC_DT_Q5_0, 0 },
    { 9, "Q5_1", LC_DT_Q5_1, 0 },
    { 10, "Q2_K", LC_DT_Q2_K, 0 },
    { 11, "Q3_K_S", LC_DT_Q3_K, MIX },
    { 12, "Q3_K_M", LC_DT_Q3_K, MIX },
    { 13, "Q3_K_L", LC_DT_Q3_K, MIX },
    { 14, "Q4_K_S", LC_DT_Q4_K, MIX },
    { 15, "Q4_K_M", LC_DT_Q4_K, MIX },
    { 16, "Q5_K_S", LC_DT_Q5_K, MIX },
    { 17, "Q5_K_M", LC_DT_Q5_K, MIX },
    { 18, "Q6_K", LC_DT_Q6_K, 0 },
    { 19, "IQ2_XXS", LC_DT_IQ2_XXS, 0 },
    { 20, "IQ2_XS", LC_DT_IQ2_XS, 0 },
    { 21, "Q2_K_S", LC_DT_Q2_K, MIX },
    { 22, "IQ3_XS", LC_DT_IQ3_S, MIX },
    { 23, "IQ3_XXS", LC_DT_IQ3_XXS, 0 },
    { 24, "IQ1_S", LC_DT_IQ1_S, 0 },
    { 25, "IQ4_NL", LC_DT_IQ4_NL, 0 },
    { 26, "IQ3_S", LC_DT_IQ3_S, 0 },
    { 27, "IQ3_M", LC_DT_IQ3_S, MIX },
    { 28, "IQ2_S", LC_DT_IQ2_XS, MIX },         /* default_type IQ2_XS, as llama.cpp has it */
    { 29, "IQ2_M", LC_DT_IQ2_S, MIX },
    { 30, "IQ4_XS", LC_DT_IQ4_XS, 0 },
    { 31, "IQ1_M", LC_DT_IQ1_M, 0 },
    { 36, "TQ1_0", LC_DT_TQ1_0, 0 },
    { 37, "TQ2_0", LC_DT_TQ2_0, 0 },
    { 38, "MXFP4_MOE", LC_DT_MXFP4, MIX },      /* MXFP4 for the expert tensors */
    { 39, "NVFP4", LC_DT_NVFP4, 0 },
    { 40, "Q1_0", LC_DT_Q1_0, 0 },
    { 41, "Q2_0", LC_DT_Q2_0, 0 },
};
#define NROWS (sizeof ROWS / sizeof ROWS[0])

/* llama-quantize's other spellings. */
static const struct { const char *name; uint32_t id; } ALIASES[] = {
    { "Q3_K", 12 }, { "Q4_K", 15 }, { "Q5_K", 17 },
};

/* llama_model_loader: the file type guessed from the most common tensor type. */
static const struct { lc_dtype t; uint32_t id; } GUESS[] = {
    { LC_DT_F32, 0 },      { LC_DT_F16, 1 },      { LC_DT_BF16, 32 },
    { LC_DT_Q4_0, 2 },     { LC_DT_Q4_1, 3 },     { LC_DT_Q5_0, 8 },
    { LC_DT_Q5_1, 9 },     { LC_DT_Q8_0, 7 },     { LC_DT_Q2_K, 10 },
    { LC_DT_Q3_K, 12 },    { LC_DT_Q4_K, 15 },    { LC_DT_Q5_K, 17 },
    { LC_DT_Q6_K, 18 },    { LC_DT_TQ1_0, 36 },   { LC_DT_TQ2_0, 37 },
    { LC_DT_IQ2_XXS, 19 }, { LC_DT_IQ2_XS, 20 },  { LC_DT_IQ2_S, 28 },
    { LC_DT_IQ3_XXS, 23 }, { LC_DT_IQ1_S, 24 },   { LC_DT_IQ1_M, 31 },
    { LC_DT_IQ4_NL, 25 },  { LC_DT_IQ4_XS, 30 },  { LC_DT_IQ3_S, 26 },
    { LC_DT_NVFP4, 39 },   { LC_DT_Q1_0, 40 },    { LC_DT_Q2_0, 41 },
};

size_t lc_ftype_count(void) { return NROWS; }

const lc_ftype *lc_ftype_at(size_t i) { return i < NROWS ? &ROWS[i] : NULL; }

const lc_ftype *lc_ftype_by_id(uint32_t id) {
    for (size_t i = 0; i < NROWS; i++)
        if (ROWS[i].id == id)
            return &ROWS[i];
    return NULL;
}

const lc_ftype *lc_ftype_by_name(const char *name) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < NROWS; i++)
        if (strcasecmp(ROWS[i].name, name) == 0)
            return &ROWS[i];
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (strcasecmp(ALIASES[i].name, name) == 0)
            return lc_ftype_by_id(ALIASES[i].id);
    return NULL;
}

const lc_ftype *lc_ftype_for_dtype(lc_dtype t) {
    for (size_t i = 0; i < sizeof GUESS / sizeof GUESS[0]; i++)
        if (GUESS[i].t == t)
            return lc_ftype_by_id(GUESS[i].id);
    return NULL;
}

bool lc_ftype_available(const lc_ftype *f) {
    return f && lc_mix_ftype_writable(f->id, f->base);
}

bool lc_ftype_available_imatrix(const lc_ftype *f) {
    return f && lc_mix_ftype_writable_imatrix(f->id, f->base);
}

/* Appends n bytes of s at *len, as far as cap - 1 allows; *len counts them all. */
static void put(char *buf, size_t cap, size_t *len, const char *s, size_t n, bool lower) {
    for (size_t k = 0; k < n; k++, (*len)++)
        if (*len + 1 < cap)
            buf[*len] = lower ? (char)tolower((unsigned char)s[k]) : s[k];
}

size_t lc_ftype_names(unsigned flags, bool available_only, bool lower, const char *sep,
                      char *buf, size_t cap) {
    size_t len = 0;
    for (size_t i = 0; i < NROWS; i++) {
        const lc_ftype *f = &ROWS[i];
        if ((f->flags & flags) != flags || (available_only && !lc_ftype_available(f)))
            continue;
        if (len > 0 && sep)
            put(buf, cap, &len, sep, strlen(sep), false);
        put(buf, cap, &len, f->name, strlen(f->name), lower);
    }
    if (cap > 0)
        buf[len < cap ? len : cap - 1] = '\0';
    return len;
}
