/* libconvert/bytes.h: checked arithmetic and little-endian loads and stores.
 * Everything is static inline so that ISA-specific translation units keep their
 * own copies. Loads go through memcpy: file bytes are never cast to structs. */
#ifndef LC_LIBCONVERT_BYTES_H
#define LC_LIBCONVERT_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

/* Return true on overflow, like the builtins they wrap. */
static inline bool lc_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return __builtin_add_overflow(a, b, out);
}
static inline bool lc_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return __builtin_mul_overflow(a, b, out);
}

static inline uint16_t lc_load_le16(const void *p) {
    const uint8_t *b = p;
    return (uint16_t)(b[0] | (uint16_t)b[1] << 8);
}
static inline uint32_t lc_load_le32(const void *p) {
    const uint8_t *b = p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline uint64_t lc_load_le64(const void *p) {
    const uint8_t *b = p;
    return (uint64_t)lc_load_le32(b) | (uint64_t)lc_load_le32(b + 4) << 32;
}
static inline void lc_store_le16(void *p, uint16_t v) {
    uint8_t *b = p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}
static inline void lc_store_le32(void *p, uint32_t v) {
    uint8_t *b = p;
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}
static inline void lc_store_le64(void *p, uint64_t v) {
    uint8_t *b = p;
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}
static inline float lc_bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t lc_f32_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

#endif
