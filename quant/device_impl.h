/* quant/device_impl.h: what a device back end provides (private to quant/): one table
 * of four functions. quant/device.c does the rest (SPEC parsing, the lazy view, the
 * kernel table for the tests) for every back end alike.
 *
 * A conversion reaches the back end as a job over whole "granules": runs of elements
 * that are whole blocks of both types (the larger block size; 1 between plain types).
 * The back end reads the source through job->read in pieces of its choosing (straight
 * into its staging memory), and delivers the window [skip, skip + len) of the output
 * bytes of those granules to job->dst, so that a reader asking for a byte range that
 * starts or ends inside a block needs no copy of its own. */
#ifndef LC_QUANT_DEVICE_IMPL_H
#define LC_QUANT_DEVICE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"

/* Copies source bytes [off, off + len) into buf; thread-safe. */
typedef lc_code (*lc_qdev_read_fn)(void *ctx, uint64_t off, void *buf, size_t len,
                                   lc_error *err);

typedef struct lc_qdev_job {
    lc_dtype        from, to;
    uint64_t        granule;        /* elements per granule */
    uint64_t        granules;       /* how many are converted */
    uint64_t        src_off;        /* source byte offset of the first one */
    lc_qdev_read_fn read;
    void           *read_ctx;
    uint8_t        *dst;            /* receives output bytes [skip, skip + len) */
    uint64_t        skip, len;
} lc_qdev_job;

typedef struct lc_qdev_backend {
    const char *name;               /* the SPEC name: "cuda" */
    /* Opens device `index`; *ctx is the back end's, desc gets lc_qdev_describe's text.
     * Codes as lc_qdev_open's, with its "no CUDA device: ..." sentences. */
    lc_code (*open)(unsigned index, void **ctx, char *desc, size_t cap, lc_error *err);
    void    (*close)(void *ctx);
    bool    (*supports)(lc_dtype from, lc_dtype to);
    /* Runs a job; thread-safe; blocking. */
    lc_code (*convert)(void *ctx, const lc_qdev_job *job, lc_error *err);
} lc_qdev_backend;

#ifdef LC_HAVE_CUDA
extern const lc_qdev_backend lc_qdev_cuda;      /* quant/cuda/backend.c */
#endif

#endif
