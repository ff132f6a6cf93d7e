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
    /* gemma4 (infer/infer_gemma4.c): this layer's own attention shape, its KV sharing, its
     * per-layer input, its output scale, the experts beside the dense FFN */
    uint32_t head_dim, n_kv_heads;  /* sliding and full layers differ */
    bool shares_kv;             /* attends to the keys and values an earlier layer kept */
    bool keeps_kv;              /* ... kept from this one (the last of its kind to own) */
    bool v_norm;                /* values RMS-normed per head, no weight */
    float out_scale;            /* on the layer's output; 1 when none */
    lc_infer_mat ple_gate;      /* [ple, embd] */
    lc_infer_mat ple_proj;      /* [embd, ple] */
    float *ple_norm;            /* [embd] */
    float *router_scale;        /* [embd] on the router's normed input */
    float *expert_scale;        /* [n_expert] on each expert's routing weight */
    float *ffn_post_norm_1;     /* [embd] the dense FFN's output */
    float *ffn_pre_norm_2;      /* [embd] the experts' input */
    float *ffn_post_norm_2;     /* [embd] the experts' output */
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
    /* gemma4 (infer/infer_gemma4.c) */
    bool gemma4;
    uint32_t ple;               /* per-layer input width; 0: none */
    uint32_t rot_swa;           /* the sliding layers' rotated dimensions; 0: their head */
    lc_infer_mat ple_embd;      /* [vocab, n_layers * ple] */
    lc_infer_mat ple_model_proj;    /* [n_layers * ple, embd] */
    float *ple_proj_norm;       /* [ple] */
    uint8_t *ple_raw;           /* [ple_embd.row_bytes] */
};

/* ---- shared by infer.c, infer_open.c and infer_gemma4.c (infer_ops.c) ---- */

/* The state of one forward call: one layer's working set for n tokens. */
typedef struct lc_infer_run {
    float *x;           /* [n, embd] the residual stream */
    float *xb;          /* [n, embd] normed input of a block */
    float *proj;        /* [n, embd] a block's output, added to x */
    float *q;           /* [n, q_dim] queries */
    float *k, *v;       /* [n, kv_dim] keys and values of this layer: its KV cache */
    float *att;         /* [n, q_dim] attention output, all heads */
    float *scores;      /* [n] one head's attention weights */
    float *hb, *hb2;    /* [n, ff] gate and up projections (ff_exp for experts) */
    float *route;       /* [n, n_expert] router logits, then probabilities */
    float *xe, *ye;     /* [n, embd] one expert's tokens in, its output */
    int32_t *chosen;    /* [n, n_expert_used] each token's experts */
    float *weight;      /* [n, n_expert_used] ... and their weights */
    size_t *rows;       /* [n] one expert's tokens */
    float *qg;          /* [n, 2 q_dim] gated attention: each head's query then its gate */
    /* the recurrent layer's */
    float *mix;         /* [n, conv] q, k, v channels, then convolved */
    float *z;           /* [n, inner] the output gate */
    float *beta, *decay;    /* [n, v_heads] */
    float *core;        /* [n, inner] the delta rule's output, then gated-normed */
    float *state;       /* [v_heads, dk, dv] one layer's recurrent state */
    float *delta;       /* [dv] scratch */
    /* gemma4's */
    float *pin;         /* [n_layers, n, ple] every layer's per-layer input */
    float *ptmp;        /* [n, n_layers * ple] their context part */
    float *prow;        /* [n_layers * ple] one token's per-layer embedding */
    float *pg;          /* [n, ple] a layer's gated input */
    float *y2;          /* [n, embd] the experts' output beside the dense FFN's */
    float *kept_k[2], *kept_v[2];   /* [n, kv_dim] the kept keys and values of the
                                     * sliding [0] and full [1] layers */
} lc_infer_run;

/* y [n, rows] = x [n, cols] w^T (+ bias), the tap told first */
lc_code lc_infer_mm_tapped(lc_infer *c, const lc_infer_mat *w, const float *bias,
                           const float *x, size_t n, float *y, lc_error *err);
/* xb[t] = rmsnorm(x[t]) * w for every row t < n of `width` (w NULL: no weight) */
void lc_infer_rmsnorm_rows(float *xb, const float *x, const float *w, size_t n,
                           uint32_t width, float eps);
/* out [n, embd] = Wdown (act(Wgate h) * Wup h) for h [n, embd] */
lc_code lc_infer_gated_ffn(lc_infer *c, const lc_infer_mat *gate, const lc_infer_mat *up,
                           const lc_infer_mat *down, const float *h, size_t n, float *hb,
                           float *hb2, float *out, lc_error *err);
/* Token t's experts from the router's logits p [n_expert] (softmax, top-k, renormalised
 * when c->norm_topk). */
void lc_infer_route_token(const lc_infer *c, float *p, int32_t *chosen, float *weight);
/* A 1-D tensor of n elements into a new float32 array plus `add`; NULL t gives NULL. */
lc_code lc_infer_read_vector(const lc_tensor *t, uint64_t n, float add, float **out,
                             lc_error *err);

/* ---- gemma4 (infer_gemma4.c) ---- */

/* Sets every layer's kind, shape and KV sharing from hp (the sliding layers' list, their
 * head and RoPE sizes, the shared-KV count, the per-layer input width), c->q_dim and
 * c->kv_dim to the widest layer's, and opens the top-level per-layer input tensors.
 * top: the model's tensors by role. */
lc_code lc_infer_g4_open(lc_infer *c, const lc_hparams *hp, const lc_tensor *const *top,
                         lc_error *err);
/* Layer l's weights (t: its tensors by role). */
lc_code lc_infer_g4_open_layer(lc_infer *c, const lc_tensor *const *t, uint32_t l,
                               lc_error *err);
/* The two RoPEs: the sliding layers' (their head size, base) and the full layers'
 * proportional one (a GGUF's rope_freqs, else hp->rope_prop_pairs: 1 on the rotated
 * pairs, 1e30 on the others). */
lc_code lc_infer_g4_rope(lc_infer *c, const lc_hparams *hp, const lc_tensor *rope_freqs,
                         lc_error *err);
/* Buffers gemma4 needs beyond the generic ones. */
lc_code lc_infer_g4_run_build(const lc_infer *c, lc_infer_run *s, size_t n, lc_error *err);
void lc_infer_g4_run_free(lc_infer_run *s);
/* Every layer's per-layer input into s->pin, from the tokens and the scaled embedding
 * s->x. */
lc_code lc_infer_g4_inputs(lc_infer *c, const int32_t *tokens, lc_infer_run *s, size_t n,
                           lc_error *err);
/* One layer: attention, FFN (and experts), per-layer input, output scale. */
lc_code lc_infer_g4_layer(lc_infer *c, uint32_t l, lc_infer_run *s, size_t n,
                          lc_error *err);
void lc_infer_g4_close(lc_infer *c);

#endif
