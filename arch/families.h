/* arch/families.h: private to arch/: what the family tables share. Transformer-style
 * families spell their config.json the same way and write the same leading keys;
 * llama.cpp's converter adds family-specific keys after them. */
#ifndef LC_ARCH_FAMILIES_H
#define LC_ARCH_FAMILIES_H

#include "arch/arch.h"

/* config.json spellings of transformers' LlamaConfig-like configs. */
enum { LC_ARCH_CFG_TRANSFORMER_COUNT = 17 };
extern const lc_arch_cfg lc_arch_cfg_transformer[LC_ARCH_CFG_TRANSFORMER_COUNT];

/* The keys TextModel.set_gguf_parameters writes, in its order, general.file_type last
 * (as llama-cpp-python 0.3.36's convert_hf_to_gguf.py does): the head, then the base
 * of the sliding layers' RoPE when the config names one, the epsilon, the expert counts
 * when the config has them, key and value lengths when it names head_dim. */
#define LC_ARCH_KEYS_HEAD                                                                     \
    { "%s.block_count", LC_HP_BLOCK_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },                       \
    { "%s.context_length", LC_HP_CONTEXT_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },                 \
    { "%s.embedding_length", LC_HP_EMBEDDING_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },             \
    { "%s.feed_forward_length", LC_HP_FEED_FORWARD_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },       \
    { "%s.attention.head_count", LC_HP_HEAD_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },               \
    { "%s.attention.head_count_kv", LC_HP_HEAD_COUNT_KV, LC_KEY_U32, LC_KEY_ALWAYS },         \
    { "%s.rope.scaling.type", LC_HP_ROPE_SCALING_TYPE, LC_KEY_STR, LC_KEY_IF_SCALED },        \
    { "%s.rope.scaling.factor", LC_HP_ROPE_SCALING_FACTOR, LC_KEY_F32, LC_KEY_IF_SCALED },    \
    { "%s.rope.scaling.original_context_length", LC_HP_ROPE_SCALING_ORIG_CTX, LC_KEY_U32,     \
      LC_KEY_IF_ORIG_CTX },                                                                   \
    { "%s.rope.freq_base", LC_HP_ROPE_THETA, LC_KEY_F32, LC_KEY_ALWAYS }
#define LC_ARCH_KEYS_SWA_BASE                                                                 \
    { "%s.rope.freq_base_swa", LC_HP_ROPE_THETA_SWA, LC_KEY_F32, LC_KEY_IF_SET }
#define LC_ARCH_KEYS_EPS                                                                      \
    { "%s.attention.layer_norm_rms_epsilon", LC_HP_RMS_EPS, LC_KEY_F32, LC_KEY_ALWAYS }
#define LC_ARCH_KEYS_EXPERTS                                                                  \
    { "%s.expert_count", LC_HP_EXPERT_COUNT, LC_KEY_U32, LC_KEY_IF_SET },                     \
    { "%s.expert_used_count", LC_HP_EXPERT_USED_COUNT, LC_KEY_U32, LC_KEY_IF_SET }
#define LC_ARCH_KEYS_TAIL                                                                     \
    { "%s.attention.key_length", LC_HP_HEAD_DIM, LC_KEY_U32, LC_KEY_IF_HEAD_DIM },            \
    { "%s.attention.value_length", LC_HP_VALUE_DIM, LC_KEY_U32, LC_KEY_IF_HEAD_DIM },          \
    { "general.file_type", LC_HP_FILE_TYPE, LC_KEY_U32, LC_KEY_ALWAYS }
#define LC_ARCH_KEYS_TRANSFORMER LC_ARCH_KEYS_HEAD, LC_ARCH_KEYS_EPS, LC_ARCH_KEYS_TAIL

/* ---- Qwen3.5 (arch/qwen35.c, arch/qwen35moe.c) ----
 * Every row but the FFN's: the embedding, the gated full attention, the Gated-DeltaNet
 * recurrent layer, the FFN's norm and the prediction layers' own (see arch/qwen35.c). */
#define LC_ARCH_QWEN35_ROWS                                                                   \
    { LC_ROLE_TOKEN_EMBD, "token_embd.weight", "model.embed_tokens.weight", NULL, 2,         \
      { LC_DIM_VOCAB, LC_DIM_EMBD }, LC_AT_REQUIRED },                                        \
    { LC_ROLE_OUTPUT_NORM, "output_norm.weight", "model.norm.weight", NULL, 1,               \
      { LC_DIM_EMBD }, LC_AT_REQUIRED | LC_AT_NORM_SHIFT },                                   \
    { LC_ROLE_OUTPUT, "output.weight", "lm_head.weight", NULL, 2,                            \
      { LC_DIM_VOCAB, LC_DIM_EMBD }, 0 },                                                     \
    { LC_ROLE_ATTN_NORM, "blk.%u.attn_norm.weight", L "input_layernorm.weight", NULL, 1,     \
      { LC_DIM_EMBD }, LC_AT_REQUIRED | LC_AT_NORM_SHIFT },                                   \
    /* full attention: each head's query and output gate side by side */                     \
    { LC_ROLE_ATTN_Q, "blk.%u.attn_q.weight", L "self_attn.q_proj.weight", NULL, 2,          \
      { LC_DIM_Q2, LC_DIM_EMBD }, LC_AT_ATTENTION },                                          \
    { LC_ROLE_ATTN_Q_NORM, "blk.%u.attn_q_norm.weight", L "self_attn.q_norm.weight", NULL, 1, \
      { LC_DIM_HEAD }, LC_AT_ATTENTION | LC_AT_NORM_SHIFT },                                  \
    { LC_ROLE_ATTN_K, "blk.%u.attn_k.weight", L "self_attn.k_proj.weight", NULL, 2,          \
      { LC_DIM_KV, LC_DIM_EMBD }, LC_AT_ATTENTION },                                          \
    { LC_ROLE_ATTN_K_NORM, "blk.%u.attn_k_norm.weight", L "self_attn.k_norm.weight", NULL, 1, \
      { LC_DIM_HEAD }, LC_AT_ATTENTION | LC_AT_NORM_SHIFT },                                  \
    { LC_ROLE_ATTN_V, "blk.%u.attn_v.weight", L "self_attn.v_proj.weight", NULL, 2,          \
      { LC_DIM_KV, LC_DIM_EMBD }, LC_AT_ATTENTION },                                          \
    { LC_ROLE_ATTN_OUT, "blk.%u.attn_output.weight", L "self_attn.o_proj.weight", NULL, 2,   \
      { LC_DIM_EMBD, LC_DIM_Q }, LC_AT_ATTENTION },                                           \
    /* the recurrent layer */                                                                 \
    { LC_ROLE_SSM_QKV, "blk.%u.attn_qkv.weight", L "linear_attn.in_proj_qkv.weight", NULL, 2, \
      { LC_DIM_SSM_CONV, LC_DIM_EMBD }, LC_AT_RECURRENT, .vreorder = LC_VR_ROWS_AFTER_QK },   \
    { LC_ROLE_SSM_Z, "blk.%u.attn_gate.weight", L "linear_attn.in_proj_z.weight", NULL, 2,   \
      { LC_DIM_SSM_INNER, LC_DIM_EMBD }, LC_AT_RECURRENT, .vreorder = LC_VR_ROWS },           \
    { LC_ROLE_SSM_BETA, "blk.%u.ssm_beta.weight", L "linear_attn.in_proj_b.weight", NULL, 2, \
      { LC_DIM_SSM_VHEADS, LC_DIM_EMBD }, LC_AT_RECURRENT, .vreorder = LC_VR_HEAD_ROWS },     \
    { LC_ROLE_SSM_ALPHA, "blk.%u.ssm_alpha.weight", L "linear_attn.in_proj_a.weight", NULL, \
      2, { LC_DIM_SSM_VHEADS, LC_DIM_EMBD }, LC_AT_RECURRENT, .vreorder = LC_VR_HEAD_ROWS },  \
    { LC_ROLE_SSM_A, "blk.%u.ssm_a", L "linear_attn.A_log", NULL, 1, { LC_DIM_SSM_VHEADS },  \
      LC_AT_RECURRENT | LC_AT_NEG_EXP, .vreorder = LC_VR_HEAD_ROWS },                         \
    { LC_ROLE_SSM_DT, "blk.%u.ssm_dt.bias", L "linear_attn.dt_bias", NULL, 1,                \
      { LC_DIM_SSM_VHEADS }, LC_AT_RECURRENT, .vreorder = LC_VR_HEAD_ROWS },                  \
    { LC_ROLE_SSM_CONV1D, "blk.%u.ssm_conv1d.weight", L "linear_attn.conv1d.weight", NULL, 2, \
      { LC_DIM_SSM_CONV, LC_DIM_SSM_KERNEL },                                                 \
      LC_AT_RECURRENT | LC_AT_SQUEEZE | LC_AT_KEEP_F32, .vreorder = LC_VR_ROWS_AFTER_QK },    \
    { LC_ROLE_SSM_NORM, "blk.%u.ssm_norm.weight", L "linear_attn.norm.weight", NULL, 1,      \
      { LC_DIM_SSM_HEAD_V }, LC_AT_RECURRENT },                                               \
    { LC_ROLE_SSM_OUT, "blk.%u.ssm_out.weight", L "linear_attn.out_proj.weight", NULL, 2,    \
      { LC_DIM_EMBD, LC_DIM_SSM_INNER }, LC_AT_RECURRENT, .vreorder = LC_VR_COLS },           \
    /* every layer: the FFN's norm */                                                         \
    { LC_ROLE_FFN_NORM, "blk.%u.post_attention_norm.weight",                                  \
      L "post_attention_layernorm.weight", NULL, 1, { LC_DIM_EMBD },                          \
      LC_AT_REQUIRED | LC_AT_NORM_SHIFT },                                                    \
    /* the prediction layers' own (spelled through the aliases) */                           \
    { LC_ROLE_NEXTN_EH_PROJ, "blk.%u.nextn.eh_proj.weight", L "eh_proj.weight", NULL, 2,     \
      { LC_DIM_EMBD, LC_DIM_EMBD2 }, 0 },                                                     \
    { LC_ROLE_NEXTN_ENORM, "blk.%u.nextn.enorm.weight", L "enorm.weight", NULL, 1,           \
      { LC_DIM_EMBD }, LC_AT_NORM_SHIFT },                                                    \
    { LC_ROLE_NEXTN_HNORM, "blk.%u.nextn.hnorm.weight", L "hnorm.weight", NULL, 1,           \
      { LC_DIM_EMBD }, LC_AT_NORM_SHIFT },                                                    \
    { LC_ROLE_NEXTN_HEAD_NORM, "blk.%u.nextn.shared_head_norm.weight",                        \
      L "shared_head.norm.weight", NULL, 1, { LC_DIM_EMBD }, LC_AT_NORM_SHIFT },              \
    { LC_ROLE_ROPE_INV_FREQ, NULL, L "self_attn.rotary_emb.inv_freq", NULL, 0, { 0 }, 0 }

/* _QwenMtpMixin.filter_tensors' renames of the Hub's mtp.* tensors. */
#define LC_ARCH_QWEN35_ALIASES                                                                \
    { "mtp.fc.", "eh_proj." }, { "mtp.pre_fc_norm_embedding.", "enorm." },                   \
    { "mtp.pre_fc_norm_hidden.", "hnorm." }, { "mtp.norm.", "shared_head.norm." },           \
    { "mtp.layers.%u.", "" }

/* TextModel's keys (feed_forward_length under FF: qwen35moe's config has no
 * intermediate_size), the rope sections where the config names them, then
 * Qwen2MoeModel's expert widths, the MTP count and Qwen3NextModel's. */
#define LC_ARCH_QWEN35_KEYS_HEAD(FF)                                                          \
    { "%s.block_count", LC_HP_BLOCK_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },                       \
    { "%s.context_length", LC_HP_CONTEXT_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },                 \
    { "%s.embedding_length", LC_HP_EMBEDDING_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },             \
    { "%s.feed_forward_length", LC_HP_FEED_FORWARD_LENGTH, LC_KEY_U32, FF },                  \
    { "%s.attention.head_count", LC_HP_HEAD_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },               \
    { "%s.attention.head_count_kv", LC_HP_HEAD_COUNT_KV, LC_KEY_U32, LC_KEY_ALWAYS },         \
    { "%s.rope.scaling.type", LC_HP_ROPE_SCALING_TYPE, LC_KEY_STR, LC_KEY_IF_SCALED },        \
    { "%s.rope.scaling.factor", LC_HP_ROPE_SCALING_FACTOR, LC_KEY_F32, LC_KEY_IF_SCALED },    \
    { "%s.rope.scaling.original_context_length", LC_HP_ROPE_SCALING_ORIG_CTX, LC_KEY_U32,     \
      LC_KEY_IF_ORIG_CTX },                                                                   \
    { "%s.rope.dimension_sections", LC_HP_ROPE_SECTIONS, LC_KEY_ARR, LC_KEY_IF_GIVEN },       \
    { "%s.rope.freq_base", LC_HP_ROPE_THETA, LC_KEY_F32, LC_KEY_ALWAYS },                     \
    LC_ARCH_KEYS_EPS, LC_ARCH_KEYS_EXPERTS, LC_ARCH_KEYS_TAIL,                                \
    { "%s.expert_feed_forward_length", LC_HP_EXPERT_FF_LENGTH, LC_KEY_U32, LC_KEY_IF_SET },   \
    { "%s.expert_shared_feed_forward_length", LC_HP_EXPERT_SHARED_FF_LENGTH, LC_KEY_U32,      \
      LC_KEY_IF_SET }
#define LC_ARCH_QWEN35_KEYS_TAIL                                                              \
    { "%s.nextn_predict_layers", LC_HP_NEXTN_LAYERS, LC_KEY_U32, LC_KEY_IF_SET },             \
    { "%s.ssm.conv_kernel", LC_HP_SSM_CONV_KERNEL, LC_KEY_U32, LC_KEY_ALWAYS },               \
    { "%s.ssm.state_size", LC_HP_SSM_STATE_SIZE, LC_KEY_U32, LC_KEY_ALWAYS },                 \
    { "%s.ssm.group_count", LC_HP_SSM_GROUP_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },               \
    { "%s.ssm.time_step_rank", LC_HP_SSM_TIME_STEP_RANK, LC_KEY_U32, LC_KEY_ALWAYS },         \
    { "%s.ssm.inner_size", LC_HP_SSM_INNER_SIZE, LC_KEY_U32, LC_KEY_ALWAYS },                 \
    { "%s.attention.recurrent_layers", LC_HP_RECURRENT_LAYERS, LC_KEY_ARR, LC_KEY_IF_GIVEN }, \
    { "%s.full_attention_interval", LC_HP_FULL_ATTN_INTERVAL, LC_KEY_U32, LC_KEY_ALWAYS },    \
    { "%s.rope.dimension_count", LC_HP_ROPE_DIM, LC_KEY_U32, LC_KEY_ALWAYS },                 \
    { "%s.rope.dimension_sections", LC_HP_ROPE_SECTIONS, LC_KEY_ARR, LC_KEY_IF_NOT_GIVEN }

/* The recurrent layers' config spellings. */
#define LC_ARCH_QWEN35_CFG                                                                    \
    { "linear_conv_kernel_dim", LC_HP_SSM_CONV_KERNEL, LC_CFG_U32_REQUIRED },                 \
    { "linear_key_head_dim", LC_HP_SSM_STATE_SIZE, LC_CFG_U32_REQUIRED },                     \
    { "linear_num_key_heads", LC_HP_SSM_GROUP_COUNT, LC_CFG_U32_REQUIRED },                   \
    { "linear_num_value_heads", LC_HP_SSM_TIME_STEP_RANK, LC_CFG_U32_REQUIRED },              \
    { "linear_value_head_dim", LC_HP_SSM_HEAD_V, LC_CFG_U32_REQUIRED },                       \
    { "mtp_num_hidden_layers", LC_HP_NEXTN_LAYERS, LC_CFG_NUMBER },                           \
    { "full_attention_interval", LC_HP_FULL_ATTN_INTERVAL, LC_CFG_U32 },                      \
    { "layer_types", LC_HP_LAYER_TYPES, LC_CFG_LIST }

/* llama3 rope scaling's per-pair factors (LlamaModel.generate_extra_tensors). */
void lc_arch_llama3_rope_freqs(const lc_hparams *hp, float *out, uint64_t n);

#endif
