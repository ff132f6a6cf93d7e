/* Unit tests for hf/ (HF folder -> GGUF model and back) and hf/meta.c (--metadata
 * overrides). Folders come from fixtures/hf ($LC_FIXTURES). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hf/hf.h"
#include "hf/meta.h"
#include "quant/ftype.h"
#include "formats/safetensors.h"
#include "libconvert/map.h"
#include "libconvert/model.h"
#include "quant/quant.h"

static const char *fixture(const char *name, char *buf, size_t cap) {
    const char *root = getenv("LC_FIXTURES");
    snprintf(buf, cap, "%s/hf/%s", root ? root : "fixtures", name);
    return buf;
}

static lc_model *convert(const char *name, lc_dtype t, bool vocab_only) {
    char dir[512];
    lc_error err = { 0 };
    lc_model *m = NULL;
    const lc_hf_opts o = { .outtype = t, .vocab_only = vocab_only };
    cr_assert_eq(lc_hf_to_gguf(fixture(name, dir, sizeof dir), &o, &m, &err), LC_OK, "%s",
                 err.msg);
    return m;
}

static uint64_t meta_u(const lc_model *m, const char *key) {
    const lc_value *v = lc_model_find_meta(m, key);
    cr_assert_not_null(v, "%s", key);
    return v->u;
}

Test(hf, dtypes_per_tensor_and_file_type) {
    lc_model *m = convert("llama-spm", LC_DT_Q8_0, false);
    cr_assert_eq(meta_u(m, "general.file_type"), lc_ftype_by_name("Q8_0")->id);
    cr_assert_eq(meta_u(m, "general.quantization_version"), 2);
    cr_assert_eq(lc_model_find_tensor(m, "blk.0.attn_q.weight")->dtype, LC_DT_Q8_0);
    cr_assert_eq(lc_model_find_tensor(m, "token_embd.weight")->dtype, LC_DT_Q8_0);
    cr_assert_eq(lc_model_find_tensor(m, "blk.0.attn_norm.weight")->dtype, LC_DT_F32);
    cr_assert_eq(lc_model_find_tensor(m, "output_norm.weight")->dtype, LC_DT_F32);
    cr_assert_null(lc_model_find_tensor(m, "blk.0.rotary_emb.inv_freq"));
    cr_assert_eq(lc_model_tensor_count(m), 2 + 1 + 4 * 9);
    lc_model_free(m);
    m = convert("llama-spm", LC_DT_INVALID, false);              /* auto: bf16 source */
    cr_assert_eq(meta_u(m, "general.file_type"), lc_ftype_by_name("BF16")->id);
    const lc_tensor *t = lc_model_find_tensor(m, "blk.1.ffn_up.weight");
    cr_assert_eq(t->dtype, LC_DT_BF16);
    /* bf16 -> bf16 is a copy: the bytes are the source's. */
    char path[512];
    lc_model *src = NULL;
    lc_error err = { 0 };
    fixture("llama-spm/model.safetensors", path, sizeof path);
    cr_assert_eq(lc_safetensors_load(path, &src, &err), LC_OK, "%s", err.msg);
    const lc_tensor *s = lc_model_find_tensor(src, "model.layers.1.mlp.up_proj.weight");
    cr_assert_eq(s->nbytes, t->nbytes);
    uint8_t *buf = malloc(t->nbytes);
    cr_assert_eq(lc_tensor_read(t, 0, buf, t->nbytes, &err), LC_OK);
    cr_assert_eq(memcmp(buf, s->data, t->nbytes), 0);
    free(buf);
    lc_model_free(src);
    lc_model_free(m);
}

Test(hf, default_names) {
    char buf[128];
    lc_error err = { 0 };
    lc_model *m = convert("qwen2", LC_DT_F16, false);
    cr_assert_eq(lc_hf_default_name(m, false, buf, sizeof buf, &err), LC_OK);
    const lc_value *label = lc_model_find_meta(m, "general.size_label");
    char want[128];
    snprintf(want, sizeof want, "Qwen2-%s-F16.gguf", label->str.ptr);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(lc_hf_default_name(m, true, buf, sizeof buf, &err), LC_OK);
    cr_assert_str_eq(buf, "Qwen2-vocab.gguf");
    cr_assert_eq(lc_hf_default_name(m, false, buf, 8, &err), LC_E_ARG);
    lc_model_free(m);
    m = convert("llama-bpe", LC_DT_F32, true);
    cr_assert_eq(lc_model_tensor_count(m), 0);
    cr_assert_null(lc_model_find_meta(m, "general.size_label"));
    lc_model_free(m);
}

Test(hf, missing_folder_is_notfound) {
    lc_error err = { 0 };
    lc_model *m = (lc_model *)1;
    const lc_hf_opts o = { .outtype = LC_DT_F16 };
    cr_assert_eq(lc_hf_to_gguf("/nonexistent/folder", &o, &m, &err), LC_E_NOTFOUND);
    cr_assert_null(m);
    cr_assert_eq(err.offset, LC_NO_OFFSET);
}

Test(hf, back_refuses_other_architectures) {
    lc_error err = { 0 };
    lc_model *in = lc_model_new(), *out = (lc_model *)1;
    cr_assert_eq(lc_model_set_meta_str(in, "general.architecture", "gpt2", &err), LC_OK);
    cr_assert_eq(lc_hf_from_gguf(in, LC_DT_F32, &out, &err), LC_E_UNSUPPORTED);   /* frees in */
    cr_assert_null(out);
    in = lc_model_new();
    cr_assert_eq(lc_model_set_meta_str(in, "general.architecture", "llama", &err), LC_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_hf_from_gguf(in, LC_DT_F32, &out, &err), LC_E_MALFORMED);     /* no heads */
    cr_assert(strstr(err.msg, "llama.attention.head_count"));
}

Test(hf, back_maps_names_and_drops_rope_freqs) {
    lc_model *m = convert("llama-spm", LC_DT_F32, false), *out = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_hf_from_gguf(m, LC_DT_BF16, &out, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor_count(out), 2 + 1 + 4 * 9);
    const lc_tensor *t = lc_model_find_tensor(out, "model.layers.3.self_attn.k_proj.weight");
    cr_assert_not_null(t);
    cr_assert_eq(t->dtype, LC_DT_BF16);
    cr_assert_eq(lc_model_meta_count(out), 0);
    lc_model_free(out);
}

Test(hf_meta, overrides) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_hf_meta_override(m, "a.b=u32:7", &err), LC_OK);
    cr_assert_eq(lc_hf_meta_override(m, "a.s=str:x=y:z", &err), LC_OK);
    cr_assert_eq(lc_hf_meta_override(m, "a.f=f32:0.1", &err), LC_OK);
    cr_assert_eq(lc_hf_meta_override(m, "a.i=i8:-128", &err), LC_OK);
    cr_assert_eq(lc_hf_meta_override(m, "a.t=bool:true", &err), LC_OK);
    cr_assert_eq(lc_hf_meta_override(m, "a.b=u64:0x10", &err), LC_OK);   /* replaces */
    cr_assert_eq(lc_model_meta_count(m), 5);
    const lc_value *v = lc_model_find_meta(m, "a.b");
    cr_assert(v->type == LC_VT_U64 && v->u == 16);
    cr_assert_str_eq(lc_model_find_meta(m, "a.s")->str.ptr, "x=y:z");
    cr_assert_eq(lc_model_find_meta(m, "a.f")->f, (double)0.1f);
    cr_assert_eq(lc_model_find_meta(m, "a.i")->i, -128);
    cr_assert(lc_model_find_meta(m, "a.t")->b);
    static const char *const bad[] = {
        "noequals", "=u8:1", "k=u8", "k=u7:1", "k=u8:256", "k=u8:-1", "k=i8:128", "k=i8:",
        "k=f32:x", "k=bool:yes", "k=u32:12abc",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        cr_assert_eq(lc_hf_meta_override(m, bad[i], &err), LC_E_ARG, "%s", bad[i]);
        cr_assert_eq(err.offset, LC_NO_OFFSET);
    }
    cr_assert_eq(lc_model_meta_count(m), 5, "failed overrides change nothing");
    lc_model_free(m);
}
