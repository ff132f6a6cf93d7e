/* jobs/gguf_split.h: the gguf-split job, llama.cpp's gguf-split (tools/gguf-split in the
 * llama.cpp that llama-cpp-python 0.3.36 vendors) with its interface and its bytes.
 *
 *  - split: IN (a GGUF, or the first part of a split one: read whole) is cut into parts
 *    OUT-00001-of-0000N.gguf, ... by formats/gguf_split.h's plan (by tensor count,
 *    default 128, or by size; --no-tensor-first-split), each part byte-identical to
 *    gguf-split's for the same input and options. The plan is printed as gguf-split
 *    prints it ("n_split: N", then "split 00001: n_tensors = T, total_size = SM" per
 *    part, sizes in 10^6 bytes rounded down), with or without dry_run.
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
#include <stdio.h>

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
    FILE              *print;     /* the split plan; NULL: nowhere */
    FILE              *summary;   /* one line saying what was written; NULL: nowhere */
} lc_job_gguf_split_opts;

/* Runs the job. Codes: lc_gguf_split_load's (the input and every part of a split one),
 * LC_E_ARG (a plan with a part without tensors, --merge of a file that is not split or
 * onto an OUT that exists, a --part count other than the plan's), lc_gguf_write_parts'
 * and the writer's. A failure while reading names IN. p may be NULL. */
lc_code lc_job_gguf_split(const lc_job_gguf_split_opts *o, lc_progress *p, lc_error *err);

#endif
