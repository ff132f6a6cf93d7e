/* libconvert/segments.c: the segment writer of segments.h.
 *
 * Every segment becomes one or more jobs of the ordered pipeline: READ segments and
 * small COPY segments are split into chunks that workers fill (lc_tensor_read, or
 * pread of the input file); big COPY, VIEW and ZEROS segments are one job each that
 * the calling thread writes directly (copy_file_range, write, zeros) when taken. */
#define _POSIX_C_SOURCE 200809L

#include "libconvert/segments.h"


#include "libconvert/alloc.h"
#include "libconvert/map.h"
#include "libconvert/pipeline.h"

#define DEFAULT_CHUNK ((size_t)256 << 10)
/* COPY segments below this size are read with pread by the workers: cheaper than a
 * copy_file_range call of their own, and touching no map. */
#define PREAD_BELOW ((uint64_t)256 << 10)
/* Kernel copies and views go out in pieces of this size so that progress moves. */
#define PIECE ((uint64_t)16 << 20)

typedef struct run {
    const lc_segment *segs;
    size_t n;
    size_t *first;          /* segment i's jobs are [first[i], first[i + 1]) */
    size_t cap;
    lc_outfile *f;
    lc_progress *prog;
    bool take_failed;
} run;

/* Whether workers make a segment's bytes (in chunks), or the taker writes them. */
static bool made_by_workers(const lc_segment *s) {
    return s->kind == LC_SEG_READ || (s->kind == LC_SEG_COPY && s->len < PREAD_BELOW);
}

static size_t job_segment(const run *r, size_t j) {
    size_t lo = 0, hi = r->n;             /* the last i with first[i] <= j */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (r->first[mid] <= j)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static lc_code make_job(void *ctx, size_t j, uint8_t *buf, size_t *len, lc_error *err) {
    const run *r = ctx;
    const lc_segment *s = &r->segs[job_segment(r, j)];
    if (!made_by_workers(s))
        return LC_OK;
    const uint64_t at = (uint64_t)(j - r->first[s - r->segs]) * r->cap;
    const size_t k = s->len - at < r->cap ? (size_t)(s->len - at) : r->cap;
    *len = k;
    if (k == 0)
        return LC_OK;
    return s->kind == LC_SEG_READ ? lc_tensor_read(s->t, at, buf, k, err)
                                  : lc_pread_all(s->fd, s->off + at, buf, k, err);
}

/* A whole segment the taker writes itself. */
static lc_code write_direct(run *r, const lc_segment *s, lc_error *err) {
    if (s->kind == LC_SEG_ZEROS)
        return lc_outfile_pad(r->f, (size_t)s->len, err);
    for (uint64_t at = 0; at < s->len;) {
        const uint64_t k = s->len - at < PIECE ? s->len - at : PIECE;
        if (s->kind == LC_SEG_COPY)
            LC_TRY(lc_outfile_copy_from(r->f, s->fd, s->off + at, k, err));
        else
            LC_TRY(lc_outfile_write(r->f, s->ptr + at, (size_t)k, err));
        lc_progress_add(r->prog, k);
        at += k;
    }
    return LC_OK;
}

static lc_code take_job(void *ctx, size_t j, const uint8_t *buf, size_t len, lc_error *err) {
    run *r = ctx;
    const lc_segment *s = &r->segs[job_segment(r, j)];
    lc_code rc;
    if (!made_by_workers(s))
        rc = write_direct(r, s, err);
    else if ((rc = lc_outfile_write(r->f, buf, len, err)) == LC_OK)
        lc_progress_add(r->prog, len);
    if (rc != LC_OK)
        r->take_failed = true;
    return rc;
}

lc_code lc_segments_write(lc_outfile *f, const lc_segment *segs, size_t n,
                          const lc_segments_opts *o, lc_progress *p,
                          lc_segments_failure *failed, lc_error *err) {
    run r = { .segs = segs, .n = n, .f = f, .prog = p,
              .cap = o && o->chunk_bytes ? o->chunk_bytes : DEFAULT_CHUNK };
    lc_pipeline pl = { .buf_bytes = r.cap, .threads = o ? o->threads : 0, .make = make_job,
                       .take = take_job, .ctx = &r };
    if (failed)
        *failed = (lc_segments_failure){ n, false };
    if (!(r.first = lc_calloc(n + 1, sizeof *r.first)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu segments", n);
    size_t jobs = 0;
    for (size_t i = 0; i < n; i++) {
        r.first[i] = jobs;
        const uint64_t k = made_by_workers(&segs[i]) && segs[i].len
                         ? (segs[i].len + r.cap - 1) / r.cap : 1;
        if (k > SIZE_MAX - jobs) {
            lc_free(r.first);
            return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "too many chunks");
        }
        jobs += (size_t)k;
    }
    r.first[n] = jobs;
    pl.count = jobs;
    size_t job;
    const lc_code rc = lc_pipeline_run(&pl, &job, err);
    if (rc != LC_OK && failed && job < jobs) {
        failed->segment = job_segment(&r, job);
        failed->source = !r.take_failed;
    }
    lc_free(r.first);
    return rc;
}
