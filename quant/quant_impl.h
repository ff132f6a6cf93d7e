/* quant/quant_impl.h: private to quant/. Shared helpers of every variant (all
 * static inline, so that an ISA-specific translation unit keeps its own copies)
 * and the variant tables dispatch.c chooses from. */
#ifndef LC_QUANT_QUANT_IMPL_H
#define LC_QUANT_QUANT_IMPL_H

#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "quant/ writes blocks as host structs: a little-endian host is required"
#endif

/* ---- variant tables ---- */
extern const lc_qkernels lc_qk_ref;

/* ---- binary16 conversion ----
 * TODO: replace with libconvert/convert.h (lc_f32_to_f16 / lc_f16_to_f32) once it
 * lands on main. Rounding is to nearest, ties to even, like numpy and ggml.
 * NaN: ggml writes a scale that is NaN as sign|0x7e00 whatever its payload, so the
 * quantizers canonicalize through lc_q_scale_f16() below and keep identity with
 * ggml whichever NaN policy the shared converter picks. */
static inline uint16_t lc_q_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)       /* NaN: quiet, top payload bits kept (numpy keeps sNaN) */
        return (uint16_t)(sign | 0x7e00u | (ax >> 13 & 0x3ffu));
    if (ax >= 0x477ff000u)                      /* >= 65520 rounds to infinity */
        return sign | 0x7c00u;
    if (ax >= 0x38800000u) {                    /* normal half: rebias 127 -> 15 */
        uint32_t r = ax - 0x38000000u;
        r += 0x0fffu + (r >> 13 & 1u);          /* ties to even; a carry bumps the exponent */
        return (uint16_t)(sign | (r >> 13));
    }
    if (ax <= 0x33000000u)                      /* <= 2^-25 rounds to zero (the tie is even) */
        return sign;
    /* Subnormal half: the result is round(|f| * 2^24) in units of 2^-24. */
    const uint32_t e = ax >> 23;                /* 102..112 */
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;            /* 14..24 */
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u)))
        r++;
    return (uint16_t)(sign | r);
}

static inline float lc_q_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = h >> 10 & 0x1fu, m = h & 0x3ffu;
    uint32_t bits;
    if (e == 0) {                               /* zero or subnormal: exact as m * 2^-24 */
        float v = (float)m * 0x1p-24f;
        memcpy(&bits, &v, sizeof bits);
        bits |= sign;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | m << 13;
    } else {
        bits = sign | (e + 112u) << 23 | m << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The f16 bits ggml stores for a scale: NaN of either sign becomes sign|0x7e00. */
static inline uint16_t lc_q_scale_f16(float f) {
    uint16_t h = lc_q_f32_to_f16(f);
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
        h = (uint16_t)((h & 0x8000u) | 0x7e00u);
    return h;
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

#endif
