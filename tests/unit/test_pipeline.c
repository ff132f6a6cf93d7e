/* Unit tests for libconvert/pipeline: jobs are taken in order with their own bytes for
 * any thread count, the first failure in job order wins whatever the timing, a failed
 * take stops the run, and buffers are bounded. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "libconvert/alloc.h"
#include "libconvert/pipeline.h"

typedef struct probe {
    size_t next_take;          /* the job take expects next */
    size_t fail_make[2];       /* jobs whose make fails (SIZE_MAX: none) */
    size_t fail_take;
    size_t buf_bytes;
    _Atomic size_t made;
    bool out_of_order;
    size_t failed_job;         /* what lc_pipeline_run said */
} probe;

static void nap(size_t job) {
    /* uneven work, so that later jobs often finish first */
    struct timespec ts = { 0, (long)((job * 7919) % 5) * 20000 };
    nanosleep(&ts, NULL);
}

static lc_code make(void *ctx, size_t job, uint8_t *buf, size_t *len, lc_error *err) {
    probe *p = ctx;
    nap(job);
    atomic_fetch_add(&p->made, 1);
    if (job == p->fail_make[0] || job == p->fail_make[1])
        return lc_fail(err, LC_E_IO, job, "job %zu failed", job);
    *len = 1 + job % p->buf_bytes;
    memset(buf, (int)(job & 0xff), *len);
    return LC_OK;
}

static lc_code take(void *ctx, size_t job, const uint8_t *buf, size_t len, lc_error *err) {
    probe *p = ctx;
    if (job != p->next_take)
        p->out_of_order = true;
    p->next_take = job + 1;
    if (len != 1 + job % p->buf_bytes)
        p->out_of_order = true;
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (uint8_t)(job & 0xff))
            p->out_of_order = true;
    if (job == p->fail_take)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "take %zu failed", job);
    return LC_OK;
}

static lc_code go(probe *pr, size_t count, int threads, lc_error *err) {
    pr->buf_bytes = 64;
    const lc_pipeline p = { .count = count, .buf_bytes = 64, .threads = threads, .make = make,
                            .take = take, .ctx = pr };
    size_t failed;
    const lc_code rc = lc_pipeline_run(&p, &failed, err);
    pr->failed_job = failed;
    return rc;
}

Test(pipeline, in_order_for_any_thread_count) {
    static const int threads[] = { 1, 2, 3, 8, 0 };
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        probe pr = { .fail_make = { SIZE_MAX, SIZE_MAX }, .fail_take = SIZE_MAX };
        lc_error err = { 0 };
        cr_assert_eq(go(&pr, 500, threads[t], &err), LC_OK, "%s", err.msg);
        cr_assert_eq(pr.next_take, 500, "threads %d", threads[t]);
        cr_assert_not(pr.out_of_order, "threads %d", threads[t]);
        cr_assert_eq(atomic_load(&pr.made), 500);
    }
}

Test(pipeline, first_failure_in_job_order_wins) {
    for (int threads = 1; threads <= 4; threads++)
        for (int round = 0; round < 5; round++) {
            probe pr = { .fail_make = { 123, 61 }, .fail_take = SIZE_MAX };
            lc_error err = { 0 };
            cr_assert_eq(go(&pr, 300, threads, &err), LC_E_IO);
            cr_assert_eq(err.offset, 61, "threads %d: job %" PRIu64 " reported", threads,
                         err.offset);
            cr_assert_str_eq(err.msg, "job 61 failed");
            cr_assert_eq(pr.failed_job, 61);
            cr_assert_eq(pr.next_take, 61, "jobs after the failed one are not taken");
            cr_assert_not(pr.out_of_order);
            /* at most the jobs whose slots were free: 4 per worker past the failure */
            cr_assert_leq(atomic_load(&pr.made), 61 + 1 + 4 * (size_t)threads);
        }
}

Test(pipeline, failed_take_stops) {
    probe pr = { .fail_make = { SIZE_MAX, SIZE_MAX }, .fail_take = 10 };
    lc_error err = { 0 };
    cr_assert_eq(go(&pr, 1000, 3, &err), LC_E_ARG);
    cr_assert_str_eq(err.msg, "take 10 failed");
    cr_assert_eq(pr.failed_job, 10);
    cr_assert_eq(pr.next_take, 11);
    cr_assert_leq(atomic_load(&pr.made), 11 + 4 * 3);
}

Test(pipeline, nothing_to_do_and_thread_counts) {
    probe pr = { .fail_make = { SIZE_MAX, SIZE_MAX }, .fail_take = SIZE_MAX };
    lc_error err = { 0 };
    cr_assert_eq(go(&pr, 0, 4, &err), LC_OK);
    cr_assert_eq(atomic_load(&pr.made), 0);
    cr_assert_eq(lc_pipeline_threads(5), 5);
    const int n = lc_pipeline_threads(0);
    cr_assert(n >= 1 && n <= 8, "%d", n);
}

Test(pipeline, out_of_memory) {
    for (long n = 1; n < 20; n++) {
        probe pr = { .fail_make = { SIZE_MAX, SIZE_MAX }, .fail_take = SIZE_MAX };
        lc_error err = { 0 };
        lc_alloc_fail_after(n);
        const lc_code rc = go(&pr, 50, 3, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            cr_assert_eq(pr.next_take, 50);
            return;
        }
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", n, err.msg);
        cr_assert_eq(pr.next_take, 0, "nothing taken when the buffers are missing");
        cr_assert_eq(pr.failed_job, 50, "no job to blame");
    }
    cr_assert_fail("the pipeline never got its memory");
}
