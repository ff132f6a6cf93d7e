/* jobs/gguf_split.h: the gguf-split job, llama.cpp's gguf-split (tools/gguf-split in the
 * llama.cpp that llama-cpp-python 0.3.36 vendors) with its interface and its bytes.
 *
 *  - split: IN (a GGUF, or the first part of a split one: read whole) is cut into parts
 *    OUT-00001-of-0000N.gguf, ... by formats/gguf_split.h's plan (by tensor count,
 *    default 128, or by size; --no-tensor-first-split), each part byte-identical to
 *    gguf-split's for the same input and options. The plan is printed as gguf-split
 *    prints it ("n_split: N", then "split 00001: n_tensors = T, total_size = SM" per
 *    part, sizes in 10^6 bytes rounded down; jobs/gguf_split_print.h), with or without
 *    dry_run.
 *  - merge: IN is the first part of a split model; OUT is one GGUF, byte-identical to
 *    gguf-split --merge's: the first part's metadata with split.count 0 at the end, every
 *    part's tensors in order. OUT must not exist (gguf-split refuses that too).
 * Unlike gguf-split, the parts appear as a set or not at all and OUT atomically, every
 * part is checked as the readers check a split (formats/gguf_split.h), a split IN is
 * split whole (gguf-split would take its first part's tensors only), and the options
 * are refused when malformed (gguf-split reads "1.5G" as 1G and a tensor count of "x"
 * as 0). */
#ifndef LC_JOBS_GGUF_SPLIT_H
#define LC_JOBS_GGUF_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf_split.h"
#include "libconvert/error.h"
#include "libconvert/progress.h"

typedef struct lc_job_gguf_split_opts {
    const char        *in;
    const char        *out;       /* split: the parts' prefix, as given; merge: the file */
    bool               merge;
    lc_gguf_split_opts split;     /* split: the plan (part and skip_existing honoured) */
    bool               dry_run;   /* plan and check; write nothing */
    int                threads;   /* 0: one per core (at most 8) */
} lc_job_gguf_split_opts;

/* What a run planned and did; printing it is jobs/gguf_split_print.h's. */
typedef struct lc_job_gguf_split_result {
    bool      merge, dry_run;
    bool      planned;          /* split: the plan below is set (also when writing then
                                 * failed: gguf-split prints it before it writes) */
    uint32_t  n_parts;          /* split: the plan's parts; merge: the parts merged */
    uint32_t  n_figured;        /* split: the parts whose figures below are set (all of
                                 * them once planned; fewer when a part's header failed
                                 * the writer's checks) */
    char    **part_paths;       /* split: each part's name (owned) */
    size_t   *part_tensors;     /* split: each part's tensors */
    uint64_t *part_bytes;       /* split: each part's header and tensor bytes, unpadded
                                 * (gguf-split's total_size) */
    uint32_t  only;             /* --part K: K, or 0 */
    uint32_t  kept;             /* --skip-existing: parts already there, kept */
    size_t    tensors;          /* in all */
    char     *out;              /* OUT as given (owned) */
} lc_job_gguf_split_result;

/* Frees what r owns and zeroes it; NULL-safe. */
void lc_job_gguf_split_result_free(lc_job_gguf_split_result *r);

/* Runs the job into *res (may be NULL). Codes: lc_gguf_split_load's (the input and every part of a split one),
 * LC_E_ARG (a plan with a part without tensors, --merge of a file that is not split or
 * onto an OUT that exists, a --part count other than the plan's), lc_gguf_write_parts'
 * and the writer's. A failure while reading names IN. p may be NULL. */
lc_code lc_job_gguf_split(const lc_job_gguf_split_opts *o, lc_progress *p,
                          lc_job_gguf_split_result *res, lc_error *err);

#endif
