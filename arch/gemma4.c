/* arch/gemma4.c: the gemma4 family (Gemma4ForCausalLM, Gemma 4's text model) as data.
 *
 * What the pinned converter (Gemma4Model) writes: gemma3's blocks with norms stored as
 * they are (Gemma 4's RMSNorm multiplies by w: no + 1), sliding and full layers of
 * different head sizes and KV head counts (head_count_kv one per layer; key_length the
 * full layers', key_length_swa the sliding ones'), full layers whose keys are also their
 * values (no attn_v), the last shared_kv_layers layers reading earlier layers' KV (no
 * attn_k/attn_v), per-layer input embeddings, a scale on each layer's output, and
 * rope_freqs (1 for the rotated pairs of the full layers' proportional RoPE, 1e30 for
 * the rest). config.json's per-layer shapes are read by hf/config_layers.c, the
 * "gemma4" vocabulary from tokenizer.json by hf/vocab_hf.c; infer/infer_gemma4.c runs
 * it. Shapes vary by layer kind, so the rows of the attention leave them unchecked. */
#include "arch/families.h"

static const char *const CLASSES[] = { "Gemma4ForCausalLM", NULL };

#define L "model.layers.%u."
static const lc_arch_tensor TENSORS[] = {
    /* role                          GGUF                                  transformers                          Meta  shape                          flags */
    { LC_ROLE_ROPE_FREQS,             "rope_freqs.weight",                  NULL,                                 NULL, 0, { 0 },                          LC_AT_COMPUTED },
    { LC_ROLE_TOKEN_EMBD,             "token_embd.weight",                  "model.embed_tokens.weight",          NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },  LC_AT_REQUIRED | LC_AT_VOCAB_ROWS },
    { LC_ROLE_PER_LAYER_TOKEN_EMBD,   "per_layer_token_embd.weight",        "model.embed_tokens_per_layer.weight", NULL, 0, { 0 },                         0 },
    { LC_ROLE_PER_LAYER_MODEL_PROJ,   "per_layer_model_proj.weight",        "model.per_layer_model_projection.weight", NULL, 0, { 0 },                     0 },
    { LC_ROLE_PER_LAYER_PROJ_NORM,    "per_layer_proj_norm.weight",         "model.per_layer_projection_norm.weight", NULL, 0, { 0 },                      0 },
    { LC_ROLE_OUTPUT_NORM,            "output_norm.weight",                 "model.norm.weight",                  NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT,                 "output.weight",                      "lm_head.weight",                     NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },  0 },
    { LC_ROLE_ATTN_NORM,              "blk.%u.attn_norm.weight",            L "input_layernorm.weight",           NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_ATTN_Q,                 "blk.%u.attn_q.weight",               L "self_attn.q_proj.weight",          NULL, 0, { 0 },                          LC_AT_REQUIRED },
    { LC_ROLE_ATTN_Q_NORM,            "blk.%u.attn_q_norm.weight",          L "self_attn.q_norm.weight",          NULL, 0, { 0 },                          LC_AT_REQUIRED },
    { LC_ROLE_ATTN_K,                 "blk.%u.attn_k.weight",               L "self_attn.k_proj.weight",          NULL, 0, { 0 },                          0 },
    { LC_ROLE_ATTN_K_NORM,            "blk.%u.attn_k_norm.weight",          L "self_attn.k_norm.weight",          NULL, 0, { 0 },                          0 },
    { LC_ROLE_ATTN_V,                 "blk.%u.attn_v.weight",               L "self_attn.v_proj.weight",          NULL, 0, { 0 },                          0 },
    { LC_ROLE_ATTN_OUT,               "blk.%u.attn_output.weight",          L "self_attn.o_proj.weight",          NULL, 0, { 0 },                          LC_AT_REQUIRED },
    { LC_ROLE_ATTN_POST_NORM,         "blk.%u.post_attention_norm.weight",  L "post_attention_layernorm.weight",  NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_FFN_NORM,               "blk.%u.ffn_norm.weight",             L "pre_feedforward_layernorm.weight", NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_FFN_GATE,               "blk.%u.ffn_gate.weight",             L "mlp.gate_proj.weight",             NULL, 0, { 0 },                          LC_AT_REQUIRED },
    { LC_ROLE_FFN_UP,                 "blk.%u.ffn_up.weight",               L "mlp.up_proj.weight",               NULL, 0, { 0 },                          LC_AT_REQUIRED },
    { LC_ROLE_FFN_DOWN,               "blk.%u.ffn_down.weight",             L "mlp.down_proj.weight",             NULL, 0, { 0 },                          LC_AT_REQUIRED },
    { LC_ROLE_FFN_POST_NORM,          "blk.%u.post_ffw_norm.weight",        L "post_feedforward_layernorm.weight", NULL, 1, { LC_DIM_EMBD },               LC_AT_REQUIRED },
    { LC_ROLE_PER_LAYER_INP_GATE,     "blk.%u.inp_gate.weight",             L "per_layer_input_gate.weight",      NULL, 0, { 0 },                          0 },
    { LC_ROLE_PER_LAYER_PROJ,         "blk.%u.proj.weight",                 L "per_layer_projection.weight",      NULL, 0, { 0 },                          0 },
    { LC_ROLE_PER_LAYER_POST_NORM,    "blk.%u.post_norm.weight",            L "post_per_layer_input_norm.weight", NULL, 0, { 0 },                          0 },
    { LC_ROLE_LAYER_OUTPUT_SCALE,     "blk.%u.layer_output_scale.weight",   L "layer_scalar",                     NULL, 0, { 0 },                          0 },
    /* the mixture of experts beside the dense FFN (enable_moe_block) */
    { LC_ROLE_FFN_GATE_INP,           "blk.%u.ffn_gate_inp.weight",         L "router.proj.weight",               NULL, 0, { 0 },                          LC_AT_KEEP_F32 },
    { LC_ROLE_FFN_GATE_INP_SCALE,     "blk.%u.ffn_gate_inp.scale",          L "router.scale",                     NULL, 0, { 0 },                          0 },
    { LC_ROLE_FFN_GATE_UP_EXPS,       "blk.%u.ffn_gate_up_exps.weight",     L "experts.gate_up_proj",             NULL, 0, { 0 },                          0 },
    { LC_ROLE_FFN_DOWN_EXPS,          "blk.%u.ffn_down_exps.weight",        L "experts.down_proj",                NULL, 0, { 0 },                          0 },
    { LC_ROLE_FFN_DOWN_EXPS_SCALE,    "blk.%u.ffn_down_exps.scale",         L "router.per_expert_scale",          NULL, 0, { 0 },                          0 },
    { LC_ROLE_FFN_POST_NORM_1,        "blk.%u.post_ffw_norm_1.weight",      L "post_feedforward_layernorm_1.weight", NULL, 0, { 0 },                       0 },
    { LC_ROLE_FFN_POST_NORM_2,        "blk.%u.post_ffw_norm_2.weight",      L "post_feedforward_layernorm_2.weight", NULL, 0, { 0 },                       0 },
    { LC_ROLE_FFN_PRE_NORM_2,         "blk.%u.pre_ffw_norm_2.weight",       L "pre_feedforward_layernorm_2.weight", NULL, 0, { 0 },                        0 },
};
#undef L

/* TextModel's keys (head_count_kv one per layer), Gemma3Model's, then Gemma4Model's in
 * its order: the shared-KV count and the per-layer input width (0 written when none),
 * the sliding layers' list, their head sizes, the experts' width and the RoPE widths of
 * both kinds. key_length and value_length are the full layers' (Gemma4Model rewrites
 * Gemma3Model's in place). */
static const lc_arch_key KEYS[] = {
    { "%s.block_count", LC_HP_BLOCK_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.context_length", LC_HP_CONTEXT_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.embedding_length", LC_HP_EMBEDDING_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.feed_forward_length", LC_HP_FEED_FORWARD_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.head_count", LC_HP_HEAD_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.head_count_kv", LC_HP_HEAD_COUNT_KV_LAYERS, LC_KEY_ARR, LC_KEY_ALWAYS },
    { "%s.rope.freq_base", LC_HP_ROPE_THETA, LC_KEY_F32, LC_KEY_ALWAYS },
    LC_ARCH_KEYS_SWA_BASE, LC_ARCH_KEYS_EPS, LC_ARCH_KEYS_EXPERTS,
    { "%s.attention.key_length", LC_HP_HEAD_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.value_length", LC_HP_VALUE_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
    { "general.file_type", LC_HP_FILE_TYPE, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.final_logit_softcapping", LC_HP_FINAL_SOFTCAP, LC_KEY_F32, LC_KEY_IF_SET },
    { "%s.attention.sliding_window", LC_HP_SLIDING_WINDOW, LC_KEY_U32, LC_KEY_IF_SET },
    { "%s.attention.shared_kv_layers", LC_HP_SHARED_KV_LAYERS, LC_KEY_U32, LC_KEY_ALWAYS_0_OK },
    { "%s.embedding_length_per_layer_input", LC_HP_EMBD_PER_LAYER_INPUT, LC_KEY_U32,
      LC_KEY_ALWAYS_0_OK },
    { "%s.attention.sliding_window_pattern", LC_HP_SWA_LAYERS, LC_KEY_ARR, LC_KEY_ALWAYS },
    { "%s.attention.key_length_swa", LC_HP_HEAD_DIM_SWA, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.value_length_swa", LC_HP_HEAD_DIM_SWA, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.expert_feed_forward_length", LC_HP_EXPERT_FF_LENGTH, LC_KEY_U32, LC_KEY_IF_SET },
    { "%s.rope.dimension_count", LC_HP_ROPE_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.rope.dimension_count_swa", LC_HP_ROPE_DIM_SWA, LC_KEY_U32, LC_KEY_ALWAYS },
};

static const lc_arch_cfg CFG[] = {
    { "sliding_window", LC_HP_SLIDING_WINDOW, LC_CFG_U32 },
    { "final_logit_softcapping", LC_HP_FINAL_SOFTCAP, LC_CFG_NUMBER },
};

const lc_arch lc_arch_gemma4 = {
    .name = "gemma4",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NEOX,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .cfg = lc_arch_cfg_transformer, .n_cfg = LC_ARCH_CFG_TRANSFORMER_COUNT,
    .cfg_extra = CFG, .n_cfg_extra = sizeof CFG / sizeof *CFG,
    .per_layer_attention = true,
    .hf_vocab_model = "gemma4",
    .default_rms_eps = 1e-6, .default_rope_theta = 1000000.0,
    .recipe = { .act = LC_ACT_GELU_TANH, .embd_scale = true },
};
