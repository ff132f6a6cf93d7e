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

/* llama3 rope scaling's per-pair factors (LlamaModel.generate_extra_tensors). */
void lc_arch_llama3_rope_freqs(const lc_hparams *hp, float *out, uint64_t n);

#endif
