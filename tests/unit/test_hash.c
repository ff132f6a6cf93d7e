/* Unit tests for libconvert/hash: SipHash against the published vectors, and the
 * properties the indexes rely on. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/hash.h"

/* SipHash-2-4 with key 00 01 .. 0f over messages 00 01 .. (n-1) bytes long: the first
 * vectors of the reference implementation's table (vectors.h, 64-bit output, here as
 * little-endian integers). Short, one-word and two-word messages cover every tail. */
Test(hash, siphash24_reference_vectors) {
    static const struct { size_t n; uint64_t h; } v[] = {
        { 0, 0x726fdb47dd0e0e31ull },  { 1, 0x74f839c593dc67fdull },
        { 2, 0x0d6c8009d9a94f5aull },  { 6, 0xcbc9466e58fee3ceull },
        { 7, 0xab0200f58b01d137ull },  { 8, 0x93f5f5799a932462ull },
        { 15, 0xa129ca6149be45e5ull },
        { 16, 0x3f2acc7f57c29bdbull },  { 63, 0x958a324ceb064572ull },
    };
    uint8_t key[16], msg[64];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        cr_expect_eq(lc_siphash(key, 2, 4, msg, v[i].n), v[i].h, "length %zu: %016llx", v[i].n,
                     (unsigned long long)lc_siphash(key, 2, 4, msg, v[i].n));
}

Test(hash, keyed_and_consistent) {
    /* Same input, same value within a process; the string form agrees. */
    cr_assert_eq(lc_hash("model.layers.0", 14), lc_hash_str("model.layers.0"));
    cr_assert_neq(lc_hash_str("a"), lc_hash_str("b"));
    /* A tweak gives another function. */
    cr_assert_neq(lc_hash_tweak(1, "a", 1), lc_hash_tweak(2, "a", 1));
    /* Under the process key the value is not SipHash-1-3 under the zero key (the
     * unkeyed function an attacker could precompute collisions for). */
    static const uint8_t zero[16];
    cr_assert_neq(lc_hash_str("model.layers.0"), lc_siphash(zero, 1, 3, "model.layers.0", 14));
}

/* Names whose FNV-1a (the old index hash) agrees in the low 16 bits, found by search,
 * spread like any others under lc_hash: about one pair in 2^16 shares a bucket. */
static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

Test(hash, fnv_collisions_do_not_carry_over) {
    enum { N = 1 << 18, B = 1 << 16 };
    static uint32_t first[B]; /* name number + 1 of the first name in each FNV bucket */
    memset(first, 0, sizeof first);
    size_t pairs = 0, same = 0;
    char a[16], b[16];
    for (uint32_t i = 0; i < N; i++) {
        snprintf(a, sizeof a, "w.%u", i);
        uint32_t bucket = (uint32_t)(fnv1a(a) & (B - 1));
        if (!first[bucket]) {
            first[bucket] = i + 1;
            continue;
        }
        snprintf(b, sizeof b, "w.%u", first[bucket] - 1);
        pairs++;
        same += (lc_hash_str(a) & (B - 1)) == (lc_hash_str(b) & (B - 1));
    }
    cr_assert_gt(pairs, 100000, "only %zu FNV collisions found", pairs);
    cr_assert_lt(same, 16, "%zu of %zu FNV-colliding pairs also collide", same, pairs);
}
