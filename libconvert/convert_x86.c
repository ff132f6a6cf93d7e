/* libconvert/convert_x86.c: the float rows with F16C (vcvtps2ph / vcvtph2ps) and AVX2.
 *
 * The instructions round to nearest even and keep subnormals, as the scalar code in
 * convert.h does, so finite values and infinities come out bit-identical (the unit
 * tests compare every bf16 and f16 pattern and a sweep of f32 patterns). NaNs do not:
 * the instructions quiet a NaN and keep its payload, while numpy and ml_dtypes each
 * have their own rule. So each function stops before the first group of 8 that holds a
 * NaN and returns how many elements it did; convert.c does that group in scalar code
 * and calls again. Compiled for every x86 target through function attributes, and used
 * only after convert.c has checked the CPU. */
#include "libconvert/convert_impl.h"
#include "libconvert/cpu.h"

#if LC_CONVERT_X86

#include <immintrin.h>
#include <string.h>

#define F16C_AVX2 __attribute__((target("avx2,f16c")))

/* Eight 16-bit lanes, true when any has |x| above `inf` (a NaN of that format). */
F16C_AVX2 static inline int has_nan16(__m128i x, short inf) {
    const __m128i a = _mm_and_si128(x, _mm_set1_epi16(0x7fff));
    return _mm_movemask_epi8(_mm_cmpgt_epi16(a, _mm_set1_epi16(inf)));
}

F16C_AVX2 static inline __m256 bf16x8_to_f32(__m128i x) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x), 16));
}

F16C_AVX2 size_t lc_convert_x86_bf16_f16(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(s + 2 * i));
        if (has_nan16(x, 0x7f80))
            break;
        const __m128i h = _mm256_cvtps_ph(bf16x8_to_f32(x), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(d + 2 * i), h);
    }
    return i;
}

F16C_AVX2 size_t lc_convert_x86_f32_f16(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps((const float *)(const void *)(s + 4 * i));
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
            break;
        _mm_storeu_si128((__m128i *)(d + 2 * i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    return i;
}

F16C_AVX2 size_t lc_convert_x86_f16_f32(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(s + 2 * i));
        if (has_nan16(x, 0x7c00))
            break;
        _mm256_storeu_ps((float *)(void *)(d + 4 * i), _mm256_cvtph_ps(x));
    }
    return i;
}

/* A bit move: no rounding, no NaN rule, so it never stops early. */
F16C_AVX2 size_t lc_convert_x86_bf16_f32(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(s + 2 * i));
        _mm256_storeu_ps((float *)(void *)(d + 4 * i), bf16x8_to_f32(x));
    }
    return i;
}

bool lc_convert_x86_usable(void) {
    return lc_cpu_has(LC_CPU_AVX2) && lc_cpu_has(LC_CPU_F16C);
}

#else
typedef int lc_convert_x86_none;   /* ISO C wants at least one declaration per file */
#endif
