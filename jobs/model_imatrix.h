/* jobs/model_imatrix.h: the model-imatrix job: an importance matrix from our own forward
 * pass (infer/), in llama-imatrix's GGUF format, as llama.cpp's tools/imatrix computes it
 * (the tree llama-cpp-python 0.3.36 vendors).
 *
 * The model: a GGUF, an HF or Meta folder, a .pth or .safetensors file beside its
 * config (whatever model-verify opens). The text: a file, or the bundled text; tokenized
 * by the model's own tokenizer (infer/tokenize.h) as llama-imatrix does, BOS first when
 * the model adds one, then cut into chunks of `ctx` tokens (the tail shorter than a chunk
 * is dropped). Each chunk runs as a sequence of its own from position 0, its first token
 * replaced by BOS when the model adds one (llama-imatrix's rule).
 *
 * The statistic, per weight matrix a product of the forward pass uses (the blk.* ones,
 * and output.weight with process_output when the model has its own): the sum over
 * tokens of each input column's squared activation (NAME.in_sum2, ne0 = the input width)
 * and the tokens seen (NAME.counts). A stack of experts has one row and one count per
 * expert, from the tokens routed to it only. Sums are kept in double. The file: keys
 * general.type = "imatrix", imatrix.datasets (the text file as given; none for the
 * bundled text), imatrix.chunk_count (the largest count over chunk_size, as llama-imatrix
 * counts it) and imatrix.chunk_size; the tensors sorted by name, each entry's .counts
 * after its .in_sum2, F32. */
#ifndef LC_JOBS_MODEL_IMATRIX_H
#define LC_JOBS_MODEL_IMATRIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"
#include "libconvert/progress.h"

typedef struct lc_job_imatrix_opts {
    const char *model;          /* the model to run */
    const char *out;            /* the imatrix GGUF to write */
    const char *file;           /* the text; NULL: the bundled text */
    uint32_t    ctx;            /* tokens per chunk (>= 1); llama-imatrix's default is 512 */
    uint32_t    chunks;         /* at most this many chunks; 0: all the text gives */
    bool        process_output; /* output.weight too */
    bool        parse_special;  /* special tokens' texts in the file are those tokens */
    bool        dat;            /* OUT as llama-imatrix's legacy .dat instead of a GGUF */
    int         threads;        /* forward-pass threads; 0: one per core, at most 8 */
} lc_job_imatrix_opts;

typedef struct lc_job_imatrix_result {
    size_t    n_text_tokens;    /* what the text tokenized to */
    uint32_t  chunks, chunk_size;
    uint32_t  chunk_count;      /* imatrix.chunk_count as written */
    size_t    entries;          /* weight matrices recorded */
    int32_t  *tokens;           /* [chunks, chunk_size]: the ids each chunk ran (BOS in) */
    double    seconds;          /* the forward passes' */
} lc_job_imatrix_result;

/* Runs the model over the chunks and writes OUT (atomically: no OUT on failure). Codes:
 * LC_E_ARG for ctx 0, an empty text or one shorter than one chunk (the counts named),
 * LC_E_UNSUPPORTED / LC_E_MISMATCH for a model the forward pass cannot run (no family,
 * no hyperparameters, no tokenizer), LC_E_MALFORMED for a non-finite activation (the
 * tensor and chunk named), and the readers' and writer's codes with the path. p may be
 * NULL. On success r holds the figures (lc_job_imatrix_result_free). */
lc_code lc_job_model_imatrix(const lc_job_imatrix_opts *o, lc_progress *p,
                             lc_job_imatrix_result *r, lc_error *err);
void lc_job_imatrix_result_free(lc_job_imatrix_result *r);

/* ---- --show-statistics: llama-imatrix's statistics of an imatrix file ----
 *
 * Per entry (tools/imatrix's compute_statistics, in float as it computes them): the
 * activations are each expert's sums over its count (experts with a count of 0 left
 * out); their total, min, max, mean, standard deviation, the share above 1e-5 in
 * magnitude, their entropy (of activation / total, in bits), the share more than one
 * deviation above the mean, and the cosine of the raw sums with the same tensor of the
 * layer before (0 when none). Sorted as llama-imatrix sorts them (by the tensor's name
 * without its layer, then by total, largest first); then per layer the averages of
 * total, ZD and cosine weighted by the elements. */
typedef struct lc_imatrix_tstat {
    char  name[128];        /* the entry (from the file: escape before printing) */
    char  layer[16];        /* the part after "blk" ("-": none) */
    char  tensor[128];      /* the part before "weight" (the name when none) */
    int   blk;              /* layer as a number; -1: none */
    float total, min, max, mean, stddev, active, entropy, zd, cossim;
    int   elements;
} lc_imatrix_tstat;

typedef struct lc_imatrix_lstat {
    int   layer;
    float bias, zd, cossim;  /* element-weighted averages of total, ZD, cosine */
} lc_imatrix_lstat;

typedef struct lc_job_imatrix_stats {
    lc_imatrix_tstat *t;
    size_t n;
    lc_imatrix_lstat *l;
    size_t nl;
} lc_job_imatrix_stats;

/* Reads PATH (llama-imatrix's GGUF or .dat, formats/gguf_imatrix.h) into r. The
 * reader's codes; LC_E_MALFORMED when no entry has data. */
lc_code lc_job_imatrix_statistics(const char *path, lc_job_imatrix_stats *r, lc_error *err);
void lc_job_imatrix_stats_free(lc_job_imatrix_stats *r);

#endif
