/* Unit tests for formats/hf.c (HF folder -> GGUF model and back), formats/hf_meta.c
 * (--metadata overrides) and formats/hf_view.c (lazy sources). Folders come from
 * fixtures/hf ($LC_FIXTURES). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/hf.h"
#include "formats/hf_meta.h"
#include "formats/hf_view.h"
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
    cr_assert_eq(meta_u(m, "general.file_type"), LC_HF_FTYPE_Q8_0);
    cr_assert_eq(meta_u(m, "general.quantization_version"), 2);
    cr_assert_eq(lc_model_find_tensor(m, "blk.0.attn_q.weight")->dtype, LC_DT_Q8_0);
    cr_assert_eq(lc_model_find_tensor(m, "token_embd.weight")->dtype, LC_DT_Q8_0);
    cr_assert_eq(lc_model_find_tensor(m, "blk.0.attn_norm.weight")->dtype, LC_DT_F32);
    cr_assert_eq(lc_model_find_tensor(m, "output_norm.weight")->dtype, LC_DT_F32);
    cr_assert_null(lc_model_find_tensor(m, "blk.0.rotary_emb.inv_freq"));
    cr_assert_eq(lc_model_tensor_count(m), 2 + 1 + 4 * 9);
    lc_model_free(m);
    m = convert("llama-spm", LC_DT_INVALID, false);              /* auto: bf16 source */
    cr_assert_eq(meta_u(m, "general.file_type"), LC_HF_FTYPE_BF16);
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

/* ---- formats/hf_view.c ---- */

Test(hf_view, quant_both_ways_and_map_view) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new(), *work = lc_model_new();
    const uint64_t shape[2] = { 3, 64 };
    static float x[3 * 64];
    for (int i = 0; i < 3 * 64; i++)
        x[i] = (float)(i % 17) - 8.5f;
    /* The map view's contract: the bytes are in a read-only file mapping. */
    char path[] = "/tmp/lc-hf-view-q-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, x, sizeof x), (ssize_t)sizeof x);
    close(fd);
    lc_map *map = NULL;
    cr_assert_eq(lc_map_open(path, &map, &err), LC_OK);
    unlink(path);
    lc_tensor *f, *q, *back;
    cr_assert_eq(lc_model_add_tensor(m, "f", LC_DT_F32, 2, shape, &f, &err), LC_OK);
    f->data = map->data;
    const lc_tensor *v;
    cr_assert_eq(lc_hf_view_map(work, "f#map", f, &v, &err), LC_OK);
    cr_assert_neq(v, f);
    cr_assert_eq(lc_model_add_tensor(m, "q", LC_DT_Q8_0, 2, shape, &q, &err), LC_OK);
    cr_assert_eq(lc_hf_view_quant(q, v, LC_DT_Q8_0, true, &err), LC_OK);
    uint8_t want[3 * 68], got[3 * 68];
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, want, 3, 64, &err), LC_OK);
    cr_assert_eq(lc_tensor_read(q, 0, got, sizeof got, &err), LC_OK);
    cr_assert_eq(memcmp(got, want, sizeof got), 0);
    cr_assert_eq(lc_tensor_read(q, 70, got, 100, &err), LC_OK);   /* a range across rows */
    cr_assert_eq(memcmp(got, want + 70, 100), 0);
    cr_assert_eq(lc_model_add_tensor(m, "b", LC_DT_F32, 2, shape, &back, &err), LC_OK);
    cr_assert_eq(lc_hf_view_quant(back, q, LC_DT_Q8_0, false, &err), LC_OK);
    float deq[3 * 64], ref[3 * 64];
    cr_assert_eq(lc_dequantize_rows(LC_DT_Q8_0, want, ref, 3, 64, &err), LC_OK);
    cr_assert_eq(lc_tensor_read(back, 0, deq, sizeof deq, &err), LC_OK);
    cr_assert_eq(memcmp(deq, ref, sizeof deq), 0);
    const uint64_t odd[2] = { 2, 48 };
    lc_tensor *bad;
    cr_assert_eq(lc_model_add_tensor(m, "odd", LC_DT_F32, 2, odd, &bad, &err), LC_OK);
    cr_assert_eq(lc_hf_view_quant(bad, bad, LC_DT_Q8_0, true, &err), LC_E_ARG);
    lc_model_free(m);
    lc_model_free(work);
    lc_map_close(map);
}

Test(hf_view, file_view_short_file_is_truncated_at_its_offset) {
    lc_error err = { 0 };
    char path[] = "/tmp/lc-hf-view-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "0123456789", 10), 10);
    lc_model *m = lc_model_new(), *work = lc_model_new();
    const uint64_t shape[1] = { 8 };
    lc_tensor *s;
    cr_assert_eq(lc_model_add_tensor(m, "s", LC_DT_U8, 1, shape, &s, &err), LC_OK);
    s->file_offset = 4;      /* bytes 4..11 of a 10-byte file */
    const lc_tensor *v;
    cr_assert_eq(lc_hf_view_file(work, "s#file", s, fd, &v, &err), LC_OK);
    char buf[8];
    cr_assert_eq(lc_tensor_read(v, 0, buf, 6, &err), LC_OK);
    cr_assert_eq(memcmp(buf, "456789", 6), 0);
    cr_assert_eq(lc_tensor_read(v, 0, buf, 8, &err), LC_E_TRUNCATED);
    cr_assert_eq(err.offset, 10);
    close(fd);
    unlink(path);
    lc_model_free(m);
    lc_model_free(work);
}

Test(hf_view, map_view_gives_pages_back_and_rereads_the_same_bytes) {
    enum { N = 3 << 20 };                          /* 3 MiB: drops happen behind reads */
    lc_error err = { 0 };
    uint8_t *data = malloc(N), *buf = malloc(N);
    for (size_t i = 0; i < N; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    char path[] = "/tmp/lc-hf-view-m-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, data, N), (ssize_t)N);
    close(fd);
    lc_map *map = NULL;
    cr_assert_eq(lc_map_open(path, &map, &err), LC_OK);
    unlink(path);
    lc_model *m = lc_model_new(), *work = lc_model_new();
    const uint64_t shape[1] = { N };
    lc_tensor *s;
    cr_assert_eq(lc_model_add_tensor(m, "s", LC_DT_U8, 1, shape, &s, &err), LC_OK);
    s->data = map->data;
    const lc_tensor *v;
    cr_assert_eq(lc_hf_view_map(work, "s#map", s, &v, &err), LC_OK);
    for (size_t off = 0; off < N; off += 65536)
        cr_assert_eq(lc_tensor_read(v, off, buf + off, 65536, &err), LC_OK);
    cr_assert_eq(memcmp(buf, data, N), 0);
    memset(buf, 0, N);                             /* again, after the pages were dropped */
    cr_assert_eq(lc_tensor_read(v, 0, buf, N, &err), LC_OK);
    cr_assert_eq(memcmp(buf, data, N), 0);
    lc_model_free(m);
    lc_model_free(work);
    lc_map_close(map);
    free(data);
    free(buf);
}
