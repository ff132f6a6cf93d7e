/* arch/arch.h: model families as data.
 *
 * arch/ owns what a model family *is*, written as tables so that every consumer reads
 * the same rows: HF -> GGUF (hf/), GGUF -> HF (hf/), the reference forward pass
 * (infer/) and the quantization mixes (quant/). One file per family (arch/llama.c,
 * arch/qwen2.c, ...) holds one lc_arch value:
 *   1. names: the GGUF general.architecture and the transformers class names;
 *   2. tensors: one row per tensor role, in the spirit of llama.cpp's LLM_TENSOR_NAMES
 *      and gguf-py's tensor_mapping.py: the GGUF name pattern, every source spelling
 *      it is known by (transformers, Meta's original release), its shape in terms of
 *      the hyperparameters, whether RoPE rotates its rows, required or optional;
 *   3. keys: the GGUF hyperparameter keys in the order llama.cpp's converter writes
 *      them, each tied to a field of lc_hparams;
 *   4. the RoPE style llama.cpp runs the family with, and named hooks for what a row
 *      cannot say (llama3's rope factors).
 * A pattern's "%u" stands for the layer index; lc_arch_match() is the one parser of
 * it. The name map works both ways from the same rows. arch/ uses libconvert/ only
 * (no cJSON): config.json and params.json are read in hf/ into lc_hparams.
 *
 * Adding a family: a new arch/<family>.c with its lc_arch, one line in arch.c's list,
 * a fixture folder and its reference GGUF from llama.cpp's converter. */
#ifndef LC_ARCH_ARCH_H
#define LC_ARCH_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

/* What a tensor is for, whatever it is called. Biases are roles of their own so that a
 * role and a layer name exactly one tensor. */
typedef enum lc_role {
    LC_ROLE_NONE = 0,
    LC_ROLE_TOKEN_EMBD,     /* [vocab, embd] */
    LC_ROLE_OUTPUT_NORM,    /* [embd] */
    LC_ROLE_OUTPUT,         /* [vocab, embd]; absent when tied to the embedding */
    LC_ROLE_ROPE_FREQS,     /* [head_dim / 2] llama3 factors: computed, never copied */
    LC_ROLE_ROPE_INV_FREQ,  /* transformers' cached inverse frequencies: dropped */
    LC_ROLE_ROPE_FACTORS_LONG,  /* [rope_dim / 2] phi3's longrope factors: computed */
    LC_ROLE_ROPE_FACTORS_SHORT,
    LC_ROLE_ATTN_NORM,
    LC_ROLE_ATTN_Q, LC_ROLE_ATTN_Q_BIAS,
    LC_ROLE_ATTN_K, LC_ROLE_ATTN_K_BIAS,
    LC_ROLE_ATTN_V, LC_ROLE_ATTN_V_BIAS,
    LC_ROLE_ATTN_QKV,       /* [q + 2 kv, embd]: Q, K and V rows in one matrix (phi3) */
    LC_ROLE_ATTN_Q_NORM,    /* [head_dim]: RMSNorm of each query head (qwen3, gemma3) */
    LC_ROLE_ATTN_K_NORM,    /* [head_dim]: ... of each key head */
    LC_ROLE_ATTN_OUT,
    LC_ROLE_ATTN_POST_NORM, /* [embd]: on the attention's output before the residual */
    LC_ROLE_FFN_NORM,
    LC_ROLE_FFN_GATE,
    LC_ROLE_FFN_UP,         /* [ff, embd], or [2 ff, embd] gate and up rows (phi3) */
    LC_ROLE_FFN_DOWN,
    LC_ROLE_FFN_POST_NORM,  /* [embd]: on the FFN's output before the residual */
    LC_ROLE_FFN_GATE_INP,   /* [expert, embd]: the router */
    LC_ROLE_FFN_GATE_EXPS,  /* [expert, ff_exp, embd]: the experts' gates, stacked */
    LC_ROLE_FFN_UP_EXPS,    /* [expert, ff_exp, embd] */
    LC_ROLE_FFN_DOWN_EXPS,  /* [expert, embd, ff_exp] */
    /* A shared expert beside the routed ones (qwen35moe): out += sigmoid(gate_inp_shexp
     * . x) * SwiGLU(x) */
    LC_ROLE_FFN_GATE_INP_SHEXP, /* [1, embd] */
    LC_ROLE_FFN_GATE_SHEXP, LC_ROLE_FFN_UP_SHEXP,   /* [ff_shexp, embd] */
    LC_ROLE_FFN_DOWN_SHEXP,     /* [embd, ff_shexp] */
    /* The gated full-attention layer (qwen35): ATTN_Q holds each head's query and its
     * output gate side by side, [n_head x (q, gate) x head_dim, embd]. */
    /* The Gated-DeltaNet recurrent layer (qwen35), ssm_* in llama.cpp's words: */
    LC_ROLE_SSM_QKV,        /* [2 key + value, embd]: q, k (ssm_group_count heads of
                             * ssm_state_size), v (time_step_rank heads) rows */
    LC_ROLE_SSM_Z,          /* [value, embd]: the output gate */
    LC_ROLE_SSM_BETA,       /* [v_heads, embd]: b, the write strength (sigmoid) */
    LC_ROLE_SSM_ALPHA,      /* [v_heads, embd]: a, the decay's input */
    LC_ROLE_SSM_A,          /* [v_heads]: GGUF -exp(A_log); transformers A_log */
    LC_ROLE_SSM_DT,         /* [v_heads]: the decay's bias (dt_bias) */
    LC_ROLE_SSM_CONV1D,     /* [2 key + value, conv_kernel]: the causal depthwise
                             * convolution (transformers [channels, 1, kernel]) */
    LC_ROLE_SSM_NORM,       /* [head_v]: the gated RMSNorm's weight (no + 1) */
    LC_ROLE_SSM_OUT,        /* [embd, value] */
    /* Multi-token prediction layers past the model's own (llama.cpp's nextn): written,
     * never run by the forward pass. */
    LC_ROLE_NEXTN_EH_PROJ,  /* [embd, 2 embd] */
    LC_ROLE_NEXTN_ENORM, LC_ROLE_NEXTN_HNORM, LC_ROLE_NEXTN_HEAD_NORM,  /* [embd] */
    /* Gemma 4's per-layer inputs: a second embedding of every layer's slice
     * [vocab, layers x ple] and a projection of the hidden state to the same, normed;
     * each layer gates its slice (INP_GATE [ple, embd]), projects it back (PROJ
     * [embd, ple]), norms it and adds it; its output is then scaled (OUTPUT_SCALE [1]). */
    LC_ROLE_PER_LAYER_TOKEN_EMBD, LC_ROLE_PER_LAYER_MODEL_PROJ, LC_ROLE_PER_LAYER_PROJ_NORM,
    LC_ROLE_PER_LAYER_INP_GATE, LC_ROLE_PER_LAYER_PROJ, LC_ROLE_PER_LAYER_POST_NORM,
    LC_ROLE_LAYER_OUTPUT_SCALE,
    /* Gemma 4's experts (beside the dense FFN): gate and up of each expert in one stack
     * [expert, 2 ff_exp, embd]; the router's input scale [embd], the experts' output
     * scales [expert]; the extra norms around the two FFN branches [embd]. */
    LC_ROLE_FFN_GATE_UP_EXPS, LC_ROLE_FFN_GATE_INP_SCALE, LC_ROLE_FFN_DOWN_EXPS_SCALE,
    LC_ROLE_FFN_POST_NORM_1, LC_ROLE_FFN_POST_NORM_2, LC_ROLE_FFN_PRE_NORM_2,
    LC_ROLE_COUNT
} lc_role;

/* A dimension of an expected shape, in terms of the hyperparameters. */
typedef enum lc_dim {
    LC_DIM_NONE = 0,
    LC_DIM_VOCAB,       /* vocab_size */
    LC_DIM_EMBD,        /* embedding_length */
    LC_DIM_FF,          /* feed_forward_length */
    LC_DIM_FF2,         /* 2 x feed_forward_length: gate and up rows in one matrix */
    LC_DIM_Q,           /* head_count * head_dim */
    LC_DIM_KV,          /* head_count_kv * head_dim */
    LC_DIM_QKV,         /* Q + 2 KV */
    LC_DIM_HEAD,        /* head_dim */
    LC_DIM_HALF_HEAD,   /* head_dim / 2 */
    LC_DIM_HALF_ROPE,   /* rope_dim / 2 */
    LC_DIM_EXPERT,      /* expert_count */
    LC_DIM_FF_EXP,      /* expert_feed_forward_length (feed_forward_length when not given) */
    LC_DIM_Q2,          /* 2 x head_count * head_dim: queries and their gates */
    LC_DIM_EMBD2,       /* 2 x embedding_length */
    LC_DIM_SSM_CONV,    /* the recurrent layer's channels: 2 ssm_group_count
                         * ssm_state_size + ssm_inner_size */
    LC_DIM_SSM_INNER,   /* ssm_inner_size: value heads x their size */
    LC_DIM_SSM_VHEADS,  /* ssm_time_step_rank: value heads */
    LC_DIM_SSM_HEAD_V,  /* ssm_inner_size / ssm_time_step_rank */
    LC_DIM_SSM_KERNEL,  /* ssm_conv_kernel */
    LC_DIM_FF_SHEXP,    /* expert_shared_feed_forward_length */
    LC_DIM_ONE,         /* 1 */
} lc_dim;

/* How llama.cpp rotates a head's dimensions, which fixes the row order of Q and K in
 * GGUF: NORM rotates adjacent pairs (GGUF "llama" stores Q/K rows interleaved, so the
 * converter permutes transformers' half-split rows), NEOX rotates the two halves
 * (transformers' own order, stored as is). */
typedef enum lc_rope_style { LC_ROPE_NORM = 0, LC_ROPE_NEOX } lc_rope_style;

typedef enum lc_rope_scaling {
    LC_ROPE_SCALING_NONE = 0,
    LC_ROPE_SCALING_LINEAR,
    LC_ROPE_SCALING_YARN,
    LC_ROPE_SCALING_LLAMA3,     /* per-pair factors in rope_freqs.weight, no keys */
    LC_ROPE_SCALING_LONGROPE,   /* phi3: per-pair factors in rope_factors_{long,short} */
} lc_rope_scaling;

/* The most layers a per-layer list (recurrent layers) may describe. */
#define LC_ARCH_MAX_LAYERS 1024

/* The longest list of per-pair RoPE factors a config may give (head sizes up to 512). */
#define LC_ARCH_MAX_ROPE_FACTORS 256

/* Row flags. */
enum {
    LC_AT_REQUIRED = 1u << 0,   /* every model of the family has it (per layer for blk.%u) */
    LC_AT_ROPE_Q   = 1u << 1,   /* rows rotated by RoPE, head_count heads */
    LC_AT_ROPE_K   = 1u << 2,   /* rows rotated by RoPE, head_count_kv heads */
    LC_AT_COMPUTED = 1u << 3,   /* made by a hook, never copied from a source (a source's
                                 * own copy is dropped) */
    LC_AT_EXPERTS  = 1u << 4,   /* expert_count experts stacked along the outermost
                                 * dimension in GGUF; the hf/meta spellings with "%e" name
                                 * one expert's 2-D tensor each (see lc_arch_tensor) */
    LC_AT_NORM_SHIFT = 1u << 5, /* GGUF stores the weight + 1 (gemma's RMSNorm scales by
                                 * 1 + w; llama.cpp's by the stored value) */
    LC_AT_VOCAB_ROWS = 1u << 6, /* rows past the vocabulary are cut (gemma's embedding) */
    LC_AT_KEEP_F32 = 1u << 7,   /* written in F32 whatever the out type (the router) */
    LC_AT_DENSE    = 1u << 8,   /* required only in a model without experts */
    LC_AT_MOE      = 1u << 9,   /* required only in a model with experts */
    LC_AT_RECURRENT = 1u << 10, /* required only in recurrent layers (lc_hparams.recurrent) */
    LC_AT_ATTENTION = 1u << 11, /* required only in attention layers of a model with
                                 * recurrent ones */
    LC_AT_NEG_EXP  = 1u << 12,  /* GGUF stores -exp(x) (qwen35's A_log), computed in
                                 * float32 (float16 for float16 sources) */
    LC_AT_SQUEEZE  = 1u << 13,  /* transformers' tensor has extra dimensions of 1 that
                                 * GGUF drops (a conv1d weight [channels, 1, kernel]) */
};

/* Qwen3.5's value heads: transformers groups them by key head (the value heads of key
 * head 0, then of key head 1, ...); the converter writes them tiled (value head 0 of
 * every key head, then value head 1 ...) when there are more value heads than key heads.
 * A row's reorder says which of its rows or columns are value heads, and how wide one
 * is. */
typedef enum lc_vreorder {
    LC_VR_NONE = 0,
    LC_VR_ROWS_AFTER_QK,    /* rows after 2 x key rows, ssm_head_v rows a head (qkv, conv1d) */
    LC_VR_ROWS,             /* every row, ssm_head_v rows a head (z) */
    LC_VR_HEAD_ROWS,        /* one row or element a head (a, b, A_log, dt_bias) */
    LC_VR_COLS,             /* columns, ssm_head_v a head (out) */
} lc_vreorder;

typedef struct lc_arch_tensor {
    lc_role     role;
    const char *gguf;       /* GGUF name pattern; NULL: never written to GGUF (dropped) */
    const char *hf;         /* transformers' name pattern; NULL: none */
    const char *meta;       /* Meta's original-release name pattern; NULL: none */
    uint8_t     ndim;       /* 0: the shape is not checked */
    lc_dim      shape[3];   /* outermost first */
    uint16_t    flags;      /* LC_AT_* */
    /* Transformers 5's spelling of a stacked row: one 3-D tensor [expert, parts x rows,
     * cols] holding `parts` matrices per expert side by side along dimension 1 (gate_up
     * is gate then up); this row is part `part`. NULL: none. */
    const char *hf_fused;
    uint8_t     part, parts;
    lc_vreorder vreorder;
} lc_arch_tensor;

/* The hyperparameters every family is described by (a family uses what it needs). */
typedef struct lc_hparams {
    uint32_t context_length;        /* max_position_embeddings */
    uint32_t embedding_length;      /* hidden_size */
    uint32_t block_count;           /* num_hidden_layers */
    uint32_t feed_forward_length;   /* intermediate_size */
    uint32_t head_count;            /* num_attention_heads */
    uint32_t head_count_kv;         /* num_key_value_heads */
    uint32_t head_dim;              /* attention.key_length = value_length */
    bool     head_dim_given;        /* the source named head_dim: key/value_length written */
    uint32_t rope_dim;              /* rope.dimension_count: the dimensions of a head RoPE
                                     * rotates (head_dim unless partial) */
    uint32_t vocab_size;
    double   rms_eps;
    double   rope_theta;
    double   rope_theta_swa;        /* rope.freq_base_swa: the sliding layers' base; 0: none */
    bool     tie_word_embeddings;
    lc_rope_scaling rope_scaling;
    double   rope_scaling_factor;
    uint32_t rope_scaling_orig_ctx; /* 0 when absent */
    double   rope_low_freq_factor;  /* llama3 */
    double   rope_high_freq_factor; /* llama3 */
    double   rope_attn_factor;      /* longrope's factor on cos and sin (phi3); 0: none */
    uint32_t n_rope_factors;        /* longrope: rope_dim / 2 factors of each kind */
    float    rope_long_factors[LC_ARCH_MAX_ROPE_FACTORS];
    float    rope_short_factors[LC_ARCH_MAX_ROPE_FACTORS];
    uint32_t expert_count;          /* 0: a dense model */
    uint32_t expert_used_count;     /* top-k */
    uint32_t expert_ff_length;      /* expert_feed_forward_length; 0: feed_forward_length */
    bool     expert_norm_topk;      /* the top-k weights renormalised to sum to 1 */
    uint32_t expert_shared_ff_length;   /* the shared expert's width; 0: none */
    uint32_t sliding_window;        /* 0: none */
    uint32_t swa_pattern;           /* every swa_pattern-th layer attends globally, the
                                     * others within sliding_window (gemma3: 6); 0: all
                                     * layers alike */
    double   attn_scale;            /* query_pre_attn_scalar: scores scaled by its inverse
                                     * square root instead of head_dim's; 0: head_dim */
    double   final_softcap;         /* final_logit_softcapping; 0: none */
    /* Hybrid models (qwen35): which layers are recurrent, the recurrent layer's sizes,
     * the multi-token-prediction layers after the model's own. */
    uint32_t nextn_layers;          /* nextn_predict_layers: the last ones of block_count */
    bool     layer_kinds_given;     /* recurrent[] came from a per-layer list (and is
                                     * written as attention.recurrent_layers) */
    bool     recurrent[LC_ARCH_MAX_LAYERS];     /* [block_count] */
    uint32_t n_layer_kinds;         /* the entries the list had (checked against
                                     * block_count) */
    uint32_t full_attn_interval;    /* every full_attn_interval-th layer attends */
    uint32_t ssm_conv_kernel, ssm_state_size, ssm_group_count, ssm_time_step_rank,
             ssm_inner_size;
    uint32_t ssm_head_v;            /* ssm_inner_size / ssm_time_step_rank */
    bool     rope_sections_given;   /* rope.dimension_sections from the config */
    /* KV heads per layer (gemma4's attention.head_count_kv is an array): head_count_kv
     * is layer 0's, what llama.cpp's quantizer reads (n_gqa()); 0 entries: one count. */
    uint32_t n_head_count_kv_layers;
    uint32_t head_count_kv_layers[LC_ARCH_MAX_LAYERS];
    uint32_t rope_sections[4];      /* multi-section RoPE (text: every section alike) */
    /* Gemma 4's sliding and full layers of different shapes: the sliding layers' head
     * size and rotated dimensions (head_dim, rope_dim are the full layers'), which layers
     * slide, the last layers that reuse earlier layers' KV, the per-layer input width,
     * and the full layers' proportional RoPE (rope_freqs: this many pairs rotated, 1e30
     * for the rest of head_dim / 2; 0: no such tensor). */
    uint32_t head_dim_swa, rope_dim_swa;
    uint32_t shared_kv_layers;
    uint32_t embd_per_layer_input;
    bool     swa_layers_given;      /* swa_layers[] came from the source */
    uint32_t n_swa_layers;          /* the entries the list had */
    bool     swa_layers[LC_ARCH_MAX_LAYERS];    /* [block_count] */
    uint32_t rope_prop_pairs;
} lc_hparams;

/* Which lc_hparams field a key or a config.json entry carries. */
typedef enum lc_hp {
    LC_HP_CONTEXT_LENGTH, LC_HP_EMBEDDING_LENGTH, LC_HP_BLOCK_COUNT, LC_HP_FEED_FORWARD_LENGTH,
    LC_HP_HEAD_COUNT, LC_HP_HEAD_COUNT_KV, LC_HP_HEAD_DIM, LC_HP_VOCAB_SIZE, LC_HP_RMS_EPS,
    LC_HP_ROPE_THETA, LC_HP_TIE_WORD_EMBEDDINGS, LC_HP_ROPE_SCALING_TYPE,
    LC_HP_ROPE_SCALING_FACTOR, LC_HP_ROPE_SCALING_ORIG_CTX,
    LC_HP_FILE_TYPE,        /* not a hyperparameter: general.file_type's place in the order */
    LC_HP_ROPE_DIM, LC_HP_ROPE_THETA_SWA, LC_HP_ROPE_ATTN_FACTOR,
    LC_HP_EXPERT_COUNT, LC_HP_EXPERT_USED_COUNT, LC_HP_EXPERT_FF_LENGTH, LC_HP_EXPERT_NORM_TOPK,
    LC_HP_SLIDING_WINDOW, LC_HP_SWA_PATTERN, LC_HP_ATTN_SCALE, LC_HP_FINAL_SOFTCAP,
    LC_HP_VALUE_DIM,        /* attention.value_length: written as head_dim; read, it
                             * changes nothing (key_length is the head size) */
    LC_HP_EXPERT_SHARED_FF_LENGTH,
    LC_HP_NEXTN_LAYERS, LC_HP_FULL_ATTN_INTERVAL, LC_HP_SSM_CONV_KERNEL,
    LC_HP_SSM_STATE_SIZE, LC_HP_SSM_GROUP_COUNT, LC_HP_SSM_TIME_STEP_RANK,
    LC_HP_SSM_INNER_SIZE,
    LC_HP_SSM_HEAD_V,       /* config only: linear_value_head_dim (inner = it x heads) */
    LC_HP_RECURRENT_LAYERS, /* an array of bools, one per layer */
    LC_HP_ROPE_SECTIONS,    /* an array of 4 int32 */
    LC_HP_LAYER_TYPES,      /* config only: layer_types, "linear_attention" recurrent */
    LC_HP_HEAD_COUNT_KV_LAYERS, /* an array of int32, KV heads per layer (gemma4) */
    LC_HP_HEAD_DIM_SWA,     /* attention.key_length_swa = value_length_swa (gemma4) */
    LC_HP_ROPE_DIM_SWA,
    LC_HP_SHARED_KV_LAYERS,
    LC_HP_EMBD_PER_LAYER_INPUT,
    LC_HP_SWA_LAYERS,       /* an array of bools, one per layer: the sliding ones */
} lc_hp;

/* When a key is written. */
enum {
    LC_KEY_ALWAYS = 0,
    LC_KEY_IF_SCALED,       /* rope scaling linear or yarn */
    LC_KEY_IF_ORIG_CTX,     /* ... and original_max_position_embeddings given */
    LC_KEY_IF_HEAD_DIM,     /* the source named head_dim */
    LC_KEY_IF_SET,          /* the hyperparameter is not 0 (given by the source) */
    LC_KEY_IF_LONGROPE,     /* rope scaling longrope */
    LC_KEY_IF_GIVEN,        /* an array the source gave (layer kinds, rope sections) */
    LC_KEY_IF_NOT_GIVEN,    /* ... the default, where the source gave none */
    LC_KEY_ALWAYS_0_OK,     /* always written, and 0 is a value (a count of none) */
};

typedef enum lc_key_type { LC_KEY_U32, LC_KEY_F32, LC_KEY_STR, LC_KEY_BOOL,
                           LC_KEY_ARR } lc_key_type;    /* ARR: the lc_hp says which */

typedef struct lc_arch_key {
    const char *key;        /* "%s" is the architecture: "%s.block_count" */
    lc_hp       hp;
    lc_key_type type;
    uint8_t     when;       /* LC_KEY_* */
} lc_arch_key;

/* A config.json entry: transformers' spelling of a hyperparameter. */
enum {
    LC_CFG_U32_REQUIRED,    /* a positive integer < 2^32 that must be there */
    LC_CFG_U32,             /* the same, optional */
    LC_CFG_POSITIVE,        /* an optional positive number */
    LC_CFG_BOOL,            /* an optional bool */
    LC_CFG_NUMBER,          /* an optional number >= 0 (null: absent) */
    LC_CFG_LIST,            /* a list (layer_types: one entry per layer) */
};
typedef struct lc_arch_cfg {
    const char *json;
    lc_hp       hp;
    uint8_t     kind;       /* LC_CFG_* */
} lc_arch_cfg;

typedef struct lc_arch lc_arch;

/* The FFN's activation on the gate (llama.cpp's LLM_FFN_SILU, LLM_FFN_GELU). */
typedef enum lc_act { LC_ACT_SILU = 0, LC_ACT_GELU_TANH } lc_act;

/* What the forward pass of a family does beyond what its tensors and hyperparameters
 * already say. Present tensors choose the rest: q/k norms (ATTN_Q_NORM) are applied
 * per head before RoPE, post-norms (ATTN_POST_NORM, FFN_POST_NORM) on a block's output
 * before the residual, a router (FFN_GATE_INP) makes the FFN a mixture of experts,
 * fused rows (ATTN_QKV, FFN_UP of 2 ff rows) are split; LC_AT_NORM_SHIFT rows read
 * from transformers' spelling get their + 1; hyperparameters choose sliding windows
 * (sliding_window, swa_pattern, rope_theta_swa), the attention scale, the final
 * softcap and longrope's factors. */
typedef struct lc_arch_recipe {
    lc_act act;
    bool   embd_scale;      /* the embedding times sqrt(embedding_length) (gemma) */
    bool   moe_norm_topk;   /* hparams.expert_norm_topk's default: the top-k routing
                             * weights renormalised to sum to 1 (llama.cpp always does for
                             * mixtral and qwen3moe; a config's norm_topk_prob says) */
    bool   longrope;        /* takes phi3's longrope scaling (rope_factors_long/short) */
    bool   attn_gate;       /* full attention's output times sigmoid(gate), the gate rows
                             * beside each head's query rows (qwen35) */
} lc_arch_recipe;

/* A spelling of layers after the model's own (qwen35's multi-token prediction block,
 * "mtp.layers.0." on the Hub) as the converter renames it before mapping: PREFIX (with
 * "%u" the extra layer's index from 0, or none: the first extra layer) stands for
 * "model.layers.N." + INSTEAD, N = the model's own layer count + that index. */
typedef struct lc_arch_alias {
    const char *prefix;     /* "mtp.layers.%u.", "mtp.fc." */
    const char *instead;    /* "", "eh_proj." */
} lc_arch_alias;

/* Hooks: what a table row cannot say. NULL when the family has none. */
typedef struct lc_arch_hooks {
    /* The values of the computed LC_ROLE_ROPE_FREQS tensor for llama3 rope scaling:
     * n = head_dim / 2 floats into out. NULL: the family refuses llama3 scaling. */
    void (*rope_freqs)(const lc_hparams *hp, float *out, uint64_t n);
} lc_arch_hooks;

struct lc_arch {
    const char *name;                   /* GGUF general.architecture */
    const char *const *hf_classes;      /* transformers' class names, NULL-terminated */
    lc_rope_style rope;
    const lc_arch_tensor *tensors;
    size_t n_tensors;
    const lc_arch_key *keys;            /* in llama.cpp's converter's order */
    size_t n_keys;
    const lc_arch_cfg *cfg;             /* config.json spellings */
    size_t n_cfg;
    const lc_arch_cfg *cfg_extra;       /* ... and the family's own, read after them */
    size_t n_cfg_extra;
    double default_rms_eps, default_rope_theta;     /* transformers' config defaults */
    bool writes_add_space_prefix;       /* tokenizer.ggml.add_space_prefix from
                                         * tokenizer_config.json (LlamaModel does) */
    bool spm_no_space_prefix;           /* add_space_prefix = false after a SentencePiece
                                         * vocabulary's keys (Gemma3Model.set_vocab) */
    bool spm_added_as_phi3;             /* a SentencePiece vocabulary's added tokens by
                                         * Phi3MiniModel.set_vocab's rule: tokenizer.json's
                                         * added_tokens too, special -> control, nothing
                                         * else looked at or rewritten */
    lc_arch_hooks hooks;
    lc_arch_recipe recipe;
    /* Keys the converter writes before general.type (phi3's longrope attn_factor, added
     * while its tensors are made); in order. */
    const lc_arch_key *early_keys;
    size_t n_early_keys;
    uint32_t default_swa_pattern;       /* hparams.swa_pattern when the config says none */
    uint32_t default_full_attn_interval;    /* hparams.full_attn_interval's default */
    const lc_arch_alias *aliases;       /* the extra layers' spellings (transformers') */
    size_t n_aliases;
    bool partial_rotary_of_head;        /* partial_rotary_factor times head_dim (qwen35),
                                         * not hidden_size / head_count (phi3) */
    uint32_t default_rope_sections[4];  /* written after the family's keys when the config
                                         * names none (qwen35: [11, 11, 10, 0]) */
    bool per_layer_attention;           /* sliding and full layers of different shapes from
                                         * layer_types, per_layer_config and the global_*
                                         * keys, with proportional RoPE (gemma4) */
    const char *hf_vocab_model;         /* tokenizer.ggml.model of a vocabulary read from
                                         * tokenizer.json as gguf-py's LlamaHfVocab reads it
                                         * ("gemma4"); NULL: the usual choice */
    /* Why infer/'s forward pass cannot run the family yet (gemma4: read and quantized as
     * a GGUF, not run); NULL: it runs. */
    const char *no_forward_pass;
};

/* ---- finding a family ---- */

/* Every family, NULL-terminated, in a stable order. */
const lc_arch *const *lc_arch_all(void);
/* The family a transformers class name ("LlamaForCausalLM") or a GGUF architecture
 * ("llama") belongs to; NULL when none. */
const lc_arch *lc_arch_by_hf_class(const char *cls);
const lc_arch *lc_arch_by_name(const char *name);
/* "llama, mistral, qwen2"-style list of the class names, for messages (the multimodal
 * ...ForConditionalGeneration classes, read as their text models, left out). */
void lc_arch_list_classes(char *buf, size_t cap);

/* ---- names ---- */

/* The one layer-index parser: true when NAME matches PATTERN, where the pattern's one
 * "%u" matches a plain decimal (no sign, no leading zero, at most 9 digits) stored in
 * *layer (UINT32_MAX when the pattern has no "%u"). */
bool lc_arch_match(const char *pattern, const char *name, uint32_t *layer);

/* Which spelling a source uses. */
typedef enum lc_spelling { LC_SPELL_GGUF = 0, LC_SPELL_HF, LC_SPELL_META } lc_spelling;

/* The row whose `from` spelling matches NAME, and its layer; NULL when none does.
 * One tensor of one name only: per-expert spellings ("%e") and transformers 5's fused
 * spellings are lc_arch_lookup's. */
const lc_arch_tensor *lc_arch_find(const lc_arch *a, lc_spelling from, const char *name,
                                   uint32_t *layer);

/* Where a source tensor goes, whatever its spelling (lc_arch_lookup). */
typedef struct lc_arch_hit {
    const lc_arch_tensor *row;
    uint32_t layer;         /* UINT32_MAX: a top-level tensor */
    uint32_t expert;        /* UINT32_MAX: not one expert's (a whole tensor or a stack) */
    bool     fused;         /* NAME is row->hf_fused: the row is part row->part of it */
} lc_arch_hit;

/* The first row after AFTER (NULL: from the first) that NAME is a spelling of in `from`:
 * its own pattern ("%u" the layer, "%e" the expert) or, for transformers' spelling, the
 * fused tensor it is a part of. A fused tensor is a spelling of several rows: call again
 * with after = hit->row for the next. False when none. */
bool lc_arch_lookup(const lc_arch *a, lc_spelling from, const char *name,
                    const lc_arch_tensor *after, lc_arch_hit *hit);
/* The row of ROLE; NULL when the family has none. */
const lc_arch_tensor *lc_arch_role(const lc_arch *a, lc_role role);

/* Writes row's `to` spelling for LAYER into buf. LC_E_NOTFOUND when the row has no such
 * spelling (the tensor is dropped on that side), LC_E_ARG when buf is too small. */
lc_code lc_arch_name(const lc_arch_tensor *row, lc_spelling to, uint32_t layer, char *buf,
                     size_t cap, lc_error *err);
/* Transformers 5's fused spelling of a stacked row for LAYER (LC_E_NOTFOUND: none). */
lc_code lc_arch_name_fused(const lc_arch_tensor *row, uint32_t layer, char *buf, size_t cap,
                           lc_error *err);
/* The same with the "%e" hole filled with EXPERT (a per-expert spelling). */
lc_code lc_arch_name_expert(const lc_arch_tensor *row, lc_spelling to, uint32_t layer,
                            uint32_t expert, char *buf, size_t cap, lc_error *err);

/* Maps NAME from one spelling to another: *row is its row (NULL: unknown name),
 * buf the new name. LC_E_UNSUPPORTED naming the tensor when no row matches,
 * LC_E_MALFORMED when its layer is not below n_layers (0: unchecked), LC_E_NOTFOUND
 * when the row has no `to` spelling (the caller drops it), LC_E_ARG for a small buf. */
lc_code lc_arch_map(const lc_arch *a, lc_spelling from, lc_spelling to, const char *name,
                    uint32_t n_layers, char *buf, size_t cap, const lc_arch_tensor **row,
                    lc_error *err);

/* The heads a row's rows are grouped in for RoPE (head_count or head_count_kv), or 0
 * when RoPE does not rotate them. */
uint32_t lc_arch_rope_heads(const lc_arch_tensor *row, const lc_hparams *hp);

/* The extra layers' spellings (lc_arch.aliases): NAME rewritten into the spelling the
 * rows know ("mtp.fc.weight" -> "model.layers.6.eh_proj.weight" with 6 own layers), and
 * back (a layer >= n_own of a name in the rows' spelling -> the alias). False, buf
 * untouched, when no alias applies. lc_arch_alias_in also reads a multimodal
 * checkpoint's text model as the text model ("model.language_model.norm.weight" ->
 * "model.norm.weight"), as the converter does for every family. */
bool lc_arch_alias_in(const lc_arch *a, uint32_t n_own, const char *name, char *buf,
                      size_t cap);
bool lc_arch_alias_out(const lc_arch *a, uint32_t n_own, const char *name, char *buf,
                       size_t cap);

/* How row's value heads move between transformers' grouped and GGUF's tiled order for
 * a tensor t of it (either spelling: the same bytes move), as lc_view_swap's arguments
 * (libconvert/view.h) from grouped to tiled; swap a and b for the way back. False when
 * nothing moves (the row has no LC_VR_*, or as many value as key heads). */
typedef struct lc_arch_swap { uint64_t first, outer, a, b, unit; } lc_arch_swap;
bool lc_arch_vreorder(const lc_arch_tensor *row, const lc_hparams *hp, const lc_tensor *t,
                      lc_arch_swap *sw);

/* A multimodal checkpoint's vision or audio tensor ("model.visual.blocks.0..."): the text
 * model's conversion leaves it out (TextModel.filter_tensors' markers). */
bool lc_arch_multimodal(const char *name);

/* The layers a forward pass runs: block_count less the prediction layers. */
uint32_t lc_arch_own_layers(const lc_hparams *hp);

/* Fills what follows from the rest once a source is read: the recurrent layers from the
 * interval when no list gave them, ssm_inner_size or ssm_head_v from the other.
 * LC_E_MALFORMED naming the key when the sizes do not divide. */
lc_code lc_arch_hparams_finish(const lc_arch *a, lc_hparams *hp, lc_error *err);

/* ---- shapes and completeness ---- */

/* The expected shape of row under hp (outermost first) in nd/shape; false when the row
 * has no shape rule. */
bool lc_arch_shape(const lc_arch_tensor *row, const lc_hparams *hp, uint32_t *nd,
                   uint64_t shape[3]);
/* True when t has row's expected shape under hp (or the row has no rule); else false,
 * with the expected shape written "[a, b]" into want. */
bool lc_arch_shape_is(const lc_arch_tensor *row, const lc_hparams *hp, const lc_tensor *t,
                      char *want, size_t cap);

/* The same for a tensor found by lc_arch_lookup: one expert's has the row's shape
 * without its expert dimension, a fused one `parts` times the rows along dimension 1,
 * and gemma's embedding may have more rows than the vocabulary. */
bool lc_arch_hit_shape_is(const lc_arch_hit *h, const lc_hparams *hp, const lc_tensor *t,
                          char *want, size_t cap);

/* Which required tensors a model has, row by row and layer by layer. */
typedef struct lc_arch_seen {
    const lc_arch *arch;
    uint32_t n_layers;
    uint64_t top;           /* bit i: row i seen (rows without "%u") */
    uint64_t *layer;        /* per layer, bit i: row i seen */
    bool moe;               /* the model has experts: LC_AT_MOE rows are required, not
                             * LC_AT_DENSE ones (set after init; false by default) */
    const bool *recurrent;  /* [n_layers] the recurrent layers (LC_AT_RECURRENT rows
                             * required there, LC_AT_ATTENTION ones elsewhere); NULL:
                             * none (set after init) */
} lc_arch_seen;

lc_code lc_arch_seen_init(lc_arch_seen *s, const lc_arch *a, uint32_t n_layers, lc_error *err);
void    lc_arch_seen_free(lc_arch_seen *s);
void    lc_arch_seen_mark(lc_arch_seen *s, const lc_arch_tensor *row, uint32_t layer);
/* LC_E_MISMATCH naming the first required tensor (in `spelling`, and as GGUF) that was
 * not marked. */
lc_code lc_arch_seen_check(const lc_arch_seen *s, lc_spelling spelling, lc_error *err);

/* ---- hyperparameter keys ---- */

/* Writes the family's <arch>.* keys (and general.file_type at its place, unless
 * file_type is LC_ARCH_NO_FILE_TYPE) to m in llama.cpp's order, with gguf-py's value
 * types (u32 counts, f32 reals, strings). A key that already exists keeps its place and
 * gets the new value. */
#define LC_ARCH_NO_FILE_TYPE UINT32_MAX
lc_code lc_arch_write_keys(const lc_arch *a, const lc_hparams *hp, uint32_t file_type,
                           lc_model *m, lc_error *err);
/* One hyperparameter by its lc_hp: a count is stored when d is in (0, 2^32), a
 * bool as d != 0. */
void   lc_arch_hparam_set(lc_hparams *hp, lc_hp f, double d);
double lc_arch_hparam_get(const lc_hparams *hp, lc_hp f);

/* The family's early keys (lc_arch.early_keys), in order. */
lc_code lc_arch_write_early_keys(const lc_arch *a, const lc_hparams *hp, lc_model *m,
                                 lc_error *err);

/* The family and hyperparameters of a GGUF model, from general.architecture and the
 * family's keys. LC_E_UNSUPPORTED for an architecture no table describes (named),
 * LC_E_MALFORMED (where = key) for a key of the wrong type or a missing required one
 * (block_count, embedding_length, attention.head_count); others get llama.cpp's
 * defaults (head_count_kv = head_count, head_dim = embd / heads, freq_base 10000). */
lc_code lc_arch_read_keys(const lc_model *m, const lc_arch **a, lc_hparams *hp, lc_error *err);

#endif
