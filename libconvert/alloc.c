/* libconvert/alloc.c: the allocation indirection and its failure hook. */
#include "libconvert/alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Atomic because worker threads (libconvert/pipeline.c) allocate too; relaxed order is
 * enough for a counter. */
static _Atomic long g_fail_countdown; /* 0: never fail */

static int should_fail(void) {
    long c = atomic_load_explicit(&g_fail_countdown, memory_order_relaxed);
    for (;;) {
        if (c == 0)
            return 0;
        if (c == 1)
            return 1; /* stays failing until reset */
        if (atomic_compare_exchange_weak_explicit(&g_fail_countdown, &c, c - 1,
                                                  memory_order_relaxed, memory_order_relaxed))
            return 0;
    }
}

void lc_alloc_fail_after(long nth) {
    atomic_store_explicit(&g_fail_countdown, nth < 0 ? 0 : nth, memory_order_relaxed);
}

void *lc_malloc(size_t n) {
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *lc_calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size)
        return NULL;
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *lc_malloc_array(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size)
        return NULL;
    return lc_malloc(count * size);
}

void *lc_realloc(void *p, size_t n) {
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void *lc_realloc_array(void *p, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size)
        return NULL;
    return lc_realloc(p, count * size);
}

void lc_free(void *p) { free(p); }

char *lc_strndup(const char *s, size_t n) {
    if (n == SIZE_MAX)
        return NULL;
    char *d = lc_malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *lc_strdup(const char *s) { return lc_strndup(s, strlen(s)); }
