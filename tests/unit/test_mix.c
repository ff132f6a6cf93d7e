/* Unit tests for quant/mix.c (llama-quantize's per-tensor rules) and quant/validate.c
 * (ggml's row checks). The whole-file comparison with llama.cpp itself is in
 * tests/llama/test_quantize.py; these pin the rules' corners by value. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "libconvert/model.h"
#include "quant/ftype.h"
#include "quant/mix.h"
#include "quant/validate.h"

/* ---- a model of names and shapes ---- */

typedef struct fake {
    lc_model *m;
    const char *names[256];
    size_t n;
} fake;

static void add(fake *f, const char *name, uint64_t rows, uint64_t cols) {
    const uint64_t shape[2] = { rows, cols };
    lc_tensor *t;
    lc_error err = { 0 };
    cr_assert_eq(lc_model_add_tensor(f->m, name, LC_DT_F16, rows ? 2 : 1,
                                     rows ? shape : shape + 1, &t, &err), LC_OK, "%s", err.msg);
    f->names[f->n++] = t->name;
}

/* A llama with n layers of hidden `h`, in llama-quantize's order. */
static void llama(fake *f, uint32_t n, uint64_t h, bool tied) {
    f->m = lc_model_new();
    f->n = 0;
    if (!tied)
        add(f, "output.weight", 64, h);
    add(f, "output_norm.weight", 0, h);
    add(f, "token_embd.weight", 64, h);
    for (uint32_t i = 0; i < n; i++) {
        static const char *const parts[] = { "attn_k", "attn_output", "attn_q", "attn_v",
                                             "ffn_down", "ffn_gate", "ffn_up" };
        for (size_t k = 0; k < sizeof parts / sizeof *parts; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%u.%s.weight", i, parts[k]);
            add(f, name, h, h);
        }
        char norm[64];
        snprintf(norm, sizeof norm, "blk.%u.attn_norm.weight", i);
        add(f, norm, 0, h);
    }
}

static lc_mix *plan(fake *f, const char *ftype, uint32_t n_layer, uint32_t heads,
                    uint32_t kv, lc_mix_opts *more) {
    const lc_ftype *ft = lc_ftype_by_name(ftype);
    cr_assert_not_null(ft, "%s", ftype);
    lc_mix_opts o = more ? *more : (lc_mix_opts){ 0 };
    o.ftype = ft->id;
    o.base = ft->base;
    if (!more)
        o.output_type = o.token_embd_type = LC_DT_INVALID;
    const lc_mix_model mm = { .arch = lc_arch_by_name("llama"), .n_layer = n_layer,
                              .n_head = heads, .n_head_kv = kv };
    lc_mix *m = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_mix_new(&o, &mm, f->names, f->n, &m, &err), LC_OK, "%s", err.msg);
    return m;
}

/* The type each tensor gets, picked in order; `want` lists "name=TYPE" to check. */
static void expect(fake *f, lc_mix *m, const char *const *want, size_t n_want) {
    for (size_t i = 0; i < f->n; i++) {
        lc_mix_choice c;
        lc_error err = { 0 };
        cr_assert_eq(lc_mix_pick(m, lc_model_tensor(f->m, i), &c, &err), LC_OK, "%s: %s",
                     f->names[i], err.msg);
        for (size_t k = 0; k < n_want; k++) {
            const char *eq = strchr(want[k], '=');
            if (strlen(f->names[i]) == (size_t)(eq - want[k]) &&
                strncmp(want[k], f->names[i], (size_t)(eq - want[k])) == 0)
                cr_assert_str_eq(lc_dtype_name(c.type), eq + 1, "%s", f->names[i]);
        }
    }
}

static void done(fake *f, lc_mix *m) {
    lc_mix_free(m);
    lc_model_free(f->m);
}

/* use_more_bits(i, 8): i < 1, i >= 7, (i - 1) % 3 == 2 -> layers 0, 3, 6, 7. */
Test(mix, q4_k_m_bumps_attn_v_and_ffn_down_where_use_more_bits_says) {
    fake f;
    llama(&f, 8, 256, false);
    lc_mix *m = plan(&f, "Q4_K_M", 8, 8, 8, NULL);
    static const char *const want[] = {
        "output.weight=Q6_K", "token_embd.weight=Q4_K", "output_norm.weight=F16",
        "blk.0.attn_v.weight=Q6_K", "blk.1.attn_v.weight=Q4_K", "blk.2.attn_v.weight=Q4_K",
        "blk.3.attn_v.weight=Q6_K", "blk.5.attn_v.weight=Q4_K", "blk.6.attn_v.weight=Q6_K",
        "blk.7.attn_v.weight=Q6_K", "blk.0.ffn_down.weight=Q6_K", "blk.4.ffn_down.weight=Q4_K",
        "blk.7.ffn_down.weight=Q6_K", "blk.3.attn_q.weight=Q4_K", "blk.3.attn_output.weight=Q4_K",
    };
    expect(&f, m, want, sizeof want / sizeof *want);
    done(&f, m);
}

/* Without output.weight the embedding is the output: Q6_K, even in a plain Q4_0 file;
 * rows that are not whole Q6_K blocks make it Q8_0 (the "nx % qk_k" rule). */
Test(mix, a_tied_embedding_is_quantized_as_the_output) {
    fake f;
    llama(&f, 2, 256, true);
    lc_mix *m = plan(&f, "Q4_0", 2, 8, 8, NULL);
    static const char *const want[] = { "token_embd.weight=Q6_K", "blk.0.attn_v.weight=Q4_0" };
    expect(&f, m, want, 2);
    done(&f, m);
    llama(&f, 2, 64, true);
    m = plan(&f, "Q4_K_M", 2, 8, 8, NULL);
    static const char *const small[] = { "token_embd.weight=Q8_0", "blk.0.attn_q.weight=Q5_0" };
    expect(&f, m, small, 2);
    done(&f, m);
}

/* Q2_K reads the GQA ratio: attn_v Q4_K at n_head / n_head_kv >= 4, else Q3_K; ffn_down
 * and attn_output Q3_K. */
Test(mix, q2_k_reads_the_gqa_ratio) {
    fake f;
    llama(&f, 2, 256, false);
    lc_mix *m = plan(&f, "Q2_K", 2, 32, 8, NULL);
    static const char *const gqa4[] = { "blk.0.attn_v.weight=Q4_K", "blk.0.attn_q.weight=Q2_K",
                                        "blk.0.ffn_down.weight=Q3_K",
                                        "blk.1.attn_output.weight=Q3_K" };
    expect(&f, m, gqa4, 4);
    done(&f, m);
    llama(&f, 2, 256, false);
    m = plan(&f, "Q2_K", 2, 32, 16, NULL);
    static const char *const gqa2[] = { "blk.0.attn_v.weight=Q3_K" };
    expect(&f, m, gqa2, 1);
    done(&f, m);
}

/* Q3_K_M: the first two attn_v Q5_K, then Q4_K; Q4_K_S: the first four Q5_K. */
Test(mix, counters_count_tensors_of_a_kind) {
    fake f;
    llama(&f, 6, 256, false);
    lc_mix *m = plan(&f, "Q3_K_M", 6, 8, 8, NULL);
    static const char *const want[] = { "blk.1.attn_v.weight=Q5_K", "blk.2.attn_v.weight=Q4_K",
                                        "blk.0.ffn_down.weight=Q4_K" };
    expect(&f, m, want, 3);
    done(&f, m);
    llama(&f, 6, 256, false);
    m = plan(&f, "Q4_K_S", 6, 8, 8, NULL);
    static const char *const s[] = { "blk.3.attn_v.weight=Q5_K", "blk.4.attn_v.weight=Q4_K" };
    expect(&f, m, s, 2);
    done(&f, m);
}

/* --pure: no rules, but output and fallbacks as ever: rows of 64 fall back to Q5_0. */
Test(mix, pure_skips_the_rules_not_the_fallbacks) {
    fake f;
    llama(&f, 1, 64, false);
    lc_mix_opts o = { .pure = true, .output_type = LC_DT_INVALID,
                      .token_embd_type = LC_DT_INVALID };
    lc_mix *m = plan(&f, "Q4_K_M", 1, 8, 8, &o);
    static const char *const want[] = { "output.weight=Q5_0", "blk.0.attn_v.weight=Q5_0" };
    expect(&f, m, want, 2);
    done(&f, m);
}

/* Explicit types: patterns (lower-cased, \d accepted, first match wins), the options;
 * one a row cannot hold is refused naming the tensor. */
Test(mix, explicit_types_and_their_refusal) {
    fake f;
    llama(&f, 2, 256, false);
    static const lc_mix_pattern pats[] = { { "BLK\\.\\d\\.ATTN_Q", LC_DT_Q8_0 },
                                           { "attn", LC_DT_F16 } };
    lc_mix_opts o = { .patterns = pats, .n_patterns = 2, .output_type = LC_DT_Q5_0,
                      .token_embd_type = LC_DT_BF16 };
    lc_mix *m = plan(&f, "Q4_K_M", 2, 8, 8, &o);
    static const char *const want[] = { "blk.1.attn_q.weight=Q8_0", "blk.1.attn_k.weight=F16",
                                        "output.weight=Q5_0", "token_embd.weight=BF16",
                                        "blk.1.ffn_up.weight=Q4_K" };
    expect(&f, m, want, 5);
    done(&f, m);

    llama(&f, 1, 64, false);
    static const lc_mix_pattern k[] = { { "ffn_down", LC_DT_Q6_K } };
    lc_mix_opts ko = { .patterns = k, .n_patterns = 1, .output_type = LC_DT_INVALID,
                       .token_embd_type = LC_DT_INVALID };
    m = plan(&f, "Q8_0", 1, 8, 8, &ko);
    lc_error err = { 0 };
    lc_mix_choice c;
    lc_code rc = LC_OK;
    for (size_t i = 0; i < f.n && rc == LC_OK; i++)
        rc = lc_mix_pick(m, lc_model_tensor(f.m, i), &c, &err);
    cr_assert_eq(rc, LC_E_ARG);
    cr_assert_str_eq(err.where, "blk.0.ffn_down.weight");
    done(&f, m);
}

Test(mix, refuses_tensors_arch_cannot_place) {
    fake f;
    llama(&f, 1, 256, false);
    add(&f, "blk.0.ffn_down_shexp.weight", 256, 256);       /* no llama row has it */
    lc_mix *m = plan(&f, "Q8_0", 1, 8, 8, NULL);
    lc_error err = { 0 };
    lc_mix_choice c;
    cr_assert_eq(lc_mix_pick(m, lc_model_tensor(f.m, f.n - 1), &c, &err), LC_E_UNSUPPORTED);
    cr_assert_str_eq(err.where, "blk.0.ffn_down_shexp.weight");
    lc_mix_free(m);
    lc_model_free(f.m);
}

Test(mix, q2_k_s_needs_an_importance_matrix) {
    fake f;
    llama(&f, 1, 256, false);
    lc_mix *m = plan(&f, "Q2_K_S", 1, 8, 8, NULL);
    lc_error err = { 0 };
    lc_mix_choice c;
    cr_assert_eq(lc_mix_pick(m, lc_model_find_tensor(f.m, "blk.0.attn_q.weight"), &c, &err),
                 LC_OK);
    cr_assert_eq(c.type, LC_DT_Q2_K);
    cr_assert(c.needs_imatrix);
    cr_assert_eq(lc_mix_pick(m, lc_model_find_tensor(f.m, "output.weight"), &c, &err), LC_OK);
    cr_assert_not(c.needs_imatrix);
    done(&f, m);
}

/* ---- order, which tensors, fallbacks, what is writable ---- */

Test(mix, loader_order_is_by_layer_number_then_name) {
    cr_assert_lt(lc_mix_order("output.weight", "output_norm.weight"), 0);
    cr_assert_lt(lc_mix_order("token_embd.weight", "blk.0.attn_q.weight"), 0);
    cr_assert_lt(lc_mix_order("blk.2.ffn_up.weight", "blk.10.attn_k.weight"), 0);
    cr_assert_gt(lc_mix_order("blk.10.attn_k.weight", "blk.9.ffn_up.weight"), 0);
    cr_assert_lt(lc_mix_order("blk.x.a", "blk.0.a"), 0);       /* no number: outside layers */
    cr_assert_eq(lc_mix_order("blk.1.a", "blk.1.a"), 0);
}

Test(mix, which_tensors_are_quantized) {
    const uint64_t two[2] = { 4, 256 }, flat[2] = { 1, 256 };
    cr_assert(lc_mix_quantizable("blk.0.attn_q.weight", 2, two, false));
    cr_assert_not(lc_mix_quantizable("blk.0.attn_q.weight", 2, flat, false));   /* ggml: 1-D */
    cr_assert_not(lc_mix_quantizable("blk.0.attn_q.bias", 2, two, false));
    cr_assert_not(lc_mix_quantizable("blk.0.attn_norm.weight", 2, two, false));
    cr_assert_not(lc_mix_quantizable("blk.0.ffn_gate_inp.weight", 2, two, false));
    cr_assert_not(lc_mix_quantizable("position_embd.weight", 2, two, false));
    cr_assert(lc_mix_quantizable("output.weight", 2, two, false));
    cr_assert_not(lc_mix_quantizable("output.weight", 2, two, true));
    /* llama.cpp's rfind("weight") == size() - 6 also holds for any 5-byte name */
    cr_assert(lc_mix_quantizable("abcde", 2, two, false));
    cr_assert_not(lc_mix_quantizable("abcd", 2, two, false));
    cr_assert(lc_mix_quantizable("x_weight", 2, two, false));
}

Test(mix, fallbacks_for_rows_that_are_not_whole_blocks) {
    cr_assert_eq(lc_mix_fallback(LC_DT_Q4_K, 256), LC_DT_Q4_K);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q4_K, 64), LC_DT_Q5_0);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q4_K, 48), LC_DT_F16);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q5_K, 64), LC_DT_Q5_1);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q6_K, 64), LC_DT_Q8_0);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q2_K, 96), LC_DT_Q4_0);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q3_K, 96), LC_DT_Q4_0);
    cr_assert_eq(lc_mix_fallback(LC_DT_IQ2_XXS, 64), LC_DT_IQ4_NL);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q8_0, 48), LC_DT_F16);
    cr_assert_eq(lc_mix_fallback(LC_DT_Q8_K, 64), LC_DT_INVALID);
    cr_assert_eq(lc_mix_fallback(LC_DT_F16, 7), LC_DT_F16);
}

Test(mix, writable_file_types_follow_the_table) {
    static const char *const yes[] = { "F32", "BF16", "Q8_0", "Q4_0", "Q6_K", "Q4_K_M",
                                       "Q4_K_S", "Q5_K_M", "Q3_K_L", "Q2_K", "IQ4_XS",
                                       "MXFP4_MOE" };
    /* Q2_K_S and IQ2_XXS need an importance matrix; NVFP4 has no quantizer here. */
    static const char *const no[] = { "Q2_K_S", "IQ2_XXS", "NVFP4" };
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        const lc_ftype *f = lc_ftype_by_name(yes[i]);
        cr_assert(lc_mix_ftype_writable(f->id, f->base), "%s", yes[i]);
    }
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        const lc_ftype *f = lc_ftype_by_name(no[i]);
        cr_assert_not(lc_mix_ftype_writable(f->id, f->base), "%s", no[i]);
    }
    const lc_ftype *f = lc_ftype_by_name("Q2_K_S");
    cr_assert(lc_mix_ftype_writable_imatrix(f->id, f->base), "with an importance matrix");
    f = lc_ftype_by_name("IQ2_XXS");
    cr_assert(lc_mix_ftype_writable_imatrix(f->id, f->base), "IQ2_XXS with a matrix");
    f = lc_ftype_by_name("MXFP4_MOE");
    cr_assert(lc_mix_ftype_writable_imatrix(f->id, f->base), "MXFP4 ignores a matrix");
    f = lc_ftype_by_name("NVFP4");
    cr_assert_not(lc_mix_ftype_writable_imatrix(f->id, f->base), "no NVFP4 quantizer");
}

/* ---- ggml's row checks ---- */

Test(validate, plain_floats) {
    float f[70] = { 0 };
    const char *what = NULL;
    cr_assert_eq(lc_validate_data(LC_DT_F32, f, 70, &what), UINT64_MAX);
    f[67] = NAN;
    cr_assert_eq(lc_validate_data(LC_DT_F32, f, 70, &what), 67);
    cr_assert_str_eq(what, "NaN");
    f[3] = -INFINITY;
    cr_assert_eq(lc_validate_data(LC_DT_F32, f, 70, &what), 3);
    cr_assert_str_eq(what, "infinity");
    const uint16_t bf[3] = { 0x3f80, 0x7f81, 0 }, h[2] = { 0x7bff, 0xfc00 };
    cr_assert_eq(lc_validate_data(LC_DT_BF16, bf, 3, &what), 1);
    cr_assert_eq(lc_validate_data(LC_DT_F16, h, 2, &what), 1);
    cr_assert_str_eq(what, "infinity");
    const int32_t ints[2] = { -1, 0x7f800000 };
    cr_assert_eq(lc_validate_data(LC_DT_I32, ints, 2, &what), UINT64_MAX);
}

Test(validate, block_scales) {
    uint8_t b[3 * 210] = { 0 };
    const char *what = NULL;
    cr_assert_eq(lc_validate_data(LC_DT_Q6_K, b, 3, &what), UINT64_MAX);
    lc_store_le16(b + 2 * 210 + 208, 0x7c00);            /* Q6_K d is last */
    cr_assert_eq(lc_validate_data(LC_DT_Q6_K, b, 3, &what), 2);
    cr_assert_str_eq(what, "an infinite scale");
    uint8_t q2[84] = { 0 };
    lc_store_le16(q2 + 82, 0x7e00);                      /* Q2_K dmin */
    cr_assert_eq(lc_validate_data(LC_DT_Q2_K, q2, 1, &what), 0);
    cr_assert_str_eq(what, "a NaN scale");
    uint8_t q41[2 * 20] = { 0 };
    lc_store_le16(q41 + 20 + 2, 0xfc00);                 /* Q4_1 m */
    cr_assert_eq(lc_validate_data(LC_DT_Q4_1, q41, 2, &what), 1);
    uint8_t q81[36] = { 0 };
    cr_assert_eq(lc_validate_data(LC_DT_Q8_1, q81, 1, &what), 0);  /* ggml refuses Q8_1 */
}

/* The view reads any range and names the row and column of a bad value, reading whole
 * elements around a range that cuts one. */
Test(validate, view_names_row_and_column) {
    float data[3 * 5];
    for (int i = 0; i < 15; i++)
        data[i] = (float)i;
    data[7] = INFINITY;                                  /* row 1, column 2 */
    lc_model *m = lc_model_new();
    const uint64_t shape[2] = { 3, 5 };
    lc_tensor *src, *v;
    lc_error err = { 0 };
    cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_F32, 2, shape, &src, &err), LC_OK);
    src->data = (const uint8_t *)data;
    cr_assert_eq(lc_model_add_tensor(m, "w.checked", LC_DT_F32, 2, shape, &v, &err), LC_OK);
    cr_assert_eq(lc_validate_view(v, src, &err), LC_OK);
    uint8_t buf[60];
    cr_assert_eq(lc_tensor_read(v, 0, buf, 28, &err), LC_OK);        /* elements 0..6 */
    cr_assert_eq(lc_tensor_read(v, 31, buf, 2, &err), LC_E_MALFORMED); /* inside element 7 */
    cr_assert(strstr(err.msg, "row 1, column 2 holds infinity"), "%s", err.msg);
    cr_assert_str_eq(err.where, "w.checked");
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_tensor_read(v, 1, buf, 59, &err), LC_E_MALFORMED);
    lc_model_free(m);
}
