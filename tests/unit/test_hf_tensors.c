/* Unit tests for formats/hf_tensors.c: the name map and the lazy Q/K permutation. */
#include <criterion/criterion.h>
#include <string.h>

#include "formats/hf_tensors.h"
#include "libconvert/model.h"

static lc_code map(const char *hf, uint32_t n, char *out, lc_hf_role *role, lc_error *err) {
    memset(err, 0, sizeof *err);
    return lc_hf_tensors_name(hf, n, out, 64, role, err);
}

Test(hf_tensors, maps_every_llama_name) {
    static const struct { const char *hf, *gguf; lc_hf_role role; } cases[] = {
        { "model.embed_tokens.weight", "token_embd.weight", LC_HF_ROLE_PLAIN },
        { "model.norm.weight", "output_norm.weight", LC_HF_ROLE_PLAIN },
        { "lm_head.weight", "output.weight", LC_HF_ROLE_PLAIN },
        { "model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight", LC_HF_ROLE_PLAIN },
        { "model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight", LC_HF_ROLE_Q },
        { "model.layers.3.self_attn.q_proj.bias", "blk.3.attn_q.bias", LC_HF_ROLE_Q },
        { "model.layers.12.self_attn.k_proj.weight", "blk.12.attn_k.weight", LC_HF_ROLE_K },
        { "model.layers.12.self_attn.k_proj.bias", "blk.12.attn_k.bias", LC_HF_ROLE_K },
        { "model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight", LC_HF_ROLE_PLAIN },
        { "model.layers.1.self_attn.v_proj.bias", "blk.1.attn_v.bias", LC_HF_ROLE_PLAIN },
        { "model.layers.1.self_attn.o_proj.weight", "blk.1.attn_output.weight", LC_HF_ROLE_PLAIN },
        { "model.layers.2.post_attention_layernorm.weight", "blk.2.ffn_norm.weight",
          LC_HF_ROLE_PLAIN },
        { "model.layers.2.mlp.gate_proj.weight", "blk.2.ffn_gate.weight", LC_HF_ROLE_PLAIN },
        { "model.layers.2.mlp.up_proj.weight", "blk.2.ffn_up.weight", LC_HF_ROLE_PLAIN },
        { "model.layers.2.mlp.down_proj.weight", "blk.2.ffn_down.weight", LC_HF_ROLE_PLAIN },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[64];
        lc_hf_role role;
        lc_error err;
        cr_assert_eq(map(cases[i].hf, 16, out, &role, &err), LC_OK, "%s", cases[i].hf);
        cr_assert_str_eq(out, cases[i].gguf);
        cr_assert_eq(role, cases[i].role, "%s", cases[i].hf);
    }
}

Test(hf_tensors, drops_rotary_inv_freq) {
    char out[64] = "unchanged";
    lc_hf_role role;
    lc_error err;
    cr_assert_eq(map("model.layers.0.self_attn.rotary_emb.inv_freq", 4, out, &role, &err), LC_OK);
    cr_assert_eq(role, LC_HF_ROLE_DROP);
    cr_assert_str_eq(out, "unchanged");
}

Test(hf_tensors, refuses_unknown_and_odd_names) {
    static const char *bad[] = {
        "model.layers.0.mlp.experts.0.w1.weight", "model.layers..mlp.up_proj.weight",
        "model.layers.01.mlp.up_proj.weight", "model.layers.-1.mlp.up_proj.weight",
        "model.layers.1234567890.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weightx",
        "model.embed_tokens.bias", "transformer.wte.weight", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char out[64];
        lc_hf_role role;
        lc_error err;
        cr_assert_eq(map(bad[i], 0, out, &role, &err), LC_E_UNSUPPORTED, "%s", bad[i]);
        cr_assert_eq(err.offset, LC_NO_OFFSET);
    }
}

Test(hf_tensors, layer_past_block_count_and_small_buffer) {
    char out[64];
    lc_hf_role role;
    lc_error err;
    cr_assert_eq(map("model.layers.4.mlp.up_proj.weight", 4, out, &role, &err), LC_E_MALFORMED);
    cr_assert_eq(map("model.layers.3.mlp.up_proj.weight", 4, out, &role, &err), LC_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_hf_tensors_name("lm_head.weight", 0, out, 13, &role, &err), LC_E_ARG);
    cr_assert_eq(lc_hf_tensors_name("lm_head.weight", 0, out, 14, &role, &err), LC_OK);
}

/* 8 rows, 2 heads: per head 4 rows [a0 a1 b0 b1] (rotate-half halves a, b) become
 * [a0 b0 a1 b1]; worked out by hand from the [heads, 2, R/2] -> [heads, R/2, 2] swap. */
Test(hf_tensors, permute_row_hand_case) {
    static const uint64_t fwd[8] = { 0, 2, 1, 3, 4, 6, 5, 7 };
    for (uint64_t r = 0; r < 8; r++) {
        cr_assert_eq(lc_hf_tensors_permute_row(r, 8, 2, false), fwd[r], "row %llu",
                     (unsigned long long)r);
        cr_assert_eq(lc_hf_tensors_permute_row(fwd[r], 8, 2, true), r);
    }
    /* 12 rows, 1 head: [a0..a5 b0..b5] -> [a0 b0 a1 b1 ...] */
    static const uint64_t one[12] = { 0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11 };
    for (uint64_t r = 0; r < 12; r++)
        cr_assert_eq(lc_hf_tensors_permute_row(r, 12, 1, false), one[r]);
}

Test(hf_tensors, permuted_view_reads_any_range) {
    /* F32 [8, 3]: element = row * 10 + col, so each value names its source row. */
    float src_data[8][3];
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 3; c++)
            src_data[r][c] = (float)(r * 10 + c);
    lc_model *m = lc_model_new();
    uint64_t shape[2] = { 8, 3 };
    lc_tensor *src, *dst, *back;
    lc_error err = { 0 };
    cr_assert_eq(lc_model_add_tensor(m, "src", LC_DT_F32, 2, shape, &src, &err), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "dst", LC_DT_F32, 2, shape, &dst, &err), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "back", LC_DT_F32, 2, shape, &back, &err), LC_OK);
    src->data = (const uint8_t *)src_data;
    cr_assert_eq(lc_hf_tensors_permute(dst, src, 2, false, &err), LC_OK);
    cr_assert_eq(lc_hf_tensors_permute(back, dst, 2, true, &err), LC_OK);
    float all[8][3];
    cr_assert_eq(lc_tensor_read(dst, 0, all, sizeof all, &err), LC_OK);
    static const int want_row[8] = { 0, 2, 1, 3, 4, 6, 5, 7 };
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 3; c++)
            cr_assert_eq(all[r][c], (float)(want_row[r] * 10 + c));
    /* A range that starts mid-row and crosses two row boundaries. */
    float part[5];
    cr_assert_eq(lc_tensor_read(dst, 2 * 4, part, sizeof part, &err), LC_OK);
    static const float want_part[5] = { 2, 20, 21, 22, 10 };
    cr_assert(memcmp(part, want_part, sizeof part) == 0);
    /* The inverse of the forward view is the source. */
    cr_assert_eq(lc_tensor_read(back, 0, all, sizeof all, &err), LC_OK);
    cr_assert(memcmp(all, src_data, sizeof all) == 0);
    lc_model_free(m);
}

Test(hf_tensors, permute_refuses_bad_shapes) {
    lc_model *m = lc_model_new();
    uint64_t s6[1] = { 6 }, s4[1] = { 4 };
    lc_tensor *a, *b, *c;
    lc_error err = { 0 };
    cr_assert_eq(lc_model_add_tensor(m, "a", LC_DT_F16, 1, s6, &a, &err), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "b", LC_DT_F16, 1, s6, &b, &err), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "c", LC_DT_F16, 1, s4, &c, &err), LC_OK);
    cr_assert_eq(lc_hf_tensors_permute(b, a, 2, false, &err), LC_E_MALFORMED); /* 6 % 4 */
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_hf_tensors_permute(b, a, 3, false, &err), LC_OK);          /* 6 % 6 */
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_hf_tensors_forward(c, a, &err), LC_E_ARG);                /* shapes */
    lc_model_free(m);
}
