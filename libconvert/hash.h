/* libconvert/hash.h: the keyed hash every index of names read from a file uses.
 *
 * Names come from files an attacker may write. An unkeyed hash (FNV-1a) lets them pick
 * names whose low bits collide, and then every insert into an open-addressing table
 * walks one long cluster: 2^16 such names cost seconds, 2^20 hours. SipHash-1-3 with a
 * 128-bit key drawn once per process (getrandom, else /dev/urandom) makes collisions
 * as rare as for random names, whatever the file says; it is what Python and Rust
 * use for their dictionaries. Nothing may depend on the hash values beyond one
 * process: iteration order everywhere is insertion order, never slot order.
 *
 * SipHash (Aumasson and Bernstein, 2012): state v0..v3 from the key, each 8-byte
 * little-endian word m is absorbed as v3 ^= m, c rounds, v0 ^= m; the last word
 * holds the remaining bytes and the length mod 256 in its top byte; then v2 ^= 0xff,
 * d rounds, and the result is v0 ^ v1 ^ v2 ^ v3. Written from that description. */
#ifndef LC_LIBCONVERT_HASH_H
#define LC_LIBCONVERT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-1-3 of p[0..n) under the process key (drawn on first use, thread-safe). */
uint64_t lc_hash(const void *p, size_t n);
/* The same for a C string. */
uint64_t lc_hash_str(const char *s);
/* SipHash-1-3 under the process key with `tweak` folded into the key: an independent
 * function per tweak (a value's kind, say), so equal bytes of different kinds differ. */
uint64_t lc_hash_tweak(uint64_t tweak, const void *p, size_t n);

/* SipHash-c-d under an explicit key (16 bytes, k0 then k1, little-endian): for tests
 * against the published vectors (c = 2, d = 4) and nothing else. */
uint64_t lc_siphash(const uint8_t key[16], int c, int d, const void *p, size_t n);

#endif
