/* infer/matmul_x86.c: the matmul tile with AVX2 and FMA (see matmul_impl.h).
 *
 * Blocks of 4 weight rows x 3 tokens keep 12 accumulators in registers and load 7
 * vectors per 12 fused multiply-adds, so the loop is bound by the FMA units rather than
 * by loads, with 12 independent chains to hide their latency (4 x 2, 8 chains and 6
 * loads per 8, took a third more time); the rows and tokens left over go through 4 x 2
 * and the one-accumulator dot, each output through one accumulator in the same order,
 * so every output is the same sum wherever it falls. Compiled for every x86 target through
 * function attributes and called only after lc_infer_avx2_usable(). */
#include "infer/matmul_impl.h"

#if LC_INFER_X86

#include <immintrin.h>

#include "libconvert/cpu.h"

#define AVX2_FMA __attribute__((target("avx2,fma")))

/* ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)), the order matmul_impl.h fixes. */
AVX2_FMA static inline float hsum(__m256 a) {
    const __m128 lo = _mm256_castps256_ps128(a), hi = _mm256_extractf128_ps(a, 1);
    const __m128 s = _mm_add_ps(lo, hi);                       /* a0+a4 a1+a5 a2+a6 a3+a7 */
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));       /* (0+4)+(2+6) (1+5)+(3+7) */
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

AVX2_FMA static inline float tail(const float *w, const float *x, size_t k0, size_t cols) {
    float s = 0;
    for (size_t k = k0; k < cols; k++)
        s += w[k] * x[k];
    return s;
}

AVX2_FMA static float dot1(const float *w, const float *x, size_t cols) {
    const size_t c8 = cols & ~(size_t)7;
    __m256 acc = _mm256_setzero_ps();
    for (size_t k = 0; k < c8; k += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k), acc);
    return hsum(acc) + tail(w, x, c8, cols);
}

/* y[t * ldy + r] for 4 rows from w and 2 tokens from x. */
AVX2_FMA static void dot4x2(const float *w, const float *x, size_t cols, float *y, size_t ldy) {
    const size_t c8 = cols & ~(size_t)7;
    const float *w0 = w, *w1 = w + cols, *w2 = w + 2 * cols, *w3 = w + 3 * cols;
    const float *x0 = x, *x1 = x + cols;
    __m256 a00 = _mm256_setzero_ps(), a10 = a00, a20 = a00, a30 = a00;   /* a<row><token> */
    __m256 a01 = a00, a11 = a00, a21 = a00, a31 = a00;
    for (size_t k = 0; k < c8; k += 8) {
        const __m256 u = _mm256_loadu_ps(x0 + k), v = _mm256_loadu_ps(x1 + k);
        __m256 r = _mm256_loadu_ps(w0 + k);
        a00 = _mm256_fmadd_ps(r, u, a00);
        a01 = _mm256_fmadd_ps(r, v, a01);
        r = _mm256_loadu_ps(w1 + k);
        a10 = _mm256_fmadd_ps(r, u, a10);
        a11 = _mm256_fmadd_ps(r, v, a11);
        r = _mm256_loadu_ps(w2 + k);
        a20 = _mm256_fmadd_ps(r, u, a20);
        a21 = _mm256_fmadd_ps(r, v, a21);
        r = _mm256_loadu_ps(w3 + k);
        a30 = _mm256_fmadd_ps(r, u, a30);
        a31 = _mm256_fmadd_ps(r, v, a31);
    }
    y[0] = hsum(a00) + tail(w0, x0, c8, cols);
    y[1] = hsum(a10) + tail(w1, x0, c8, cols);
    y[2] = hsum(a20) + tail(w2, x0, c8, cols);
    y[3] = hsum(a30) + tail(w3, x0, c8, cols);
    y[ldy + 0] = hsum(a01) + tail(w0, x1, c8, cols);
    y[ldy + 1] = hsum(a11) + tail(w1, x1, c8, cols);
    y[ldy + 2] = hsum(a21) + tail(w2, x1, c8, cols);
    y[ldy + 3] = hsum(a31) + tail(w3, x1, c8, cols);
}

/* y[t * ldy + r] for 4 rows from w and 3 tokens from x: 12 accumulators, 7 loads per 12
 * fused multiply-adds (16 registers with the row and the 3 tokens). */
AVX2_FMA static void dot4x3(const float *w, const float *x, size_t cols, float *y, size_t ldy) {
    const size_t c8 = cols & ~(size_t)7;
    const float *w0 = w, *w1 = w + cols, *w2 = w + 2 * cols, *w3 = w + 3 * cols;
    const float *x0 = x, *x1 = x + cols, *x2 = x + 2 * cols;
    __m256 a00 = _mm256_setzero_ps(), a10 = a00, a20 = a00, a30 = a00;   /* a<row><token> */
    __m256 a01 = a00, a11 = a00, a21 = a00, a31 = a00;
    __m256 a02 = a00, a12 = a00, a22 = a00, a32 = a00;
    for (size_t k = 0; k < c8; k += 8) {
        const __m256 u = _mm256_loadu_ps(x0 + k), v = _mm256_loadu_ps(x1 + k);
        const __m256 z = _mm256_loadu_ps(x2 + k);
        __m256 r = _mm256_loadu_ps(w0 + k);
        a00 = _mm256_fmadd_ps(r, u, a00);
        a01 = _mm256_fmadd_ps(r, v, a01);
        a02 = _mm256_fmadd_ps(r, z, a02);
        r = _mm256_loadu_ps(w1 + k);
        a10 = _mm256_fmadd_ps(r, u, a10);
        a11 = _mm256_fmadd_ps(r, v, a11);
        a12 = _mm256_fmadd_ps(r, z, a12);
        r = _mm256_loadu_ps(w2 + k);
        a20 = _mm256_fmadd_ps(r, u, a20);
        a21 = _mm256_fmadd_ps(r, v, a21);
        a22 = _mm256_fmadd_ps(r, z, a22);
        r = _mm256_loadu_ps(w3 + k);
        a30 = _mm256_fmadd_ps(r, u, a30);
        a31 = _mm256_fmadd_ps(r, v, a31);
        a32 = _mm256_fmadd_ps(r, z, a32);
    }
    const __m256 acc[3][4] = { { a00, a10, a20, a30 }, { a01, a11, a21, a31 },
                               { a02, a12, a22, a32 } };
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 4; i++)
            y[(size_t)t * ldy + (size_t)i] = hsum(acc[t][i]) + tail(w + (size_t)i * cols,
                                                                   x + (size_t)t * cols, c8, cols);
}

/* The tile over tokens [0, n) of x, in the order above. */
AVX2_FMA static void tile_tokens(const float *w, size_t nr, const float *x, size_t n,
                                 size_t cols, float *y, size_t ldy) {
    size_t r = 0;
    for (; r + 4 <= nr; r += 4) {
        size_t t = 0;
        for (; t + 3 <= n; t += 3)
            dot4x3(w + r * cols, x + t * cols, cols, y + t * ldy + r, ldy);
        for (; t + 2 <= n; t += 2)
            dot4x2(w + r * cols, x + t * cols, cols, y + t * ldy + r, ldy);
        for (; t < n; t++)
            for (size_t i = r; i < r + 4; i++)
                y[t * ldy + i] = dot1(w + i * cols, x + t * cols, cols);
    }
    for (; r < nr; r++)
        for (size_t t = 0; t < n; t++)
            y[t * ldy + r] = dot1(w + r * cols, x + t * cols, cols);
}

/* Tokens go by blocks of about LC_TILE_X_BYTES of x, so that a block stays in the L2
 * cache while every 4-row group of w runs over it: unblocked, each 4-row group streamed
 * all n tokens' activations (megabytes at 512 tokens) from the L3 cache or memory. */
#define LC_TILE_X_BYTES (256u * 1024u)

AVX2_FMA void lc_infer_tile_avx2(const float *w, size_t nr, const float *x, size_t n,
                                 size_t cols, float *y, size_t ldy) {
    size_t tb = LC_TILE_X_BYTES / sizeof(float) / (cols ? cols : 1);
    tb = tb < 3 ? 3 : tb - tb % 3;
    for (size_t t0 = 0; t0 < n; t0 += tb)
        tile_tokens(w, nr, x + t0 * cols, n - t0 < tb ? n - t0 : tb, cols, y + t0 * ldy, ldy);
}

bool lc_infer_avx2_usable(void) {
    return lc_cpu_has_all(LC_CPU_BIT(LC_CPU_AVX2) | LC_CPU_BIT(LC_CPU_FMA));
}

#else
typedef int lc_infer_x86_none;     /* ISO C wants at least one declaration per file */
#endif
