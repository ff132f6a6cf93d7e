/* Unit tests for arch/: the family tables, the name map both ways, shapes, the
 * completeness check and the keys; and the lazy Q/K row permutation
 * (libconvert/view.c) the tables' RoPE flags drive. */
#include <criterion/criterion.h>
#include <string.h>

#include "arch/arch.h"
#include "libconvert/model.h"
#include "libconvert/view.h"

/* Role names as lc-hf-dump prints them: the RoPE heads a row's rows are grouped in. */
typedef enum { PLAIN = 0, Q, K, DROP } rope_role;

static lc_code map(const char *hf, uint32_t n, char *out, rope_role *role, lc_error *err) {
    const lc_arch_tensor *row;
    memset(err, 0, sizeof *err);
    lc_code rc = lc_arch_map(lc_arch_by_name("llama"), LC_SPELL_HF, LC_SPELL_GGUF, hf, n, out, 64,
                             &row, err);
    if (rc == LC_E_NOTFOUND) {
        *role = DROP;
        return LC_OK;
    }
    if (rc == LC_OK)
        *role = row->flags & LC_AT_ROPE_Q ? Q : row->flags & LC_AT_ROPE_K ? K : PLAIN;
    return rc;
}

Test(arch, maps_every_llama_name) {
    static const struct { const char *hf, *gguf; rope_role role; } cases[] = {
        { "model.embed_tokens.weight", "token_embd.weight", PLAIN },
        { "model.norm.weight", "output_norm.weight", PLAIN },
        { "lm_head.weight", "output.weight", PLAIN },
        { "model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight", PLAIN },
        { "model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight", Q },
        { "model.layers.3.self_attn.q_proj.bias", "blk.3.attn_q.bias", Q },
        { "model.layers.12.self_attn.k_proj.weight", "blk.12.attn_k.weight", K },
        { "model.layers.12.self_attn.k_proj.bias", "blk.12.attn_k.bias", K },
        { "model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight", PLAIN },
        { "model.layers.1.self_attn.v_proj.bias", "blk.1.attn_v.bias", PLAIN },
        { "model.layers.1.self_attn.o_proj.weight", "blk.1.attn_output.weight", PLAIN },
        { "model.layers.2.post_attention_layernorm.weight", "blk.2.ffn_norm.weight",
          PLAIN },
        { "model.layers.2.mlp.gate_proj.weight", "blk.2.ffn_gate.weight", PLAIN },
        { "model.layers.2.mlp.up_proj.weight", "blk.2.ffn_up.weight", PLAIN },
        { "model.layers.2.mlp.down_proj.weight", "blk.2.ffn_down.weight", PLAIN },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[64];
        rope_role role;
        lc_error err;
        cr_assert_eq(map(cases[i].hf, 16, out, &role, &err), LC_OK, "%s", cases[i].hf);
        cr_assert_str_eq(out, cases[i].gguf);
        cr_assert_eq(role, cases[i].role, "%s", cases[i].hf);
    }
}

Test(arch, drops_rotary_inv_freq) {
    char out[64] = "unchanged";
    rope_role role;
    lc_error err;
    cr_assert_eq(map("model.layers.0.self_attn.rotary_emb.inv_freq", 4, out, &role, &err), LC_OK);
    cr_assert_eq(role, DROP);
    cr_assert_str_eq(out, "unchanged");
}

Test(arch, refuses_unknown_and_odd_names) {
    static const char *bad[] = {
        "model.layers.0.mlp.experts.0.w1.weight", "model.layers..mlp.up_proj.weight",
        "model.layers.01.mlp.up_proj.weight", "model.layers.-1.mlp.up_proj.weight",
        "model.layers.1234567890.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weightx",
        "model.embed_tokens.bias", "transformer.wte.weight", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char out[64];
        rope_role role;
        lc_error err;
        cr_assert_eq(map(bad[i], 0, out, &role, &err), LC_E_UNSUPPORTED, "%s", bad[i]);
        cr_assert_eq(err.offset, LC_NO_OFFSET);
    }
}

Test(arch, layer_past_block_count_and_small_buffer) {
    char out[64];
    rope_role role;
    lc_error err;
    cr_assert_eq(map("model.layers.4.mlp.up_proj.weight", 4, out, &role, &err), LC_E_MALFORMED);
    cr_assert_eq(map("model.layers.3.mlp.up_proj.weight", 4, out, &role, &err), LC_OK);
    const lc_arch_tensor *row;
    const lc_arch *a = lc_arch_by_name("llama");
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_arch_map(a, LC_SPELL_HF, LC_SPELL_GGUF, "lm_head.weight", 0, out, 13, &row,
                             &err), LC_E_ARG);
    cr_assert_eq(lc_arch_map(a, LC_SPELL_HF, LC_SPELL_GGUF, "lm_head.weight", 0, out, 14, &row,
                             &err), LC_OK);
}

/* 8 rows, 2 heads: per head 4 rows [a0 a1 b0 b1] (rotate-half halves a, b) become
 * [a0 b0 a1 b1]; worked out by hand from the [heads, 2, R/2] -> [heads, R/2, 2] swap. */
Test(arch, permute_row_hand_case) {
    static const uint64_t fwd[8] = { 0, 2, 1, 3, 4, 6, 5, 7 };
    for (uint64_t r = 0; r < 8; r++) {
        cr_assert_eq(lc_view_head_row(r, 8, 2, false), fwd[r], "row %llu",
                     (unsigned long long)r);
        cr_assert_eq(lc_view_head_row(fwd[r], 8, 2, true), r);
    }
    /* 12 rows, 1 head: [a0..a5 b0..b5] -> [a0 b0 a1 b1 ...] */
    static const uint64_t one[12] = { 0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11 };
    for (uint64_t r = 0; r < 12; r++)
        cr_assert_eq(lc_view_head_row(r, 12, 1, false), one[r]);
}

Test(arch, permuted_view_reads_any_range) {
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
    cr_assert_eq(lc_view_heads(dst, src, 2, false, &err), LC_OK);
    cr_assert_eq(lc_view_heads(back, dst, 2, true, &err), LC_OK);
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

Test(arch, permute_refuses_bad_shapes) {
    lc_model *m = lc_model_new();
    uint64_t s6[1] = { 6 }, s4[1] = { 4 };
    lc_tensor *a, *b, *c;
    lc_error err = { 0 };
    cr_assert_eq(lc_model_add_tensor(m, "a", LC_DT_F16, 1, s6, &a, &err), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "b", LC_DT_F16, 1, s6, &b, &err), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "c", LC_DT_F16, 1, s4, &c, &err), LC_OK);
    cr_assert_eq(lc_view_heads(b, a, 2, false, &err), LC_E_MALFORMED); /* 6 % 4 */
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_view_heads(b, a, 3, false, &err), LC_OK);          /* 6 % 6 */
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_view_forward(c, a, &err), LC_E_ARG);                /* shapes */
    lc_model_free(m);
}

/* ---- the tables ---- */

Test(arch, families_by_class_and_name) {
    cr_assert_eq(lc_arch_by_hf_class("LlamaForCausalLM"), lc_arch_by_name("llama"));
    cr_assert_eq(lc_arch_by_hf_class("MistralForCausalLM"), lc_arch_by_name("llama"));
    cr_assert_eq(lc_arch_by_hf_class("Qwen2ForCausalLM"), lc_arch_by_name("qwen2"));
    cr_assert_null(lc_arch_by_hf_class("GPT2LMHeadModel"));
    cr_assert_null(lc_arch_by_name("gpt2"));
    cr_assert_null(lc_arch_by_hf_class(NULL));
    cr_assert_eq(lc_arch_by_hf_class("MixtralForCausalLM"), lc_arch_by_name("llama"));
    cr_assert_eq(lc_arch_by_hf_class("Qwen3MoeForCausalLM"), lc_arch_by_name("qwen3moe"));
    char list[512];
    lc_arch_list_classes(list, sizeof list);
    cr_assert_str_eq(list, "LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, "
                     "Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
                     "Gemma3ForCausalLM, Phi3ForCausalLM, Qwen3_5ForCausalLM, "
                     "Qwen3_5MoeForCausalLM, Gemma4ForCausalLM");
    cr_assert_eq(lc_arch_by_hf_class("Qwen3_5ForConditionalGeneration"),
                 lc_arch_by_name("qwen35"));
}

Test(arch, one_layer_parser) {
    uint32_t l;
    cr_assert(lc_arch_match("blk.%u.attn_q.weight", "blk.0.attn_q.weight", &l) && l == 0);
    cr_assert(lc_arch_match("blk.%u.attn_q.weight", "blk.123456789.attn_q.weight", &l) &&
              l == 123456789);
    static const char *const bad[] = { "blk.01.attn_q.weight", "blk..attn_q.weight",
                                       "blk.-1.attn_q.weight", "blk. 1.attn_q.weight",
                                       "blk.1234567890.attn_q.weight", "blk.1.attn_q.weightx",
                                       "blk.1x.attn_q.weight", "blk.+1.attn_q.weight" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_not(lc_arch_match("blk.%u.attn_q.weight", bad[i], &l), "%s", bad[i]);
    cr_assert(lc_arch_match("output.weight", "output.weight", &l) && l == UINT32_MAX);
    cr_assert_not(lc_arch_match("output.weight", "output.weight2", &l));
}

/* Every row maps both ways (HF -> GGUF -> HF), for every family and a few layers. */
Test(arch, name_map_round_trips_every_row) {
    for (const lc_arch *const *a = lc_arch_all(); *a; a++) {
        for (size_t i = 0; i < (*a)->n_tensors; i++) {
            const lc_arch_tensor *row = &(*a)->tensors[i];
            if (!row->hf || !row->gguf || (row->flags & LC_AT_EXPERTS))
                continue;           /* stacks: arch.experts_and_fused_parts */
            for (uint32_t layer = 0; layer < 12; layer += 11) {
                char hf[128], g[128], back[128];
                const lc_arch_tensor *r1, *r2;
                lc_error err = { 0 };
                cr_assert_eq(lc_arch_name(row, LC_SPELL_HF, layer, hf, sizeof hf, &err), LC_OK);
                cr_assert_eq(lc_arch_map(*a, LC_SPELL_HF, LC_SPELL_GGUF, hf, 12, g, sizeof g, &r1,
                                         &err), LC_OK, "%s %s", (*a)->name, hf);
                cr_assert_eq(lc_arch_map(*a, LC_SPELL_GGUF, LC_SPELL_HF, g, 12, back, sizeof back,
                                         &r2, &err), LC_OK);
                cr_assert_str_eq(back, hf);
                cr_assert_eq(r1, row);
                cr_assert_eq(r2, row);
                cr_assert_eq(lc_arch_role(*a, row->role), row, "one row per role");
            }
        }
    }
}

static lc_hparams small(void) {
    return (lc_hparams){ .context_length = 32, .embedding_length = 64, .block_count = 2,
                         .feed_forward_length = 128, .head_count = 4, .head_count_kv = 2,
                         .head_dim = 16, .vocab_size = 100, .rms_eps = 1e-5,
                         .rope_theta = 5e5 };
}

Test(arch, shapes_from_hyperparameters) {
    const lc_arch *a = lc_arch_by_name("qwen2");
    const lc_hparams hp = small();
    static const struct { lc_role role; uint32_t nd; uint64_t a, b; } want[] = {
        { LC_ROLE_TOKEN_EMBD, 2, 100, 64 }, { LC_ROLE_OUTPUT_NORM, 1, 64, 0 },
        { LC_ROLE_ATTN_Q, 2, 64, 64 }, { LC_ROLE_ATTN_K, 2, 32, 64 }, { LC_ROLE_ATTN_K_BIAS, 1, 32, 0 },
        { LC_ROLE_ATTN_OUT, 2, 64, 64 }, { LC_ROLE_FFN_DOWN, 2, 64, 128 }, { LC_ROLE_FFN_UP, 2, 128, 64 },
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        uint32_t nd;
        uint64_t sh[3];
        cr_assert(lc_arch_shape(lc_arch_role(a, want[i].role), &hp, &nd, sh));
        cr_assert_eq(nd, want[i].nd);
        cr_assert_eq(sh[0], want[i].a, "role %d", want[i].role);
        if (nd == 2)
            cr_assert_eq(sh[1], want[i].b);
    }
    uint32_t nd;
    uint64_t sh[3];
    cr_assert(lc_arch_shape(lc_arch_role(lc_arch_by_name("llama"), LC_ROLE_ROPE_FREQS), &hp, &nd,
                            sh) && nd == 1 && sh[0] == 8);
    cr_assert_eq(lc_arch_rope_heads(lc_arch_role(a, LC_ROLE_ATTN_Q_BIAS), &hp), 4);
    cr_assert_eq(lc_arch_rope_heads(lc_arch_role(a, LC_ROLE_ATTN_K), &hp), 2);
    cr_assert_eq(lc_arch_rope_heads(lc_arch_role(a, LC_ROLE_ATTN_V), &hp), 0);
}

/* The two families differ in what is required: qwen2 needs its biases, llama does not. */
Test(arch, completeness_per_family) {
    const lc_hparams hp = small();
    for (const lc_arch *const *a = lc_arch_all(); *a; a++) {
        lc_arch_seen s;
        lc_error err = { 0 };
        cr_assert_eq(lc_arch_seen_init(&s, *a, hp.block_count, &err), LC_OK);
        cr_assert_eq(lc_arch_seen_check(&s, LC_SPELL_HF, &err), LC_E_MISMATCH);
        cr_assert_not_null(strstr(err.msg, "model.embed_tokens.weight"), "%s", err.msg);
        for (size_t i = 0; i < (*a)->n_tensors; i++) {
            const lc_arch_tensor *row = &(*a)->tensors[i];
            const bool per_layer = row->gguf && strstr(row->gguf, "%u");
            const bool bias = row->role == LC_ROLE_ATTN_Q_BIAS || row->role == LC_ROLE_ATTN_K_BIAS ||
                              row->role == LC_ROLE_ATTN_V_BIAS;
            if (bias)
                continue;
            for (uint32_t l = 0; l < (per_layer ? hp.block_count : 1); l++)
                lc_arch_seen_mark(&s, row, per_layer ? l : UINT32_MAX);
        }
        memset(&err, 0, sizeof err);
        const bool needs_bias = strcmp((*a)->name, "qwen2") == 0;
        cr_assert_eq(lc_arch_seen_check(&s, LC_SPELL_HF, &err), needs_bias ? LC_E_MISMATCH : LC_OK,
                     "%s: %s", (*a)->name, err.msg);
        if (needs_bias)
            cr_assert_not_null(strstr(err.msg, "layer 0 of 2 has no model.layers.0.self_attn.q_proj.bias"),
                               "%s", err.msg);
        lc_arch_seen_free(&s);
    }
}

/* The keys in llama.cpp's order, with the family's own tail and general.file_type in
 * its place; and read back into the same hyperparameters. */
Test(arch, keys_in_order_and_back) {
    lc_hparams hp = small();
    hp.head_dim_given = true;
    hp.rope_scaling = LC_ROPE_SCALING_YARN;
    hp.rope_scaling_factor = 4;
    hp.rope_scaling_orig_ctx = 8;
    static const char *const want_llama[] = {
        "llama.block_count", "llama.context_length", "llama.embedding_length",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
        "llama.rope.scaling.type", "llama.rope.scaling.factor",
        "llama.rope.scaling.original_context_length", "llama.rope.freq_base",
        "llama.attention.layer_norm_rms_epsilon", "llama.attention.key_length",
        "llama.attention.value_length", "general.file_type", "llama.vocab_size",
        "llama.rope.dimension_count",
    };
    const lc_arch *llama = lc_arch_by_name("llama"), *qwen2 = lc_arch_by_name("qwen2");
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_model_set_meta_str(m, "general.architecture", "llama", &err), LC_OK);
    cr_assert_eq(lc_arch_write_keys(llama, &hp, 7, m, &err), LC_OK);
    cr_assert_eq(lc_model_meta_count(m), 1 + sizeof want_llama / sizeof *want_llama);
    for (size_t i = 0; i < sizeof want_llama / sizeof *want_llama; i++)
        cr_assert_str_eq(lc_model_meta(m, i + 1)->key, want_llama[i]);
    cr_assert_eq(lc_model_find_meta(m, "general.file_type")->u, 7);
    cr_assert_str_eq(lc_model_find_meta(m, "llama.rope.scaling.type")->str.ptr, "yarn");
    cr_assert_eq(lc_model_find_meta(m, "llama.rope.freq_base")->f, 5e5);
    cr_assert_eq(lc_model_find_meta(m, "llama.attention.layer_norm_rms_epsilon")->f,
                 (double)1e-5f, "f32 as gguf-py writes it");
    const lc_arch *back;
    lc_hparams got;
    cr_assert_eq(lc_arch_read_keys(m, &back, &got, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(back, llama);
    cr_assert_eq(got.head_count_kv, 2);
    cr_assert_eq(got.head_dim, 16);
    cr_assert_eq(got.vocab_size, 100);
    cr_assert_eq(got.rope_scaling, LC_ROPE_SCALING_YARN);
    cr_assert_eq(got.rope_scaling_orig_ctx, 8);
    lc_model_free(m);
    /* qwen2: no vocab_size / rope.dimension_count; no scaling keys unscaled; no file type. */
    m = lc_model_new();
    hp.rope_scaling = LC_ROPE_SCALING_NONE;
    hp.head_dim_given = false;
    cr_assert_eq(lc_model_set_meta_str(m, "general.architecture", "qwen2", &err), LC_OK);
    cr_assert_eq(lc_arch_write_keys(qwen2, &hp, LC_ARCH_NO_FILE_TYPE, m, &err), LC_OK);
    cr_assert_eq(lc_model_meta_count(m), 1 + 8);
    cr_assert_null(lc_model_find_meta(m, "qwen2.vocab_size"));
    cr_assert_null(lc_model_find_meta(m, "general.file_type"));
    cr_assert_null(lc_model_find_meta(m, "qwen2.rope.scaling.type"));
    cr_assert_eq(lc_arch_read_keys(m, &back, &got, &err), LC_OK);
    cr_assert_eq(got.head_dim, 16, "llama.cpp's default: embd / heads");
    lc_model_free(m);
}

Test(arch, read_keys_refusals_name_the_key) {
    lc_error err = { 0 };
    const lc_arch *a;
    lc_hparams hp;
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_arch_read_keys(m, &a, &hp, &err), LC_E_UNSUPPORTED);
    cr_assert_not_null(strstr(err.msg, "(missing)"));
    cr_assert_eq(lc_model_set_meta_str(m, "general.architecture", "llama", &err), LC_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_arch_read_keys(m, &a, &hp, &err), LC_E_MALFORMED);
    cr_assert_str_eq(err.where, "llama.attention.head_count");
    cr_assert_eq(lc_model_set_meta_str(m, "llama.block_count", "two", &err), LC_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_arch_read_keys(m, &a, &hp, &err), LC_E_MALFORMED);
    cr_assert_not_null(strstr(err.msg, "llama.block_count has type string"), "%s", err.msg);
    lc_model_free(m);
}

/* One expert's tensor and transformers 5's fused tensors find their stacked rows. */
Test(arch, experts_and_fused_parts) {
    const lc_arch *a = lc_arch_by_name("qwen3moe");
    lc_arch_hit h;
    cr_assert(lc_arch_lookup(a, LC_SPELL_HF, "model.layers.3.mlp.experts.17.gate_proj.weight",
                             NULL, &h));
    cr_assert_eq(h.row->role, LC_ROLE_FFN_GATE_EXPS);
    cr_assert(h.layer == 3 && h.expert == 17 && !h.fused);
    cr_assert_not(lc_arch_lookup(a, LC_SPELL_HF, "model.layers.3.mlp.experts.017.gate_proj.weight",
                                 NULL, &h), "no leading zeros");
    uint32_t layer;
    cr_assert_null(lc_arch_find(a, LC_SPELL_HF, "model.layers.3.mlp.experts.1.gate_proj.weight",
                                &layer), "lc_arch_find is one tensor, one name");
    /* gate_up is the gate row's part 0 and the up row's part 1 */
    const char *fused = "model.layers.2.mlp.experts.gate_up_proj";
    cr_assert(lc_arch_lookup(a, LC_SPELL_HF, fused, NULL, &h));
    cr_assert(h.fused && h.row->role == LC_ROLE_FFN_GATE_EXPS && h.row->part == 0 &&
              h.row->parts == 2 && h.layer == 2 && h.expert == UINT32_MAX);
    cr_assert(lc_arch_lookup(a, LC_SPELL_HF, fused, h.row, &h));
    cr_assert(h.fused && h.row->role == LC_ROLE_FFN_UP_EXPS && h.row->part == 1);
    cr_assert_not(lc_arch_lookup(a, LC_SPELL_HF, fused, h.row, &h));
    char name[96];
    lc_error err = { 0 };
    cr_assert_eq(lc_arch_name_expert(lc_arch_role(a, LC_ROLE_FFN_DOWN_EXPS), LC_SPELL_HF, 5, 63,
                                     name, sizeof name, &err), LC_OK);
    cr_assert_str_eq(name, "model.layers.5.mlp.experts.63.down_proj.weight");
    cr_assert_eq(lc_arch_name_expert(lc_arch_role(a, LC_ROLE_FFN_DOWN_EXPS), LC_SPELL_HF, 5, 63,
                                     name, 20, &err), LC_E_ARG);
    /* the stack's shape is [expert, ...] */
    lc_hparams hp = { .embedding_length = 64, .feed_forward_length = 256, .expert_ff_length = 32,
                      .expert_count = 8 };
    uint32_t nd;
    uint64_t sh[3];
    cr_assert(lc_arch_shape(lc_arch_role(a, LC_ROLE_FFN_DOWN_EXPS), &hp, &nd, sh));
    cr_assert(nd == 3 && sh[0] == 8 && sh[1] == 64 && sh[2] == 32);
}

/* qwen35: the prediction block's Hub names through the aliases both ways, and the value
 * heads' reorder plan for each kind of row. */
Test(arch, qwen35_aliases_and_value_head_plans) {
    const lc_arch *a = lc_arch_by_name("qwen35");
    cr_assert_not_null(a);
    char buf[200];
    cr_assert(lc_arch_alias_in(a, 6, "mtp.fc.weight", buf, sizeof buf));
    cr_assert_str_eq(buf, "model.layers.6.eh_proj.weight");
    cr_assert(lc_arch_alias_in(a, 6, "mtp.layers.0.self_attn.q_proj.weight", buf, sizeof buf));
    cr_assert_str_eq(buf, "model.layers.6.self_attn.q_proj.weight");
    cr_assert(!lc_arch_alias_in(a, 6, "model.layers.0.mlp.up_proj.weight", buf, sizeof buf));
    cr_assert(lc_arch_alias_out(a, 6, "model.layers.6.shared_head.norm.weight", buf, sizeof buf));
    cr_assert_str_eq(buf, "mtp.norm.weight");
    cr_assert(lc_arch_alias_out(a, 6, "model.layers.6.mlp.down_proj.weight", buf, sizeof buf));
    cr_assert_str_eq(buf, "mtp.layers.0.mlp.down_proj.weight");
    cr_assert(!lc_arch_alias_out(a, 6, "model.layers.5.mlp.down_proj.weight", buf, sizeof buf));

    lc_hparams hp = { .ssm_group_count = 2, .ssm_time_step_rank = 4, .ssm_state_size = 8,
                      .ssm_inner_size = 32, .ssm_head_v = 8, .embedding_length = 32 };
    const lc_arch_tensor *qkv = lc_arch_role(a, LC_ROLE_SSM_QKV);
    const lc_arch_tensor *out = lc_arch_role(a, LC_ROLE_SSM_OUT);
    const lc_arch_tensor *dt = lc_arch_role(a, LC_ROLE_SSM_DT);
    lc_tensor t = { .ndim = 2, .shape = { 64, 32 }, .nbytes = 64 * 32 * 2 };
    lc_arch_swap sw;
    cr_assert(lc_arch_vreorder(qkv, &hp, &t, &sw));
    /* V rows after the 2 x 16 q and k rows, heads of 8 rows of 64 bytes */
    cr_assert_eq(sw.first, 32 * 64);
    cr_assert_eq(sw.outer, 1);
    cr_assert_eq(sw.a, 2);
    cr_assert_eq(sw.b, 2);
    cr_assert_eq(sw.unit, 8 * 64);
    lc_tensor o = { .ndim = 2, .shape = { 32, 32 }, .nbytes = 32 * 32 * 4 };
    cr_assert(lc_arch_vreorder(out, &hp, &o, &sw));
    cr_assert_eq(sw.outer, 32);         /* every row's columns */
    cr_assert_eq(sw.unit, 8 * 4);
    lc_tensor v = { .ndim = 1, .shape = { 4 }, .nbytes = 16 };
    cr_assert(lc_arch_vreorder(dt, &hp, &v, &sw));
    cr_assert_eq(sw.unit, 4);
    hp.ssm_time_step_rank = 2;          /* as many value as key heads: nothing moves */
    cr_assert(!lc_arch_vreorder(dt, &hp, &v, &sw));
}

/* gemma4 writes attention.head_count_kv one per layer (int32): read back, layer 0's count
 * is head_count_kv (what llama.cpp's quantizer takes as n_gqa's), written back the same;
 * a list of the wrong length or with a zero is refused by key. */
Test(arch, gemma4_kv_heads_per_layer) {
    const lc_arch *g4 = lc_arch_by_name("gemma4");
    cr_assert_not_null(g4);
    cr_assert_eq(lc_arch_by_hf_class("Gemma4ForCausalLM"), g4);
    cr_assert_null(g4->no_forward_pass, "infer/infer_gemma4.c runs it");
    lc_error err = { 0 };
    lc_hparams hp = { .block_count = 3, .context_length = 64, .embedding_length = 64,
                      .feed_forward_length = 96, .head_count = 8, .head_count_kv = 1,
                      .head_dim = 32, .rope_dim = 32, .rms_eps = 1e-6, .rope_theta = 1e6,
                      .n_head_count_kv_layers = 3, .head_count_kv_layers = { 1, 4, 2 },
                      .head_dim_swa = 16, .rope_dim_swa = 16, .swa_layers = { true, false } };
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_model_set_meta_str(m, "general.architecture", "gemma4", &err), LC_OK);
    cr_assert_eq(lc_arch_write_keys(g4, &hp, 1, m, &err), LC_OK, "%s", err.msg);
    const lc_value *kv = lc_model_find_meta(m, "gemma4.attention.head_count_kv");
    cr_assert_eq(kv->type, LC_VT_ARRAY);
    cr_assert_eq(kv->arr.elem, LC_VT_I32);
    cr_assert_eq(kv->arr.count, 3);
    cr_assert_eq(lc_value_arr_get(kv, 1).i, 4);
    const lc_arch *back;
    lc_hparams got;
    cr_assert_eq(lc_arch_read_keys(m, &back, &got, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(back, g4);
    cr_assert_eq(got.head_count_kv, 1);
    cr_assert_eq(got.n_head_count_kv_layers, 3);
    cr_assert_eq(got.head_count_kv_layers[2], 2);
    /* the sliding layers' list and sizes, and a count whose 0 is a value */
    cr_assert(got.swa_layers_given && got.swa_layers[0] && !got.swa_layers[1]);
    cr_assert_eq(got.head_dim_swa, 16);
    cr_assert_eq(got.shared_kv_layers, 0);
    cr_assert_not_null(lc_model_find_meta(m, "gemma4.attention.shared_kv_layers"));
    lc_value v;
    cr_assert_eq(lc_value_array(&v, LC_VT_I32, 2, &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&v, 0, lc_value_int(LC_VT_I32, 1), &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&v, 1, lc_value_int(LC_VT_I32, 1), &err), LC_OK);
    cr_assert_eq(lc_model_set_meta(m, "gemma4.attention.head_count_kv", &v, &err), LC_OK);
    lc_value_clear(&v);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_arch_read_keys(m, &back, &got, &err), LC_E_MALFORMED);
    cr_assert_str_eq(err.where, "gemma4.attention.head_count_kv");
    cr_assert_not_null(strstr(err.msg, "2 entries for 3 layers"), "%s", err.msg);
    cr_assert_eq(lc_value_array(&v, LC_VT_I32, 3, &err), LC_OK);
    for (uint64_t i = 0; i < 3; i++)
        cr_assert_eq(lc_value_arr_set(&v, i, lc_value_int(LC_VT_I32, i == 1 ? 0 : 2), &err),
                     LC_OK);
    cr_assert_eq(lc_model_set_meta(m, "gemma4.attention.head_count_kv", &v, &err), LC_OK);
    lc_value_clear(&v);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_arch_read_keys(m, &back, &got, &err), LC_E_MALFORMED);
    cr_assert_not_null(strstr(err.msg, "[1] = 0"), "%s", err.msg);
    /* the sliding layers' list: one bool per layer too */
    cr_assert_eq(lc_arch_write_keys(g4, &hp, 1, m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_value_array(&v, LC_VT_BOOL, 2, &err), LC_OK);
    cr_assert_eq(lc_model_set_meta(m, "gemma4.attention.sliding_window_pattern", &v, &err),
                 LC_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_arch_read_keys(m, &back, &got, &err), LC_E_MALFORMED);
    cr_assert_str_eq(err.where, "gemma4.attention.sliding_window_pattern");
    cr_assert_not_null(strstr(err.msg, "2 entries for 3 layers"), "%s", err.msg);
    lc_model_free(m);
}
