/* libconvert/convert_impl.h: what convert.c and its SIMD rows share (not installed).
 *
 * A SIMD row converts whole groups of 8 elements from s to d and returns how many it
 * did; it stops early before a group it cannot do bit-identically (one with a NaN),
 * which the caller then converts in scalar code. */
#ifndef LC_LIBCONVERT_CONVERT_IMPL_H
#define LC_LIBCONVERT_CONVERT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if (defined(__x86_64__) || defined(__i386__)) && \
    (!defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define LC_CONVERT_X86 1
#else
#define LC_CONVERT_X86 0
#endif

typedef size_t (*lc_convert_simd_fn)(const uint8_t *s, uint8_t *d, size_t n);

#if LC_CONVERT_X86
/* True when the CPU has AVX2 and F16C. */
bool lc_convert_x86_usable(void);
size_t lc_convert_x86_bf16_f16(const uint8_t *s, uint8_t *d, size_t n);
size_t lc_convert_x86_f32_f16(const uint8_t *s, uint8_t *d, size_t n);
size_t lc_convert_x86_f16_f32(const uint8_t *s, uint8_t *d, size_t n);
size_t lc_convert_x86_bf16_f32(const uint8_t *s, uint8_t *d, size_t n);
#endif

/* Tests: false makes lc_convert and casts use the scalar rows only; true (the
 * default) the fastest rows the CPU has. Not thread-safe against running conversions. */
void lc_convert_use_simd(bool on);
/* Whether SIMD rows are in use now. */
bool lc_convert_simd_active(void);

#endif
