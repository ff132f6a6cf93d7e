/* Unit tests for jobs/: each tool's job called as a library would call it, without a
 * command line: printing goes only to the FILE given, policy decisions return codes.
 * Fixtures from $LC_FIXTURES (default "fixtures"). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/gguf2safetensors.h"
#include "jobs/gguf_quantize.h"
#include "jobs/gguf_quantize_print.h"
#include "jobs/model_inspect.h"
#include "jobs/pth2safetensors.h"
#include "jobs/pth2safetensors_print.h"
#include "jobs/safetensors2gguf_print.h"
#include "jobs/safetensors2gguf.h"
#include "jobs/safetensors_rewrite.h"

static const char *fx(const char *rel) {
    static char buf[4][512];
    static int k;
    const char *root = getenv("LC_FIXTURES") ? getenv("LC_FIXTURES") : "fixtures";
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
    return buf[k];
}

/* A FILE whose text the test reads after fclose. */
typedef struct capture {
    char  *text;
    size_t len;
    FILE  *f;
} capture;
static void capture_open(capture *c) {
    c->f = open_memstream(&c->text, &c->len);
    cr_assert_not_null(c->f);
}
static char *capture_close(capture *c) {
    fclose(c->f);
    return c->text;
}

static size_t count_lines(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(jobs, pth_list_prints_one_line_per_tensor_to_the_given_file) {
    capture c;
    capture_open(&c);
    lc_job_pth2st_opts o = { .in = fx("pth/2.15.0/mlp.pth"), .mode = LC_PTH2ST_LIST,
                             .cast = LC_DT_INVALID };
    lc_error err = { 0 };
    lc_job_pth2st_result res;
    cr_assert_eq(lc_job_pth2safetensors(&o, NULL, &res, &err), LC_OK, "%s", err.msg);
    lc_job_pth2st_print_list(&res, c.f);
    char *text = capture_close(&c);
    lc_model *m = NULL;
    cr_assert_eq(lc_pth_load(o.in, NULL, &m, &err), LC_OK);
    cr_assert_gt(lc_model_tensor_count(m), 0);
    cr_assert_eq(lc_model_tensor_count(res.model), lc_model_tensor_count(m));
    cr_assert_str_eq(lc_model_tensor(res.model, 0)->name, lc_model_tensor(m, 0)->name);
    lc_job_pth2st_result_free(&res);
    cr_assert_eq(count_lines(text), lc_model_tensor_count(m), "%s", text);
    char want[512];
    const lc_tensor *t = lc_model_tensor(m, 0);
    snprintf(want, sizeof want, "%s\t%s\t", t->name, lc_dtype_name(t->dtype));
    cr_assert_eq(strncmp(text, want, strlen(want)), 0, "%s", text);
    lc_model_free(m);
    free(text);

    /* no result wanted: still a successful check */
    cr_assert_eq(lc_job_pth2safetensors(&o, NULL, NULL, &err), LC_OK);
}

Test(jobs, pth_scan_lists_every_global_then_refuses) {
    capture c;
    capture_open(&c);
    const lc_job_pth2st_opts o = { .in = fx("bad/pickle/forbidden-builtins-eval.bin"),
                                   .mode = LC_PTH2ST_SCAN, .on_ref = lc_job_pth2st_print_ref,
                                   .ref_ctx = c.f };
    lc_error err = { 0 };
    cr_assert_eq(lc_job_pth2safetensors(&o, NULL, NULL, &err), LC_E_FORBIDDEN);
    char *text = capture_close(&c);
    cr_assert(strstr(text, "FORBIDDEN\n"), "%s", text);
    free(text);
}

Test(jobs, st2gguf_check_bare_file_needs_out_and_no_folder_options) {
    lc_error err = { 0 };
    lc_job_st2gguf_opts o = { .in = fx("safetensors/tiny_llama.safetensors"),
                              .hf.outtype = LC_DT_INVALID };
    cr_assert_eq(lc_job_safetensors2gguf_check(&o, &err), LC_E_ARG, "no OUT");
    o.out = "x.gguf";
    cr_assert_eq(lc_job_safetensors2gguf_check(&o, NULL), LC_OK);
    o.folder_options = true;
    cr_assert_eq(lc_job_safetensors2gguf_check(&o, NULL), LC_E_ARG);
    cr_assert_eq(lc_job_safetensors2gguf(&o, NULL, NULL, NULL), LC_E_ARG, "the job checks too");
    cr_assert_eq(access("x.gguf", F_OK), -1);
    o.in = fx("hf/qwen2");
    o.out = NULL;
    cr_assert_eq(lc_job_safetensors2gguf_check(&o, NULL), LC_OK, "a folder takes everything");
}

Test(jobs, st2gguf_dry_run_prints_the_plan_and_writes_nothing) {
    capture c;
    capture_open(&c);
    static const char *const ov[] = { "general.name=str:Dry" };
    const lc_job_st2gguf_opts o = { .in = fx("hf/qwen2"), .hf.outtype = LC_DT_Q8_0,
                                    .overrides = ov, .n_overrides = 1, .dry_run = true };
    lc_error err = { 0 };
    lc_job_st2gguf_result res;
    cr_assert_eq(lc_job_safetensors2gguf(&o, NULL, &res, &err), LC_OK, "%s", err.msg);
    /* The result: a row per tensor of the model it holds, Q8_0 for the 2-D weights. */
    cr_assert_not_null(res.model);
    cr_assert_eq(res.plan.n, lc_model_tensor_count(res.model));
    cr_assert(res.out_planned);
    cr_assert_eq(res.n_parts, 0);
    size_t q = 0;
    while (q < res.plan.n && strcmp(res.plan.rows[q].gguf, "blk.0.attn_q.weight") != 0)
        q++;
    cr_assert_lt(q, res.plan.n);
    cr_assert_str_eq(res.plan.rows[q].src, "model.layers.0.self_attn.q_proj.weight");
    cr_assert_eq(res.plan.rows[q].to, LC_DT_Q8_0);
    cr_assert_eq(res.plan.rows[q].ndim, 2);
    cr_assert_eq(res.plan.rows[q].nbytes, res.plan.rows[q].shape[0] *
                 res.plan.rows[q].shape[1] / 32 * 34);
    lc_job_st2gguf_print(&res, c.f);
    lc_job_st2gguf_result_free(&res);
    cr_assert_null(res.model);
    char *text = capture_close(&c);
    cr_assert(strstr(text, "tensor "), "the plan: %s", text);
    cr_assert(strstr(text, "general.name"), "%s", text);
    cr_assert(strstr(text, "Dry"), "the override: %s", text);
    char want[600];
    snprintf(want, sizeof want, "output %s/Dry-", o.in);   /* the default name */
    cr_assert(strstr(text, want), "%s", text);
    cr_assert(strstr(text, "-Q8_0.gguf (not written: --dry-run)\n"), "%s", text);
    free(text);
}

Test(jobs, gguf2st_model_or_container) {
    lc_error err = { 0 };
    const lc_job_gguf2st_opts o = { .in = fx("gguf/values.gguf"), .out = "never.safetensors",
                                    .dtype = LC_DT_F16 };
    cr_assert_eq(lc_job_gguf2safetensors(&o, NULL, &err), LC_E_ARG, "a dtype for a container");
    cr_assert_str_eq(err.path, o.in);
    cr_assert_eq(access(o.out, F_OK), -1);
}

Test(jobs, gguf_quantize_plans_types_and_checks_options) {
    cr_assert_str_eq(lc_job_quantize_type("q4_k")->name, "Q4_K_M");
    cr_assert_str_eq(lc_job_quantize_type("7")->name, "Q8_0");
    cr_assert_null(lc_job_quantize_type("4"));          /* removed from llama.cpp */
    cr_assert_null(lc_job_quantize_type("Q9"));
    static const char *const bad[] = { "attn_v" };
    lc_job_quantize_opts o = { .in = fx("hf-ref/llama-spm-bf16.gguf"),
                               .ftype = lc_job_quantize_type("Q4_K_M"), .tensor_types = bad,
                               .n_tensor_types = 1 };
    lc_error err = { 0 };
    cr_assert_eq(lc_job_gguf_quantize_check(&o, &err), LC_E_ARG, "PATTERN=TYPE");
    o.n_tensor_types = 0;
    o.ftype = lc_job_quantize_type("Q2_K_S");
    cr_assert_eq(lc_job_gguf_quantize_check(&o, NULL), LC_E_ARG, "Q2_K_S needs an imatrix");
    o.dry_run = true;
    cr_assert_eq(lc_job_gguf_quantize_check(&o, NULL), LC_OK, "a dry run plans it");

    capture c;
    capture_open(&c);
    o.ftype = lc_job_quantize_type("Q4_K_M");
    o.out = "never.gguf";
    memset(&err, 0, sizeof err);
    lc_job_quantize_result res;
    cr_assert_eq(lc_job_gguf_quantize(&o, NULL, &res, &err), LC_OK, "%s", err.msg);
    /* The result holds the plan itself: q_proj of 64 columns falls back to Q5_0. */
    cr_assert_eq(res.n_rows, 39);
    cr_assert(res.dry_run);
    cr_assert_str_eq(res.out, "never.gguf");
    size_t q = 0;
    while (q < res.n_rows && strcmp(res.rows[q].name, "blk.0.attn_q.weight") != 0)
        q++;
    cr_assert_lt(q, res.n_rows);
    cr_assert_eq(res.rows[q].from, LC_DT_BF16);
    cr_assert_eq(res.rows[q].to, LC_DT_Q5_0);
    cr_assert_str_eq(res.rows[q].why, "base");
    cr_assert_eq(res.rows[q].ndim, 2);
    cr_assert_eq(res.rows[q].shape[0], 64);
    cr_assert_eq(res.rows[q].shape[1], 64);
    cr_assert_eq(res.rows[q].bytes_in, 64 * 64 * 2);
    cr_assert_eq(res.rows[q].bytes_out, 64 * 64 / 32 * 22);
    cr_assert_eq(lc_job_quantize_print(&res, false, c.f, NULL, &err), LC_OK, "%s", err.msg);
    lc_job_quantize_result_free(&res);
    cr_assert_null(res.rows);
    char *text = capture_close(&c);
    /* 64 columns: Q4_K falls back to Q5_0; the untied output.weight gets Q8_0 */
    cr_assert(strstr(text, "blk.0.attn_q.weight"), "%s", text);
    cr_assert(strstr(text, "BF16  -> Q5_0  base"), "%s", text);
    cr_assert(strstr(text, "output.weight"), "%s", text);
    cr_assert(strstr(text, "would write never.gguf as Q4_K_M: 39 tensors"), "%s", text);
    cr_assert_eq(access(o.out, F_OK), -1);
    free(text);
}

Test(jobs, inspect_and_rewrite_report_the_reader_code) {
    lc_error err = { 0 };
    const lc_job_inspect_opts io = { .path = fx("nothere.safetensors") };
    lc_job_inspect_result res;
    cr_assert_neq(lc_job_model_inspect(&io, NULL, &res, &err), LC_OK);
    cr_assert_null(res.model);
    const lc_job_inspect_opts ok = { .path = fx("safetensors/tiny_llama.safetensors") };
    cr_assert_eq(lc_job_model_inspect(&ok, NULL, NULL, NULL), LC_OK, "no result: only opens");
    cr_assert_eq(lc_job_model_inspect(&ok, NULL, &res, NULL), LC_OK);
    cr_assert_not_null(res.model);
    cr_assert_str_eq(res.info.format, "safetensors");
    cr_assert_gt(res.info.header_size, 0);
    cr_assert_gt(lc_model_tensor_count(res.model), 0);
    lc_job_inspect_result_free(&res);
    cr_assert_null(res.model);
    cr_assert(lc_job_st_is_sharded(fx("safetensors/sharded")));
    cr_assert(lc_job_st_is_sharded("a/model.safetensors.index.json"));
    cr_assert_not(lc_job_st_is_sharded(ok.path));
}

/* --device: a malformed one is a usage error; one that does not open fails before
 * anything is read or written (no OUT), and the job still takes over a given model. */
Test(jobs, device_fails_first_and_takes_the_model) {
    unsetenv("LC_CUDA_EMULATE");
    lc_job_quantize_opts o = { .in = fx("hf-ref/qwen2-f16.gguf"), .out = "dev.gguf",
                               .ftype = lc_job_quantize_type("Q8_0"), .device = "cuda:x" };
    lc_error err = { 0 };
    cr_assert_eq(lc_job_gguf_quantize_check(&o, &err), LC_E_ARG);
    cr_assert(strstr(err.msg, "--device cuda:x"), "%s", err.msg);
    o.device = "cuda:200";
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_job_gguf_quantize_check(&o, &err), LC_OK, "%s", err.msg);
    const lc_hf_opts ho = { .outtype = LC_DT_INVALID };
    cr_assert_eq(lc_hf_to_gguf(fx("hf/qwen2-k"), &ho, &o.model, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_job_gguf_quantize(&o, NULL, NULL, &err), LC_E_UNSUPPORTED);
    cr_assert(strncmp(err.msg, "no CUDA device: ", 16) == 0, "%s", err.msg);
    cr_assert_eq(access(o.out, F_OK), -1);
    const lc_job_st2gguf_opts so = { .in = fx("hf/qwen2-k"), .out = "dev.gguf",
                                     .hf.outtype = LC_DT_Q8_0, .device = "cuda:200" };
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_job_safetensors2gguf(&so, NULL, NULL, &err), LC_E_UNSUPPORTED);
    cr_assert(strncmp(err.msg, "no CUDA device: ", 16) == 0, "%s", err.msg);
    cr_assert_eq(access(so.out, F_OK), -1);
}
