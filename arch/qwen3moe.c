/* arch/qwen3moe.c: the qwen3moe family (Qwen3MoeForCausalLM) as data.
 *
 * qwen3's attention; every layer's FFN is a mixture of expert_count SwiGLU experts of
 * moe_intermediate_size, expert_used_count of them chosen per token by a softmax
 * router and, with norm_topk_prob, renormalised. GGUF stacks each layer's experts into
 * ffn_{gate,up,down}_exps [expert, ...]; transformers 4 and the Hub's checkpoints spell
 * one tensor per expert (merged when the last of a layer's is seen, down then gate then
 * up, as Qwen2MoeModel.modify_tensors writes them), transformers 5 one fused gate_up
 * [expert, 2 ff, embd] and one down [expert, embd, ff] per layer. The router stays F32.
 * expert_feed_forward_length comes after general.file_type, where Qwen2MoeModel adds it. */
#include "arch/families.h"

static const char *const CLASSES[] = { "Qwen3MoeForCausalLM", NULL };

#define L "model.layers.%u."
static const lc_arch_tensor TENSORS[] = {
    /* role                 GGUF                          transformers                              Meta  shape                                          flags */
    { LC_ROLE_TOKEN_EMBD,    "token_embd.weight",           "model.embed_tokens.weight",                NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },                  LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT_NORM,   "output_norm.weight",          "model.norm.weight",                        NULL, 1, { LC_DIM_EMBD },                                LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT,        "output.weight",               "lm_head.weight",                           NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },                  0 },
    { LC_ROLE_ATTN_NORM,     "blk.%u.attn_norm.weight",     L "input_layernorm.weight",                 NULL, 1, { LC_DIM_EMBD },                                LC_AT_REQUIRED },
    { LC_ROLE_ATTN_Q,        "blk.%u.attn_q.weight",        L "self_attn.q_proj.weight",                NULL, 2, { LC_DIM_Q, LC_DIM_EMBD },                      LC_AT_REQUIRED | LC_AT_ROPE_Q },
    { LC_ROLE_ATTN_Q_NORM,   "blk.%u.attn_q_norm.weight",   L "self_attn.q_norm.weight",                NULL, 1, { LC_DIM_HEAD },                                LC_AT_REQUIRED },
    { LC_ROLE_ATTN_K,        "blk.%u.attn_k.weight",        L "self_attn.k_proj.weight",                NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },                     LC_AT_REQUIRED | LC_AT_ROPE_K },
    { LC_ROLE_ATTN_K_NORM,   "blk.%u.attn_k_norm.weight",   L "self_attn.k_norm.weight",                NULL, 1, { LC_DIM_HEAD },                                LC_AT_REQUIRED },
    { LC_ROLE_ATTN_V,        "blk.%u.attn_v.weight",        L "self_attn.v_proj.weight",                NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },                     LC_AT_REQUIRED },
    { LC_ROLE_ATTN_OUT,      "blk.%u.attn_output.weight",   L "self_attn.o_proj.weight",                NULL, 2, { LC_DIM_EMBD, LC_DIM_Q },                      LC_AT_REQUIRED },
    { LC_ROLE_FFN_NORM,      "blk.%u.ffn_norm.weight",      L "post_attention_layernorm.weight",        NULL, 1, { LC_DIM_EMBD },                                LC_AT_REQUIRED },
    { LC_ROLE_FFN_GATE_INP,  "blk.%u.ffn_gate_inp.weight",  L "mlp.gate.weight",                        NULL, 2, { LC_DIM_EXPERT, LC_DIM_EMBD },                 LC_AT_REQUIRED | LC_AT_KEEP_F32 },
    /* stacked, in the order they are written */
    { LC_ROLE_FFN_DOWN_EXPS, "blk.%u.ffn_down_exps.weight", L "mlp.experts.%e.down_proj.weight",        NULL, 3, { LC_DIM_EXPERT, LC_DIM_EMBD, LC_DIM_FF_EXP },  LC_AT_REQUIRED | LC_AT_EXPERTS, L "mlp.experts.down_proj", 0, 1 },
    { LC_ROLE_FFN_GATE_EXPS, "blk.%u.ffn_gate_exps.weight", L "mlp.experts.%e.gate_proj.weight",        NULL, 3, { LC_DIM_EXPERT, LC_DIM_FF_EXP, LC_DIM_EMBD },  LC_AT_REQUIRED | LC_AT_EXPERTS, L "mlp.experts.gate_up_proj", 0, 2 },
    { LC_ROLE_FFN_UP_EXPS,   "blk.%u.ffn_up_exps.weight",   L "mlp.experts.%e.up_proj.weight",          NULL, 3, { LC_DIM_EXPERT, LC_DIM_FF_EXP, LC_DIM_EMBD },  LC_AT_REQUIRED | LC_AT_EXPERTS, L "mlp.experts.gate_up_proj", 1, 2 },
    { LC_ROLE_ROPE_INV_FREQ, NULL,                          L "self_attn.rotary_emb.inv_freq",          NULL, 0, { 0 },                                          0 },
};
#undef L

static const lc_arch_key KEYS[] = {
    LC_ARCH_KEYS_HEAD, LC_ARCH_KEYS_EPS, LC_ARCH_KEYS_EXPERTS, LC_ARCH_KEYS_TAIL,
    { "%s.expert_feed_forward_length", LC_HP_EXPERT_FF_LENGTH, LC_KEY_U32, LC_KEY_IF_SET },
};

static const lc_arch_cfg CFG[] = {
    { "moe_intermediate_size", LC_HP_EXPERT_FF_LENGTH, LC_CFG_U32 },
    { "norm_topk_prob", LC_HP_EXPERT_NORM_TOPK, LC_CFG_BOOL },
};

const lc_arch lc_arch_qwen3moe = {
    .name = "qwen3moe",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NEOX,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .cfg = lc_arch_cfg_transformer, .n_cfg = LC_ARCH_CFG_TRANSFORMER_COUNT,
    .cfg_extra = CFG, .n_cfg_extra = sizeof CFG / sizeof *CFG,
    .default_rms_eps = 1e-6, .default_rope_theta = 10000.0,   /* Qwen3MoeConfig's */
    .recipe = { .moe_norm_topk = true },
};
