/* quant/cuda/block_ops.h: the CUDA back end's arithmetic, one block (or one element)
 * at a time, in __host__ __device__ functions: what every kernel of quant/cuda/kernels.cu
 * runs on the device, and what quant/cuda/emulate.c and tests/cuda/ run on the host.
 * Plain C11 or CUDA C++ (LC_HD is __host__ __device__ under nvcc, nothing in C); block
 * layouts are quant/blocks.h's, pinned there on both sides.
 *
 * The spec is the scalar reference (quant/ref.c, quant/ref_k.c, libconvert/convert.h):
 * every function below is a port of one of them, operation for operation, in the same
 * order, with the same constants, comparisons, loop bounds and integer casts. Nothing
 * here may be "improved" unless the reference changes first.
 *
 * Why the device computes the reference's bytes (and what each rule rests on):
 *  1. Rounding. nvcc builds kernels.cu with -fmad=false -prec-div=true -prec-sqrt=true
 *     -ftz=false and no fast math, so every + - * / sqrt below is one IEEE binary32
 *     operation rounded to nearest even (PTX add.rn/sub.rn/mul.rn/div.rn/sqrt.rn, which
 *     ptxas may not fuse or approximate), subnormals kept: the x86-64 SSE arithmetic the
 *     reference runs on. scripts/check-ptx.py checks the PTX for it (no fma, no .ftz, no
 *     .approx, every f32 add/sub/mul with .rn).
 *  2. Order. Sums are sequential, as written; without fast math neither nvcc nor gcc
 *     reassociates them.
 *  3. NaN bits. A GPU returns one canonical NaN (0x7fffffff) from every operation whose
 *     result is NaN; x86 returns the first NaN operand, quieted, or the default NaN
 *     0xffc00000 for an invalid operation (inf - inf, 0 * inf, 0 / 0, sqrt(-1)). The
 *     reference's bytes depend on those bits: nearest_int reads a NaN's mantissa (a
 *     sub-block of subnormals gives iscale = inf and inf * 0 = NaN from finite input),
 *     a scale keeps a NaN's sign. So every float operation goes through lc_cu_add,
 *     lc_cu_sub, lc_cu_mul, lc_cu_div and lc_cu_sqrt, which on the device (and on the
 *     host under LC_CU_NANFIX, which tests/cuda/ uses to prove the rule) replace a NaN
 *     result by the one x86 gives, computed from the operands alone; absolute value and
 *     negation are sign-bit operations in inline PTX (PTX abs.f32/neg.f32 need not keep
 *     a payload, and the compiler makes them from plain C).
 *     One case is not the hardware's but the compiler's: when both operands are NaNs
 *     with different bits, x86 returns the one the compiler put first, and gcc's build
 *     of the reference picks differently from one loop to the next (even from one
 *     element to the next of a partly vectorised sum); these functions return the left
 *     operand as written. So a block whose input holds a NaN beside a NaN of other bits,
 *     or beside a value that makes the default NaN (an infinity; an overflow or
 *     underflow of a square, cube or reciprocal), may get other bytes than the gcc
 *     build, as a clang build of the reference may (quant/ref.c "Non-finite inputs").
 *     gguf-quantize and safetensors2gguf refuse NaN and infinite inputs, and every
 *     other input, the default NaN included, gives the reference's bytes.
 *  4. Rounding to integers. roundf is lc_cu_roundf (exact integer steps, no library
 *     call); float -> int conversions go through lc_cu_trunc_i32, defined for NaN and
 *     out-of-range values as gcc's x86-64 cvttss2si is (quant/quant_impl.h); nearest_int
 *     reads the bits of v + 1.5 * 2^23 as ggml does.
 *  5. Widening and narrowing between f32, f16 and bf16 are integer operations plus one
 *     exact float addition, as in libconvert/convert.h.
 *
 * Each kernel of kernels.cu is a grid-stride loop over items around one *_item function
 * below (an item is a block for the quantized types, an element for f16/bf16), so the
 * host emulation (quant/cuda/emulate.c) runs exactly the code the device runs, item by
 * item. LC_CU_OPS lists them. */
#ifndef LC_QUANT_CUDA_BLOCK_OPS_H
#define LC_QUANT_CUDA_BLOCK_OPS_H

#include <stdbool.h>
#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <math.h>
#include <string.h>
#endif

#include "quant/blocks.h"
#include "quant/types.h"

#ifdef __CUDACC__
#define LC_HD __host__ __device__
#else
#define LC_HD
#endif
#define LC_CU static inline LC_HD

/* 1 where NaN results must be rewritten to x86's (the device; the host under
 * LC_CU_NANFIX); 0 where the hardware is x86's already. */
#if defined(__CUDA_ARCH__) || defined(LC_CU_NANFIX)
#define LC_CU_FIX_NAN 1
#else
#define LC_CU_FIX_NAN 0
#endif

/* ---- bits ---- */

LC_CU uint32_t lc_cu_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

LC_CU float lc_cu_float(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

LC_CU bool lc_cu_isnan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* ---- float operations with x86's results (rule 3 above) ---- */

/* The NaN an x86 SSE scalar operation returns when its result is NaN: the first NaN
 * operand with its quiet bit set, else the default NaN. */
LC_CU float lc_cu_x86_nan(float a, float b) {
    const uint32_t ua = lc_cu_bits(a), ub = lc_cu_bits(b);
    return lc_cu_float(lc_cu_isnan_bits(ua) ? ua | 0x00400000u :
                       lc_cu_isnan_bits(ub) ? ub | 0x00400000u : 0xffc00000u);
}

LC_CU float lc_cu_fix(float r, float a, float b) {
#if LC_CU_FIX_NAN
    return r != r ? lc_cu_x86_nan(a, b) : r;
#else
    (void)a;
    (void)b;
    return r;
#endif
}

LC_CU float lc_cu_add(float a, float b) { return lc_cu_fix(a + b, a, b); }
LC_CU float lc_cu_sub(float a, float b) { return lc_cu_fix(a - b, a, b); }
LC_CU float lc_cu_mul(float a, float b) { return lc_cu_fix(a * b, a, b); }
LC_CU float lc_cu_div(float a, float b) { return lc_cu_fix(a / b, a, b); }
LC_CU float lc_cu_sqrt(float a) { return lc_cu_fix(sqrtf(a), a, a); }
/* Sign-bit operations, as x86's andps/xorps: a NaN keeps its payload. On the device in
 * PTX of their own, because the compiler turns the plain C for them into abs.f32 and
 * neg.f32 (it did for sm_121), which PTX allows to change a NaN's payload. */
LC_CU float lc_cu_abs(float a) {
#ifdef __CUDA_ARCH__
    unsigned r;
    asm("and.b32 %0, %1, 0x7fffffff;" : "=r"(r) : "r"(__float_as_uint(a)));
    return __uint_as_float(r);
#else
    return lc_cu_float(lc_cu_bits(a) & 0x7fffffffu);
#endif
}
LC_CU float lc_cu_neg(float a) {
#ifdef __CUDA_ARCH__
    unsigned r;
    asm("xor.b32 %0, %1, 0x80000000;" : "=r"(r) : "r"(__float_as_uint(a)));
    return __uint_as_float(r);
#else
    return lc_cu_float(lc_cu_bits(a) ^ 0x80000000u);
#endif
}

/* ---- float -> integer (quant/quant_impl.h, quant/ref_k.c) ---- */

LC_CU int32_t lc_cu_trunc_i32(float v) {
    if (v >= -2147483648.0f && v < 2147483648.0f)
        return (int32_t)v;
    return INT32_MIN;
}
LC_CU int lc_cu_trunc_i8(float v) {                 /* (int8_t)v as gcc's x86-64 build */
    return (int8_t)(uint8_t)((uint32_t)lc_cu_trunc_i32(v) & 0xffu);
}
LC_CU unsigned lc_cu_trunc_u8(float v) {            /* (uint8_t)v */
    return (uint32_t)lc_cu_trunc_i32(v) & 0xffu;
}

/* roundf: to nearest, ties away from zero; NaN stays NaN (its bits do not matter: every
 * caller truncates it to 0). Every step is exact: below 2^23 a float's integer part
 * fits in an int32 and its fraction is x - trunc(x) exactly. */
LC_CU float lc_cu_roundf(float v) {
    const uint32_t u = lc_cu_bits(v), a = u & 0x7fffffffu;
    if (a >= 0x4b000000u)                       /* >= 2^23, inf, NaN: already integral */
        return v;
    const float m = lc_cu_float(a);
    const float t = (float)(int32_t)m;
    const float r = m - t >= 0.5f ? t + 1.0f : t;
    return lc_cu_float(lc_cu_bits(r) | (u & 0x80000000u));
}

/* ggml's nearest_int: the mantissa of v + 1.5 * 2^23 (ties to even for |v| <= 2^22). */
LC_CU int lc_cu_nearest_int(float v) {
    const float t = lc_cu_add(v, 12582912.0f);
    return (int)(lc_cu_bits(t) & 0x007fffffu) - 0x00400000;
}

LC_CU int lc_cu_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
LC_CU int lc_cu_wrap_i8(int v) { return (int8_t)(uint8_t)((unsigned)v & 0xffu); }
LC_CU unsigned lc_cu_wrap_u8(int v) { return (unsigned)v & 0xffu; }

/* ---- f16 and bf16 (libconvert/convert.h, quant/quant_impl.h) ---- */

/* lc_convert_f32_to_f16_wide: numpy's rounding and NaN rule. The subnormal lane adds
 * 0.5f to a value that is never NaN when it is selected. */
LC_CU uint16_t lc_cu_f32_to_f16(float f) {
    const uint32_t x = lc_cu_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const int32_t a = (int32_t)(x & 0x7fffffffu);
    const uint32_t m = (uint32_t)a - 0x38000000u;
    const uint32_t hn = (m + 0x0fffu + ((m >> 13) & 1u)) >> 13;
    const uint32_t hs = lc_cu_bits(lc_cu_float((uint32_t)a) + 0.5f) - 0x3f000000u;
    const uint32_t pay = ((uint32_t)a >> 13) & 0x3ffu;
    const uint32_t hnan = 0x7c00u | pay | (uint32_t)(pay == 0);
    const uint32_t sub = 0u - (uint32_t)(a < 0x38800000);
    const uint32_t big = 0u - (uint32_t)(a >= 0x47800000);
    const uint32_t nan = 0u - (uint32_t)(a > 0x7f800000);
    uint32_t h = (hs & sub) | (hn & ~sub);
    h = (0x7c00u & big) | (h & ~big);
    h = (hnan & nan) | (h & ~nan);
    return (uint16_t)(sign | h);
}

/* lc_f16_to_f32: exact; a NaN's payload moves up unchanged. */
LC_CU float lc_cu_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t a = h & 0x7fffu;
    const uint32_t e = h & 0x7c00u;
    const uint32_t norm = (a << 13) + 0x38000000u;
    const uint32_t infnan = (a << 13) | 0x7f800000u;
    const uint32_t sub = lc_cu_bits(lc_cu_float((a << 13) | 0x38800000u) -
                                    lc_cu_float(0x38800000u));
    const uint32_t ms = 0u - (uint32_t)(e == 0), mi = 0u - (uint32_t)(e == 0x7c00u);
    uint32_t r = (sub & ms) | (norm & ~ms);
    r = (infnan & mi) | (r & ~mi);
    return lc_cu_float(sign | r);
}

/* lc_f32_to_bf16: round to nearest even; NaN -> sign | 0x7fc0 (ml_dtypes). */
LC_CU uint16_t lc_cu_f32_to_bf16(float f) {
    const uint32_t x = lc_cu_bits(f);
    const uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t nan = ((x >> 16) & 0x8000u) | 0x7fc0u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

LC_CU float lc_cu_bf16_to_f32(uint16_t b) { return lc_cu_float((uint32_t)b << 16); }

/* libconvert/convert.c f32_to_f16_md: ml_dtypes' way from bf16 to f16, NaN ->
 * sign | 0x7e00. */
LC_CU uint16_t lc_cu_f32_to_f16_md(float f) {
    const uint32_t x = lc_cu_bits(f);
    return (x & 0x7fffffffu) > 0x7f800000u ? (uint16_t)(((x >> 16) & 0x8000u) | 0x7e00u) :
                                             lc_cu_f32_to_f16(f);
}

/* lc_q_f16_to_f32: a scale's widening, which quiets a signalling NaN as ggml's does. */
LC_CU float lc_cu_q_f16_to_f32(uint16_t h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu))
        h = (uint16_t)(h | 0x0200u);
    return lc_cu_f16_to_f32(h);
}

/* lc_q_scale_f16: the f16 bits ggml stores for a scale (NaN -> sign | 0x7e00). */
LC_CU uint16_t lc_cu_q_scale_f16(float f) {
    uint16_t h = lc_cu_f32_to_f16(f);
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
        h = (uint16_t)((h & 0x8000u) | 0x7e00u);
    return h;
}

/* ---- Q8_0 (quant/ref.c) ---- */

LC_CU void lc_cu_q8_0_quantize(const float *x, lc_block_q8_0 *y) {
    float amax = 0.0f;
    for (int j = 0; j < LC_QK8_0; j++) {
        const float a = lc_cu_abs(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = lc_cu_div(amax, 127.0f);
    const float id = d != 0.0f ? lc_cu_div(1.0f, d) : 0.0f;
    y->d = lc_cu_q_scale_f16(d);
    for (int j = 0; j < LC_QK8_0; j++)
        y->qs[j] = (int8_t)lc_cu_trunc_i8(lc_cu_roundf(lc_cu_mul(x[j], id)));
}

LC_CU void lc_cu_q8_0_dequantize(const lc_block_q8_0 *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d);
    for (int j = 0; j < LC_QK8_0; j++)
        y[j] = lc_cu_mul((float)x->qs[j], d);
}

/* ---- Q4_0 and Q5_0 ---- */

LC_CU float lc_cu_signed_extreme(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < lc_cu_abs(x[j])) {
            amax = lc_cu_abs(x[j]);
            max = x[j];
        }
    }
    return max;
}

LC_CU void lc_cu_q4_0_quantize(const float *x, lc_block_q4_0 *y) {
    const float d = lc_cu_div(lc_cu_signed_extreme(x, LC_QK4_0), -8.0f);
    const float id = d != 0.0f ? lc_cu_div(1.0f, d) : 0.0f;
    y->d = lc_cu_q_scale_f16(d);
    for (int j = 0; j < LC_QK4_0 / 2; j++) {
        int q0 = lc_cu_trunc_i8(lc_cu_add(lc_cu_mul(x[j], id), 8.5f));
        int q1 = lc_cu_trunc_i8(lc_cu_add(lc_cu_mul(x[j + LC_QK4_0 / 2], id), 8.5f));
        q0 = q0 > 15 ? 15 : q0;
        q1 = q1 > 15 ? 15 : q1;
        y->qs[j] = (uint8_t)((uint8_t)q0 | (uint8_t)q1 << 4);
    }
}

LC_CU void lc_cu_q4_0_dequantize(const lc_block_q4_0 *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d);
    for (int j = 0; j < LC_QK4_0 / 2; j++) {
        y[j] = lc_cu_mul((float)((x->qs[j] & 0x0f) - 8), d);
        y[j + LC_QK4_0 / 2] = lc_cu_mul((float)((x->qs[j] >> 4) - 8), d);
    }
}

LC_CU void lc_cu_store_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

LC_CU uint32_t lc_cu_load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

LC_CU void lc_cu_q5_0_quantize(const float *x, lc_block_q5_0 *y) {
    const float d = lc_cu_div(lc_cu_signed_extreme(x, LC_QK5_0), -16.0f);
    const float id = d != 0.0f ? lc_cu_div(1.0f, d) : 0.0f;
    y->d = lc_cu_q_scale_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < LC_QK5_0 / 2; j++) {
        const int q0 = lc_cu_trunc_i8(lc_cu_add(lc_cu_mul(x[j], id), 16.5f));
        const int q1 = lc_cu_trunc_i8(lc_cu_add(lc_cu_mul(x[j + LC_QK5_0 / 2], id), 16.5f));
        const uint8_t u0 = (uint8_t)(q0 > 31 ? 31 : q0);
        const uint8_t u1 = (uint8_t)(q1 > 31 ? 31 : q1);
        y->qs[j] = (uint8_t)((u0 & 0x0f) | (u1 & 0x0f) << 4);
        qh |= (uint32_t)(u0 >> 4 & 1u) << j;
        qh |= (uint32_t)(u1 >> 4 & 1u) << (j + LC_QK5_0 / 2);
    }
    lc_cu_store_le32(y->qh, qh);
}

LC_CU void lc_cu_q5_0_dequantize(const lc_block_q5_0 *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d);
    const uint32_t qh = lc_cu_load_le32(x->qh);
    for (int j = 0; j < LC_QK5_0 / 2; j++) {
        const int h0 = (int)(qh >> j & 1u) << 4;
        const int h1 = (int)(qh >> (j + LC_QK5_0 / 2) & 1u) << 4;
        y[j] = lc_cu_mul((float)(((x->qs[j] & 0x0f) | h0) - 16), d);
        y[j + LC_QK5_0 / 2] = lc_cu_mul((float)(((x->qs[j] >> 4) | h1) - 16), d);
    }
}

/* ---- Q4_1 and Q5_1 ---- */

LC_CU void lc_cu_min_max(const float *x, int n, float *min, float *max) {
    float lo = 3.40282347e+38f, hi = -3.40282347e+38f;      /* FLT_MAX */
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *min = lo;
    *max = hi;
}

LC_CU void lc_cu_q4_1_quantize(const float *x, lc_block_q4_1 *y) {
    float min, max;
    lc_cu_min_max(x, LC_QK4_1, &min, &max);
    const float d = lc_cu_div(lc_cu_sub(max, min), 15.0f);
    const float id = d != 0.0f ? lc_cu_div(1.0f, d) : 0.0f;
    y->d = lc_cu_q_scale_f16(d);
    y->m = lc_cu_q_scale_f16(min);
    for (int j = 0; j < LC_QK4_1 / 2; j++) {
        int q0 = lc_cu_trunc_i8(lc_cu_add(lc_cu_mul(lc_cu_sub(x[j], min), id), 0.5f));
        int q1 = lc_cu_trunc_i8(lc_cu_add(lc_cu_mul(lc_cu_sub(x[j + LC_QK4_1 / 2], min), id),
                                          0.5f));
        q0 = q0 > 15 ? 15 : q0;
        q1 = q1 > 15 ? 15 : q1;
        y->qs[j] = (uint8_t)((uint8_t)q0 | (uint8_t)q1 << 4);
    }
}

LC_CU void lc_cu_q4_1_dequantize(const lc_block_q4_1 *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d), m = lc_cu_q_f16_to_f32(x->m);
    for (int j = 0; j < LC_QK4_1 / 2; j++) {
        y[j] = lc_cu_add(lc_cu_mul((float)(x->qs[j] & 0x0f), d), m);
        y[j + LC_QK4_1 / 2] = lc_cu_add(lc_cu_mul((float)(x->qs[j] >> 4), d), m);
    }
}

LC_CU void lc_cu_q5_1_quantize(const float *x, lc_block_q5_1 *y) {
    float min, max;
    lc_cu_min_max(x, LC_QK5_1, &min, &max);
    const float d = lc_cu_div(lc_cu_sub(max, min), 31.0f);
    const float id = d != 0.0f ? lc_cu_div(1.0f, d) : 0.0f;
    y->d = lc_cu_q_scale_f16(d);
    y->m = lc_cu_q_scale_f16(min);
    uint32_t qh = 0;
    for (int j = 0; j < LC_QK5_1 / 2; j++) {
        const unsigned u0 = lc_cu_trunc_u8(lc_cu_add(lc_cu_mul(lc_cu_sub(x[j], min), id), 0.5f));
        const unsigned u1 = lc_cu_trunc_u8(
            lc_cu_add(lc_cu_mul(lc_cu_sub(x[j + LC_QK5_1 / 2], min), id), 0.5f));
        y->qs[j] = (uint8_t)((u0 & 0x0f) | (u1 & 0x0f) << 4);
        qh |= (u0 >> 4 & 1u) << j;
        qh |= (u1 >> 4 & 1u) << (j + LC_QK5_1 / 2);
    }
    lc_cu_store_le32(y->qh, qh);
}

LC_CU void lc_cu_q5_1_dequantize(const lc_block_q5_1 *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d), m = lc_cu_q_f16_to_f32(x->m);
    const uint32_t qh = lc_cu_load_le32(x->qh);
    for (int j = 0; j < LC_QK5_1 / 2; j++) {
        const unsigned h0 = (qh >> j & 1u) << 4;
        const unsigned h1 = (qh >> (j + LC_QK5_1 / 2) & 1u) << 4;
        y[j] = lc_cu_add(lc_cu_mul((float)((x->qs[j] & 0x0fu) | h0), d), m);
        y[j + LC_QK5_1 / 2] = lc_cu_add(lc_cu_mul((float)((x->qs[j] >> 4) | h1), d), m);
    }
}

/* ---- K-quant scale searches (quant/ref_k.c) ---- */

#define LC_CU_GROUP_MAX_EPS 1e-15f

/* fit_scale_min: ggml's make_qkx2_quants with rdelta = 0.1 (n <= 32). */
LC_CU float lc_cu_fit_scale_min(int n, int nmax, float rmin, int nstep, bool use_mad,
                                const float *x, const float *w, uint8_t *L, float *the_min) {
    const float rdelta = 0.1f;
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = lc_cu_mul(sum_w, x[0]);
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w = lc_cu_add(sum_w, w[i]);
        sum_x = lc_cu_add(sum_x, lc_cu_mul(w[i], x[i]));
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        *the_min = lc_cu_neg(min);
        return 0.0f;
    }
    float iscale = lc_cu_div((float)nmax, lc_cu_sub(max, min));
    float scale = lc_cu_div(1.0f, iscale);
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)lc_cu_clampi(lc_cu_nearest_int(lc_cu_mul(iscale, lc_cu_sub(x[i], min))),
                                     0, nmax);
        float diff = lc_cu_sub(lc_cu_add(lc_cu_mul(scale, (float)L[i]), min), x[i]);
        diff = use_mad ? lc_cu_abs(diff) : lc_cu_mul(diff, diff);
        best_error = lc_cu_add(best_error, lc_cu_mul(w[i], diff));
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = lc_cu_div(lc_cu_add(lc_cu_add(rmin, lc_cu_mul(rdelta, (float)is)), (float)nmax),
                           lc_cu_sub(max, min));
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = lc_cu_clampi(
                lc_cu_nearest_int(lc_cu_mul(iscale, lc_cu_sub(x[i], min))), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l = lc_cu_add(sum_l, lc_cu_mul(w[i], (float)l));
            sum_l2 = lc_cu_add(sum_l2, lc_cu_mul(lc_cu_mul(w[i], (float)l), (float)l));
            sum_xl = lc_cu_add(sum_xl, lc_cu_mul(lc_cu_mul(w[i], (float)l), x[i]));
        }
        const float D = lc_cu_sub(lc_cu_mul(sum_w, sum_l2), lc_cu_mul(sum_l, sum_l));
        if (D > 0) {
            float this_scale = lc_cu_div(lc_cu_sub(lc_cu_mul(sum_w, sum_xl),
                                                   lc_cu_mul(sum_x, sum_l)), D);
            float this_min = lc_cu_div(lc_cu_sub(lc_cu_mul(sum_l2, sum_x),
                                                 lc_cu_mul(sum_l, sum_xl)), D);
            if (this_min > 0) {
                this_min = 0;
                this_scale = lc_cu_div(sum_xl, sum_l2);
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = lc_cu_sub(lc_cu_add(lc_cu_mul(this_scale, (float)Laux[i]),
                                                 this_min), x[i]);
                diff = use_mad ? lc_cu_abs(diff) : lc_cu_mul(diff, diff);
                cur_error = lc_cu_add(cur_error, lc_cu_mul(w[i], diff));
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; i++)
                    L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = lc_cu_neg(min);
    return scale;
}

/* fit_scale_q3: ggml's make_q3_quants for n = 16, nmax = 4, do_rmse. */
LC_CU float lc_cu_fit_scale_q3(const float *x, int8_t *L) {
    enum { N = 16, NMAX = 4 };
    float max = 0, amax = 0;
    for (int i = 0; i < N; i++) {
        const float ax = lc_cu_abs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < LC_CU_GROUP_MAX_EPS) {
        for (int i = 0; i < N; i++)
            L[i] = 0;
        return 0.f;
    }
    const float iscale = lc_cu_div((float)-NMAX, max);
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < N; i++) {
        const int l = lc_cu_clampi(lc_cu_nearest_int(lc_cu_mul(iscale, x[i])), -NMAX, NMAX - 1);
        L[i] = (int8_t)l;
        const float w = lc_cu_mul(x[i], x[i]);
        sumlx = lc_cu_add(sumlx, lc_cu_mul(lc_cu_mul(w, x[i]), (float)l));
        suml2 = lc_cu_add(suml2, lc_cu_mul(lc_cu_mul(w, (float)l), (float)l));
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < N; i++) {
            const float w = lc_cu_mul(x[i], x[i]);
            float slx = lc_cu_sub(sumlx, lc_cu_mul(lc_cu_mul(w, x[i]), (float)L[i]));
            if (slx > 0) {
                float sl2 = lc_cu_sub(suml2, lc_cu_mul(lc_cu_mul(w, (float)L[i]), (float)L[i]));
                const int new_l = lc_cu_clampi(
                    lc_cu_nearest_int(lc_cu_div(lc_cu_mul(x[i], sl2), slx)), -NMAX, NMAX - 1);
                if (new_l != L[i]) {
                    slx = lc_cu_add(slx, lc_cu_mul(lc_cu_mul(w, x[i]), (float)new_l));
                    sl2 = lc_cu_add(sl2, lc_cu_mul(lc_cu_mul(w, (float)new_l), (float)new_l));
                    if (sl2 > 0 && lc_cu_mul(lc_cu_mul(slx, slx), suml2) >
                                       lc_cu_mul(lc_cu_mul(sumlx, sumlx), sl2)) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    for (int i = 0; i < N; i++)
        L[i] = (int8_t)(L[i] + NMAX);
    return suml2 > 0.0f ? lc_cu_div(sumlx, suml2) : 0.0f;
}

/* fit_scale_sym: ggml's make_qx_quants for n = 16, nmax = 32, rmse_type = 1. */
LC_CU float lc_cu_fit_scale_sym(const float *x, int8_t *L) {
    enum { N = 16, NMAX = 32 };
    float max = 0, amax = 0;
    for (int i = 0; i < N; i++) {
        const float ax = lc_cu_abs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < LC_CU_GROUP_MAX_EPS) {
        for (int i = 0; i < N; i++)
            L[i] = 0;
        return 0.f;
    }
    float iscale = lc_cu_div((float)-NMAX, max);
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < N; i++) {
        const int l = lc_cu_clampi(lc_cu_nearest_int(lc_cu_mul(iscale, x[i])), -NMAX, NMAX - 1);
        L[i] = (int8_t)(l + NMAX);
        const float w = lc_cu_mul(x[i], x[i]);
        sumlx = lc_cu_add(sumlx, lc_cu_mul(lc_cu_mul(w, x[i]), (float)l));
        suml2 = lc_cu_add(suml2, lc_cu_mul(lc_cu_mul(w, (float)l), (float)l));
    }
    float scale = suml2 != 0.0f ? lc_cu_div(sumlx, suml2) : 0.0f;
    float best = lc_cu_mul(scale, sumlx);
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = lc_cu_div(lc_cu_neg(lc_cu_add((float)NMAX, lc_cu_mul(0.1f, (float)is))), max);
        sumlx = suml2 = 0;
        for (int i = 0; i < N; i++) {
            const int l = lc_cu_clampi(lc_cu_nearest_int(lc_cu_mul(iscale, x[i])), -NMAX,
                                       NMAX - 1);
            const float w = lc_cu_mul(x[i], x[i]);
            sumlx = lc_cu_add(sumlx, lc_cu_mul(lc_cu_mul(w, x[i]), (float)l));
            suml2 = lc_cu_add(suml2, lc_cu_mul(lc_cu_mul(w, (float)l), (float)l));
        }
        if (suml2 > 0 && lc_cu_mul(sumlx, sumlx) > lc_cu_mul(best, suml2)) {
            for (int i = 0; i < N; i++)
                L[i] = (int8_t)(NMAX + lc_cu_clampi(lc_cu_nearest_int(lc_cu_mul(iscale, x[i])),
                                                    -NMAX, NMAX - 1));
            scale = lc_cu_div(sumlx, suml2);
            best = lc_cu_mul(scale, sumlx);
        }
    }
    return scale;
}

/* ---- Q2_K ---- */

LC_CU void lc_cu_pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < LC_QK_K; j += 128, qs += 32)
        for (int l = 0; l < 32; l++)
            qs[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 |
                              L[j + l + 96] << 6);
}

LC_CU void lc_cu_q2_K_quantize(const float *x, lc_block_q2_K *y) {
    const float q4scale = 15.f;
    uint8_t L[LC_QK_K];
    float weights[16], mins[LC_QK_K / 16], scales[LC_QK_K / 16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < LC_QK_K / 16; j++) {
        for (int l = 0; l < 16; l++)
            weights[l] = lc_cu_abs(x[16 * j + l]);
        scales[j] = lc_cu_fit_scale_min(16, 3, -0.5f, 15, true, x + 16 * j, weights, L + 16 * j,
                                        &mins[j]);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
        const float iscale = lc_cu_div(q4scale, max_scale);
        for (int j = 0; j < LC_QK_K / 16; j++)
            y->scales[j] = (uint8_t)lc_cu_wrap_u8(lc_cu_nearest_int(lc_cu_mul(iscale, scales[j])));
        y->d = lc_cu_q_scale_f16(lc_cu_div(max_scale, q4scale));
    } else {
        for (int j = 0; j < LC_QK_K / 16; j++)
            y->scales[j] = 0;
        y->d = lc_cu_q_scale_f16(0.f);
    }
    if (max_min > 0) {
        const float iscale = lc_cu_div(q4scale, max_min);
        for (int j = 0; j < LC_QK_K / 16; j++)
            y->scales[j] |= (uint8_t)lc_cu_wrap_u8(
                (int)((unsigned)lc_cu_nearest_int(lc_cu_mul(iscale, mins[j])) << 4));
        y->dmin = lc_cu_q_scale_f16(lc_cu_div(max_min, q4scale));
    } else {
        y->dmin = lc_cu_q_scale_f16(0.f);
    }
    for (int j = 0; j < LC_QK_K / 16; j++) {
        const float d = lc_cu_mul(lc_cu_q_f16_to_f32(y->d), (float)(y->scales[j] & 0xf));
        if (d == 0.0f)
            continue;
        const float dm = lc_cu_mul(lc_cu_q_f16_to_f32(y->dmin), (float)(y->scales[j] >> 4));
        for (int i = 0; i < 16; i++)
            L[16 * j + i] = (uint8_t)lc_cu_clampi(
                lc_cu_nearest_int(lc_cu_div(lc_cu_add(x[16 * j + i], dm), d)), 0, 3);
    }
    lc_cu_pack_2bit(L, y->qs);
}

LC_CU void lc_cu_q2_K_dequantize(const lc_block_q2_K *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d), min = lc_cu_q_f16_to_f32(x->dmin);
    const uint8_t *q = x->qs, *sc = x->scales;
    for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
        for (int shift = 0; shift < 8; shift += 2, sc += 2) {
            float dl = lc_cu_mul(d, (float)(sc[0] & 0xf)), ml = lc_cu_mul(min, (float)(sc[0] >> 4));
            for (int l = 0; l < 16; l++)
                *y++ = lc_cu_sub(lc_cu_mul(dl, (float)((q[l] >> shift) & 3)), ml);
            dl = lc_cu_mul(d, (float)(sc[1] & 0xf)), ml = lc_cu_mul(min, (float)(sc[1] >> 4));
            for (int l = 0; l < 16; l++)
                *y++ = lc_cu_sub(lc_cu_mul(dl, (float)((q[l + 16] >> shift) & 3)), ml);
        }
    }
}

/* ---- Q3_K ---- */

LC_CU int lc_cu_scale_k3(int s, const uint8_t *q) {
    const int lo = s < 8 ? q[s] & 0xf : q[s - 8] >> 4;
    return lo | ((q[8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
}

LC_CU void lc_cu_q3_K_quantize(const float *x, lc_block_q3_K *y) {
    int8_t L[LC_QK_K];
    float scales[LC_QK_K / 16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < LC_QK_K / 16; j++) {
        scales[j] = lc_cu_fit_scale_q3(x + 16 * j, L + 16 * j);
        const float scale = lc_cu_abs(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    for (int j = 0; j < 12; j++)
        y->scales[j] = 0;
    if (max_scale != 0.0f) {
        const float iscale = lc_cu_div(-32.f, max_scale);
        for (int j = 0; j < LC_QK_K / 16; j++) {
            const int v = lc_cu_wrap_i8(lc_cu_nearest_int(lc_cu_mul(iscale, scales[j])));
            const int l = lc_cu_clampi(v, -32, 31) + 32;
            if (j < 8)
                y->scales[j] = (uint8_t)(l & 0xf);
            else
                y->scales[j - 8] |= (uint8_t)((l & 0xf) << 4);
            y->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y->d = lc_cu_q_scale_f16(lc_cu_div(1.0f, iscale));
    } else {
        y->d = lc_cu_q_scale_f16(0.f);
    }
    for (int j = 0; j < LC_QK_K / 16; j++) {
        const float d = lc_cu_mul(lc_cu_q_f16_to_f32(y->d),
                                  (float)(lc_cu_scale_k3(j, y->scales) - 32));
        if (d == 0.0f)
            continue;
        for (int i = 0; i < 16; i++)
            L[16 * j + i] = (int8_t)(lc_cu_clampi(
                lc_cu_nearest_int(lc_cu_div(x[16 * j + i], d)), -4, 3) + 4);
    }
    for (int j = 0; j < LC_QK_K / 8; j++)
        y->hmask[j] = 0;
    uint8_t low[LC_QK_K];
    for (int j = 0; j < LC_QK_K; j++) {
        int l = L[j];
        if (l > 3) {
            y->hmask[j % 32] |= (uint8_t)(1u << (j / 32));
            l -= 4;
        }
        low[j] = (uint8_t)l;
    }
    lc_cu_pack_2bit(low, y->qs);
}

LC_CU void lc_cu_q3_K_dequantize(const lc_block_q3_K *x, float *y) {
    const float d_all = lc_cu_q_f16_to_f32(x->d);
    const uint8_t *q = x->qs, *hm = x->hmask;
    unsigned m = 1;
    int s = 0;
    for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
        for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
            float dl = lc_cu_mul(d_all, (float)(lc_cu_scale_k3(s++, x->scales) - 32));
            for (int l = 0; l < 16; l++)
                *y++ = lc_cu_mul(dl, (float)(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4)));
            dl = lc_cu_mul(d_all, (float)(lc_cu_scale_k3(s++, x->scales) - 32));
            for (int l = 0; l < 16; l++)
                *y++ = lc_cu_mul(dl, (float)(((q[l + 16] >> shift) & 3) -
                                             ((hm[l + 16] & m) ? 0 : 4)));
        }
    }
}

/* ---- Q4_K and Q5_K ---- */

LC_CU void lc_cu_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4);
        *mn = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

LC_CU void lc_cu_quantize_k4_scales(const float *x, int nmax, float rmin, int nstep,
                                    uint16_t *dd, uint16_t *dmin, uint8_t *packed, uint8_t *L) {
    float weights[32], mins[LC_QK_K / 32], scales[LC_QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < LC_QK_K / 32; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++)
            sum_x2 = lc_cu_add(sum_x2, lc_cu_mul(xs[l], xs[l]));
        const float av_x = lc_cu_sqrt(lc_cu_div(sum_x2, 32.0f));
        for (int l = 0; l < 32; l++)
            weights[l] = lc_cu_add(av_x, lc_cu_abs(xs[l]));
        scales[j] = lc_cu_fit_scale_min(32, nmax, rmin, nstep, false, xs, weights, L + 32 * j,
                                        &mins[j]);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? lc_cu_div(63.f, max_scale) : 0.f;
    const float inv_min = max_min > 0 ? lc_cu_div(63.f, max_min) : 0.f;
    for (int j = 0; j < LC_K_SCALE_SIZE; j++)
        packed[j] = 0;
    for (int j = 0; j < LC_QK_K / 32; j++) {
        uint8_t ls = (uint8_t)lc_cu_wrap_u8(lc_cu_nearest_int(lc_cu_mul(inv_scale, scales[j])));
        uint8_t lm = (uint8_t)lc_cu_wrap_u8(lc_cu_nearest_int(lc_cu_mul(inv_min, mins[j])));
        ls = ls > 63 ? 63 : ls;
        lm = lm > 63 ? 63 : lm;
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *dd = lc_cu_q_scale_f16(lc_cu_div(max_scale, 63.f));
    *dmin = lc_cu_q_scale_f16(lc_cu_div(max_min, 63.f));
    for (int j = 0; j < LC_QK_K / 32; j++) {
        uint8_t sc, mn;
        lc_cu_scale_min_k4(j, packed, &sc, &mn);
        const float d = lc_cu_mul(lc_cu_q_f16_to_f32(*dd), (float)sc);
        if (d == 0.0f)
            continue;
        const float dm = lc_cu_mul(lc_cu_q_f16_to_f32(*dmin), (float)mn);
        for (int l = 0; l < 32; l++)
            L[32 * j + l] = (uint8_t)lc_cu_clampi(
                lc_cu_nearest_int(lc_cu_div(lc_cu_add(x[32 * j + l], dm), d)), 0, nmax);
    }
}

LC_CU void lc_cu_q4_K_quantize(const float *x, lc_block_q4_K *y) {
    uint8_t L[LC_QK_K];
    lc_cu_quantize_k4_scales(x, 15, -1.0f, 20, &y->d, &y->dmin, y->scales, L);
    uint8_t *q = y->qs;
    for (int j = 0; j < LC_QK_K; j += 64, q += 32)
        for (int l = 0; l < 32; l++)
            q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
}

LC_CU void lc_cu_q4_K_dequantize(const lc_block_q4_K *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d), dmin = lc_cu_q_f16_to_f32(x->dmin);
    const uint8_t *q = x->qs;
    for (int j = 0, s = 0; j < LC_QK_K; j += 64, s += 2, q += 32) {
        uint8_t sc, mn;
        lc_cu_scale_min_k4(s, x->scales, &sc, &mn);
        const float d1 = lc_cu_mul(d, (float)sc), m1 = lc_cu_mul(dmin, (float)mn);
        lc_cu_scale_min_k4(s + 1, x->scales, &sc, &mn);
        const float d2 = lc_cu_mul(d, (float)sc), m2 = lc_cu_mul(dmin, (float)mn);
        for (int l = 0; l < 32; l++)
            *y++ = lc_cu_sub(lc_cu_mul(d1, (float)(q[l] & 0x0f)), m1);
        for (int l = 0; l < 32; l++)
            *y++ = lc_cu_sub(lc_cu_mul(d2, (float)(q[l] >> 4)), m2);
    }
}

LC_CU void lc_cu_q5_K_quantize(const float *x, lc_block_q5_K *y) {
    uint8_t L[LC_QK_K];
    lc_cu_quantize_k4_scales(x, 31, -0.5f, 15, &y->d, &y->dmin, y->scales, L);
    uint8_t *ql = y->qs, *qh = y->qh;
    for (int j = 0; j < LC_QK_K / 8; j++)
        qh[j] = 0;
    uint8_t m1 = 1, m2 = 2;
    for (int j = 0; j < LC_QK_K; j += 64, ql += 32, m1 = (uint8_t)(m1 << 2),
             m2 = (uint8_t)(m2 << 2)) {
        for (int l = 0; l < 32; l++) {
            int l1 = L[j + l], l2 = L[j + l + 32];
            if (l1 > 15) {
                l1 -= 16;
                qh[l] |= m1;
            }
            if (l2 > 15) {
                l2 -= 16;
                qh[l] |= m2;
            }
            ql[l] = (uint8_t)(l1 | l2 << 4);
        }
    }
}

LC_CU void lc_cu_q5_K_dequantize(const lc_block_q5_K *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d), min = lc_cu_q_f16_to_f32(x->dmin);
    const uint8_t *ql = x->qs, *qh = x->qh;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0, s = 0; j < LC_QK_K; j += 64, s += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
        uint8_t sc, mn;
        lc_cu_scale_min_k4(s, x->scales, &sc, &mn);
        const float d1 = lc_cu_mul(d, (float)sc), m1 = lc_cu_mul(min, (float)mn);
        lc_cu_scale_min_k4(s + 1, x->scales, &sc, &mn);
        const float d2 = lc_cu_mul(d, (float)sc), m2 = lc_cu_mul(min, (float)mn);
        for (int l = 0; l < 32; l++)
            *y++ = lc_cu_sub(lc_cu_mul(d1, (float)((ql[l] & 0x0f) + (qh[l] & u1 ? 16 : 0))), m1);
        for (int l = 0; l < 32; l++)
            *y++ = lc_cu_sub(lc_cu_mul(d2, (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0))), m2);
    }
}

/* ---- Q6_K ---- */

LC_CU void lc_cu_q6_K_quantize(const float *x, lc_block_q6_K *y) {
    int8_t L[LC_QK_K];
    float scales[LC_QK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < LC_QK_K / 16; s++) {
        scales[s] = lc_cu_fit_scale_sym(x + 16 * s, L + 16 * s);
        const float abs_scale = lc_cu_abs(scales[s]);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scales[s];
        }
    }
    if (max_abs_scale < LC_CU_GROUP_MAX_EPS) {     /* an all-zero block: all bytes 0 */
        uint8_t *p = (uint8_t *)y;
        for (unsigned i = 0; i < sizeof *y; i++)
            p[i] = 0;
        return;
    }
    const float iscale = lc_cu_div(-128.f, max_scale);
    y->d = lc_cu_q_scale_f16(lc_cu_div(1.0f, iscale));
    for (int s = 0; s < LC_QK_K / 16; s++) {
        const int v = lc_cu_nearest_int(lc_cu_mul(iscale, scales[s]));
        y->scales[s] = (int8_t)lc_cu_wrap_i8(v < 127 ? v : 127);
    }
    for (int s = 0; s < LC_QK_K / 16; s++) {
        const float d = lc_cu_mul(lc_cu_q_f16_to_f32(y->d), (float)y->scales[s]);
        if (d == 0.0f)
            continue;
        for (int i = 0; i < 16; i++)
            L[16 * s + i] = (int8_t)(lc_cu_clampi(
                lc_cu_nearest_int(lc_cu_div(x[16 * s + i], d)), -32, 31) + 32);
    }
    uint8_t *ql = y->ql, *qh = y->qh;
    for (int j = 0; j < LC_QK_K; j += 128, ql += 64, qh += 32) {
        for (int l = 0; l < 32; l++) {
            const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
            ql[l] = (uint8_t)((q1 & 0x0f) | (q3 & 0x0f) << 4);
            ql[l + 32] = (uint8_t)((q2 & 0x0f) | (q4 & 0x0f) << 4);
            qh[l] = (uint8_t)(q1 >> 4 | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6);
        }
    }
}

LC_CU void lc_cu_q6_K_dequantize(const lc_block_q6_K *x, float *y) {
    const float d = lc_cu_q_f16_to_f32(x->d);
    const uint8_t *ql = x->ql, *qh = x->qh;
    const int8_t *sc = x->scales;
    for (int j = 0; j < LC_QK_K; j += 128, y += 128, ql += 64, qh += 32, sc += 8) {
        for (int l = 0; l < 32; l++) {
            const int s = l / 16;
            const int q1 = ((ql[l] & 0x0f) | (qh[l] >> 0 & 3) << 4) - 32;
            const int q2 = ((ql[l + 32] & 0x0f) | (qh[l] >> 2 & 3) << 4) - 32;
            const int q3 = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32;
            y[l] = lc_cu_mul(lc_cu_mul(d, (float)sc[s]), (float)q1);
            y[l + 32] = lc_cu_mul(lc_cu_mul(d, (float)sc[s + 2]), (float)q2);
            y[l + 64] = lc_cu_mul(lc_cu_mul(d, (float)sc[s + 4]), (float)q3);
            y[l + 96] = lc_cu_mul(lc_cu_mul(d, (float)sc[s + 6]), (float)q4);
        }
    }
}

/* ---- items: what one thread of a kernel does ----
 * lc_cu_<op>_item(src, dst, i) converts item i of src into item i of dst:
 *   <stem>_quantize     block i from 32 or 256 floats
 *   <stem>_dequantize   block i into floats
 *   <from>_<to>         element i between f32, f16 and bf16, as lc_convert does it
 * Elements per item: LC_CU_QK_<stem> for the block ops, 1 for the others. */

#define LC_CU_QK_q8_0 LC_QK8_0
#define LC_CU_QK_q4_0 LC_QK4_0
#define LC_CU_QK_q4_1 LC_QK4_1
#define LC_CU_QK_q5_0 LC_QK5_0
#define LC_CU_QK_q5_1 LC_QK5_1
#define LC_CU_QK_q2_K LC_QK_K
#define LC_CU_QK_q3_K LC_QK_K
#define LC_CU_QK_q4_K LC_QK_K
#define LC_CU_QK_q5_K LC_QK_K
#define LC_CU_QK_q6_K LC_QK_K

#define LC_CU_BLOCK_ITEMS(T, stem)                                                          \
    LC_CU void lc_cu_##stem##_quantize_item(const void *src, void *dst, uint64_t i) {      \
        lc_cu_##stem##_quantize((const float *)src + i * LC_CU_QK_##stem,                   \
                                (lc_block_##stem *)dst + i);                                \
    }                                                                                       \
    LC_CU void lc_cu_##stem##_dequantize_item(const void *src, void *dst, uint64_t i) {    \
        lc_cu_##stem##_dequantize((const lc_block_##stem *)src + i,                         \
                                  (float *)dst + i * LC_CU_QK_##stem);                      \
    }
LC_QUANT_TYPES(LC_CU_BLOCK_ITEMS)
#undef LC_CU_BLOCK_ITEMS

LC_CU void lc_cu_f16_f32_item(const void *src, void *dst, uint64_t i) {
    ((float *)dst)[i] = lc_cu_f16_to_f32(((const uint16_t *)src)[i]);
}
LC_CU void lc_cu_bf16_f32_item(const void *src, void *dst, uint64_t i) {
    ((float *)dst)[i] = lc_cu_bf16_to_f32(((const uint16_t *)src)[i]);
}
LC_CU void lc_cu_f32_f16_item(const void *src, void *dst, uint64_t i) {
    ((uint16_t *)dst)[i] = lc_cu_f32_to_f16(((const float *)src)[i]);
}
LC_CU void lc_cu_f32_bf16_item(const void *src, void *dst, uint64_t i) {
    ((uint16_t *)dst)[i] = lc_cu_f32_to_bf16(((const float *)src)[i]);
}
LC_CU void lc_cu_f16_bf16_item(const void *src, void *dst, uint64_t i) {
    ((uint16_t *)dst)[i] = lc_cu_f32_to_bf16(lc_cu_f16_to_f32(((const uint16_t *)src)[i]));
}
LC_CU void lc_cu_bf16_f16_item(const void *src, void *dst, uint64_t i) {
    ((uint16_t *)dst)[i] = lc_cu_f32_to_f16_md(lc_cu_bf16_to_f32(((const uint16_t *)src)[i]));
}

/* Every op, once. The element conversions: X(name, FROM, TO) with lc_dtype suffixes;
 * the block ops are quantize and dequantize of every type of LC_QUANT_TYPES. The kernel
 * of op <name> is lc_k_<name> (kernels.cu), its item function lc_cu_<name>_item. */
#define LC_CU_CONVERT_OPS(X)   \
    X(f16_f32, F16, F32)       \
    X(bf16_f32, BF16, F32)     \
    X(f32_f16, F32, F16)       \
    X(f32_bf16, F32, BF16)     \
    X(f16_bf16, F16, BF16)     \
    X(bf16_f16, BF16, F16)

#endif
