/* jobs/model_verify_expect.c: what a conversion to each type may change, and the
 * thresholds model-verify holds a model of that type to.
 *
 * Per tensor (hard bounds: a correct conversion can never exceed them):
 *   - exact: DST's type holds every SRC value (the same type; F32 or F64 from F16,
 *     BF16, F8 or any block type, which dequantize in float32): not one bit may differ;
 *   - a narrower float: round to nearest, so |err| <= |x| 2^-(mantissa+1), plus half
 *     the type's smallest subnormal for values in its subnormal range;
 *   - a block type: max |err| over a block <= rel x max |x| of that block + abs. rel is
 *     the worst we measured with quant/'s reference quantizer (bit-identical to ggml's)
 *     over 2^20..2^21 values of eighteen distributions (normal, uniform, Laplace,
 *     Student t2, 1% outliers, sparse, one-signed, bimodal, near-constant, sub-blocks
 *     with scales 1e-3..1 apart, offsets, ramps, one spike per 256), with a margin:
 *     Q8_0 0.0046 -> 0.006, Q4_0 0.1254 -> 0.14, Q4_1 0.0676 -> 0.08, Q5_0 0.0629 ->
 *     0.075, Q5_1 0.0335 -> 0.045, Q4_K 0.1213 -> 0.2 (its scale search may clip),
 *     Q6_K 0.0536 -> 0.08 (a spike makes the other sub-blocks' 8-bit scales coarse),
 *     Q5_K 0.0644 -> 0.1, Q3_K 0.2661 -> 0.4, Q2_K 0.626 -> 0.9 (four levels: a sparse
 *     block loses most of its small values; only a gross corruption shows).
 *     abs covers scales stored as f16 subnormals (blocks whose largest value is below
 *     ~1e-3): the levels a block spans x 2^-24, doubled.
 *   A corrupted block is off by a sizeable part of its largest value (or is NaN), far
 *   past these bounds. The SNR range is only a mark: what the same distributions gave
 *   (normal, uniform, Laplace, t2, outliers), widened; real tensors may fall outside.
 *
 * Per model (the logits and hidden states), by the lossiest type among its matrices:
 *   see lc_vf_limits_for and README "model-verify" for how each number was chosen. */
#include "jobs/model_verify_impl.h"

#include <math.h>

#include "quant/quant.h"

typedef struct qbound {
    lc_dtype dt;
    double rel, abs, snr_lo, snr_hi;
    int rank;
} qbound;

/* Lossiest last. */
static const qbound QB[] = {
    { LC_DT_Q8_0, 0.006, 8e-6,   36, 56, 4 },
    { LC_DT_Q6_K, 0.08,  2.5e-4, 28, 42, 5 },
    { LC_DT_Q5_K, 0.1,   1.2e-4, 24, 34, 6 },
    { LC_DT_Q5_1, 0.045, 2e-6,   23, 37, 6 },
    { LC_DT_Q5_0, 0.075, 1e-6,   21, 34, 7 },
    { LC_DT_Q4_K, 0.2,   1e-4,   19, 31, 8 },
    { LC_DT_Q4_1, 0.08,  1e-6,   17, 29, 9 },
    { LC_DT_Q4_0, 0.14,  1e-6,   17, 28, 10 },
    { LC_DT_Q3_K, 0.4,   1e-5,   13, 24, 11 },
    { LC_DT_Q2_K, 0.9,   1e-5,   6,  16, 12 },
};

/* Types quant/ reads but cannot write (IQ*, TQ*, MXFP4, ...): no quantizer to measure a
 * per-block bound with, so only errors past a block's largest value (or NaN) fail a
 * block, which an all-zero block always meets. The tensor as a whole is held to a floor
 * instead: what llama.cpp's own quantizer (ggml_quantize_chunk of the pinned tree, no
 * importance matrix or a uniform one where the type requires one) gives over 2^18
 * values of five distributions (normal, Laplace, Student t2, 1 % outliers x20, uniform;
 * three seeds), worst case (scripts/llama/verify_floor.py):
 *   type      rel RMSE  cosine        type      rel RMSE  cosine
 *   IQ4_NL    0.120     0.9928        IQ2_XS    0.668     0.843
 *   IQ4_XS    0.122     0.9926        IQ2_S     0.727     0.828
 *   NVFP4     0.133     0.9917        IQ2_XXS   0.896     0.751
 *   MXFP4     0.170     0.9860        IQ1_M     0.665     0.856
 *   IQ3_S     0.346     0.9496        IQ1_S     0.757     0.806
 *   IQ3_XXS   0.544     0.883         TQ1_0/TQ2_0 0.834   0.632 (non-ternary values)
 *   Q8_1/Q8_K as Q8_0: 0.011, 0.99994 Q2_0      0.726     0.745
 *                                     Q1_0      0.943     0.332
 * The floor: cosine >= the larger of half the worst cosine and 1 - 4 (1 - cosine), and
 * relative RMSE <= twice the worst where that is below 1 (else not judged). A zeroed
 * tensor (cosine 0, relative RMSE 1) or a scrambled one (cosine ~ 1/sqrt(n), relative
 * RMSE ~ 1.4) misses the cosine floor by orders of magnitude: 1 - cosine is 1 against
 * 0.03 for IQ4_*, the cosine 0.002 against 0.17 for Q1_0. */
#define DEQUANT_ONLY_RANK 13

typedef struct tfloor {
    lc_dtype dt;
    double cos_min, rel_rmse_max;
} tfloor;

static const tfloor TF[] = {
    { LC_DT_Q8_1,    0.9997, 0.022 },
    { LC_DT_Q8_K,    0.9997, 0.022 },
    { LC_DT_IQ4_NL,  0.97,   0.24 },
    { LC_DT_IQ4_XS,  0.97,   0.25 },
    { LC_DT_NVFP4,   0.96,   0.27 },
    { LC_DT_MXFP4,   0.94,   0.34 },
    { LC_DT_IQ3_S,   0.8,    0.7 },
    { LC_DT_IQ3_XXS, 0.53,   INFINITY },
    { LC_DT_IQ2_XS,  0.42,   INFINITY },
    { LC_DT_IQ2_S,   0.41,   INFINITY },
    { LC_DT_IQ2_XXS, 0.37,   INFINITY },
    { LC_DT_IQ1_M,   0.43,   INFINITY },
    { LC_DT_IQ1_S,   0.40,   INFINITY },
    { LC_DT_TQ1_0,   0.31,   INFINITY },
    { LC_DT_TQ2_0,   0.31,   INFINITY },
    { LC_DT_Q2_0,    0.37,   INFINITY },
    { LC_DT_Q1_0,    0.16,   INFINITY },
};
/* A read-only type not in the list: the loosest floor. */
#define TF_DEFAULT_COS 0.16

static const qbound *qb(lc_dtype dt) {
    for (size_t i = 0; i < sizeof QB / sizeof *QB; i++)
        if (QB[i].dt == dt)
            return &QB[i];
    return NULL;
}

/* Round-to-nearest into a plain float type: relative half-ulp, absolute half of the
 * smallest subnormal, the SNR of that rounding on model-like weights (measured:
 * F16 73.7 dB, BF16 55.6 dB on normal and Laplace values). */
static bool rounding(lc_dtype to, double *rel, double *abs, double *lo, double *hi) {
    switch (to) {
    case LC_DT_F64:     *rel = 0x1p-53; *abs = 0x1p-1074; *lo = 300; *hi = INFINITY; return true;
    case LC_DT_F32:     *rel = 0x1p-24; *abs = 0x1p-150;  *lo = 140; *hi = INFINITY; return true;
    case LC_DT_F16:     *rel = 0x1p-11; *abs = 0x1p-25;   *lo = 68;  *hi = 82;  return true;
    case LC_DT_BF16:    *rel = 0x1p-8;  *abs = 0x1p-134;  *lo = 50;  *hi = 63;  return true;
    case LC_DT_F8_E4M3: *rel = 0x1p-4;  *abs = 0x1p-10;   *lo = 25;  *hi = 35;  return true;
    case LC_DT_F8_E5M2: *rel = 0x1p-3;  *abs = 0x1p-17;   *lo = 18;  *hi = 30;  return true;
    case LC_DT_F8_E4M3FNUZ: *rel = 0x1p-4; *abs = 0x1p-11; *lo = 25; *hi = 35;  return true;
    case LC_DT_F8_E5M2FNUZ: *rel = 0x1p-3; *abs = 0x1p-18; *lo = 18; *hi = 30;  return true;
    default:            return false;
    }
}

/* Bits of precision a float type keeps (for "does `to` hold every `from` value"). */
static int mantissa(lc_dtype t) {
    switch (t) {
    case LC_DT_F64:  return 53;
    case LC_DT_F32:  return 24;
    case LC_DT_F16:  return 11;
    case LC_DT_BF16: return 8;
    case LC_DT_F8_E4M3: case LC_DT_F8_E4M3FNUZ: return 4;
    case LC_DT_F8_E5M2: case LC_DT_F8_E5M2FNUZ: return 3;
    case LC_DT_F8_E8M0: return 1;
    default:         return 0;
    }
}

static bool holds(lc_dtype from, lc_dtype to) {
    if (from == to)
        return true;
    if (to == LC_DT_F32 || to == LC_DT_F64) {
        if (lc_dtype_is_quant(from))
            return true;                        /* dequantized in float32 */
        if (mantissa(from) && mantissa(from) <= mantissa(to))
            return true;                        /* F16, BF16, F8 widen exactly */
    }
    return false;
}

lc_vf_expect lc_vf_expect_pair(lc_dtype from, lc_dtype to) {
    lc_vf_expect e = { .cls = LC_DT_INVALID, .block = 1, .snr_lo = INFINITY,
                       .snr_hi = INFINITY, .cos_min = -INFINITY, .rel_rmse_max = INFINITY };
    if (holds(from, to))
        return e;
    const qbound *q = qb(to);
    if (q) {
        const qbound *f = qb(from);
        e.cls = to;
        e.block = lc_dtype_get(to)->block_size;
        e.rel = q->rel + (f ? f->rel : 0);     /* requantized: both roundings */
        e.abs = q->abs + (f ? f->abs : 0);
        e.snr_lo = q->snr_lo;
        e.snr_hi = q->snr_hi;
        return e;
    }
    if (lc_dtype_is_quant(to)) {
        e.cls = to;
        e.block = lc_dtype_get(to)->block_size;
        e.rel = 1.0;
        e.snr_lo = -INFINITY;
        e.cos_min = TF_DEFAULT_COS;
        for (size_t i = 0; i < sizeof TF / sizeof *TF; i++)
            if (TF[i].dt == to) {
                e.cos_min = TF[i].cos_min;
                e.rel_rmse_max = TF[i].rel_rmse_max;
            }
        /* SRC itself quantized: its own error adds (relative RMSE at its SNR's low end,
         * 1 - cosine about half its square), doubled. */
        const qbound *f = qb(from);
        if (f) {
            const double r = pow(10, -f->snr_lo / 20);
            e.rel_rmse_max += 2 * r;
            e.cos_min -= r * r;
        }
        return e;
    }
    if (rounding(to, &e.rel, &e.abs, &e.snr_lo, &e.snr_hi)) {
        e.cls = to;
        return e;
    }
    /* Integers and anything else: only exact equality is known to be right. */
    return e;
}

int lc_vf_class_rank(lc_dtype cls) {
    if (cls == LC_DT_INVALID)
        return 0;
    const qbound *q = qb(cls);
    if (q)
        return q->rank;
    switch (cls) {
    case LC_DT_F64: case LC_DT_F32: return 1;
    case LC_DT_F16: return 2;
    case LC_DT_BF16: return 3;
    default: return lc_dtype_is_quant(cls) ? DEQUANT_ONLY_RANK : 11;
    }
}

const char *lc_vf_class_name(lc_dtype cls) {
    return cls == LC_DT_INVALID ? "exact" : lc_dtype_name(cls);
}

/* The per-model thresholds (README "model-verify" tells how each was chosen). KL is the
 * criterion for every class: llama.cpp's published llama-perplexity --kl-divergence
 * means on Llama-3-8B (wikitext-2) are Q8_0 0.0014, Q6_K 0.0055, Q4_K_M 0.031, Q2_K
 * about 0.4; the fixtures (tiny random models) and a generated 256-wide one, over every
 * type and mix gguf-quantize writes, measured at most Q8_0 1.7e-4, Q6_K 0.0018, Q5_*
 * 0.014, Q4_K 0.022, Q4_0/Q4_1 0.039, Q3_K 0.11, Q2_K 0.32 (p99: 5e-4, 0.003, 0.044,
 * 0.034, 0.09, 0.16, 0.43). Each limit is several times the larger of the two, since
 * small models lose more to quantization, while a broken tensor or key moves KL by
 * orders of magnitude. Float classes must also agree to rounding in NMSE (measured:
 * exact 1.5e-13, F16 7.5e-7, BF16 8.3e-5). The hidden-state limit is the relative
 * difference after a layer (measured at most: exact 4e-7, F16 8e-4, BF16 8.6e-3, Q8_0
 * 0.033, Q6_K 0.071, Q5_* 0.24, Q4_K 0.25, Q4_* 0.48, Q3_K 0.56, Q2_K 1.01 on these
 * few-layer, narrow models, where every weight's rounding shows). NAN: not a criterion
 * (quantized logits' NMSE depends on how flat the model's logits are; same-top, which
 * flips on near-ties, is reported only). */
lc_vf_limits lc_vf_limits_for(lc_dtype cls) {
    switch (lc_vf_class_rank(cls)) {
    case 0: case 1:
             return (lc_vf_limits){ 1e-6, 1e-5, 1e-8, 1e-4 };    /* float rounding */
    case 2:  return (lc_vf_limits){ 1e-4, 1e-3, 1e-4, 0.01 };    /* F16 */
    case 3:  return (lc_vf_limits){ 1e-3, 1e-2, 1e-3, 0.05 };    /* BF16 */
    case 4:  return (lc_vf_limits){ 0.01, 0.1,  NAN,  0.15 };    /* Q8_0 */
    case 5:  return (lc_vf_limits){ 0.03, 0.3,  NAN,  0.3 };     /* Q6_K */
    case 6: case 7:
             return (lc_vf_limits){ 0.06, 0.6,  NAN,  0.6 };     /* Q5_K, Q5_1, Q5_0 */
    case 8:  return (lc_vf_limits){ 0.12, 1.2,  NAN,  0.8 };     /* Q4_K */
    case 9: case 10:
             return (lc_vf_limits){ 0.2,  2.0,  NAN,  1.0 };     /* Q4_1, Q4_0 */
    case 11: return (lc_vf_limits){ 0.4,  4.0,  NAN,  1.5 };     /* Q3_K */
    default: return (lc_vf_limits){ 1.2,  12.0, NAN,  3.0 };     /* Q2_K, dequantize-only */
    }
}
