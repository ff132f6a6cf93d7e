/* libconvert/pipeline.h: an ordered pipeline. Jobs 0..count-1 are made in parallel by
 * worker threads into buffers of their own and taken one by one, in job order, on the
 * calling thread. Writers use it to convert tensors on every core while the calling
 * thread writes the output file, which must grow in order.
 *
 * Memory is bounded: 4 buffers of buf_bytes per worker, whatever the job count. */
#ifndef LC_LIBCONVERT_PIPELINE_H
#define LC_LIBCONVERT_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"

/* Fills buf (buf_bytes long) with job `job`'s bytes and sets *len; may leave *len 0.
 * Runs on a worker thread, concurrently with other jobs' make calls. */
typedef lc_code (*lc_pipeline_make_fn)(void *ctx, size_t job, uint8_t *buf, size_t *len,
                                       lc_error *err);
/* Consumes what make produced for `job`; called on the calling thread in job order. */
typedef lc_code (*lc_pipeline_take_fn)(void *ctx, size_t job, const uint8_t *buf, size_t len,
                                       lc_error *err);

typedef struct lc_pipeline {
    size_t count;                /* jobs */
    size_t buf_bytes;            /* bytes per job buffer */
    int threads;                 /* workers; 0: as many as online cores (at most 8) */
    lc_pipeline_make_fn make;
    lc_pipeline_take_fn take;
    void *ctx;
} lc_pipeline;

/* Runs every job. Stops at the first failure in job order and returns it with its
 * error: the same error whatever the thread count, since jobs after a failed one are
 * never taken; *failed_job (may be NULL) is then that job, or count when the
 * pipeline itself failed (LC_E_NOMEM: no buffers). One worker runs everything on the
 * calling thread, without threads. */
lc_code lc_pipeline_run(const lc_pipeline *p, size_t *failed_job, lc_error *err);

/* The worker count that `threads` asks for (0: online cores, at most 8; at least 1). */
int lc_pipeline_threads(int threads);

#endif
