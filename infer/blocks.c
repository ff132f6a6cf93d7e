/* infer/blocks.c: the blocks of the forward pass (blocks.h). Plain loops in the order
 * transformers' float32 modules compute, so that each can be read beside them. */
#include "infer/blocks.h"

#include <math.h>

/* ---- normalisation and activations ---- */

void lc_infer_rmsnorm(float *out, const float *x, const float *w, size_t n, float eps) {
    double ss = 0;                                      /* sum of squares */
    for (size_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    /* transformers: x * rsqrt(mean + eps), then weight * that, all float32 */
    const float inv = 1.0f / sqrtf((float)(ss / (double)n) + eps);
    for (size_t i = 0; i < n; i++)
        out[i] = w ? w[i] * (x[i] * inv) : x[i] * inv;
}

void lc_infer_softmax(float *x, size_t n) {
    float max = x[0];
    for (size_t i = 1; i < n; i++)
        max = x[i] > max ? x[i] : max;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (size_t i = 0; i < n; i++)
        x[i] *= inv;
}

void lc_infer_swiglu(float *out, const float *gate, const float *up, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void lc_infer_geglu(float *out, const float *gate, const float *up, size_t n) {
    /* torch's GeluType::Tanh kernel, float32: kBeta = sqrt(2) * (2 / sqrt(pi)) * 0.5 */
    const float beta = (float)(1.4142135623730951 * 1.1283791670955126 * 0.5);
    const float kappa = 0.044715f;
    for (size_t i = 0; i < n; i++) {
        const float g = gate[i];
        const float inner = beta * (g + kappa * g * g * g);
        out[i] = 0.5f * g * (1.0f + tanhf(inner)) * up[i];
    }
}

void lc_infer_softcap(float *x, size_t n, float cap) {
    for (size_t i = 0; i < n; i++)
        x[i] = tanhf(x[i] / cap) * cap;
}

/* ---- rotary embeddings ---- */

/* yarn's correction dimension: the pair index whose wavelength turns `rot` times in
 * the original context (transformers' find_correction_dim, llama.cpp's
 * ggml_rope_yarn_corr_dim). */
static double yarn_corr_dim(double rot, double dim, double base, double orig_ctx) {
    return dim * log(orig_ctx / (rot * 2 * 3.141592653589793)) / (2 * log(base));
}

void lc_infer_rope_init(lc_infer_rope *r, const lc_hparams *hp, const float *freq_factors) {
    const uint32_t n_rot = hp->rope_dim ? hp->rope_dim : hp->head_dim, half = n_rot / 2;
    const float base = (float)hp->rope_theta, dim = (float)n_rot;
    const float factor = hp->rope_scaling_factor > 0 ? (float)hp->rope_scaling_factor : 1.0f;
    r->head_dim = hp->head_dim;
    r->n_rot = n_rot;
    r->mscale = hp->rope_scaling == LC_ROPE_SCALING_LONGROPE && hp->rope_attn_factor > 0
              ? (float)hp->rope_attn_factor : 1.0f;
    double lo = 0, hi = 0;                              /* yarn's ramp, in pairs */
    if (hp->rope_scaling == LC_ROPE_SCALING_YARN) {
        const double orig = hp->rope_scaling_orig_ctx ? hp->rope_scaling_orig_ctx
                                                      : hp->context_length;
        lo = floor(yarn_corr_dim(32, hp->head_dim, hp->rope_theta, orig));   /* beta_fast */
        hi = ceil(yarn_corr_dim(1, hp->head_dim, hp->rope_theta, orig));     /* beta_slow */
        lo = lo > 0 ? lo : 0;
        hi = hi < hp->head_dim - 1 ? hi : hp->head_dim - 1;
        if (lo == hi)
            hi += 0.001;                                /* transformers' "singularity" */
        if (factor > 1)
            r->mscale = (float)(0.1 * log(factor) + 1.0);
    }
    for (uint32_t i = 0; i < half; i++) {
        /* transformers: 1 / base ** (arange(0, dim, 2).float() / dim), float32 */
        const float pos_freq = powf(base, (float)(2 * i) / dim);
        float f = 1.0f / pos_freq;
        switch (hp->rope_scaling) {
        case LC_ROPE_SCALING_LINEAR:
            f = f / factor;
            break;
        case LC_ROPE_SCALING_YARN: {
            /* extrapolation weight: 1 below the ramp (fast pairs kept), 0 above it */
            float ramp = (float)(((double)i - lo) / (hi - lo));
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            const float extra = 1.0f - ramp;
            const float interp = 1.0f / (factor * pos_freq);
            f = interp * (1.0f - extra) + f * extra;
            break;
        }
        default:
            break;
        }
        if (freq_factors)
            f = f / freq_factors[i];
        r->inv_freq[i] = f;
    }
}

void lc_infer_rope_apply(const lc_infer_rope *r, float *x, uint32_t n_heads, uint32_t pos) {
    const uint32_t hd = r->head_dim, half = (r->n_rot ? r->n_rot : hd) / 2;
    for (uint32_t i = 0; i < half; i++) {
        const float angle = (float)pos * r->inv_freq[i];     /* float32, as transformers */
        const float c = cosf(angle) * r->mscale, s = sinf(angle) * r->mscale;
        /* NORM rotates (2i, 2i+1); NEOX rotates (i, i + half) */
        const uint32_t a = r->style == LC_ROPE_NORM ? 2 * i : i;
        const uint32_t b = r->style == LC_ROPE_NORM ? 2 * i + 1 : i + half;
        for (uint32_t h = 0; h < n_heads; h++) {
            float *head = x + (size_t)h * hd;
            const float x0 = head[a], x1 = head[b];
            head[a] = x0 * c - x1 * s;
            head[b] = x1 * c + x0 * s;
        }
    }
}

/* ---- attention ---- */

void lc_infer_attention(float *out, const float *q, const float *k, const float *v, size_t t,
                        uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim,
                        float *scores) {
    lc_infer_attention_ex(out, q, k, v, t, n_heads, n_kv_heads, head_dim,
                          1.0f / sqrtf((float)head_dim), 0, scores);
}

void lc_infer_attention_ex(float *out, const float *q, const float *k, const float *v,
                           size_t t, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim,
                           float scale, size_t window, float *scores) {
    const size_t kv_dim = (size_t)n_kv_heads * head_dim;
    const uint32_t group = n_heads / n_kv_heads;        /* query heads per kv head */
    const size_t s0 = window && t + 1 > window ? t + 1 - window : 0;   /* first seen */
    const size_t n = t + 1 - s0;
    for (uint32_t h = 0; h < n_heads; h++) {
        const float *qh = q + (size_t)h * head_dim;     /* [head_dim] */
        const size_t off = (size_t)(h / group) * head_dim;
        for (size_t s = s0; s <= t; s++) {              /* causal: positions s0..t */
            const float *ks = k + s * kv_dim + off;     /* [head_dim] */
            float dot = 0;
            for (uint32_t i = 0; i < head_dim; i++)
                dot += qh[i] * ks[i];
            scores[s - s0] = dot * scale;
        }
        lc_infer_softmax(scores, n);
        float *oh = out + (size_t)h * head_dim;         /* [head_dim] */
        for (uint32_t i = 0; i < head_dim; i++)
            oh[i] = 0;
        for (size_t s = s0; s <= t; s++) {
            const float *vs = v + s * kv_dim + off;     /* [head_dim] */
            for (uint32_t i = 0; i < head_dim; i++)
                oh[i] += scores[s - s0] * vs[i];
        }
    }
}

/* ---- the Gated-DeltaNet recurrent layer ---- */

void lc_infer_conv_silu(float *x, size_t n, uint32_t channels, const float *w,
                        uint32_t kernel) {
    /* from the last position back, so every input a position reads is still unchanged */
    for (size_t t = n; t-- > 0;) {
        float *xt = x + t * channels;
        for (uint32_t ch = 0; ch < channels; ch++) {
            const float *wc = w + (size_t)ch * kernel;
            double sum = 0;
            for (uint32_t j = 0; j < kernel; j++) {
                const size_t back = kernel - 1 - j;     /* w[j] reads position t - back */
                if (back <= t)
                    sum += (double)wc[j] * x[(t - back) * channels + ch];
            }
            const float acc = (float)sum;
            xt[ch] = acc / (1.0f + expf(-acc));
        }
    }
}

void lc_infer_l2norm(float *x, size_t n, float eps) {
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    const float inv = 1.0f / sqrtf((float)ss + eps);
    for (size_t i = 0; i < n; i++)
        x[i] *= inv;
}

float lc_infer_softplus(float x) {
    /* torch's softplus (beta 1, threshold 20): x itself past the threshold */
    return x > 20.0f ? x : log1pf(expf(x));
}

void lc_infer_delta_step(float *state, const float *q, const float *k, const float *v,
                         float decay, float beta, uint32_t dk, uint32_t dv, float *out,
                         float *scratch) {
    /* state [dk, dv]: S *= decay; the value S predicts for k, S^T k, moved toward v by
     * beta: S += k (beta (v - S^T k))^T; the output S^T q */
    for (size_t i = 0; i < (size_t)dk * dv; i++)
        state[i] *= decay;
    for (uint32_t m = 0; m < dv; m++) {
        double mem = 0;                     /* sums in double, as the other blocks' */
        for (uint32_t i = 0; i < dk; i++)
            mem += (double)state[(size_t)i * dv + m] * k[i];
        scratch[m] = (v[m] - (float)mem) * beta;
    }
    for (uint32_t i = 0; i < dk; i++)
        for (uint32_t m = 0; m < dv; m++)
            state[(size_t)i * dv + m] += k[i] * scratch[m];
    for (uint32_t m = 0; m < dv; m++) {
        double o = 0;
        for (uint32_t i = 0; i < dk; i++)
            o += (double)state[(size_t)i * dv + m] * q[i];
        out[m] = (float)o;
    }
}

void lc_infer_gated_rmsnorm(float *out, const float *x, const float *w, const float *z,
                            size_t n, float eps) {
    lc_infer_rmsnorm(out, x, w, n, eps);
    for (size_t i = 0; i < n; i++)
        out[i] *= z[i] / (1.0f + expf(-z[i]));
}
