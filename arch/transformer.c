/* arch/transformer.c: what transformer-style family tables share (families.h). */
#include "arch/families.h"

#include <math.h>

const lc_arch_cfg lc_arch_cfg_transformer[LC_ARCH_CFG_TRANSFORMER_COUNT] = {
    { "hidden_size", LC_HP_EMBEDDING_LENGTH, LC_CFG_U32_REQUIRED },
    { "num_hidden_layers", LC_HP_BLOCK_COUNT, LC_CFG_U32_REQUIRED },
    { "num_attention_heads", LC_HP_HEAD_COUNT, LC_CFG_U32_REQUIRED },
    { "intermediate_size", LC_HP_FEED_FORWARD_LENGTH, LC_CFG_U32_REQUIRED },
    { "vocab_size", LC_HP_VOCAB_SIZE, LC_CFG_U32_REQUIRED },
    { "max_position_embeddings", LC_HP_CONTEXT_LENGTH, LC_CFG_U32_REQUIRED },
    { "num_key_value_heads", LC_HP_HEAD_COUNT_KV, LC_CFG_U32 },
    { "head_dim", LC_HP_HEAD_DIM, LC_CFG_U32 },
    { "rms_norm_eps", LC_HP_RMS_EPS, LC_CFG_POSITIVE },
    { "rope_theta", LC_HP_ROPE_THETA, LC_CFG_POSITIVE },
    { "tie_word_embeddings", LC_HP_TIE_WORD_EMBEDDINGS, LC_CFG_BOOL },
    /* TextModel's expert spellings, the one it prefers last (a later entry wins) */
    { "n_routed_experts", LC_HP_EXPERT_COUNT, LC_CFG_NUMBER },
    { "num_experts", LC_HP_EXPERT_COUNT, LC_CFG_NUMBER },
    { "num_local_experts", LC_HP_EXPERT_COUNT, LC_CFG_NUMBER },
    { "top_k_experts", LC_HP_EXPERT_USED_COUNT, LC_CFG_NUMBER },
    { "num_experts_per_token", LC_HP_EXPERT_USED_COUNT, LC_CFG_NUMBER },
    { "num_experts_per_tok", LC_HP_EXPERT_USED_COUNT, LC_CFG_NUMBER },
};

/* As convert_hf_to_gguf.py computes them: the wavelength limits are Python floats;
 * everything after freq is a float32 torch op with the Python scalars rounded to
 * float32 first. glibc's powf and torch's float32 pow can differ by an ulp for a few
 * exponents (8 of 1248 in a sweep of common bases and head sizes); identical on the
 * configurations tried. */
void lc_arch_llama3_rope_freqs(const lc_hparams *hp, float *out, uint64_t n) {
    const double factor = hp->rope_scaling_factor, lo_f = hp->rope_low_freq_factor,
                 hi_f = hp->rope_high_freq_factor, old_ctx = hp->rope_scaling_orig_ctx;
    const double lo_wl = old_ctx / lo_f, hi_wl = old_ctx / hi_f;
    const float base = (float)hp->rope_theta;
    for (uint64_t i = 0; i < n; i++) {
        /* torch: base ** (arange(0, dim, 2, float32) / dim), all in float32 */
        const float e = (float)(2 * i) / (float)hp->head_dim;
        const float freq = 1.0f / powf(base, e);
        const float wl = (float)(2 * 3.141592653589793) / freq;   /* 2 * math.pi / freq */
        float r;
        if (wl < (float)hi_wl)
            r = 1;
        else if (wl > (float)lo_wl)
            r = (float)factor;
        else {
            const float smooth = ((float)old_ctx / wl - (float)lo_f) / (float)(hi_f - lo_f);
            r = 1.0f / ((1.0f - smooth) / (float)factor + smooth);
        }
        out[i] = r;
    }
}
