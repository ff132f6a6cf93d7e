/* Unit tests for quant/ftype.c: every file type against the literal values of
 * llama-cpp-python 0.3.36's vendored llama.cpp (include/llama.h enum llama_ftype; names
 * from tools/quantize/quantize.cpp; base types from src/llama-quant.cpp), lookups both
 * ways, the names tools print, and which rows we can write today. */
#include <criterion/criterion.h>
#include <string.h>

#include "libconvert/dtype.h"
#include "quant/ftype.h"
#include "quant/quant.h"

/* LLAMA_FTYPE_ALL_F32 = 0, LLAMA_FTYPE_MOSTLY_<name> = id for the rest; copied by hand
 * from llama.h, not from our table. */
static const struct { const char *name; uint32_t id; lc_dtype base; } LLAMA[] = {
    { "F32", 0, LC_DT_F32 },          { "F16", 1, LC_DT_F16 },
    { "Q4_0", 2, LC_DT_Q4_0 },        { "Q4_1", 3, LC_DT_Q4_1 },
    { "Q8_0", 7, LC_DT_Q8_0 },        { "Q5_0", 8, LC_DT_Q5_0 },
    { "Q5_1", 9, LC_DT_Q5_1 },        { "Q2_K", 10, LC_DT_Q2_K },
    { "Q3_K_S", 11, LC_DT_Q3_K },     { "Q3_K_M", 12, LC_DT_Q3_K },
    { "Q3_K_L", 13, LC_DT_Q3_K },     { "Q4_K_S", 14, LC_DT_Q4_K },
    { "Q4_K_M", 15, LC_DT_Q4_K },     { "Q5_K_S", 16, LC_DT_Q5_K },
    { "Q5_K_M", 17, LC_DT_Q5_K },     { "Q6_K", 18, LC_DT_Q6_K },
    { "IQ2_XXS", 19, LC_DT_IQ2_XXS }, { "IQ2_XS", 20, LC_DT_IQ2_XS },
    { "Q2_K_S", 21, LC_DT_Q2_K },     { "IQ3_XS", 22, LC_DT_IQ3_S },
    { "IQ3_XXS", 23, LC_DT_IQ3_XXS }, { "IQ1_S", 24, LC_DT_IQ1_S },
    { "IQ4_NL", 25, LC_DT_IQ4_NL },   { "IQ3_S", 26, LC_DT_IQ3_S },
    { "IQ3_M", 27, LC_DT_IQ3_S },     { "IQ2_S", 28, LC_DT_IQ2_XS },
    { "IQ2_M", 29, LC_DT_IQ2_S },     { "IQ4_XS", 30, LC_DT_IQ4_XS },
    { "IQ1_M", 31, LC_DT_IQ1_M },     { "BF16", 32, LC_DT_BF16 },
    { "TQ1_0", 36, LC_DT_TQ1_0 },     { "TQ2_0", 37, LC_DT_TQ2_0 },
    { "MXFP4_MOE", 38, LC_DT_MXFP4 }, { "NVFP4", 39, LC_DT_NVFP4 },
    { "Q1_0", 40, LC_DT_Q1_0 },       { "Q2_0", 41, LC_DT_Q2_0 },
};
#define NLLAMA (sizeof LLAMA / sizeof LLAMA[0])

Test(ftype, every_llama_cpp_file_type_both_ways) {
    cr_assert_eq(lc_ftype_count(), NLLAMA, "one row per llama.cpp file type, no more");
    for (size_t i = 0; i < NLLAMA; i++) {
        const lc_ftype *f = lc_ftype_by_id(LLAMA[i].id);
        cr_assert_not_null(f, "id %u", LLAMA[i].id);
        cr_assert_str_eq(f->name, LLAMA[i].name, "id %u", LLAMA[i].id);
        cr_assert_eq(f->base, LLAMA[i].base, "%s base", LLAMA[i].name);
        cr_assert_eq(lc_ftype_by_name(LLAMA[i].name), f, "%s", LLAMA[i].name);
    }
    for (size_t i = 0; i < lc_ftype_count(); i++) {   /* ids and names are unique */
        const lc_ftype *f = lc_ftype_at(i);
        cr_assert_eq(lc_ftype_by_id(f->id), f, "%s", f->name);
        cr_assert_eq(lc_ftype_by_name(f->name), f, "%s", f->name);
        cr_assert(f->base == LC_DT_INVALID || lc_dtype_get(f->base)->gguf_id >= 0, "%s",
                  f->name);
    }
    cr_assert_null(lc_ftype_at(lc_ftype_count()));
}

Test(ftype, unknown_ids_and_names_are_refused) {
    static const uint32_t ids[] = { 4, 5, 6, 33, 34, 35, 42, 1024, 1024 | 7, UINT32_MAX };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        cr_assert_null(lc_ftype_by_id(ids[i]), "id %u", ids[i]);
    static const char *names[] = { "", "Q4_2", "Q8", "F64", "q8_0 ", "MOSTLY_Q8_0", "COPY",
                                   "auto", "Q4_K_X", "Q6_K_M", "Q8_0\n" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        cr_assert_null(lc_ftype_by_name(names[i]), "'%s'", names[i]);
    cr_assert_null(lc_ftype_by_name(NULL));
}

Test(ftype, names_are_case_insensitive_with_llama_quantize_aliases) {
    cr_assert_eq(lc_ftype_by_name("q8_0")->id, 7);
    cr_assert_eq(lc_ftype_by_name("bf16")->id, 32);
    cr_assert_eq(lc_ftype_by_name("q4_k_m")->id, 15);
    cr_assert_eq(lc_ftype_by_name("Q3_K")->id, 12);       /* "alias for Q3_K_M" */
    cr_assert_eq(lc_ftype_by_name("q4_k")->id, 15);
    cr_assert_eq(lc_ftype_by_name("Q5_K")->id, 17);
    cr_assert_str_eq(lc_ftype_by_name("q4_k")->name, "Q4_K_M");
}

/* llama_model_loader's guess from the most common tensor type. */
Test(ftype, for_dtype_is_llama_cpp_guess) {
    static const struct { lc_dtype t; uint32_t id; } want[] = {
        { LC_DT_F32, 0 },   { LC_DT_F16, 1 },   { LC_DT_BF16, 32 },  { LC_DT_Q8_0, 7 },
        { LC_DT_Q4_0, 2 },  { LC_DT_Q4_1, 3 },  { LC_DT_Q5_0, 8 },   { LC_DT_Q5_1, 9 },
        { LC_DT_Q2_K, 10 }, { LC_DT_Q3_K, 12 }, { LC_DT_Q4_K, 15 },  { LC_DT_Q5_K, 17 },
        { LC_DT_Q6_K, 18 }, { LC_DT_IQ2_S, 28 }, { LC_DT_IQ3_S, 26 }, { LC_DT_TQ2_0, 37 },
        { LC_DT_NVFP4, 39 }, { LC_DT_Q1_0, 40 }, { LC_DT_Q2_0, 41 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lc_ftype *f = lc_ftype_for_dtype(want[i].t);
        cr_assert_not_null(f, "%s", lc_dtype_name(want[i].t));
        cr_assert_eq(f->id, want[i].id, "%s", lc_dtype_name(want[i].t));
    }
    static const lc_dtype none[] = { LC_DT_INVALID, LC_DT_I32, LC_DT_F64, LC_DT_Q8_1,
                                     LC_DT_Q8_K, LC_DT_MXFP4, LC_DT_COUNT };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        cr_assert_null(lc_ftype_for_dtype(none[i]), "%d", (int)none[i]);
}

/* What we can write: plain floats, and file types whose rules (quant/mix.c) give a dense
 * model only types with kernels: Q4_K_M needs Q4_K, Q6_K and their fallbacks Q5_0, Q8_0;
 * Q4_K_S also needs Q5_K; Q2_K_S needs an importance matrix (and has one with
 * lc_ftype_available_imatrix). */
Test(ftype, available_rows_follow_the_kernels) {
    static const char *yes[] = { "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0",
                                 "Q5_1", "Q6_K", "Q4_K_M", "Q4_K", "Q2_K", "Q3_K_S",
                                 "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q5_K_S", "Q5_K_M", "IQ4_NL",
                                 "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4_MOE" };
    /* Bases without a quantizer (NVFP4, Q1_0, Q2_0) cannot be written, nor types that
     * need an importance matrix without one. */
    static const char *no[] = { "Q2_K_S", "IQ2_XXS", "IQ3_XS", "NVFP4", "Q1_0", "Q2_0" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        cr_assert(lc_ftype_available(lc_ftype_by_name(yes[i])), "%s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_assert_not(lc_ftype_available(lc_ftype_by_name(no[i])), "%s", no[i]);
    cr_assert_not(lc_ftype_available(NULL));
    cr_assert(lc_ftype_available_imatrix(lc_ftype_by_name("Q2_K_S")));
    cr_assert(lc_ftype_available_imatrix(lc_ftype_by_name("Q4_K_M")));
    cr_assert_not(lc_ftype_available_imatrix(NULL));
    for (size_t i = 0; i < lc_ftype_count(); i++) {
        const lc_ftype *f = lc_ftype_at(i);
        if (lc_ftype_available(f) && f->base != LC_DT_F32 && f->base != LC_DT_F16 &&
            f->base != LC_DT_BF16)
            cr_assert(lc_quant_writable(f->base), "%s", f->name);
    }
}

/* safetensors2gguf's --outtype list, as its usage line and error message spell it. */
Test(ftype, outtype_names) {
    char buf[256];
    cr_assert_eq(lc_ftype_names(LC_FTYPE_OUTTYPE, false, true, "|", buf, sizeof buf), 17);
    cr_assert_str_eq(buf, "f32|f16|bf16|q8_0");
    for (size_t i = 0; i < lc_ftype_count(); i++) {
        const lc_ftype *f = lc_ftype_at(i);
        const bool out = strcmp(f->name, "F32") == 0 || strcmp(f->name, "F16") == 0 ||
                         strcmp(f->name, "BF16") == 0 || strcmp(f->name, "Q8_0") == 0;
        cr_assert_eq(!!(f->flags & LC_FTYPE_OUTTYPE), out, "%s", f->name);
    }
    lc_ftype_names(0, true, false, ", ", buf, sizeof buf);
    cr_assert_str_eq(buf, "F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q5_0, Q5_1, Q2_K, Q3_K_S, Q3_K_M, "
                          "Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ3_S, IQ3_M, "
                          "IQ4_XS, TQ1_0, TQ2_0, MXFP4_MOE");
    /* With an importance matrix, every IQ file type and Q2_K_S too. */
    static const char *const with_im[] = { "IQ2_XXS", "IQ2_XS", "Q2_K_S", "IQ3_XS", "IQ3_XXS",
                                           "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M" };
    for (size_t i = 0; i < sizeof with_im / sizeof *with_im; i++) {
        cr_assert_not(lc_ftype_available(lc_ftype_by_name(with_im[i])), "%s", with_im[i]);
        cr_assert(lc_ftype_available_imatrix(lc_ftype_by_name(with_im[i])), "%s", with_im[i]);
    }
    lc_ftype_names(LC_FTYPE_MIX, false, false, " ", buf, sizeof buf);
    cr_assert_str_eq(buf, "Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q2_K_S IQ3_XS "
                          "IQ3_M IQ2_S IQ2_M MXFP4_MOE");
}

Test(ftype, names_truncate_like_snprintf) {
    char buf[6];
    memset(buf, 'x', sizeof buf);
    cr_assert_eq(lc_ftype_names(LC_FTYPE_OUTTYPE, false, true, "|", buf, sizeof buf), 17);
    cr_assert_str_eq(buf, "f32|f");
    cr_assert_eq(lc_ftype_names(LC_FTYPE_OUTTYPE, false, true, "|", NULL, 0), 17);
    cr_assert_eq(lc_ftype_names(LC_FTYPE_OUTTYPE, false, true, NULL, buf, sizeof buf), 14);
    cr_assert_str_eq(buf, "f32f1");
}
