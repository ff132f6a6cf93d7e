/* arch/gemma3.c: the gemma3 family (Gemma3ForCausalLM) as data.
 *
 * A pre- and a post-norm around both attention and FFN, RMSNorm over each query and key
 * head, GELU (tanh) gating, the embedding scaled by sqrt(hidden_size), tied output.
 * Gemma's RMSNorm scales by 1 + w: GGUF stores w + 1 (LC_AT_NORM_SHIFT, every
 * "*norm.weight", as Gemma3Model.norm_shift says). Five of every six layers attend
 * within sliding_window with RoPE base rope_local_base_freq (freq_base_swa); the sixth
 * globally with rope_theta (llama.cpp fixes the pattern at 6). Scores are scaled by
 * query_pre_attn_scalar^-1/2 (llama.cpp: head_dim's, the same for every size but 27B).
 * Embedding rows past vocab_size are cut. NEOX RoPE: nothing permuted. */
#include "arch/families.h"

static const char *const CLASSES[] = { "Gemma3ForCausalLM", NULL };

#define L "model.layers.%u."
static const lc_arch_tensor TENSORS[] = {
    /* role                  GGUF                             transformers                          Meta  shape                          flags */
    { LC_ROLE_TOKEN_EMBD,     "token_embd.weight",              "model.embed_tokens.weight",            NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },  LC_AT_REQUIRED | LC_AT_VOCAB_ROWS },
    { LC_ROLE_OUTPUT_NORM,    "output_norm.weight",             "model.norm.weight",                    NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED | LC_AT_NORM_SHIFT },
    { LC_ROLE_OUTPUT,         "output.weight",                  "lm_head.weight",                       NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },  0 },
    { LC_ROLE_ATTN_NORM,      "blk.%u.attn_norm.weight",        L "input_layernorm.weight",             NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED | LC_AT_NORM_SHIFT },
    { LC_ROLE_ATTN_Q,         "blk.%u.attn_q.weight",           L "self_attn.q_proj.weight",            NULL, 2, { LC_DIM_Q, LC_DIM_EMBD },      LC_AT_REQUIRED | LC_AT_ROPE_Q },
    { LC_ROLE_ATTN_Q_NORM,    "blk.%u.attn_q_norm.weight",      L "self_attn.q_norm.weight",            NULL, 1, { LC_DIM_HEAD },                LC_AT_REQUIRED | LC_AT_NORM_SHIFT },
    { LC_ROLE_ATTN_K,         "blk.%u.attn_k.weight",           L "self_attn.k_proj.weight",            NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },     LC_AT_REQUIRED | LC_AT_ROPE_K },
    { LC_ROLE_ATTN_K_NORM,    "blk.%u.attn_k_norm.weight",      L "self_attn.k_norm.weight",            NULL, 1, { LC_DIM_HEAD },                LC_AT_REQUIRED | LC_AT_NORM_SHIFT },
    { LC_ROLE_ATTN_V,         "blk.%u.attn_v.weight",           L "self_attn.v_proj.weight",            NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },     LC_AT_REQUIRED },
    { LC_ROLE_ATTN_OUT,       "blk.%u.attn_output.weight",      L "self_attn.o_proj.weight",            NULL, 2, { LC_DIM_EMBD, LC_DIM_Q },      LC_AT_REQUIRED },
    { LC_ROLE_ATTN_POST_NORM, "blk.%u.post_attention_norm.weight", L "post_attention_layernorm.weight", NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED | LC_AT_NORM_SHIFT },
    { LC_ROLE_FFN_NORM,       "blk.%u.ffn_norm.weight",         L "pre_feedforward_layernorm.weight",   NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED | LC_AT_NORM_SHIFT },
    { LC_ROLE_FFN_GATE,       "blk.%u.ffn_gate.weight",         L "mlp.gate_proj.weight",               NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },     LC_AT_REQUIRED },
    { LC_ROLE_FFN_UP,         "blk.%u.ffn_up.weight",           L "mlp.up_proj.weight",                 NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },     LC_AT_REQUIRED },
    { LC_ROLE_FFN_DOWN,       "blk.%u.ffn_down.weight",         L "mlp.down_proj.weight",               NULL, 2, { LC_DIM_EMBD, LC_DIM_FF },     LC_AT_REQUIRED },
    { LC_ROLE_FFN_POST_NORM,  "blk.%u.post_ffw_norm.weight",    L "post_feedforward_layernorm.weight",  NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED | LC_AT_NORM_SHIFT },
    { LC_ROLE_ROPE_INV_FREQ,  NULL,                             L "self_attn.rotary_emb.inv_freq",      NULL, 0, { 0 },                          0 },
};
#undef L

/* TextModel's keys, then Gemma3Model's: it rewrites context_length, head_count, the
 * epsilon, key/value length, freq_base and head_count_kv in place and appends the final
 * softcap (when the config has one) and sliding_window. */
static const lc_arch_key KEYS[] = {
    LC_ARCH_KEYS_HEAD, LC_ARCH_KEYS_SWA_BASE, LC_ARCH_KEYS_EPS,
    { "%s.attention.key_length", LC_HP_HEAD_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.value_length", LC_HP_VALUE_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
    { "general.file_type", LC_HP_FILE_TYPE, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.final_logit_softcapping", LC_HP_FINAL_SOFTCAP, LC_KEY_F32, LC_KEY_IF_SET },
    { "%s.attention.sliding_window", LC_HP_SLIDING_WINDOW, LC_KEY_U32, LC_KEY_IF_SET },
};

static const lc_arch_cfg CFG[] = {
    { "sliding_window", LC_HP_SLIDING_WINDOW, LC_CFG_U32 },
    { "sliding_window_pattern", LC_HP_SWA_PATTERN, LC_CFG_U32 },
    { "query_pre_attn_scalar", LC_HP_ATTN_SCALE, LC_CFG_NUMBER },
    { "final_logit_softcapping", LC_HP_FINAL_SOFTCAP, LC_CFG_NUMBER },
};

const lc_arch lc_arch_gemma3 = {
    .name = "gemma3",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NEOX,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .cfg = lc_arch_cfg_transformer, .n_cfg = LC_ARCH_CFG_TRANSFORMER_COUNT,
    .cfg_extra = CFG, .n_cfg_extra = sizeof CFG / sizeof *CFG,
    .default_rms_eps = 1e-6, .default_rope_theta = 1000000.0,   /* Gemma3TextConfig's */
    .recipe = { .act = LC_ACT_GELU_TANH, .embd_scale = true },
    .default_swa_pattern = 6,
    .spm_no_space_prefix = true,
};
