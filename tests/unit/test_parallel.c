/* Unit tests for libconvert/parallel.h: every item once, on the workers it says, and the
 * lowest failing range's error whatever the thread count. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <string.h>

#include "libconvert/parallel.h"

typedef struct sums {
    atomic_int seen[1000];
    size_t     workers;
    atomic_int bad_worker;
    size_t     fail_from;       /* ranges starting at or above fail from here fail */
} sums;

static lc_code mark(void *ctx, size_t worker, size_t begin, size_t end, lc_error *err) {
    sums *s = ctx;
    if (worker >= s->workers)
        atomic_fetch_add(&s->bad_worker, 1);
    for (size_t i = begin; i < end; i++)
        atomic_fetch_add(&s->seen[i], 1);
    if (begin >= s->fail_from)
        return lc_fail(err, LC_E_MALFORMED, begin, "range at %zu failed", begin);
    return LC_OK;
}

ParameterizedTestParameters(parallel, every_item_once) {
    static int threads[] = { 1, 2, 3, 8, 0 };
    return cr_make_param_array(int, threads, sizeof threads / sizeof *threads);
}

ParameterizedTest(int *threads, parallel, every_item_once) {
    static sums s;
    memset(&s, 0, sizeof s);
    s.fail_from = SIZE_MAX;
    s.workers = lc_parallel_workers(1000, 7, *threads);
    lc_error err = { 0 };
    cr_assert_eq(lc_parallel_for(1000, 7, *threads, mark, &s, &err), LC_OK);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(atomic_load(&s.seen[i]), 1, "item %d", i);
    cr_assert_eq(atomic_load(&s.bad_worker), 0);
}

ParameterizedTestParameters(parallel, lowest_failure_wins) {
    static int threads[] = { 1, 2, 4, 8 };
    return cr_make_param_array(int, threads, sizeof threads / sizeof *threads);
}

ParameterizedTest(int *threads, parallel, lowest_failure_wins) {
    static sums s;
    for (int rep = 0; rep < 20; rep++) {
        memset(&s, 0, sizeof s);
        s.workers = lc_parallel_workers(1000, 10, *threads);
        s.fail_from = 500;             /* ranges 50, 51, ... fail */
        lc_error err = { 0 };
        cr_assert_eq(lc_parallel_for(1000, 10, *threads, mark, &s, &err), LC_E_MALFORMED);
        cr_assert_eq(err.offset, 500, "the lowest failing range, not %llu",
                     (unsigned long long)err.offset);
        for (int i = 0; i < 500; i++)  /* everything below it ran */
            cr_assert_eq(atomic_load(&s.seen[i]), 1, "item %d", i);
    }
}

Test(parallel, workers_and_edges) {
    cr_assert_eq(lc_parallel_workers(0, 1, 4), 1);
    cr_assert_eq(lc_parallel_workers(3, 1, 8), 3);
    cr_assert_eq(lc_parallel_workers(100, 50, 8), 2);
    cr_assert_eq(lc_parallel_workers(100, 0, 1), 1);
    lc_error err = { 0 };
    cr_assert_eq(lc_parallel_for(0, 1, 4, mark, NULL, &err), LC_OK);   /* fn never called */
}
