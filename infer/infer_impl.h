/* infer/infer_impl.h: private to infer/infer*.c: the opened model (infer_open.c finds
 * and reads its weights; infer.c runs the forward pass over them). */
#ifndef LC_INFER_INFER_IMPL_H
#define LC_INFER_INFER_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "infer/blocks.h"
#include "infer/infer.h"
#include "infer/matmul.h"

/* One layer's weights: matrices read row by row (runs of rows for the parts of a fused
 * matrix and the experts of a stack), 1-D tensors held in float32 (gemma's norms with
 * their + 1 when read from transformers' spelling). */
typedef struct lc_infer_layer {
    float *attn_norm;           /* [embd] */
    float *ffn_norm;            /* [embd] */
    float *attn_post_norm;      /* [embd] on the attention's output; NULL when absent */
    float *ffn_post_norm;       /* [embd] on the FFN's output; NULL when absent */
    float *q_norm, *k_norm;     /* [head_dim] per head before RoPE; NULL when absent */
    float *bq, *bk, *bv;        /* [q_dim], [kv_dim], [kv_dim]; NULL when absent */
    lc_infer_mat wq;            /* [q_dim, embd] */
    lc_infer_mat wk, wv;        /* [kv_dim, embd] */
    lc_infer_mat wo;            /* [embd, q_dim] */
    lc_infer_mat gate, up;      /* [ff, embd] (dense) */
    lc_infer_mat down;          /* [embd, ff] (dense) */
    bool moe;                   /* a router and experts instead of gate/up/down */
    lc_infer_mat router;        /* [n_expert, embd] */
    lc_infer_mat *egate, *eup;  /* [n_expert] of [ff_exp, embd] */
    lc_infer_mat *edown;        /* [n_expert] of [embd, ff_exp] */
    bool shexp;                 /* a shared expert beside the routed ones (qwen35moe) */
    lc_infer_mat sgate, sup;    /* [ff_shexp, embd] */
    lc_infer_mat sdown;         /* [embd, ff_shexp] */
    lc_infer_mat sgate_inp;     /* [1, embd]: its weight sigmoid(sgate_inp . x) */
    bool sliding;               /* attends within the window, with the local RoPE */
    /* a Gated-DeltaNet recurrent layer instead of attention (qwen35) */
    bool recurrent;
    lc_infer_mat ssm_qkv;       /* [conv, embd]: q, k, v rows */
    lc_infer_mat ssm_z;         /* [inner, embd] the output gate */
    lc_infer_mat ssm_beta, ssm_alpha;  /* [v_heads, embd] */
    lc_infer_mat ssm_out;       /* [embd, inner] */
    float *ssm_a;               /* [v_heads] -exp(A_log) */
    float *ssm_dt;              /* [v_heads] */
    float *ssm_conv;            /* [conv, kernel] */
    float *ssm_norm;            /* [head_v] */
} lc_infer_layer;

struct lc_infer {
    uint32_t n_layers, embd, n_heads, n_kv_heads, head_dim, ff, vocab;
    uint32_t q_dim, kv_dim;     /* n_heads * head_dim, n_kv_heads * head_dim */
    uint32_t n_expert, n_expert_used, ff_exp;
    uint32_t ff_shexp;          /* the shared expert's width; 0: none */
    bool norm_topk;             /* the chosen experts' weights renormalised */
    float eps;
    float attn_scale;           /* on q . k */
    uint32_t window;            /* the sliding layers' */
    float embd_scale;           /* on the embedding; 1 when none */
    float final_softcap;        /* 0: none */
    lc_act act;
    bool attn_gate;             /* q rows hold each head's query then its output gate */
    /* the recurrent layers' sizes (0: none) */
    uint32_t ssm_nk, ssm_nv;    /* key heads, value heads */
    uint32_t ssm_dk, ssm_dv;    /* their sizes */
    uint32_t ssm_kernel, ssm_conv;  /* convolution width, channels (2 nk dk + nv dv) */
    bool ssm_tiled;             /* value head j reads key head j % nk (GGUF's tiled order),
                                 * else j / (nv / nk) (transformers' grouped order) */
    bool recurrent_layers[LC_ARCH_MAX_LAYERS];
    lc_infer_mat tok_embd;      /* [vocab, embd] */
    lc_infer_mat output;        /* [vocab, embd]; token_embd's when tied */
    float *output_norm;         /* [embd] */
    lc_infer_layer *layers;     /* [n_layers] */
    lc_infer_rope rope;         /* the global layers': rope.inv_freq [rope_dim / 2] */
    lc_infer_rope rope_local;   /* the sliding layers' (own base), when any */
    lc_infer_rope rope_long;    /* longrope's long factors, for sequences past the
                                 * original context; n_rot 0 when none */
    uint32_t long_after;        /* sequences longer than this use rope_long */
    lc_infer_mm mm;             /* per-thread weight rows */
    lc_infer_tap_fn tap;        /* lc_infer_set_tap's; NULL: none */
    void *tap_user;
    uint8_t *raw_row;           /* [tok_embd.row_bytes] one embedding row as stored */
};

#endif
