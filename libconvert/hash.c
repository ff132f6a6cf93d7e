/* libconvert/hash.c: SipHash and the per-process key. */
#include "libconvert/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "libconvert/bytes.h"

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPROUND(v0, v1, v2, v3)                                                        \
    do {                                                                                \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                       \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                          \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                          \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                       \
    } while (0)

/* Inlined with constant c and d at each call, so the round loops unroll. */
static inline uint64_t sip(uint64_t k0, uint64_t k1, int c, int d, const uint8_t *p,
                           size_t n) {
    uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
    const size_t full = n & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        const uint64_t m = lc_load_le64(p + i);
        v3 ^= m;
        for (int r = 0; r < c; r++)
            SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t m = (uint64_t)(n & 0xff) << 56;
    for (size_t i = full; i < n; i++)
        m |= (uint64_t)p[i] << (8 * (i - full));
    v3 ^= m;
    for (int r = 0; r < c; r++)
        SIPROUND(v0, v1, v2, v3);
    v0 ^= m;
    v2 ^= 0xff;
    for (int r = 0; r < d; r++)
        SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t lc_siphash(const uint8_t key[16], int c, int d, const void *p, size_t n) {
    return sip(lc_load_le64(key), lc_load_le64(key + 8), c, d, p, n);
}

/* ---- the process key ---- */

static uint64_t g_k0, g_k1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static bool read_urandom(uint8_t *buf, size_t n) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    return got == n;
}

static void pick_key(void) {
    uint8_t k[16];
    ssize_t got = -1;
    do
        got = getrandom(k, sizeof k, 0);
    while (got < 0 && errno == EINTR);
    if (got != (ssize_t)sizeof k && !read_urandom(k, sizeof k)) {
        /* No entropy source (a bare chroot, seccomp): the clock, the pid and this
         * library's address (ASLR) still keep the key unknown to a file's author in
         * practice; hashing them spreads what little they hold over all 128 bits. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t seed[4] = { (uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec, (uint64_t)getpid(),
                             (uint64_t)(uintptr_t)&g_k0 };
        static const uint8_t zero[16];
        const uint64_t a = lc_siphash(zero, 2, 4, seed, sizeof seed);
        seed[0] ^= a;
        const uint64_t b = lc_siphash(zero, 2, 4, seed, sizeof seed);
        lc_store_le64(k, a);
        lc_store_le64(k + 8, b);
    }
    g_k0 = lc_load_le64(k);
    g_k1 = lc_load_le64(k + 8);
}

static inline void key(uint64_t *k0, uint64_t *k1) {
    pthread_once(&g_once, pick_key);
    *k0 = g_k0;
    *k1 = g_k1;
}

uint64_t lc_hash(const void *p, size_t n) {
    uint64_t k0, k1;
    key(&k0, &k1);
    return sip(k0, k1, 1, 3, p, n);
}

uint64_t lc_hash_str(const char *s) { return lc_hash(s, strlen(s)); }

uint64_t lc_hash_tweak(uint64_t tweak, const void *p, size_t n) {
    uint64_t k0, k1;
    key(&k0, &k1);
    return sip(k0 ^ tweak, k1, 1, 3, p, n);
}
