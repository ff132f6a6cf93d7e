/* libconvert/pipeline.c: the ordered pipeline of pipeline.h.
 *
 * Job j lives in slot j % nslots. A worker claims the next job, waits until the
 * consumer has taken the job that last used its slot, makes it outside the lock and
 * marks the slot ready; the consumer waits for slot j to hold job j, takes it outside
 * the lock and frees the slot. nslots = 4 x workers, so workers keep going while the
 * consumer is busy with earlier buffers. One mutex; a waiter sleeps on the
 * condition variable of what it waits for and is woken only when someone waits, since
 * on a busy machine a needless wake-up costs a context switch per job. */
#define _POSIX_C_SOURCE 200809L

#include "libconvert/pipeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "libconvert/alloc.h"

#define MAX_AUTO_THREADS 8
#define NO_JOB SIZE_MAX
#define SLOTS_PER_WORKER 4

typedef struct slot {
    uint8_t *buf;
    size_t   ready;         /* the job whose bytes are in buf, or NO_JOB */
    size_t   len;
    lc_code  rc;
    lc_error err;
} slot;

typedef struct run {
    const lc_pipeline *p;
    pthread_mutex_t mu;
    pthread_cond_t  ready_cv;   /* the consumer waits here for its next job */
    pthread_cond_t  free_cv;    /* workers wait here for their slot */
    bool   consumer_waits;
    size_t workers_waiting;
    slot  *slots;
    size_t nslots;
    size_t next;            /* the next job a worker claims */
    size_t taken;           /* jobs the consumer has finished with */
    bool   stop;            /* the consumer has given up: workers leave */
} run;

int lc_pipeline_threads(int threads) {
    /* Asked once: sysconf reads /sys on every call (about 10 us), which a caller making
     * many small calls (the Python package's quantize_array) would pay each time. */
    static atomic_int cores;
    if (threads > 0)
        return threads;
    int c = atomic_load(&cores);
    if (c == 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        c = n < 1 ? 1 : n > MAX_AUTO_THREADS ? MAX_AUTO_THREADS : (int)n;
        atomic_store(&cores, c);
    }
    return c;
}

static void *worker(void *arg) {
    run *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stop && r->next < r->p->count) {
        const size_t j = r->next++;
        while (!r->stop && j >= r->taken + r->nslots) {     /* slot still holds j - nslots */
            r->workers_waiting++;
            pthread_cond_wait(&r->free_cv, &r->mu);
            r->workers_waiting--;
        }
        if (r->stop)
            break;
        slot *s = &r->slots[j % r->nslots];
        pthread_mutex_unlock(&r->mu);
        size_t len = 0;
        lc_error e = {0};
        const lc_code rc = r->p->make(r->p->ctx, j, s->buf, &len, &e);
        pthread_mutex_lock(&r->mu);
        s->len = len;
        s->rc = rc;
        if (rc != LC_OK)
            s->err = e;
        s->ready = j;
        if (r->consumer_waits)
            pthread_cond_signal(&r->ready_cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* The consumer's side: takes jobs in order until the end or the first failure. */
static lc_code consume(run *r, size_t *failed_job, lc_error *err) {
    const lc_pipeline *p = r->p;
    for (size_t j = 0; j < p->count; j++) {
        slot *s = &r->slots[j % r->nslots];
        pthread_mutex_lock(&r->mu);
        while (s->ready != j) {
            /* Workers woken only in batches (below) must not sleep while we wait. */
            if (r->workers_waiting)
                pthread_cond_broadcast(&r->free_cv);
            r->consumer_waits = true;
            pthread_cond_wait(&r->ready_cv, &r->mu);
        }
        r->consumer_waits = false;
        pthread_mutex_unlock(&r->mu);
        lc_code rc = s->rc;
        if (rc != LC_OK) {
            if (err)
                *err = s->err;
        } else {
            rc = p->take(p->ctx, j, s->buf, s->len, err);
        }
        if (rc != LC_OK) {
            *failed_job = j;
            return rc;
        }
        pthread_mutex_lock(&r->mu);
        s->ready = NO_JOB;
        r->taken = j + 1;
        /* Wake waiting workers once half the slots are free, not once per slot: when
         * writing is the slow part, workers wait for every slot, and each wake-up is a
         * context switch. */
        if (r->workers_waiting && r->taken % (r->nslots / 2) == 0)
            pthread_cond_broadcast(&r->free_cv);
        pthread_mutex_unlock(&r->mu);
    }
    return LC_OK;
}

/* One worker: no threads at all, so a single-threaded run is easy to reason about. */
static lc_code run_inline(const lc_pipeline *p, size_t *failed_job, lc_error *err) {
    uint8_t *buf = lc_malloc(p->buf_bytes ? p->buf_bytes : 1);
    if (!buf)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for a %zu-byte buffer",
                       p->buf_bytes);
    lc_code rc = LC_OK;
    for (size_t j = 0; j < p->count && rc == LC_OK; j++) {
        size_t len = 0;
        rc = p->make(p->ctx, j, buf, &len, err);
        if (rc == LC_OK)
            rc = p->take(p->ctx, j, buf, len, err);
        if (rc != LC_OK)
            *failed_job = j;
    }
    lc_free(buf);
    return rc;
}

lc_code lc_pipeline_run(const lc_pipeline *p, size_t *failed_job, lc_error *err) {
    size_t ignored;
    if (!failed_job)
        failed_job = &ignored;
    *failed_job = p->count;
    size_t workers = (size_t)lc_pipeline_threads(p->threads);
    if (workers > p->count)
        workers = p->count;
    if (workers <= 1)
        return p->count ? run_inline(p, failed_job, err) : LC_OK;
    run r = { .p = p, .nslots = SLOTS_PER_WORKER * workers };
    pthread_t *tid = lc_calloc(workers, sizeof *tid);
    r.slots = lc_calloc(r.nslots, sizeof *r.slots);
    lc_code rc = LC_OK;
    size_t started = 0;
    if (!tid || !r.slots) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu workers", workers);
        goto done;
    }
    for (size_t i = 0; i < r.nslots; i++) {
        r.slots[i].ready = NO_JOB;
        if (!(r.slots[i].buf = lc_malloc(p->buf_bytes ? p->buf_bytes : 1))) {
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET,
                         "out of memory for %zu buffers of %zu bytes", r.nslots, p->buf_bytes);
            goto done;
        }
    }
    if (pthread_mutex_init(&r.mu, NULL) != 0) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot create a mutex");
        goto done;
    }
    if (pthread_cond_init(&r.ready_cv, NULL) != 0) {
        pthread_mutex_destroy(&r.mu);
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot create a condition variable");
        goto done;
    }
    if (pthread_cond_init(&r.free_cv, NULL) != 0) {
        pthread_cond_destroy(&r.ready_cv);
        pthread_mutex_destroy(&r.mu);
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot create a condition variable");
        goto done;
    }
    /* Fewer threads than asked for still finish the work; none at all, inline. */
    while (started < workers && pthread_create(&tid[started], NULL, worker, &r) == 0)
        started++;
    if (started == 0) {
        rc = run_inline(p, failed_job, err);
    } else {
        rc = consume(&r, failed_job, err);
        pthread_mutex_lock(&r.mu);
        r.stop = true;
        pthread_cond_broadcast(&r.free_cv);
        pthread_mutex_unlock(&r.mu);
        for (size_t i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
    }
    pthread_cond_destroy(&r.free_cv);
    pthread_cond_destroy(&r.ready_cv);
    pthread_mutex_destroy(&r.mu);
done:
    if (r.slots)
        for (size_t i = 0; i < r.nslots; i++)
            lc_free(r.slots[i].buf);
    lc_free(r.slots);
    lc_free(tid);
    return rc;
}
