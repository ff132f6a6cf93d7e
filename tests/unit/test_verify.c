/* Unit tests for the model-verify job (jobs/model_verify*.c): what each type may change,
 * perplexity.cpp's percentile, the quoting of names from files, the job's codes, and
 * every allocation failing in turn. The end-to-end cases (intact conversions, planted
 * defects, llama.cpp's figures) are tests/integration/test_verify.py and
 * tests/llama/test_verify.py. Fixtures from $LC_FIXTURES (default "fixtures"). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/gguf_quantize.h"
#include "jobs/model_verify.h"
#include "jobs/model_verify_print.h"
#include "jobs/model_verify_impl.h"
#include "libconvert/alloc.h"
#include "quant/ftype.h"
#include "quant/quant.h"

static const char *fx(const char *rel) {
    static char buf[4][512];
    static int k;
    const char *root = getenv("LC_FIXTURES") ? getenv("LC_FIXTURES") : "fixtures";
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
    return buf[k];
}

Test(verify_expect, exact_when_the_type_holds_every_value) {
    const lc_dtype exact[][2] = { { LC_DT_BF16, LC_DT_F32 }, { LC_DT_F16, LC_DT_F32 },
                                  { LC_DT_Q8_0, LC_DT_F32 }, { LC_DT_Q4_K, LC_DT_F32 },
                                  { LC_DT_F32, LC_DT_F32 }, { LC_DT_Q6_K, LC_DT_Q6_K },
                                  { LC_DT_BF16, LC_DT_F64 } };
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
        const lc_vf_expect e = lc_vf_expect_pair(exact[i][0], exact[i][1]);
        cr_assert_eq(e.cls, LC_DT_INVALID, "%s -> %s", lc_dtype_name(exact[i][0]),
                     lc_dtype_name(exact[i][1]));
        cr_assert_eq(e.rel, 0);
        cr_assert_eq(e.abs, 0);
    }
}

Test(verify_expect, float_rounding_and_block_bounds) {
    lc_vf_expect e = lc_vf_expect_pair(LC_DT_F32, LC_DT_F16);
    cr_assert(e.cls == LC_DT_F16 && e.block == 1 && e.rel == 0x1p-11 && e.abs == 0x1p-25);
    e = lc_vf_expect_pair(LC_DT_F32, LC_DT_BF16);
    cr_assert(e.cls == LC_DT_BF16 && e.rel == 0x1p-8);
    e = lc_vf_expect_pair(LC_DT_BF16, LC_DT_F16);       /* not every bf16 fits f16 */
    cr_assert_eq(e.cls, LC_DT_F16);
    e = lc_vf_expect_pair(LC_DT_BF16, LC_DT_Q8_0);
    cr_assert(e.cls == LC_DT_Q8_0 && e.block == 32 && e.rel == 0.006);
    e = lc_vf_expect_pair(LC_DT_F16, LC_DT_Q4_K);
    cr_assert(e.cls == LC_DT_Q4_K && e.block == 256);
    e = lc_vf_expect_pair(LC_DT_F32, LC_DT_IQ4_NL);    /* read-only type: a loose bound */
    cr_assert(e.cls == LC_DT_IQ4_NL && e.block == 32 && e.rel == 1.0);
    /* requantized: both roundings */
    const lc_vf_expect a = lc_vf_expect_pair(LC_DT_F32, LC_DT_Q4_0);
    e = lc_vf_expect_pair(LC_DT_Q8_0, LC_DT_Q4_0);
    cr_assert(e.cls == LC_DT_Q4_0 && e.rel > a.rel && e.rel == a.rel + 0.006);
}

Test(verify_expect, read_only_types_have_a_tensor_floor) {
    /* measured with llama.cpp's quantizer (expect.c): IQ4_NL cosine 0.9928 at worst */
    lc_vf_expect e = lc_vf_expect_pair(LC_DT_F32, LC_DT_IQ4_NL);
    cr_assert(e.cos_min == 0.97 && e.rel_rmse_max == 0.24);
    e = lc_vf_expect_pair(LC_DT_F16, LC_DT_Q1_0);       /* 1 bit: cosine only */
    cr_assert(e.cos_min > 0.1 && e.cos_min < 0.3 && e.rel_rmse_max == INFINITY);
    e = lc_vf_expect_pair(LC_DT_Q8_0, LC_DT_IQ4_XS);    /* requantized: looser */
    const lc_vf_expect f = lc_vf_expect_pair(LC_DT_F32, LC_DT_IQ4_XS);
    cr_assert(e.cos_min < f.cos_min && e.rel_rmse_max > f.rel_rmse_max);
    /* every read-only block type gets one (a zeroed tensor has cosine 0) */
    for (int t = 0; t < LC_DT_COUNT; t++) {
        e = lc_vf_expect_pair(LC_DT_F32, (lc_dtype)t);
        if (lc_dtype_is_quant((lc_dtype)t) && e.rel == 1.0)
            cr_assert(e.cos_min > 0.1, "%s", lc_dtype_name((lc_dtype)t));
    }
    /* writable types and floats keep their per-block / per-element bounds only */
    const lc_dtype none[] = { LC_DT_Q4_0, LC_DT_Q2_K, LC_DT_Q8_0, LC_DT_F16, LC_DT_BF16 };
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        e = lc_vf_expect_pair(LC_DT_F32, none[i]);
        cr_assert(e.cos_min == -INFINITY && e.rel_rmse_max == INFINITY);
    }
}

Test(verify_repro, types_we_write_and_proxies) {
    bool proxy;
    /* writable: itself, the IQ and TQ types quant/ writes included */
    const lc_dtype own[] = { LC_DT_Q8_0, LC_DT_Q4_K, LC_DT_Q2_K, LC_DT_F16, LC_DT_BF16, LC_DT_F32,
                             LC_DT_IQ4_NL, LC_DT_IQ4_XS, LC_DT_TQ1_0, LC_DT_TQ2_0, LC_DT_IQ3_S,
                             LC_DT_IQ3_XXS, LC_DT_IQ2_S, LC_DT_IQ1_M, LC_DT_MXFP4 };
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        cr_assert_eq(lc_vf_repro_type(own[i], 256, false, &proxy), own[i], "%s",
                     lc_dtype_name(own[i]));
        cr_assert(!proxy);
    }
    /* the types whose quantizer requires an importance matrix: themselves with one, a
     * stand-in without */
    const lc_dtype needs[] = { LC_DT_IQ2_XXS, LC_DT_IQ2_XS, LC_DT_IQ1_S };
    for (size_t i = 0; i < sizeof needs / sizeof *needs; i++) {
        cr_assert_eq(lc_vf_repro_type(needs[i], 512, true, &proxy), needs[i]);
        cr_assert(!proxy);
        cr_assert(lc_vf_repro_type(needs[i], 512, false, &proxy) == LC_DT_Q2_K && proxy);
    }
    /* read-only: the nearest writable type whose block divides the row */
    cr_assert(lc_vf_repro_type(LC_DT_NVFP4, 64, false, &proxy) == LC_DT_Q4_0 && proxy);
    cr_assert(lc_vf_repro_type(LC_DT_Q1_0, 128, false, &proxy) == LC_DT_Q4_0 && proxy);  /* not 256 */
    cr_assert(lc_vf_repro_type(LC_DT_Q8_K, 256, true, &proxy) == LC_DT_Q8_0 && proxy);
    /* every block type gets one or is written itself */
    for (int t = 0; t < LC_DT_COUNT; t++)
        if (lc_dtype_is_quant((lc_dtype)t) && lc_dequant_supported((lc_dtype)t))
            cr_assert_neq(lc_vf_repro_type((lc_dtype)t, 1024, false, &proxy), LC_DT_INVALID,
                          "%s", lc_dtype_name((lc_dtype)t));
}

Test(verify_expect, classes_order_by_loss) {
    const lc_dtype order[] = { LC_DT_INVALID, LC_DT_F32, LC_DT_F16, LC_DT_BF16, LC_DT_Q8_0,
                               LC_DT_Q6_K, LC_DT_Q5_1, LC_DT_Q5_0, LC_DT_Q4_K, LC_DT_Q4_1,
                               LC_DT_Q4_0, LC_DT_Q3_K, LC_DT_Q2_K, LC_DT_IQ2_XS };
    for (size_t i = 1; i < sizeof order / sizeof *order; i++) {
        cr_assert_lt(lc_vf_class_rank(order[i - 1]), lc_vf_class_rank(order[i]), "%s < %s",
                     lc_vf_class_name(order[i - 1]), lc_vf_class_name(order[i]));
        const lc_vf_limits a = lc_vf_limits_for(order[i - 1]), b = lc_vf_limits_for(order[i]);
        cr_assert_leq(a.kl_mean, b.kl_mean);
        cr_assert_leq(a.hidden, b.hidden);
    }
    cr_assert(isnan(lc_vf_limits_for(LC_DT_Q8_0).nmse), "quantized logits' NMSE is not judged");
    cr_assert_eq(lc_vf_limits_for(LC_DT_INVALID).nmse, 1e-8);
}

Test(verify_figures, percentile_is_perplexity_cpp_s) {
    const double v[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 10 };       /* sorted */
    cr_assert_eq(lc_vf_percentile(v, 10, 0), 0);
    cr_assert_eq(lc_vf_percentile(v, 10, 1), 10);
    cr_assert_float_eq(lc_vf_percentile(v, 10, 0.5), 4.5, 1e-12);  /* 0.5 * 9 = 4.5 */
    cr_assert_float_eq(lc_vf_percentile(v, 10, 0.99), 8 + 0.91 * 2, 1e-12);   /* 8.91 */
    cr_assert_eq(lc_vf_percentile(v, 1, 0.99), 0);
}

Test(verify_figures, names_from_files_are_quoted_with_control_bytes_escaped) {
    char buf[64];
    lc_vf_quote("a\nb\x1b[31m\"\\", 10, buf, sizeof buf);
    cr_assert_str_eq(buf, "\"a\\nb\\x1b[31m\\\"\\\\\"");     /* libconvert/escape.c's forms */
    lc_vf_quote("\xe2\x96\x81the", 6, buf, sizeof buf);           /* UTF-8 kept */
    cr_assert_str_eq(buf, "\"\xe2\x96\x81the\"");
    lc_vf_quote("ok\xff", 3, buf, sizeof buf);                     /* invalid: escaped */
    cr_assert_str_eq(buf, "\"ok\\xff\"");
    lc_vf_escape("blk.0\r\x1b[2Kall checks passed", buf, sizeof buf);   /* no quotes */
    cr_assert_str_eq(buf, "blk.0\\r\\x1b[2Kall checks passed");
    lc_vf_escape("a\xc2\x9b" "2J\xe2\x80\xae" "b", buf, sizeof buf);       /* C1 CSI, RLO */
    cr_assert_str_eq(buf, "a\\u009b2J\\u202eb");
    lc_vf_quote("0123456789abcdef", 16, buf, 12);                  /* cut to fit */
    cr_assert_str_eq(buf, "\"012345...\"");
    cr_assert_lt(strlen(buf), 12);
}

static lc_job_verify_opts opts(const char *src, const char *dst) {
    return (lc_job_verify_opts){ .src = src, .dst = dst, .tokens = "1,5,9,17", .threads = 1 };
}

Test(verify_job, codes) {
    lc_job_verify_opts o = opts(fx("hf-ref/llama-spm-f32.gguf"), fx("hf-ref/llama-spm-q8_0.gguf"));
    lc_error err = { 0 };
    lc_job_verify_result res;
    cr_assert_eq(lc_job_model_verify(&o, NULL, &res, &err), LC_OK, "%s", err.msg);
    cr_assert(res.pass);
    /* The headline figures: Q8_0 of the f32 reference, every pair reproduced. */
    cr_assert_str_eq(res.why, "");
    cr_assert_str_eq(res.cls, "Q8_0");
    cr_assert_str_eq(res.judged, "proven");
    cr_assert_gt(res.tensors, 0);
    cr_assert_eq(res.proven, res.tensors);
    cr_assert_eq(res.outside, 0);
    cr_assert_eq(res.key_diffs, 0);
    cr_assert(res.logits_ran);
    cr_assert_eq(res.tokens, 4);
    cr_assert(res.kl_mean >= 0 && res.kl_mean < 0.01, "%g", res.kl_mean);
    char *json;
    size_t len;
    cr_assert_eq(lc_job_verify_json(&res, &json, &len, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(strlen(json), len);
    static const char head[] = "{\"verdict\":\"pass\",\"judged\":\"proven\",\"why\":\"\"";
    cr_assert(strncmp(json, head, strlen(head)) == 0, "%s", json);
    cr_assert_eq(json[len - 1], '\n');
    lc_free(json);
    lc_job_verify_result_free(&res);
    cr_assert_null(res.run);

    o.dst = fx("hf-ref/qwen2-f32.gguf");
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_job_model_verify(&o, NULL, &res, &err), LC_E_MISMATCH);
    cr_assert_str_eq(err.where, "general.architecture");
    cr_assert_not(res.pass);
    cr_assert_null(res.run, "nothing to free after a failure");

    o = opts(fx("hf/llama-spm"), fx("hf-ref/llama-spm-f16.gguf"));
    o.text = "two sources";
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_job_model_verify(&o, NULL, &res, &err), LC_E_ARG);

    o = opts(fx("hf/llama-spm"), fx("hf-ref/llama-spm-f16.gguf"));
    o.tokens = "1";
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_job_model_verify(&o, NULL, &res, &err), LC_E_ARG, "one token: nothing "
                 "to score");
}

/* Every allocation failing in turn (spaced out past the first hundred): LC_E_NOMEM or
 * a clean pass, nothing leaked (the ASan build's leak checker watches). One thread, so
 * the allocations come in one order. (No .timeout: Criterion 2.4's runner leaks the
 * timeout's 48 bytes, which fails the ASan run.) */
Test(verify_job, out_of_memory_at_every_allocation) {
    const lc_job_verify_opts o = opts(fx("hf-ref/qwen2-f32.gguf"), fx("hf-ref/qwen2-q8_0.gguf"));
    bool ran = false;
    long tried = 0;
    for (long nth = 1; !ran; nth += nth < 100 ? 1 : nth / 16) {
        lc_error err = { 0 };
        lc_job_verify_result res;
        lc_alloc_fail_after(nth);
        const lc_code rc = lc_job_model_verify(&o, NULL, &res, &err);
        lc_alloc_fail_after(0);
        cr_assert(rc == LC_OK || rc == LC_E_NOMEM, "allocation %ld: %s: %s", nth,
                  lc_code_name(rc), err.msg);
        ran = rc == LC_OK;
        cr_assert(ran || !res.pass);
        lc_job_verify_result_free(&res);
        cr_assert_lt(nth, 1000000, "never ran to the end");
        tried = nth;
    }
    cr_assert_gt(tried, 100, "the run makes more allocations than that");
}

/* A legacy .dat importance matrix for qwen2's 64-wide matrices (q, k, v, gate, up of its
 * four layers), written into dir; returns its path. */
static const char *write_dat(const char *dir) {
    static char path[300];
    snprintf(path, sizeof path, "%s/m.imatrix.dat", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    static const char *const roles[] = { "attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up" };
    const int32_t n = 4 * 5, ncall = 1, nval = 64;
    fwrite(&n, 4, 1, f);
    for (int l = 0; l < 4; l++)
        for (int r = 0; r < 5; r++) {
            char name[64];
            const int32_t len = snprintf(name, sizeof name, "blk.%d.%s.weight", l, roles[r]);
            fwrite(&len, 4, 1, f);
            fwrite(name, 1, (size_t)len, f);
            fwrite(&ncall, 4, 1, f);
            fwrite(&nval, 4, 1, f);
            for (int c = 0; c < nval; c++) {
                const float w = 0.05f + (float)((c * 37 + l * 11 + r * 5) % 64) / 8.0f;
                fwrite(&w, 4, 1, f);
            }
        }
    cr_assert_eq(fclose(f), 0);
    return path;
}

/* --imatrix: qwen2 quantized to Q4_0 by gguf-quantize's job with a matrix is proven with
 * it and said to lack it without; then every allocation failing in turn, as above, with
 * the matrix's paths in the run (the entries, the weighted rows, the lazy weighted view). */
Test(verify_job, imatrix_proves_and_survives_out_of_memory) {
    char dir[] = "/tmp/lc-verify-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    const char *im = write_dat(dir);
    char out[320];
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    lc_job_quantize_opts q = { .in = fx("hf-ref/qwen2-f32.gguf"), .out = out,
                               .ftype = lc_ftype_by_name("Q4_0"), .imatrix = im };
    lc_error err = { 0 };
    cr_assert_eq(lc_job_gguf_quantize(&q, NULL, NULL, &err), LC_OK, "%s", err.msg);

    lc_job_verify_opts o = opts(fx("hf/qwen2"), out);
    o.imatrix = im;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    lc_job_verify_result res;
    cr_assert_eq(lc_job_model_verify(&o, NULL, &res, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_job_verify_print_text(&res, f, &err), LC_OK, "%s", err.msg);
    fclose(f);
    cr_assert(res.pass);
    lc_job_verify_result_free(&res);
    cr_assert_not_null(strstr(text, "every tensor is SRC's converted byte for byte"), "%s", text);
    cr_assert_not_null(strstr(text, "20 tensors reproduced with its weights"), "%s", text);
    free(text);

    o.imatrix = NULL;               /* without it: judged, and said to lack it */
    f = open_memstream(&text, &len);
    cr_assert_eq(lc_job_model_verify(&o, NULL, &res, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_job_verify_print_text(&res, f, &err), LC_OK, "%s", err.msg);
    fclose(f);
    lc_job_verify_result_free(&res);
    cr_assert_not_null(strstr(text, "that the reproduction lacks"), "%s", text);
    free(text);

    o.imatrix = im;
    o.tokens = "1,5,9";
    bool ran = false;
    for (long nth = 1; !ran; nth += nth < 100 ? 1 : nth / 16) {
        lc_error e = { 0 };
        lc_alloc_fail_after(nth);
        const lc_code rc = lc_job_model_verify(&o, NULL, &res, &e);
        lc_alloc_fail_after(0);
        cr_assert(rc == LC_OK || rc == LC_E_NOMEM, "allocation %ld: %s: %s", nth,
                  lc_code_name(rc), e.msg);
        ran = rc == LC_OK;
        cr_assert(ran || !res.pass);
        cr_assert_lt(nth, 1000000, "never ran to the end");
        if (!ran)
            lc_job_verify_result_free(&res);
    }
    cr_assert(res.pass);
    lc_job_verify_result_free(&res);
    remove(im);
    remove(out);
    rmdir(dir);
}
