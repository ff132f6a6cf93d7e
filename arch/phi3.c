/* arch/phi3.c: the phi3 family (Phi3ForCausalLM) as data.
 *
 * llama's block with Q, K and V in one matrix (attn_qkv: Q rows, then K, then V) and gate
 * and up in one (ffn_up: 2 ff rows, gate first), both kept fused as the converter keeps
 * them; NEOX RoPE over rope.dimension_count = int(partial_rotary_factor * hidden) / heads
 * dimensions, nothing permuted. Long-context models (rope type longrope) get their
 * per-pair factors as rope_factors_long / rope_factors_short, written first, and the
 * attention factor as a key written before general.type (Phi3MiniModel adds it while
 * its tensors are made). Phi3MiniModel writes its own keys, in its own order. */
#include "arch/families.h"

static const char *const CLASSES[] = { "Phi3ForCausalLM", NULL };

#define L "model.layers.%u."
static const lc_arch_tensor TENSORS[] = {
    /* role                      GGUF                         transformers                       Meta  shape                          flags */
    { LC_ROLE_ROPE_FACTORS_LONG,  "rope_factors_long.weight",   NULL,                                NULL, 1, { LC_DIM_HALF_ROPE },           LC_AT_COMPUTED },
    { LC_ROLE_ROPE_FACTORS_SHORT, "rope_factors_short.weight",  NULL,                                NULL, 1, { LC_DIM_HALF_ROPE },           LC_AT_COMPUTED },
    { LC_ROLE_TOKEN_EMBD,         "token_embd.weight",          "model.embed_tokens.weight",         NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },  LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT_NORM,        "output_norm.weight",         "model.norm.weight",                 NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT,             "output.weight",              "lm_head.weight",                    NULL, 2, { LC_DIM_VOCAB, LC_DIM_EMBD },  0 },
    { LC_ROLE_ATTN_NORM,          "blk.%u.attn_norm.weight",    L "input_layernorm.weight",          NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_ATTN_QKV,           "blk.%u.attn_qkv.weight",     L "self_attn.qkv_proj.weight",       NULL, 2, { LC_DIM_QKV, LC_DIM_EMBD },    LC_AT_REQUIRED },
    { LC_ROLE_ATTN_OUT,           "blk.%u.attn_output.weight",  L "self_attn.o_proj.weight",         NULL, 2, { LC_DIM_EMBD, LC_DIM_Q },      LC_AT_REQUIRED },
    { LC_ROLE_FFN_NORM,           "blk.%u.ffn_norm.weight",     L "post_attention_layernorm.weight", NULL, 1, { LC_DIM_EMBD },                LC_AT_REQUIRED },
    { LC_ROLE_FFN_UP,             "blk.%u.ffn_up.weight",       L "mlp.gate_up_proj.weight",         NULL, 2, { LC_DIM_FF2, LC_DIM_EMBD },    LC_AT_REQUIRED },
    { LC_ROLE_FFN_DOWN,           "blk.%u.ffn_down.weight",     L "mlp.down_proj.weight",            NULL, 2, { LC_DIM_EMBD, LC_DIM_FF },     LC_AT_REQUIRED },
    { LC_ROLE_ROPE_INV_FREQ,      NULL,                         L "self_attn.rotary_emb.inv_freq",   NULL, 0, { 0 },                          0 },
};
#undef L

static const lc_arch_key KEYS[] = {
    { "%s.context_length", LC_HP_CONTEXT_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.rope.scaling.original_context_length", LC_HP_ROPE_SCALING_ORIG_CTX, LC_KEY_U32,
      LC_KEY_ALWAYS },
    { "%s.embedding_length", LC_HP_EMBEDDING_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.feed_forward_length", LC_HP_FEED_FORWARD_LENGTH, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.block_count", LC_HP_BLOCK_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.head_count", LC_HP_HEAD_COUNT, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.head_count_kv", LC_HP_HEAD_COUNT_KV, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.layer_norm_rms_epsilon", LC_HP_RMS_EPS, LC_KEY_F32, LC_KEY_ALWAYS },
    { "%s.rope.dimension_count", LC_HP_ROPE_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.rope.freq_base", LC_HP_ROPE_THETA, LC_KEY_F32, LC_KEY_ALWAYS },
    { "general.file_type", LC_HP_FILE_TYPE, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.attention.sliding_window", LC_HP_SLIDING_WINDOW, LC_KEY_U32, LC_KEY_ALWAYS },
};

static const lc_arch_key EARLY[] = {
    { "%s.rope.scaling.attn_factor", LC_HP_ROPE_ATTN_FACTOR, LC_KEY_F32, LC_KEY_IF_LONGROPE },
};

static const lc_arch_cfg CFG[] = {
    { "sliding_window", LC_HP_SLIDING_WINDOW, LC_CFG_U32 },
};

const lc_arch lc_arch_phi3 = {
    .name = "phi3",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NEOX,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .early_keys = EARLY, .n_early_keys = sizeof EARLY / sizeof *EARLY,
    .cfg = lc_arch_cfg_transformer, .n_cfg = LC_ARCH_CFG_TRANSFORMER_COUNT,
    .cfg_extra = CFG, .n_cfg_extra = sizeof CFG / sizeof *CFG,
    .default_rms_eps = 1e-5, .default_rope_theta = 10000.0,   /* Phi3Config's */
    .writes_add_space_prefix = false,
    .recipe = { .longrope = true },
    .spm_added_as_phi3 = true,
};
