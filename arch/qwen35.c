/* arch/qwen35.c: the qwen35 family (Qwen3_5ForCausalLM, Qwen3.5/3.6 dense) as data.
 *
 * A hybrid: most layers are Gated-DeltaNet linear attention (a recurrent state per value
 * head, a short causal convolution over q, k and v, L2-normalised q and k, the gated
 * delta rule, a gated RMSNorm), the others full attention whose query rows carry an
 * output gate beside each head (sigmoid(gate) * attention) with q/k norms and partial
 * NEOX RoPE (llama.cpp's interleaved multi-section RoPE, the same for text). Which layer
 * is which: config.json's layer_types, written as attention.recurrent_layers. Every
 * RMSNorm but the recurrent layer's gated one scales by 1 + w: GGUF stores w + 1. A_log
 * is stored as -exp(A_log), the conv1d weight squeezed, and the value heads reordered
 * from grouped to tiled (LC_VR_*) when there are more value than key heads. The Hub's
 * checkpoints carry a multi-token prediction block (mtp.*), written as layers past
 * num_hidden_layers with their nextn tensors and nextn_predict_layers; the forward pass
 * runs the model's own layers only. Keys: TextModel's, Qwen2MoeModel's, the MTP count,
 * Qwen3NextModel's recurrent sizes, then the default rope sections
 * (Qwen3_5TextModel's classes in conversion/qwen.py). */
#include "arch/families.h"

static const char *const CLASSES[] = { "Qwen3_5ForCausalLM", NULL };

#define L "model.layers.%u."
#define REC LC_AT_RECURRENT
#define ATT LC_AT_ATTENTION
#define SHIFT LC_AT_NORM_SHIFT
static const lc_arch_tensor TENSORS[] = {
    /* role                   GGUF                                  transformers                     Meta  shape                                     flags */
    { LC_ROLE_TOKEN_EMBD,      "token_embd.weight",                  "model.embed_tokens.weight",       NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },            LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT_NORM,     "output_norm.weight",                 "model.norm.weight",               NULL, 1, { LC_DIM_EMBD },                          LC_AT_REQUIRED | SHIFT },
    { LC_ROLE_OUTPUT,          "output.weight",                      "lm_head.weight",                  NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },            0 },
    { LC_ROLE_ATTN_NORM,       "blk.%u.attn_norm.weight",            L "input_layernorm.weight",        NULL, 1, { LC_DIM_EMBD },                          LC_AT_REQUIRED | SHIFT },
    /* full attention */
    { LC_ROLE_ATTN_Q,          "blk.%u.attn_q.weight",               L "self_attn.q_proj.weight",       NULL, 2, { LC_DIM_Q2, LC_DIM_EMBD },               ATT },
    { LC_ROLE_ATTN_Q_NORM,     "blk.%u.attn_q_norm.weight",          L "self_attn.q_norm.weight",       NULL, 1, { LC_DIM_HEAD },                          ATT | SHIFT },
    { LC_ROLE_ATTN_K,          "blk.%u.attn_k.weight",               L "self_attn.k_proj.weight",       NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },               ATT },
    { LC_ROLE_ATTN_K_NORM,     "blk.%u.attn_k_norm.weight",          L "self_attn.k_norm.weight",       NULL, 1, { LC_DIM_HEAD },                          ATT | SHIFT },
    { LC_ROLE_ATTN_V,          "blk.%u.attn_v.weight",               L "self_attn.v_proj.weight",       NULL, 2, { LC_DIM_KV, LC_DIM_EMBD },               ATT },
    { LC_ROLE_ATTN_OUT,        "blk.%u.attn_output.weight",          L "self_attn.o_proj.weight",       NULL, 2, { LC_DIM_EMBD, LC_DIM_Q },                ATT },
    /* the recurrent layer */
    { LC_ROLE_SSM_QKV,         "blk.%u.attn_qkv.weight",             L "linear_attn.in_proj_qkv.weight", NULL, 2, { LC_DIM_SSM_CONV, LC_DIM_EMBD },        REC, .vreorder = LC_VR_ROWS_AFTER_QK },
    { LC_ROLE_SSM_Z,           "blk.%u.attn_gate.weight",            L "linear_attn.in_proj_z.weight",  NULL, 2, { LC_DIM_SSM_INNER, LC_DIM_EMBD },        REC, .vreorder = LC_VR_ROWS },
    { LC_ROLE_SSM_BETA,        "blk.%u.ssm_beta.weight",             L "linear_attn.in_proj_b.weight",  NULL, 2, { LC_DIM_SSM_VHEADS, LC_DIM_EMBD },       REC, .vreorder = LC_VR_HEAD_ROWS },
    { LC_ROLE_SSM_ALPHA,       "blk.%u.ssm_alpha.weight",            L "linear_attn.in_proj_a.weight",  NULL, 2, { LC_DIM_SSM_VHEADS, LC_DIM_EMBD },       REC, .vreorder = LC_VR_HEAD_ROWS },
    { LC_ROLE_SSM_A,           "blk.%u.ssm_a",                       L "linear_attn.A_log",             NULL, 1, { LC_DIM_SSM_VHEADS },                    REC | LC_AT_NEG_EXP, .vreorder = LC_VR_HEAD_ROWS },
    { LC_ROLE_SSM_DT,          "blk.%u.ssm_dt.bias",                 L "linear_attn.dt_bias",           NULL, 1, { LC_DIM_SSM_VHEADS },                    REC, .vreorder = LC_VR_HEAD_ROWS },
    { LC_ROLE_SSM_CONV1D,      "blk.%u.ssm_conv1d.weight",           L "linear_attn.conv1d.weight",     NULL, 2, { LC_DIM_SSM_CONV, LC_DIM_SSM_KERNEL },   REC | LC_AT_SQUEEZE | LC_AT_KEEP_F32, .vreorder = LC_VR_ROWS_AFTER_QK },
    { LC_ROLE_SSM_NORM,        "blk.%u.ssm_norm.weight",             L "linear_attn.norm.weight",       NULL, 1, { LC_DIM_SSM_HEAD_V },                    REC },
    { LC_ROLE_SSM_OUT,         "blk.%u.ssm_out.weight",              L "linear_attn.out_proj.weight",   NULL, 2, { LC_DIM_EMBD, LC_DIM_SSM_INNER },        REC, .vreorder = LC_VR_COLS },
    /* every layer: the FFN */
    { LC_ROLE_FFN_NORM,        "blk.%u.post_attention_norm.weight",  L "post_attention_layernorm.weight", NULL, 1, { LC_DIM_EMBD },                        LC_AT_REQUIRED | SHIFT },
    { LC_ROLE_FFN_GATE,        "blk.%u.ffn_gate.weight",             L "mlp.gate_proj.weight",          NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },               LC_AT_REQUIRED },
    { LC_ROLE_FFN_UP,          "blk.%u.ffn_up.weight",               L "mlp.up_proj.weight",            NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },               LC_AT_REQUIRED },
    { LC_ROLE_FFN_DOWN,        "blk.%u.ffn_down.weight",             L "mlp.down_proj.weight",          NULL, 2, { LC_DIM_EMBD, LC_DIM_FF },               LC_AT_REQUIRED },
    /* the prediction layers' own (spelled through ALIASES) */
    { LC_ROLE_NEXTN_EH_PROJ,   "blk.%u.nextn.eh_proj.weight",        L "eh_proj.weight",                NULL, 2, { LC_DIM_EMBD, LC_DIM_EMBD2 },            0 },
    { LC_ROLE_NEXTN_ENORM,     "blk.%u.nextn.enorm.weight",          L "enorm.weight",                  NULL, 1, { LC_DIM_EMBD },                          SHIFT },
    { LC_ROLE_NEXTN_HNORM,     "blk.%u.nextn.hnorm.weight",          L "hnorm.weight",                  NULL, 1, { LC_DIM_EMBD },                          SHIFT },
    { LC_ROLE_NEXTN_HEAD_NORM, "blk.%u.nextn.shared_head_norm.weight", L "shared_head.norm.weight",     NULL, 1, { LC_DIM_EMBD },                          SHIFT },
    { LC_ROLE_ROPE_INV_FREQ,   NULL,                                 L "self_attn.rotary_emb.inv_freq", NULL, 0, { 0 },                                    0 },
};
#undef L
#undef REC
#undef ATT
#undef SHIFT

/* _QwenMtpMixin.filter_tensors' renames of the Hub's mtp.* tensors. */
static const lc_arch_alias ALIASES[] = {
    { "mtp.fc.", "eh_proj." },
    { "mtp.pre_fc_norm_embedding.", "enorm." },
    { "mtp.pre_fc_norm_hidden.", "hnorm." },
    { "mtp.norm.", "shared_head.norm." },
    { "mtp.layers.%u.", "" },
};

static const lc_arch_key KEYS[] = {
    { "%s.block_count", LC_HP_BLOCK_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.context_length", LC_HP_CONTEXT_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.embedding_length", LC_HP_EMBEDDING_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.feed_forward_length", LC_HP_FEED_FORWARD_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.head_count", LC_HP_HEAD_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.head_count_kv", LC_HP_HEAD_COUNT_KV, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.rope.scaling.type", LC_HP_ROPE_SCALING_TYPE, LC_KEY_STR, LC_KEY_IF_SCALED },
    { "%s.rope.scaling.factor", LC_HP_ROPE_SCALING_FACTOR, LC_KEY_F32, LC_KEY_IF_SCALED },
    { "%s.rope.scaling.original_context_length", LC_HP_ROPE_SCALING_ORIG_CTX, LC_KEY_U32,
      LC_KEY_IF_ORIG_CTX },
    { "%s.rope.dimension_sections", LC_HP_ROPE_SECTIONS, LC_KEY_ARR, LC_KEY_IF_GIVEN },
    { "%s.rope.freq_base", LC_HP_ROPE_THETA, LC_KEY_F32, LC_KEY_ALWAYS },
    LC_ARCH_KEYS_EPS, LC_ARCH_KEYS_EXPERTS, LC_ARCH_KEYS_TAIL,
    { "%s.expert_feed_forward_length", LC_HP_EXPERT_FF_LENGTH, LC_KEY_U32, LC_KEY_IF_SET },
    { "%s.nextn_predict_layers", LC_HP_NEXTN_LAYERS, LC_KEY_U32, LC_KEY_IF_SET },
    { "%s.ssm.conv_kernel", LC_HP_SSM_CONV_KERNEL, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.ssm.state_size", LC_HP_SSM_STATE_SIZE, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.ssm.group_count", LC_HP_SSM_GROUP_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.ssm.time_step_rank", LC_HP_SSM_TIME_STEP_RANK, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.ssm.inner_size", LC_HP_SSM_INNER_SIZE, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.recurrent_layers", LC_HP_RECURRENT_LAYERS, LC_KEY_ARR, LC_KEY_IF_GIVEN },
    { "%s.full_attention_interval", LC_HP_FULL_ATTN_INTERVAL, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.rope.dimension_count", LC_HP_ROPE_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.rope.dimension_sections", LC_HP_ROPE_SECTIONS, LC_KEY_ARR, LC_KEY_IF_NOT_GIVEN },
};

static const lc_arch_cfg CFG[] = {
    { "linear_conv_kernel_dim", LC_HP_SSM_CONV_KERNEL, LC_CFG_U32_REQUIRED },
    { "linear_key_head_dim", LC_HP_SSM_STATE_SIZE, LC_CFG_U32_REQUIRED },
    { "linear_num_key_heads", LC_HP_SSM_GROUP_COUNT, LC_CFG_U32_REQUIRED },
    { "linear_num_value_heads", LC_HP_SSM_TIME_STEP_RANK, LC_CFG_U32_REQUIRED },
    { "linear_value_head_dim", LC_HP_SSM_HEAD_V, LC_CFG_U32_REQUIRED },
    { "mtp_num_hidden_layers", LC_HP_NEXTN_LAYERS, LC_CFG_NUMBER },
    { "full_attention_interval", LC_HP_FULL_ATTN_INTERVAL, LC_CFG_U32 },
    { "layer_types", LC_HP_LAYER_TYPES, LC_CFG_LIST },
};

const lc_arch lc_arch_qwen35 = {
    .name = "qwen35",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NEOX,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .cfg = lc_arch_cfg_transformer, .n_cfg = LC_ARCH_CFG_TRANSFORMER_COUNT,
    .cfg_extra = CFG, .n_cfg_extra = sizeof CFG / sizeof *CFG,
    .default_rms_eps = 1e-6, .default_rope_theta = 10000.0,   /* Qwen3_5TextConfig's */
    .recipe = { .attn_gate = true },
    .default_full_attn_interval = 4,
    .aliases = ALIASES, .n_aliases = sizeof ALIASES / sizeof *ALIASES,
    .partial_rotary_of_head = true,
    .default_rope_sections = { 11, 11, 10, 0 },
};
