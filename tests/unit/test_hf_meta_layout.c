/* Unit tests for hf/meta_layout.c: params.json -> lc_hf_config, Meta tensor names ->
 * GGUF names through arch/llama.c's "meta" column, and every code each can return (with its offset). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "hf/meta_layout.h"

/* Llama 2 7B's params.json (vocab_size -1: the embedding's rows). */
#define L2 "\"dim\": 4096, \"multiple_of\": 256, \"n_heads\": 32, \"n_layers\": 32, " \
           "\"norm_eps\": 1e-05, \"vocab_size\": -1"

/* The calls with a fresh err each time (lc_fail keeps the first failure). */
#define NAME(name, n, buf, cap, row, err) (memset(&err, 0, sizeof err), \
    lc_arch_map(lc_arch_by_name("llama"), LC_SPELL_META, LC_SPELL_GGUF, name, n, buf, cap, row, &err))
#define LOAD(...) (memset(&err, 0, sizeof err), lc_hf_meta_layout_load(__VA_ARGS__))

static lc_code parse(const char *json, uint64_t vocab, uint64_t ff, lc_hf_config *c,
                     lc_error *err) {
    memset(err, 0, sizeof *err);
    return lc_hf_meta_layout_config(json, strlen(json), vocab, ff, c, err);
}

Test(hf_meta_layout, llama2_params) {
    lc_hf_config c;
    lc_error err;
    cr_assert_eq(parse("{" L2 "}", 32000, 11008, &c, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(c.arch, lc_arch_by_name("llama"));
    cr_assert_eq(c.hp.embedding_length, 4096);
    cr_assert_eq(c.hp.block_count, 32);
    cr_assert_eq(c.hp.head_count, 32);
    cr_assert_eq(c.hp.head_count_kv, 32);
    cr_assert_eq(c.hp.head_dim, 128);
    cr_assert_eq(c.hp.feed_forward_length, 11008);   /* 4096 -> 10922 -> up to 256s: 11008 */
    cr_assert_eq(c.hp.vocab_size, 32000);
    cr_assert_eq(c.hp.context_length, 4096);         /* norm_eps 1e-5: Llama 2's guess */
    cr_assert_eq(c.hp.rms_eps, 1e-5);
    cr_assert_eq(c.hp.rope_theta, 10000.0);
    cr_assert_eq(c.hp.rope_scaling, LC_ROPE_SCALING_NONE);
    cr_assert(!c.hp.tie_word_embeddings);
}

Test(hf_meta_layout, llama2_70b_gqa_and_multiplier) {
    lc_hf_config c;
    lc_error err;
    const char *j = "{\"dim\": 8192, \"multiple_of\": 4096, \"ffn_dim_multiplier\": 1.3, "
                    "\"n_heads\": 64, \"n_kv_heads\": 8, \"n_layers\": 80, \"norm_eps\": 1e-05,"
                    " \"vocab_size\": -1}";
    cr_assert_eq(parse(j, 32000, 28672, &c, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(c.hp.head_count_kv, 8);
    cr_assert_eq(c.hp.feed_forward_length, 28672);
    cr_assert_eq(parse(j, 32000, 28671, &c, &err), LC_E_MISMATCH);
    cr_assert_eq(err.offset, LC_NO_OFFSET);
    cr_assert(strstr(err.msg, "imply 28672"), "%s", err.msg);
}

Test(hf_meta_layout, context_length_rules) {
    lc_hf_config c;
    lc_error err;
    cr_assert_eq(parse("{" L2 ", \"max_seq_len\": 77}", 32000, 11008, &c, &err), LC_OK);
    cr_assert_eq(c.hp.context_length, 77);
    cr_assert_eq(parse("{" L2 ", \"rope_theta\": 1000000}", 32000, 11008, &c, &err), LC_OK);
    cr_assert_eq(c.hp.context_length, 16384);
    cr_assert_eq(c.hp.rope_theta, 1e6);
    cr_assert_eq(parse("{\"dim\": 64, \"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": 1e-6}",
                       10, 7, &c, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(c.hp.context_length, 2048);
    cr_assert_eq(c.hp.feed_forward_length, 7);      /* no multiple_of: taken as it is */
    cr_assert_eq(c.hp.vocab_size, 10);
    cr_assert_eq(parse("{\"dim\": 64, \"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": 1e-6, "
                       "\"vocab_size\": 12}", 10, 7, &c, &err), LC_OK);
    cr_assert_eq(c.hp.vocab_size, 12);              /* a positive vocab_size wins (checked later) */
}

Test(hf_meta_layout, malformed_json_at_offset) {
    lc_hf_config c;
    lc_error err;
    cr_assert_eq(parse("{\"dim\": 64,, }", 1, 1, &c, &err), LC_E_MALFORMED);
    cr_assert_eq(err.offset, 12, "%llu", (unsigned long long)err.offset);
    cr_assert_eq(parse("[1]", 1, 1, &c, &err), LC_E_MALFORMED);
    cr_assert_eq(err.offset, 0);
    cr_assert(strstr(err.msg, "not a JSON object"));
}

Test(hf_meta_layout, malformed_fields) {
    static const struct { const char *json, *needle; } BAD[] = {
        { "{\"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": 1e-5}", "no dim" },
        { "{\"dim\": \"64\", \"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": 1e-5}", "dim must" },
        { "{\"dim\": 64, \"n_heads\": 0, \"n_layers\": 1, \"norm_eps\": 1e-5}", "n_heads must" },
        { "{\"dim\": 64, \"n_heads\": 4, \"n_layers\": 1.5, \"norm_eps\": 1e-5}", "n_layers" },
        { "{\"dim\": 64, \"n_heads\": 4, \"n_layers\": 1}", "no norm_eps" },
        { "{\"dim\": 64, \"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": -1}", "norm_eps must" },
        { "{\"dim\": 64, \"n_heads\": 5, \"n_layers\": 1, \"norm_eps\": 1e-5}", "multiple" },
        { "{\"dim\": 64, \"n_heads\": 4, \"n_kv_heads\": 3, \"n_layers\": 1, \"norm_eps\": 1}",
          "n_kv_heads 3" },
        { "{\"dim\": 64, \"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": 1, \"vocab_size\": 0}",
          "vocab_size must not be 0" },
        { "{\"dim\": 64, \"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": 1, \"use_scaled_rope\": 1}",
          "use_scaled_rope must be a bool" },
        /* found by fuzz_meta: the multiplied size once overflowed the integer cast */
        { "{\"dim\": 64, \"multiple_of\": 64, \"ffn_dim_multiplier\": 444444444444444440.5, "
          "\"n_heads\": 4, \"n_layers\": 1, \"norm_eps\": 1}", "past 32 bits" },
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        lc_hf_config c;
        lc_error err;
        cr_assert_eq(parse(BAD[i].json, 10, 10, &c, &err), LC_E_MALFORMED, "%zu", i);
        cr_assert_eq(err.offset, LC_NO_OFFSET, "%zu", i);
        cr_assert(strstr(err.msg, BAD[i].needle), "%zu: %s", i, err.msg);
    }
}

Test(hf_meta_layout, mismatch_and_unsupported) {
    lc_hf_config c;
    lc_error err;
    cr_assert_eq(parse("{" L2 "}", 0, 11008, &c, &err), LC_E_MISMATCH);
    cr_assert(strstr(err.msg, "tok_embeddings"));
    cr_assert_eq(parse("{" L2 "}", 32000, 0, &c, &err), LC_E_MISMATCH);
    cr_assert(strstr(err.msg, "w1"));
    cr_assert_eq(err.offset, LC_NO_OFFSET);
    cr_assert_eq(parse("{" L2 ", \"use_scaled_rope\": true}", 1, 1, &c, &err), LC_E_UNSUPPORTED);
    cr_assert_eq(err.offset, LC_NO_OFFSET);
    cr_assert_eq(parse("{" L2 ", \"moe\": {}}", 1, 1, &c, &err), LC_E_UNSUPPORTED);
    cr_assert(strstr(err.msg, "moe"));
    cr_assert_eq(parse("{" L2 "}", 1ull << 33, 11008, &c, &err), LC_E_MALFORMED);
}

Test(hf_meta_layout, names) {
    static const char *const MAP[][2] = {
        { "tok_embeddings.weight", "token_embd.weight" },
        { "norm.weight", "output_norm.weight" },
        { "output.weight", "output.weight" },
        { "layers.0.attention.wq.weight", "blk.0.attn_q.weight" },
        { "layers.1.attention.wk.weight", "blk.1.attn_k.weight" },
        { "layers.2.attention.wv.weight", "blk.2.attn_v.weight" },
        { "layers.3.attention.wo.weight", "blk.3.attn_output.weight" },
        { "layers.10.feed_forward.w1.weight", "blk.10.ffn_gate.weight" },
        { "layers.10.feed_forward.w2.weight", "blk.10.ffn_down.weight" },
        { "layers.10.feed_forward.w3.weight", "blk.10.ffn_up.weight" },
        { "layers.4.attention_norm.weight", "blk.4.attn_norm.weight" },
        { "layers.4.ffn_norm.weight", "blk.4.ffn_norm.weight" },
    };
    char buf[64];
    const lc_arch_tensor *row;
    lc_error err;
    for (size_t i = 0; i < sizeof MAP / sizeof *MAP; i++) {
        cr_assert_eq(NAME(MAP[i][0], 11, buf, sizeof buf, &row, err), LC_OK);
        cr_assert_str_eq(buf, MAP[i][1]);
    }
    /* Meta's rope.freqs is the computed tensor's row: dropped on the way in. */
    cr_assert_eq(NAME("rope.freqs", 11, buf, sizeof buf, &row, err), LC_OK);
    cr_assert(row->flags & LC_AT_COMPUTED);
    static const char *const BAD[] = { "layers.x.ffn_norm.weight", "layers.1.ffn_norm",
                                       "layers..ffn_norm.weight", "model.norm.weight",
                                       "layers.1.attention.wq.bias", "" };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        cr_assert_eq(NAME(BAD[i], 11, buf, sizeof buf, &row, err),
                     LC_E_UNSUPPORTED, "%s", BAD[i]);
        cr_assert_eq(err.offset, LC_NO_OFFSET);
    }
    cr_assert_eq(NAME("layers.11.ffn_norm.weight", 11, buf, sizeof buf, &row, err),
                 LC_E_MALFORMED);
    cr_assert(strstr(err.msg, "11-layer"), "%s", err.msg);
    cr_assert_eq(NAME("layers.1.ffn_norm.weight", 11, buf, 8, &row, err), LC_E_ARG);
}

Test(hf_meta_layout, folder_detection_and_shards) {
    char dir[] = "/tmp/lc-meta-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p[256];
    cr_assert(!lc_hf_meta_layout_is(dir));
    static const char *const F[] = { "params.json", "consolidated.00.pth",
                                     "consolidated.01.pth", "config.json" };
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, F[i]);
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fclose(f);
    }
    cr_assert(lc_hf_meta_layout_is(dir));
    lc_model *m = (lc_model *)1;
    lc_error err;
    memset(&err, 0, sizeof err);
    /* an empty consolidated.00.pth: the pth reader's error, *out NULL */
    cr_assert_neq(LOAD(dir, &m, &err), LC_OK);
    cr_assert_null(m);
    for (int i = 2; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, F[i]);
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fclose(f);
        if (i == 2) {
            cr_assert_eq(LOAD(dir, &m, &err), LC_E_UNSUPPORTED);
            cr_assert_eq(err.offset, LC_NO_OFFSET);
            cr_assert(strstr(err.msg, "model-parallel"));
        }
    }
    cr_assert(!lc_hf_meta_layout_is(dir));     /* config.json: the HF path wins */
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, F[i]);
        remove(p);
    }
    remove(dir);
}
