/* libconvert/progress.c: a single carriage-return line, throttled to 10 Hz. */
#define _POSIX_C_SOURCE 200809L
#include "libconvert/progress.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libconvert/alloc.h"
#include "libconvert/escape.h"

struct lc_progress {
    bool            enabled, printed;
    lc_progress_fn  fn;       /* instead of printing, when not NULL */
    void           *fn_ctx;
    bool            begun;    /* a phase is open (fn gets one end per begin) */
    pthread_mutex_t mu;
    char            label[160];
    uint64_t        total, done;
    double          start, last;
    const char     *unit;     /* NULL: bytes, shown in MiB */
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

lc_progress *lc_progress_new(bool enabled) {
    lc_progress *p = lc_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->enabled = enabled;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

lc_progress *lc_progress_new_fn(lc_progress_fn fn, void *ctx) {
    lc_progress *p = lc_progress_new(false);
    if (p) {
        p->fn = fn;
        p->fn_ctx = ctx;
    }
    return p;
}

void lc_progress_free(lc_progress *p) {
    if (!p)
        return;
    lc_progress_end(p);
    pthread_mutex_destroy(&p->mu);
    lc_free(p);
}

void lc_progress_begin(lc_progress *p, const char *label, uint64_t total) {
    lc_progress_begin_units(p, label, total, NULL);
}

void lc_progress_begin_units(lc_progress *p, const char *label, uint64_t total,
                             const char *unit) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->unit = unit;
    lc_escape(p->label, sizeof p->label, label, strlen(label)); /* a shard's name, say */
    p->total = total;
    p->done = 0;
    p->start = now_s();
    p->last = 0;
    p->printed = false;
    p->begun = true;
    if (p->fn)
        p->fn(p->fn_ctx, p->label, 0, total);
    pthread_mutex_unlock(&p->mu);
}

void lc_progress_add(lc_progress *p, uint64_t bytes) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->done += bytes;
    double t = now_s();
    if (p->fn && t - p->last >= 0.1) {
        p->fn(p->fn_ctx, p->label, p->done, p->total);
        p->last = t;
    }
    if (p->enabled && p->unit && t - p->start >= 1.0 && t - p->last >= 0.1) {
        const double rate = (double)p->done / (t - p->start);
        if (p->total)
            fprintf(stderr, "\r%s: %5.1f%% %llu/%llu %s %.0f %s/s ", p->label,
                    100.0 * (double)p->done / (double)p->total, (unsigned long long)p->done,
                    (unsigned long long)p->total, p->unit, rate, p->unit);
        else
            fprintf(stderr, "\r%s: %llu %s %.0f %s/s ", p->label,
                    (unsigned long long)p->done, p->unit, rate, p->unit);
        p->last = t;
        p->printed = true;
    } else if (p->enabled && t - p->start >= 1.0 && t - p->last >= 0.1) {
        double mib = (double)p->done / (1 << 20), rate = mib / (t - p->start);
        if (p->total)
            fprintf(stderr, "\r%s: %5.1f%% %.0f/%.0f MiB %.0f MiB/s ", p->label,
                    100.0 * (double)p->done / (double)p->total, mib,
                    (double)p->total / (1 << 20), rate);
        else
            fprintf(stderr, "\r%s: %.0f MiB %.0f MiB/s ", p->label, mib, rate);
        p->last = t;
        p->printed = true;
    }
    pthread_mutex_unlock(&p->mu);
}

void lc_progress_end(lc_progress *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->printed)
        fprintf(stderr, "\r\033[K");
    p->printed = false;
    if (p->fn && p->begun)
        p->fn(p->fn_ctx, p->label, p->done, p->total);
    p->begun = false;
    pthread_mutex_unlock(&p->mu);
}
