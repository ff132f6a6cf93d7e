/* infer/blocks.h: the blocks of the forward pass (infer.h), one function each, on float32
 * buffers the caller owns. They never fail and never allocate; infer.c strings them
 * together and the unit tests check each against hand-computed values. Buffers may not
 * overlap unless a contract says so. */
#ifndef LC_INFER_BLOCKS_H
#define LC_INFER_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"

/* out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i] for i < n (the mean in double, as
 * transformers' float32 mean is close to exact for the widths models use). out may be x;
 * w NULL: no weight (gemma4's value norm). */
void lc_infer_rmsnorm(float *out, const float *x, const float *w, size_t n, float eps);

/* Softmax of x[0..n) in place: exp(x - max) / sum (the sum in double). */
void lc_infer_softmax(float *x, size_t n);

/* out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). out may be gate or up. */
void lc_infer_swiglu(float *out, const float *gate, const float *up, size_t n);

/* out[i] = gelu_tanh(gate[i]) * up[i] (transformers' gelu_pytorch_tanh:
 * 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3)))). out may be gate or up. */
void lc_infer_geglu(float *out, const float *gate, const float *up, size_t n);

/* x[i] = cap * tanh(x[i] / cap) (gemma's logit softcapping). */
void lc_infer_softcap(float *x, size_t n, float cap);

/* The rotation RoPE applies to every head at every position: inv_freq [head_dim / 2]
 * (pair i turns by pos * inv_freq[i]) and a factor on cos and sin (1 unless yarn).
 * From hp: head_dim, rope_theta, rope_scaling and its factor, original context (yarn)
 * or the llama3 per-pair factors in freq_factors [head_dim / 2] (divide inv_freq; NULL:
 * none), computed in float32 as transformers does. */
typedef struct lc_infer_rope {
    lc_rope_style style;    /* which dimensions form a pair (arch.h) */
    uint32_t head_dim;
    uint32_t n_rot;         /* the first n_rot dimensions of a head rotate (rope_dim) */
    float   *inv_freq;      /* [n_rot / 2], owned by the caller */
    float    mscale;        /* on cos and sin */
} lc_infer_rope;

/* Fills r->inv_freq (rope_dim / 2 floats, allocated by the caller) and r->mscale, over
 * hp->rope_dim dimensions (head_dim when 0). longrope divides by its factors (passed in
 * freq_factors: short or long) and scales cos and sin by hp->rope_attn_factor. */
void lc_infer_rope_init(lc_infer_rope *r, const lc_hparams *hp, const float *freq_factors);

/* Rotates x [n_heads, head_dim] (one position's q or k) in place for position pos.
 * NORM: pairs (2i, 2i+1); NEOX: pairs (i, i + n_rot / 2); dimensions from n_rot on
 * are left alone. */
void lc_infer_rope_apply(const lc_infer_rope *r, float *x, uint32_t n_heads, uint32_t pos);

/* Causal grouped-query attention of the query at position t:
 * out [n_heads, head_dim] = sum_{s <= t} softmax_s(q_h . k_s,g / sqrt(head_dim)) v_s,g
 * for each head h, with g = h / (n_heads / n_kv_heads) its key/value head.
 * q [n_heads, head_dim]; k, v [t + 1, n_kv_heads * head_dim] (positions 0..t);
 * scores [t + 1] scratch. */
void lc_infer_attention(float *out, const float *q, const float *k, const float *v, size_t t,
                        uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim,
                        float *scores);

/* The same with the scores scaled by `scale` instead of 1 / sqrt(head_dim), and, when
 * window > 0, only positions s with t - s < window seen (a sliding-window layer). */
void lc_infer_attention_ex(float *out, const float *q, const float *k, const float *v,
                           size_t t, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim,
                           float scale, size_t window, float *scores);

/* ---- the Gated-DeltaNet recurrent layer (qwen35) ---- */

/* x [n, channels] in place: the causal depthwise convolution of each channel over the
 * sequence (w [channels, kernel], w[kernel - 1] on the position itself, earlier
 * positions before the first read as 0), then SiLU. */
void lc_infer_conv_silu(float *x, size_t n, uint32_t channels, const float *w,
                        uint32_t kernel);

/* x[0..n) in place divided by sqrt(sum(x^2) + eps) (the sum in double). */
void lc_infer_l2norm(float *x, size_t n, float eps);

/* log(1 + exp(x)), x itself above 20 (torch's threshold). */
float lc_infer_softplus(float x);

/* One token of one value head through the gated delta rule: state [dk, dv] decays by
 * `decay`, then learns k -> v with strength beta (state += k (beta (v - state^T k))^T);
 * out [dv] = state^T q. scratch [dv]. */
void lc_infer_delta_step(float *state, const float *q, const float *k, const float *v,
                         float decay, float beta, uint32_t dk, uint32_t dv, float *out,
                         float *scratch);

/* out = rmsnorm(x) * w * silu(z) over n values (the recurrent layer's gated norm). out
 * may be x. */
void lc_infer_gated_rmsnorm(float *out, const float *x, const float *w, const float *z,
                            size_t n, float eps);

#endif
