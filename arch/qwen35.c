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

static const char *const CLASSES[] = { "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", NULL };

#define L "model.layers.%u."
static const lc_arch_tensor TENSORS[] = {
    LC_ARCH_QWEN35_ROWS,
    /* role                   GGUF                                  transformers                     Meta  shape                                     flags */
    { LC_ROLE_FFN_GATE,        "blk.%u.ffn_gate.weight",             L "mlp.gate_proj.weight",          NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },               LC_AT_REQUIRED },
    { LC_ROLE_FFN_UP,          "blk.%u.ffn_up.weight",               L "mlp.up_proj.weight",            NULL, 2, { LC_DIM_FF, LC_DIM_EMBD },               LC_AT_REQUIRED },
    { LC_ROLE_FFN_DOWN,        "blk.%u.ffn_down.weight",             L "mlp.down_proj.weight",          NULL, 2, { LC_DIM_EMBD, LC_DIM_FF },               LC_AT_REQUIRED },
};
#undef L

static const lc_arch_alias ALIASES[] = { LC_ARCH_QWEN35_ALIASES };

static const lc_arch_key KEYS[] = {
    LC_ARCH_QWEN35_KEYS_HEAD(LC_KEY_ALWAYS),
    LC_ARCH_QWEN35_KEYS_TAIL,
};

static const lc_arch_cfg CFG[] = { LC_ARCH_QWEN35_CFG };

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
