/* libconvert/parallel.c: the parallel-for of parallel.h. Ranges are claimed from one
 * atomic counter; a failure lowers a mark above which no range starts, so that the
 * reported failure is the lowest failing range's for any thread count. */
#define _POSIX_C_SOURCE 200809L

#include "libconvert/parallel.h"

#include <pthread.h>
#include <stdatomic.h>

#include "libconvert/alloc.h"
#include "libconvert/pipeline.h"

typedef struct run {
    size_t          n, grain, ranges;
    lc_parallel_fn  fn;
    void           *ctx;
    atomic_size_t   next;       /* the next range to claim */
    atomic_size_t   fail;       /* the lowest failed range, or `ranges` */
    pthread_mutex_t mu;         /* guards err while fail is lowered */
    lc_error        err;
    lc_code         rc;
} run;

typedef struct worker {
    run      *r;
    size_t    index;
    pthread_t tid;
} worker;

size_t lc_parallel_workers(size_t n, size_t grain, int threads) {
    const size_t g = grain ? grain : 1;
    const size_t ranges = n / g + (n % g != 0);
    size_t w = (size_t)lc_pipeline_threads(threads);
    if (w > ranges)
        w = ranges;
    return w ? w : 1;
}

static void *work(void *arg) {
    worker *w = arg;
    run *r = w->r;
    for (;;) {
        const size_t k = atomic_fetch_add(&r->next, 1);
        if (k >= r->ranges || k > atomic_load(&r->fail))
            break;
        const size_t begin = k * r->grain;
        const size_t end = r->n - begin < r->grain ? r->n : begin + r->grain;
        lc_error e = { 0 };
        const lc_code rc = r->fn(r->ctx, w->index, begin, end, &e);
        if (rc != LC_OK) {
            pthread_mutex_lock(&r->mu);
            if (k < atomic_load(&r->fail)) {
                atomic_store(&r->fail, k);
                r->err = e;
                r->rc = rc;
            }
            pthread_mutex_unlock(&r->mu);
        }
    }
    return NULL;
}

lc_code lc_parallel_for(size_t n, size_t grain, int threads, lc_parallel_fn fn, void *ctx,
                        lc_error *err) {
    if (n == 0)
        return LC_OK;
    const size_t g = grain ? grain : 1;
    const size_t nw = lc_parallel_workers(n, g, threads);
    if (nw == 1) {      /* in order on this thread: the first failure is the lowest */
        for (size_t begin = 0; begin < n; begin += g) {
            const lc_code rc = fn(ctx, 0, begin, n - begin < g ? n : begin + g, err);
            if (rc != LC_OK)
                return rc;
        }
        return LC_OK;
    }
    run r = { .n = n, .grain = g, .ranges = n / g + (n % g != 0), .fn = fn, .ctx = ctx };
    atomic_init(&r.next, 0);
    atomic_init(&r.fail, r.ranges);
    pthread_mutex_init(&r.mu, NULL);
    worker w0 = { .r = &r, .index = 0 };
    worker *w = lc_calloc(nw - 1, sizeof *w);
    size_t started = 0;
    for (size_t i = 0; w && i < nw - 1; i++) {
        w[i] = (worker){ .r = &r, .index = i + 1 };
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
            break;
        started++;
    }
    work(&w0);
    for (size_t i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    lc_free(w);
    pthread_mutex_destroy(&r.mu);
    if (atomic_load(&r.fail) < r.ranges) {
        if (err && err->code == LC_OK)
            *err = r.err;
        return r.rc;
    }
    return LC_OK;
}
