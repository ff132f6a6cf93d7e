/* quant/avx2/transpose.h: private to quant/: the transposes the x86 lane vocabularies
 * share (quant/avx2/lanes.h, and quant/avx512/lanes.h, whose folder assumes AVX2 too).
 * Pure data movement: no arithmetic, so nothing here can change a bit of a value. */
#ifndef LC_QUANT_AVX2_TRANSPOSE_H
#define LC_QUANT_AVX2_TRANSPOSE_H

#include <immintrin.h>

/* An 8x8 transpose of floats: row k of r becomes column k. */
static inline void lc_x86_transpose8_ps(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        u[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
        u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xee);
        u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
        u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xee);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
        r[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
    }
}

/* Two 16x16 transposes of bytes, one in each 128-bit half: byte j of row i becomes byte i
 * of row j. Four rounds of unpacks, each pairing what the last one paired. */
static inline void lc_x86_transpose16_epi8(__m256i r[16]) {
    __m256i a[16], b[16];
    for (int k = 0; k < 8; k++) {      /* a[k], a[k+8]: rows 2k, 2k+1; columns 0-7, 8-15 */
        a[k] = _mm256_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
        a[k + 8] = _mm256_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
    }
    for (int h = 0; h < 2; h++) {      /* b[8h+4c+m]: rows 4m..4m+3, columns 8h+4c.. */
        for (int m = 0; m < 4; m++) {
            b[8 * h + m] = _mm256_unpacklo_epi16(a[8 * h + 2 * m], a[8 * h + 2 * m + 1]);
            b[8 * h + m + 4] = _mm256_unpackhi_epi16(a[8 * h + 2 * m], a[8 * h + 2 * m + 1]);
        }
    }
    for (int q = 0; q < 4; q++) {      /* a[4q+2p+s]: rows 8p..8p+7, columns 4q+2s.. */
        for (int p = 0; p < 2; p++) {
            a[4 * q + 2 * p] = _mm256_unpacklo_epi32(b[4 * q + 2 * p], b[4 * q + 2 * p + 1]);
            a[4 * q + 2 * p + 1] = _mm256_unpackhi_epi32(b[4 * q + 2 * p], b[4 * q + 2 * p + 1]);
        }
    }
    for (int q = 0; q < 4; q++) {      /* r[4q+2s+t]: all 16 rows of column 4q+2s+t */
        for (int s = 0; s < 2; s++) {
            r[4 * q + 2 * s] = _mm256_unpacklo_epi64(a[4 * q + s], a[4 * q + 2 + s]);
            r[4 * q + 2 * s + 1] = _mm256_unpackhi_epi64(a[4 * q + s], a[4 * q + 2 + s]);
        }
    }
}

#endif
