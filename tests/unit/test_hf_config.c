/* Unit tests for hf/config.c (config.json through the arch/ tables) and the
 * tokenizer.json pre-tokenizer check. */
#include <criterion/criterion.h>
#include <string.h>

#include "hf/config.h"
#include "hf/tokenizer.h"
#include "libconvert/model.h"

#define BASE "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, " \
             "\"intermediate_size\": 128, \"vocab_size\": 100, \"max_position_embeddings\": 32"

static lc_code parse(const char *json, lc_hf_config *c, lc_error *err) {
    memset(err, 0, sizeof *err);
    return lc_hf_config_parse(json, strlen(json), c, err);
}

Test(hf_config, llama_defaults_and_keys) {
    lc_hf_config c;
    lc_error err;
    cr_assert_eq(parse("{\"architectures\": [\"MistralForCausalLM\"], " BASE "}", &c, &err), LC_OK,
                 "%s", err.msg);
    cr_assert_eq(c.arch, lc_arch_by_name("llama"));
    cr_assert_str_eq(c.arch->name, "llama");
    cr_assert_eq(c.hp.head_count_kv, 4);
    cr_assert_eq(c.hp.head_dim, 16);
    cr_assert_not(c.hp.head_dim_given);
    cr_assert_eq(c.hp.rope_theta, 10000.0);
    cr_assert_eq(c.hp.rms_eps, 1e-6);
    cr_assert_eq(c.hp.rope_scaling, LC_ROPE_SCALING_NONE);
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_hf_config_to_gguf(&c, "x", m, &err), LC_OK);
    const lc_value *v = lc_model_find_meta(m, "llama.attention.head_count_kv");
    cr_assert(v && v->type == LC_VT_U32 && v->u == 4);
    v = lc_model_find_meta(m, "llama.rope.freq_base");
    cr_assert(v && v->type == LC_VT_F32 && v->f == 10000.0);
    v = lc_model_find_meta(m, "llama.attention.layer_norm_rms_epsilon");
    cr_assert(v && v->type == LC_VT_F32 && v->f == (double)1e-6f);
    cr_assert_null(lc_model_find_meta(m, "llama.rope.scaling.type"));
    lc_model_free(m);
}

Test(hf_config, qwen2_with_yarn_and_explicit_fields) {
    lc_hf_config c;
    lc_error err;
    cr_assert_eq(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " BASE
                       ", \"num_key_value_heads\": 2, \"head_dim\": 32, \"rope_theta\": 5e5,"
                       " \"tie_word_embeddings\": true, \"rope_scaling\": {\"rope_type\": \"yarn\","
                       " \"factor\": 4, \"original_max_position_embeddings\": 8}}", &c, &err),
                 LC_OK, "%s", err.msg);
    cr_assert_eq(c.arch, lc_arch_by_name("qwen2"));
    cr_assert_eq(c.hp.head_count_kv, 2);
    cr_assert_eq(c.hp.head_dim, 32);
    cr_assert(c.hp.head_dim_given);
    cr_assert(c.hp.tie_word_embeddings);
    cr_assert_eq(c.hp.rope_scaling, LC_ROPE_SCALING_YARN);
    cr_assert_eq(c.hp.rope_scaling_factor, 4.0);
    cr_assert_eq(c.hp.rope_scaling_orig_ctx, 8);
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_hf_config_to_gguf(&c, NULL, m, &err), LC_OK);
    cr_assert_null(lc_model_find_meta(m, "general.name"));
    const lc_value *v = lc_model_find_meta(m, "qwen2.rope.scaling.original_context_length");
    cr_assert(v && v->type == LC_VT_U32 && v->u == 8);
    v = lc_model_find_meta(m, "qwen2.rope.freq_base");
    cr_assert(v && v->f == 500000.0);
    v = lc_model_find_meta(m, "qwen2.attention.key_length");
    cr_assert(v && v->type == LC_VT_U32 && v->u == 32, "head_dim given: key_length written");
    /* qwen2's table has neither (convert_hf_to_gguf.py writes them for llama only), and
     * general.file_type is the converter's to add. */
    cr_assert_null(lc_model_find_meta(m, "qwen2.vocab_size"));
    cr_assert_null(lc_model_find_meta(m, "qwen2.rope.dimension_count"));
    cr_assert_null(lc_model_find_meta(m, "general.file_type"));
    lc_model_free(m);
}

Test(hf_config, llama3_scaling_only_for_families_with_the_hook) {
    lc_hf_config c;
    lc_error err;
    cr_assert_eq(parse("{\"architectures\": [\"LlamaForCausalLM\"], " BASE
                       ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 32,"
                       " \"original_max_position_embeddings\": 16}}", &c, &err), LC_OK,
                 "%s", err.msg);
    cr_assert_eq(c.hp.rope_scaling, LC_ROPE_SCALING_LLAMA3);
    cr_assert_eq(c.hp.rope_scaling_factor, 32.0);
    cr_assert_eq(c.hp.rope_low_freq_factor, 1.0, "LlamaModel's default");
    cr_assert_eq(c.hp.rope_high_freq_factor, 4.0);
    cr_assert_eq(c.hp.rope_scaling_orig_ctx, 16);
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_hf_config_to_gguf(&c, NULL, m, &err), LC_OK);
    cr_assert_null(lc_model_find_meta(m, "llama.rope.scaling.type"), "llama3 writes no keys");
    lc_model_free(m);
    cr_assert_eq(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " BASE
                       ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}",
                       &c, &err), LC_E_UNSUPPORTED);
    cr_assert_not_null(strstr(err.msg, "llama3"), "%s", err.msg);
}

Test(hf_config, refusals_name_the_value) {
    static const struct { const char *json; lc_code code; const char *needle; } cases[] = {
        { "{\"architectures\": [\"GPT2LMHeadModel\"], " BASE "}", LC_E_UNSUPPORTED,
          "GPT2LMHeadModel" },
        { "{\"architectures\": [\"LlamaForCausalLM\"], " BASE
          ", \"rope_scaling\": {\"rope_type\": \"longrope\", \"factor\": 8}}", LC_E_UNSUPPORTED,
          "longrope" },
        { "{" BASE "}", LC_E_MALFORMED, "architectures" },
        { "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64}", LC_E_MALFORMED,
          "num_hidden_layers" },
        { "{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"num_key_value_heads\": 3}",
          LC_E_MALFORMED, "num_key_value_heads" },
        { "{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"head_dim\": 1.5}",
          LC_E_MALFORMED, "head_dim" },
        { "{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rms_norm_eps\": -1}",
          LC_E_MALFORMED, "rms_norm_eps" },
        { "[1]", LC_E_MALFORMED, "object" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lc_hf_config c;
        lc_error err;
        cr_assert_eq(parse(cases[i].json, &c, &err), cases[i].code, "case %zu: %s", i, err.msg);
        cr_assert_not_null(strstr(err.msg, cases[i].needle), "case %zu: %s", i, err.msg);
    }
}

Test(hf_config, bad_json_offset) {
    lc_hf_config c;
    lc_error err;
    /* cJSON stops after skipping the blank that follows the stray comma at 8. */
    cr_assert_eq(parse("{\"a\": 1,, }", &c, &err), LC_E_MALFORMED);
    cr_assert_eq(err.offset, 9, "offset %llu", (unsigned long long)err.offset);
    cr_assert_eq(parse("{\"a\": tru", &c, &err), LC_E_MALFORMED);
    cr_assert_leq(err.offset, 10);
}

Test(hf_tokenizer, pre_identification) {
    static const struct { const char *json; const char *name; } ok[] = {
        { "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}}", "gpt-2" },
        { "{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
          "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|"
          "[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}|"
          " ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
          " \"behavior\": \"Isolated\", \"invert\": false},"
          "{\"type\": \"ByteLevel\", \"use_regex\": false}]}}", "qwen2" },
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        const char *name = NULL;
        lc_error err = { 0 };
        cr_assert_eq(lc_hf_tokenizer_pre(ok[i].json, strlen(ok[i].json), &name, &err), LC_OK,
                     "case %zu: %s", i, err.msg);
        cr_assert_str_eq(name, ok[i].name);
    }
    static const char *bad[] = {
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"use_regex\": false}}",
        "{\"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
        "{\"pre_tokenizer\": null}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *name = NULL;
        lc_error err = { 0 };
        cr_assert_eq(lc_hf_tokenizer_pre(bad[i], strlen(bad[i]), &name, &err), LC_E_UNSUPPORTED);
        cr_assert_not_null(strstr(err.msg, "--pre"));
    }
}
