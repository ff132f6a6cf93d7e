/* arch/qwen3.c: the qwen3 family (Qwen3ForCausalLM) as data.
 *
 * qwen2's layout without biases, plus an RMSNorm over each query and key head (q_norm,
 * k_norm) before RoPE; NEOX RoPE, so nothing is permuted. The config names head_dim
 * (128 with a hidden size of 1024 in Qwen3-0.6B), so key_length and value_length are
 * written. */
#include "arch/families.h"

static const char *const CLASSES[] = { "Qwen3ForCausalLM", NULL };

static const lc_arch_tensor TENSORS[] = {
    /* role                 GGUF                        transformers                                    Meta  shape                           flags */
    { LC_ROLE_TOKEN_EMBD,    "token_embd.weight",         "model.embed_tokens.weight",                     NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },   LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT_NORM,   "output_norm.weight",        "model.norm.weight",                             NULL, 1, { LC_DIM_EMBD },                 LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT,        "output.weight",             "lm_head.weight",                                NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },   0 },
    { LC_ROLE_ATTN_NORM,     "blk.%u.attn_norm.weight",   "model.layers.%u.input_layernorm.weight",         NULL, 1, { LC_DIM_EMBD },                 LC_AT_REQUIRED },
    { LC_ROLE_ATTN_Q,        "blk.%u.attn_q.weight",      "model.layers.%u.self_attn.q_proj.weight",        NULL, 2, { LC_DIM_Q, LC_DIM_EMBD },       LC_AT_REQUIRED | LC_AT_ROPE_Q },
    { LC_ROLE_ATTN_Q_NORM,   "blk.%u.attn_q_norm.weight", "model.layers.%u.self_attn.q_norm.weight",        NULL, 1, { LC_DIM_HEAD },                 LC_AT_REQUIRED },
    { LC_ROLE_ATTN_K,        "blk.%u.attn_k.weight",      "model.layers.%u.self_attn.k_proj.weight",        NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },      LC_AT_REQUIRED | LC_AT_ROPE_K },
    { LC_ROLE_ATTN_K_NORM,   "blk.%u.attn_k_norm.weight", "model.layers.%u.self_attn.k_norm.weight",        NULL, 1, { LC_DIM_HEAD },                 LC_AT_REQUIRED },
    { LC_ROLE_ATTN_V,        "blk.%u.attn_v.weight",      "model.layers.%u.self_attn.v_proj.weight",        NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },      LC_AT_REQUIRED },
    { LC_ROLE_ATTN_OUT,      "blk.%u.attn_output.weight", "model.layers.%u.self_attn.o_proj.weight",        NULL, 2, { LC_DIM_EMBD, LC_DIM_Q },       LC_AT_REQUIRED },
    { LC_ROLE_FFN_NORM,      "blk.%u.ffn_norm.weight",    "model.layers.%u.post_attention_layernorm.weight", NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_FFN_GATE,      "blk.%u.ffn_gate.weight",    "model.layers.%u.mlp.gate_proj.weight",           NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },      LC_AT_REQUIRED },
    { LC_ROLE_FFN_UP,        "blk.%u.ffn_up.weight",      "model.layers.%u.mlp.up_proj.weight",             NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },      LC_AT_REQUIRED },
    { LC_ROLE_FFN_DOWN,      "blk.%u.ffn_down.weight",    "model.layers.%u.mlp.down_proj.weight",           NULL, 2, { LC_DIM_EMBD, LC_DIM_FF },      LC_AT_REQUIRED },
    { LC_ROLE_ROPE_INV_FREQ, NULL,                        "model.layers.%u.self_attn.rotary_emb.inv_freq",  NULL, 0, { 0 },                           0 },
};

static const lc_arch_key KEYS[] = { LC_ARCH_KEYS_TRANSFORMER };

const lc_arch lc_arch_qwen3 = {
    .name = "qwen3",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NEOX,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .cfg = lc_arch_cfg_transformer, .n_cfg = LC_ARCH_CFG_TRANSFORMER_COUNT,
    .default_rms_eps = 1e-6, .default_rope_theta = 10000.0,   /* Qwen3Config's */
};
