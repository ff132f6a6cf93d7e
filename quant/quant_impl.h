/* quant/quant_impl.h: private to quant/. Shared helpers of every variant (all
 * static inline, so that an ISA-specific translation unit keeps its own copies)
 * and the variant tables dispatch.c chooses from. */
#ifndef LC_QUANT_QUANT_IMPL_H
#define LC_QUANT_QUANT_IMPL_H

#include <stdint.h>
#include <string.h>

#include "libconvert/convert.h"
#include "quant/quant.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "quant/ writes blocks as host structs: a little-endian host is required"
#endif

/* ---- variant tables ---- */
extern const lc_qkernels lc_qk_ref;

/* Each ISA folder's kernels.h declares its kernels and its table (lc_qk_<isa>), and
 * says which CPU features the table needs; the Makefile defines LC_HAVE_<ISA> when the
 * folder is built for this target. */
#ifdef LC_HAVE_AVX2
#include "quant/avx2/kernels.h"
#endif
#ifdef LC_HAVE_AVX512
#include "quant/avx512/kernels.h"
#endif
#ifdef LC_HAVE_NEON
#include "quant/neon/kernels.h"
#endif

/* ---- binary16 conversion ----
 * The project's one converter (libconvert/convert.h, round to nearest even, the same
 * as numpy and ggml on every non-NaN input). Its NaN rule follows numpy; ggml stores a
 * NaN scale as sign|0x7e00, so scales go through lc_q_scale_f16() below.
 * Widening is exact, except that ggml's ggml_compute_fp16_to_fp32 goes through a float
 * multiply, which quiets a signalling NaN (sets bit 22): so do we, for the types that
 * store a scale without multiplying it (Q1_0 writes +-d). */
static inline uint16_t lc_q_f32_to_f16(float f) { return lc_f32_to_f16(f); }
static inline float lc_q_f16_to_f32(uint16_t h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu))
        h |= 0x0200u;                           /* the f16 quiet bit becomes f32's bit 22 */
    return lc_f16_to_f32(h);
}

/* The f16 bits ggml stores for a scale: NaN of either sign becomes sign|0x7e00. */
static inline uint16_t lc_q_scale_f16(float f) {
    uint16_t h = lc_q_f32_to_f16(f);
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
        h = (uint16_t)((h & 0x8000u) | 0x7e00u);
    return h;
}

/* ---- the FP4 types' scales (MXFP4, NVFP4), shared by the reference and every variant ---- */

/* ggml_e8m0_to_fp32_half: 2^(e - 128), by its bits (e = 255 gives 2^127, not NaN). */
static inline float lc_q_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ggml_ue4m3_to_fp32: the unsigned E4M3 value, halved. Bit 7 is ignored; 0 and 0x7f
 * (E4M3's NaN) read as 0. ggml computes ldexpf(m, -9) (e = 0) or ldexpf(1 + m/8, e - 7),
 * times 0.5; every one of those values is exact in binary32, so it is built here from
 * its bits instead (no libm call per scale: NVFP4 has one per 16 values). The unit tests
 * compare the two for all 256 bytes. */
static inline float lc_q_ue4m3_half(uint8_t v) {
    if (v == 0 || v == 0x7f)
        return 0.0f;
    const uint32_t e = (v >> 3) & 0xfu, m = v & 0x7u;
    if (e == 0)
        return (float)m * 0x1p-10f;                  /* m * 2^-9 * 0.5, exact */
    const uint32_t bits = (e + 119u) << 23 | m << 20;   /* (1 + m/8) * 2^(e - 8) */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- float -> small integer, the way ggml's compiled reference does it ----
 * ggml converts with plain C casts ((int8_t)v, (uint8_t)v), which are undefined
 * for NaN and out-of-range values. gcc on x86-64 truncates through a 32-bit
 * cvttss2si, which gives INT32_MIN for NaN and values outside int32, and then
 * keeps the low byte. We spell that out without undefined behaviour, so our
 * bytes match the files llama-quantize writes even for pathological blocks. */
static inline int32_t lc_q_trunc_i32(float v) {
    if (v >= -2147483648.0f && v < 2147483648.0f)
        return (int32_t)v;
    return INT32_MIN;
}
static inline int lc_q_trunc_i8(float v) {      /* (int8_t)v */
    return (int8_t)(uint8_t)((uint32_t)lc_q_trunc_i32(v) & 0xffu);
}
static inline unsigned lc_q_trunc_u8(float v) { /* (uint8_t)v */
    return (uint32_t)lc_q_trunc_i32(v) & 0xffu;
}

/* ggml's nearest_int, the K-quants' rounding (quant/ref_k.c keeps its own copy, the
 * spec; the vector kernels' scalar steps use this one): add 1.5*2^23 and read the
 * mantissa. Ties to even for |v| <= 2^22; beyond, and for NaN, whatever the bits give. */
static inline int lc_q_nearest_int(float v) {
    const float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

#endif
