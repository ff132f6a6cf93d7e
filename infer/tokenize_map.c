/* infer/tokenize_map.c: the tokenizer's containers -- string -> index, open addressing
 * with a per-process hash key, and the growable id list.
 *
 * The keys come from a file (a vocabulary of up to a few hundred thousand tokens and as
 * many merges), so the hash is keyed with a value picked once per process: nobody can
 * prepare a vocabulary whose texts all land in one slot. Load stays at most one half. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "infer/tokenize_impl.h"
#include "libconvert/alloc.h"

static uint64_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static uint64_t mix64(uint64_t x) {   /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void pick_key(void) {
    struct timespec ts = { 0 };
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t k = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32);
    k ^= (uint64_t)(uintptr_t)&g_key;   /* ASLR adds the address's entropy */
    g_key = mix64(k) | 1;
}

/* FNV-1a over the bytes, started from the key and finished with a full mix, so that
 * which keys collide depends on the key. */
static uint64_t hash(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull ^ g_key;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return mix64(h ^ g_key);
}

lc_code lc_tok_index_build(lc_tok_index *ix, const lc_tok_str *keys, size_t n, bool unique,
                           size_t *dup, lc_error *err) {
    pthread_once(&g_key_once, pick_key);
    memset(ix, 0, sizeof *ix);
    size_t cap = 16;
    while (cap < 2 * n) {
        if (cap > SIZE_MAX / 4 || cap >= (size_t)UINT32_MAX)
            return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "%zu strings are too many to index", n);
        cap *= 2;
    }
    if (!(ix->slots = lc_calloc(cap, sizeof *ix->slots)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory indexing %zu strings", n);
    ix->keys = keys;
    ix->mask = cap - 1;
    for (size_t i = 0; i < n; i++) {
        size_t s = (size_t)hash(keys[i].s, keys[i].len) & ix->mask;
        for (;; s = (s + 1) & ix->mask) {
            uint32_t at = ix->slots[s];
            if (at == 0) {
                ix->slots[s] = (uint32_t)i + 1;
                break;
            }
            const lc_tok_str *k = &keys[at - 1];
            if (k->len == keys[i].len && memcmp(k->s, keys[i].s, k->len) == 0) {
                if (unique) {
                    *dup = i;
                    lc_tok_index_free(ix);
                    return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                                   "entries %u and %zu are the same text", at - 1, i);
                }
                break;   /* the first one stays */
            }
        }
    }
    return LC_OK;
}

int64_t lc_tok_index_find(const lc_tok_index *ix, const char *s, size_t len) {
    if (!ix->slots)
        return -1;
    for (size_t i = (size_t)hash(s, len) & ix->mask;; i = (i + 1) & ix->mask) {
        uint32_t at = ix->slots[i];
        if (at == 0)
            return -1;
        const lc_tok_str *k = &ix->keys[at - 1];
        if (k->len == len && memcmp(k->s, s, len) == 0)
            return (int64_t)at - 1;
    }
}

void lc_tok_index_free(lc_tok_index *ix) {
    lc_free(ix->slots);
    memset(ix, 0, sizeof *ix);
}

lc_code lc_tok_ids_push(lc_tok_ids *o, int32_t id, lc_error *err) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        int32_t *v = lc_realloc_array(o->v, cap, sizeof *v);
        if (!v)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory tokenizing");
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = id;
    return LC_OK;
}
