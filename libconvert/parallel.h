/* libconvert/parallel.h: the one parallel-for, for work that is not a stream.
 *
 * What -t means everywhere: lc_pipeline_threads(threads) workers (0: one per online
 * core, at most 8), the calling thread one of them. The ordered pipeline
 * (libconvert/pipeline.h) runs the writers; this runs everything whose results land in
 * place (model-verify's tensor statistics, rows of a quantized array, the forward
 * pass's weight products and attention heads): [0, n) cut into
 * ranges that workers claim in index order. */
#ifndef LC_LIBCONVERT_PARALLEL_H
#define LC_LIBCONVERT_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"

/* Does items [begin, end) on worker `worker` (0 .. lc_parallel_workers() - 1: an index
 * for the caller's per-worker scratch; no two ranges run at once on one worker). */
typedef lc_code (*lc_parallel_fn)(void *ctx, size_t worker, size_t begin, size_t end,
                                  lc_error *err);

/* How many workers lc_parallel_for(n, grain, threads, ...) uses: lc_pipeline_threads(
 * threads), at most the number of ranges, at least 1. */
size_t lc_parallel_workers(size_t n, size_t grain, int threads);

/* Runs fn over [0, n) in ranges of `grain` items (the last may be shorter; grain 0 is
 * 1), on lc_parallel_workers() threads, the calling thread included (one worker: no
 * thread is made). Returns the failure of the lowest failing range with its error,
 * whatever the thread count: after a failure no range above it starts, every range below
 * it runs. LC_E_NOMEM when threads cannot be made is never returned: the work then runs
 * on the threads that could be. Thread-safe; fn must be for different ranges. */
lc_code lc_parallel_for(size_t n, size_t grain, int threads, lc_parallel_fn fn, void *ctx,
                        lc_error *err);

#endif
