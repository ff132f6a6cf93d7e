/* libconvert/segments.h: a writer's data section as a list of segments, written in
 * order with the tensors that need reading read on worker threads.
 *
 * Both writers (GGUF, safetensors) lay out their data as back-to-back pieces: bytes
 * a tensor's source must produce (read, convert, permute, quantize), unchanged ranges
 * of an input file (copied in the kernel), zero-copy views, and zero padding. This
 * module turns such a list into an ordered pipeline (pipeline.h): READ segments are
 * split into chunks that workers fill in parallel, everything else is written by the
 * calling thread when its turn comes. Memory: 4 chunks per worker. */
#ifndef LC_LIBCONVERT_SEGMENTS_H
#define LC_LIBCONVERT_SEGMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"
#include "libconvert/outfile.h"
#include "libconvert/progress.h"
#include "libconvert/tensor.h"

typedef enum lc_seg_kind {
    LC_SEG_READ,    /* t's bytes [0, len) through lc_tensor_read */
    LC_SEG_COPY,    /* [off, off + len) of the open file fd, unchanged */
    LC_SEG_VIEW,    /* len bytes at ptr */
    LC_SEG_ZEROS,   /* len zero bytes (alignment padding) */
} lc_seg_kind;

typedef struct lc_segment {
    lc_seg_kind kind;
    const lc_tensor *t;     /* READ: the tensor read; others: named in errors, may be NULL */
    const uint8_t *ptr;     /* VIEW */
    int fd;                 /* COPY */
    uint64_t off;           /* COPY */
    uint64_t len;
} lc_segment;

typedef struct lc_segments_opts {
    size_t chunk_bytes;     /* bytes per READ chunk; 0: 256 KiB */
    int threads;            /* workers; 0: one per core (at most 8) */
} lc_segments_opts;

/* What a failed lc_segments_write says beyond its error: which segment failed, and
 * whether it was a source's read (READ, or a small COPY read with pread) rather than
 * the output, so that the caller names the right file and the tensor. */
typedef struct lc_segments_failure {
    size_t segment;         /* index into segs; n when no segment was to blame */
    bool source;
} lc_segments_failure;

/* Writes the segments to f in order, adding each one's bytes (not padding) to p.
 * The first failure in segment order is the one reported, whatever the thread count.
 * O and FAILED may be NULL. */
lc_code lc_segments_write(lc_outfile *f, const lc_segment *segs, size_t n,
                          const lc_segments_opts *o, lc_progress *p,
                          lc_segments_failure *failed, lc_error *err);

#endif
