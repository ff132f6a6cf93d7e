/* arch/llama.c: the llama family (LlamaForCausalLM, MistralForCausalLM) as data.
 *
 * llama.cpp runs it with NORM RoPE (adjacent pairs), so Q and K rows are permuted from
 * transformers' half-split order on the way into GGUF and back on the way out; Meta's
 * original release already stores them interleaved. Biases are optional (attention_bias
 * models have them). llama3 rope scaling adds a computed rope_freqs.weight. Mixtral is
 * llama with experts (GGUF "llama" too): a router and stacked experts instead of the
 * dense FFN, the expert counts among the keys. */
#include "arch/families.h"

static const char *const CLASSES[] = { "LlamaForCausalLM", "MistralForCausalLM",
                                       "MixtralForCausalLM", NULL };

static const lc_arch_tensor TENSORS[] = {
    /* role                 GGUF                       transformers                                  Meta                              shape                         flags */
    { LC_ROLE_ROPE_FREQS,    "rope_freqs.weight",        NULL,                                          "rope.freqs",                     1, { LC_DIM_HALF_HEAD },      LC_AT_COMPUTED },
    { LC_ROLE_TOKEN_EMBD,    "token_embd.weight",        "model.embed_tokens.weight",                   "tok_embeddings.weight",          2, { LC_DIM_VOCAB, LC_DIM_EMBD }, LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT_NORM,   "output_norm.weight",       "model.norm.weight",                           "norm.weight",                    1, { LC_DIM_EMBD },           LC_AT_REQUIRED },
    { LC_ROLE_OUTPUT,        "output.weight",            "lm_head.weight",                              "output.weight",                  2, { LC_DIM_VOCAB, LC_DIM_EMBD }, 0 },
    { LC_ROLE_ATTN_NORM,     "blk.%u.attn_norm.weight",  "model.layers.%u.input_layernorm.weight",       "layers.%u.attention_norm.weight", 1, { LC_DIM_EMBD },          LC_AT_REQUIRED },
    { LC_ROLE_ATTN_Q,        "blk.%u.attn_q.weight",     "model.layers.%u.self_attn.q_proj.weight",      "layers.%u.attention.wq.weight",  2, { LC_DIM_Q, LC_DIM_EMBD }, LC_AT_REQUIRED | LC_AT_ROPE_Q },
    { LC_ROLE_ATTN_Q_BIAS,   "blk.%u.attn_q.bias",       "model.layers.%u.self_attn.q_proj.bias",        NULL,                             1, { LC_DIM_Q },              LC_AT_ROPE_Q },
    { LC_ROLE_ATTN_K,        "blk.%u.attn_k.weight",     "model.layers.%u.self_attn.k_proj.weight",      "layers.%u.attention.wk.weight",  2, { LC_DIM_KV, LC_DIM_EMBD }, LC_AT_REQUIRED | LC_AT_ROPE_K },
    { LC_ROLE_ATTN_K_BIAS,   "blk.%u.attn_k.bias",       "model.layers.%u.self_attn.k_proj.bias",        NULL,                             1, { LC_DIM_KV },             LC_AT_ROPE_K },
    { LC_ROLE_ATTN_V,        "blk.%u.attn_v.weight",     "model.layers.%u.self_attn.v_proj.weight",      "layers.%u.attention.wv.weight",  2, { LC_DIM_KV, LC_DIM_EMBD }, LC_AT_REQUIRED },
    { LC_ROLE_ATTN_V_BIAS,   "blk.%u.attn_v.bias",       "model.layers.%u.self_attn.v_proj.bias",        NULL,                             1, { LC_DIM_KV },             0 },
    { LC_ROLE_ATTN_OUT,      "blk.%u.attn_output.weight", "model.layers.%u.self_attn.o_proj.weight",     "layers.%u.attention.wo.weight",  2, { LC_DIM_EMBD, LC_DIM_Q }, LC_AT_REQUIRED },
    { LC_ROLE_FFN_NORM,      "blk.%u.ffn_norm.weight",   "model.layers.%u.post_attention_layernorm.weight", "layers.%u.ffn_norm.weight",   1, { LC_DIM_EMBD },           LC_AT_REQUIRED },
    { LC_ROLE_FFN_GATE,      "blk.%u.ffn_gate.weight",   "model.layers.%u.mlp.gate_proj.weight",         "layers.%u.feed_forward.w1.weight", 2, { LC_DIM_FF, LC_DIM_EMBD }, LC_AT_DENSE },
    { LC_ROLE_FFN_UP,        "blk.%u.ffn_up.weight",     "model.layers.%u.mlp.up_proj.weight",           "layers.%u.feed_forward.w3.weight", 2, { LC_DIM_FF, LC_DIM_EMBD }, LC_AT_DENSE },
    { LC_ROLE_FFN_DOWN,      "blk.%u.ffn_down.weight",   "model.layers.%u.mlp.down_proj.weight",         "layers.%u.feed_forward.w2.weight", 2, { LC_DIM_EMBD, LC_DIM_FF }, LC_AT_DENSE },
    /* mixtral: a router and expert_count experts per layer, stacked in GGUF from the Hub's
     * one tensor per expert, written w1, w2, w3 (LlamaModel.modify_tensors' order) */
    { LC_ROLE_FFN_GATE_INP,  "blk.%u.ffn_gate_inp.weight", "model.layers.%u.block_sparse_moe.gate.weight", NULL,                     2, { LC_DIM_EXPERT, LC_DIM_EMBD }, LC_AT_MOE | LC_AT_KEEP_F32 },
    { LC_ROLE_FFN_GATE_EXPS, "blk.%u.ffn_gate_exps.weight", "model.layers.%u.block_sparse_moe.experts.%e.w1.weight", NULL,            3, { LC_DIM_EXPERT, LC_DIM_FF, LC_DIM_EMBD }, LC_AT_MOE | LC_AT_EXPERTS },
    { LC_ROLE_FFN_DOWN_EXPS, "blk.%u.ffn_down_exps.weight", "model.layers.%u.block_sparse_moe.experts.%e.w2.weight", NULL,            3, { LC_DIM_EXPERT, LC_DIM_EMBD, LC_DIM_FF }, LC_AT_MOE | LC_AT_EXPERTS },
    { LC_ROLE_FFN_UP_EXPS,   "blk.%u.ffn_up_exps.weight",   "model.layers.%u.block_sparse_moe.experts.%e.w3.weight", NULL,            3, { LC_DIM_EXPERT, LC_DIM_FF, LC_DIM_EMBD }, LC_AT_MOE | LC_AT_EXPERTS },
    { LC_ROLE_ROPE_INV_FREQ, NULL,                       "model.layers.%u.self_attn.rotary_emb.inv_freq", NULL,                            0, { 0 },                     0 },
};

static const lc_arch_key KEYS[] = {
    LC_ARCH_KEYS_HEAD, LC_ARCH_KEYS_EPS, LC_ARCH_KEYS_EXPERTS, LC_ARCH_KEYS_TAIL,
    { "%s.vocab_size", LC_HP_VOCAB_SIZE, LC_KEY_U32, LC_KEY_ALWAYS },
    { "%s.rope.dimension_count", LC_HP_ROPE_DIM, LC_KEY_U32, LC_KEY_ALWAYS },
};

const lc_arch lc_arch_llama = {
    .name = "llama",
    .hf_classes = CLASSES,
    .rope = LC_ROPE_NORM,
    .tensors = TENSORS, .n_tensors = sizeof TENSORS / sizeof *TENSORS,
    .keys = KEYS, .n_keys = sizeof KEYS / sizeof *KEYS,
    .cfg = lc_arch_cfg_transformer, .n_cfg = LC_ARCH_CFG_TRANSFORMER_COUNT,
    .default_rms_eps = 1e-6, .default_rope_theta = 10000.0,   /* LlamaConfig's */
    .writes_add_space_prefix = true,
    .hooks = { .rope_freqs = lc_arch_llama3_rope_freqs },
    .recipe = { .moe_norm_topk = true },
};
