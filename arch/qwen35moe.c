/* arch/qwen35moe.c: the qwen35moe family (Qwen3_5MoeForCausalLM, Qwen3.5/3.6 MoE such as
 * Qwen3.6-35B-A3B) as data.
 *
 * qwen35's hybrid layers (arch/qwen35.c: Gated-DeltaNet recurrent layers, gated full
 * attention, the multi-token prediction block) with every FFN a mixture of experts:
 * expert_count SwiGLU experts of moe_intermediate_size, expert_used_count chosen per
 * token by a softmax router and renormalised, plus one shared expert of
 * shared_expert_intermediate_size that every token runs, scaled by
 * sigmoid(shared_expert_gate . x). Experts are stacked as qwen3moe's (one tensor per
 * expert on the Hub, transformers 5's fused gate_up / down too); the routers stay F32.
 * The config has no intermediate_size: no feed_forward_length key (TextModel writes it
 * only when the config names one). */
#include "arch/families.h"

static const char *const CLASSES[] = { "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration",
                                       NULL };

#define L "model.layers.%u."
static const lc_arch_tensor TENSORS[] = {
    LC_ARCH_QWEN35_ROWS,
    /* role                      GGUF                                 transformers                              Meta  shape                                          flags */
    { LC_ROLE_FFN_GATE_INP,       "blk.%u.ffn_gate_inp.weight",        L "mlp.gate.weight",                       NULL, 2, { LC_DIM_EXPERT, LC_DIM_EMBD },                  LC_AT_REQUIRED | LC_AT_KEEP_F32 },
    /* stacked, in the order they are written */
    { LC_ROLE_FFN_DOWN_EXPS,      "blk.%u.ffn_down_exps.weight",       L "mlp.experts.%e.down_proj.weight",       NULL, 3, { LC_DIM_EXPERT, LC_DIM_EMBD, LC_DIM_FF_EXP },  LC_AT_REQUIRED | LC_AT_EXPERTS, L "mlp.experts.down_proj", 0, 1 },
    { LC_ROLE_FFN_GATE_EXPS,      "blk.%u.ffn_gate_exps.weight",       L "mlp.experts.%e.gate_proj.weight",       NULL, 3, { LC_DIM_EXPERT, LC_DIM_FF_EXP, LC_DIM_EMBD },  LC_AT_REQUIRED | LC_AT_EXPERTS, L "mlp.experts.gate_up_proj", 0, 2 },
    { LC_ROLE_FFN_UP_EXPS,        "blk.%u.ffn_up_exps.weight",         L "mlp.experts.%e.up_proj.weight",         NULL, 3, { LC_DIM_EXPERT, LC_DIM_FF_EXP, LC_DIM_EMBD },  LC_AT_REQUIRED | LC_AT_EXPERTS, L "mlp.experts.gate_up_proj", 1, 2 },
    /* the shared expert and its gate */
    { LC_ROLE_FFN_DOWN_SHEXP,     "blk.%u.ffn_down_shexp.weight",      L "mlp.shared_expert.down_proj.weight",    NULL, 2, { LC_DIM_EMBD, LC_DIM_FF_SHEXP },               LC_AT_REQUIRED },
    { LC_ROLE_FFN_GATE_SHEXP,     "blk.%u.ffn_gate_shexp.weight",      L "mlp.shared_expert.gate_proj.weight",    NULL, 2, { LC_DIM_FF_SHEXP, LC_DIM_EMBD },               LC_AT_REQUIRED },
    { LC_ROLE_FFN_UP_SHEXP,       "blk.%u.ffn_up_shexp.weight",        L "mlp.shared_expert.up_proj.weight",      NULL, 2, { LC_DIM_FF_SHEXP, LC_DIM_EMBD },               LC_AT_REQUIRED },
    { LC_ROLE_FFN_GATE_INP_SHEXP, "blk.%u.ffn_gate_inp_shexp.weight",  L "mlp.shared_expert_gate.weight",         NULL, 2, { LC_DIM_ONE, LC_DIM_EMBD },                    LC_AT_REQUIRED | LC_AT_KEEP_F32 },
};
#undef L

static const lc_arch_alias ALIASES[] = { LC_ARCH_QWEN35_ALIASES };

static const lc_arch_key KEYS[] = {
    LC_ARCH_QWEN35_KEYS_HEAD(LC_KEY_IF_SET),
    LC_ARCH_QWEN35_KEYS_TAIL,
};

/* transformers' spellings as every transformer family's (families.h), but no
 * intermediate_size (every FFN is the experts), then the experts' and the recurrent
 * layers'. */
static const lc_arch_cfg CFG[] = {
    { "hidden_size", LC_HP_EMBEDDING_LENGTH, LC_CFG_U32_REQUIRED },
    { "num_hidden_layers", LC_HP_BLOCK_COUNT, LC_CFG_U32_REQUIRED },
    { "num_attention_heads", LC_HP_HEAD_COUNT, LC_CFG_U32_REQUIRED },
    { "intermediate_size", LC_HP_FEED_FORWARD_LENGTH, LC_CFG_U32 },
    { "vocab_size", LC_HP_VOCAB_SIZE, LC_CFG_U32_REQUIRED },
    { "max_position_embeddings", LC_HP_CONTEXT_LENGTH, LC_CFG_U32_REQUIRED },
    { "num_key_value_heads", LC_HP_HEAD_COUNT_KV, LC_CFG_U32 },
    { "head_dim", LC_HP_HEAD_DIM, LC_CFG_U32 },
    { "rms_norm_eps", LC_HP_RMS_EPS, LC_CFG_POSITIVE },
    { "rope_theta", LC_HP_ROPE_THETA, LC_CFG_POSITIVE },
    { "tie_word_embeddings", LC_HP_TIE_WORD_EMBEDDINGS, LC_CFG_BOOL },
    { "n_routed_experts", LC_HP_EXPERT_COUNT, LC_CFG_NUMBER },
    { "num_experts", LC_HP_EXPERT_COUNT, LC_CFG_NUMBER },
    { "num_local_experts", LC_HP_EXPERT_COUNT, LC_CFG_NUMBER },
    { "top_k_experts", LC_HP_EXPERT_USED_COUNT, LC_CFG_NUMBER },
    { "num_experts_per_token", LC_HP_EXPERT_USED_COUNT, LC_CFG_NUMBER },
    { "num_experts_per_tok", LC_HP_EXPERT_USED_COUNT, LC_CFG_NUMBER },
};

static const lc_arch_cfg CFG_EXTRA[] = {
    { "moe_intermediate_size", LC_HP_EXPERT_FF_LENGTH, LC_CFG_U32_REQUIRED },
    { "shared_expert_intermediate_size", LC_HP_EXPERT_SHARED_FF_LENGTH, LC_CFG_U32_REQUIRED },
    LC_ARCH_QWEN35_CFG,
};

const lc_arch lc_arch_qwen35moe = {
    .name = "qwen35moe",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NEOX,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .cfg = CFG, .n_cfg = sizeof CFG / sizeof *CFG,
    .cfg_extra = CFG_EXTRA, .n_cfg_extra = sizeof CFG_EXTRA / sizeof *CFG_EXTRA,
    .default_rms_eps = 1e-6, .default_rope_theta = 10000.0,   /* Qwen3_5MoeTextConfig's */
    .recipe = { .attn_gate = true, .moe_norm_topk = true },
    .default_full_attn_interval = 4,
    .aliases = ALIASES, .n_aliases = sizeof ALIASES / sizeof *ALIASES,
    .partial_rotary_of_head = true,
    .default_rope_sections = { 11, 11, 10, 0 },
};
