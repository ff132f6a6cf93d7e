/* infer/matmul_impl.h: what matmul.c and its SIMD tile share (not installed).
 *
 * A tile function computes y[t * ldy + r] = dot(w_r, x_t) for every r < nr weight rows
 * w [nr, cols] and t < n token vectors x [n, cols]. Every output is one 8-lane float32
 * accumulator over k = 0, 8, 16, ... summed as ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)), then
 * the tail k >= cols & ~7 added in order, so an output does not depend on where it falls
 * in a tile. The reference multiplies and adds; the AVX2 tile fuses them (FMA), so the
 * two differ by float rounding only. */
#ifndef LC_INFER_MATMUL_IMPL_H
#define LC_INFER_MATMUL_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#if (defined(__x86_64__) || defined(__i386__)) && \
    (!defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define LC_INFER_X86 1
#else
#define LC_INFER_X86 0
#endif

typedef void (*lc_infer_tile_fn)(const float *w, size_t nr, const float *x, size_t n,
                                 size_t cols, float *y, size_t ldy);

void lc_infer_tile_ref(const float *w, size_t nr, const float *x, size_t n, size_t cols,
                       float *y, size_t ldy);

#if LC_INFER_X86
/* True when libconvert/cpu.h reports AVX2 and FMA (LC_CPU_DISABLE=avx2 hides them). */
bool lc_infer_avx2_usable(void);
void lc_infer_tile_avx2(const float *w, size_t nr, const float *x, size_t n, size_t cols,
                        float *y, size_t ldy);
#endif

/* The tile in use: AVX2 when usable, else the reference; chosen once. */
lc_infer_tile_fn lc_infer_tile(void);

#endif
