/* jobs/model_verify_impl.h: what the files of the model-verify job share (private).
 *
 *   model_verify.c          the run: open, compare, verdict; the result
 *   model_verify_open.c     one side: its kind, weights, metadata, family, hyperparameters
 *   model_verify_expect.c   what a conversion to each type may change (the thresholds)
 *   model_verify_meta.c     hyperparameters and tokenizer keys, difference by difference
 *   model_verify_tensors.c  tensor pairs through arch/, streamed statistics
 *   model_verify_rows.c     a tensor's rows as float32, in either RoPE row order
 *   model_verify_diagnose.c what a tensor outside its bound looks like instead
 *   model_verify_repro.c    the reproduction: SRC converted to DST's types by our own
 *                           quantizer, the model the KL of DST is judged against
 *   model_verify_imatrix.c  --imatrix: which importance vector each pair's reproduction
 *                           is weighted by; the matrix DST says it was made with
 *   model_verify_logits.c   tokens, both forward passes, logits and hidden-state figures
 *   model_verify_text.c     the text report; escaping names from the files
 *   model_verify_json.c     the JSON object
 *   model_verify_report.c   the HTML page
 *   model_verify_print.c    the public printers of a result (model_verify_print.h) */
#ifndef LC_JOBS_MODEL_VERIFY_IMPL_H
#define LC_JOBS_MODEL_VERIFY_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arch/arch.h"
#include "formats/gguf_imatrix.h"
#include "jobs/model_side_impl.h"
#include "jobs/model_verify.h"
#include "libconvert/error.h"
#include "libconvert/json.h"
#include "libconvert/model.h"

/* ---- expectations per type ---- */

/* What converting a value of one dtype into another may change. */
typedef struct lc_vf_expect {
    lc_dtype    cls;        /* LC_DT_INVALID: exact (DST holds every SRC value); else the
                             * dtype whose rounding or quantization explains the error */
    uint32_t    block;      /* elements the bound is taken over (1: per element) */
    double      rel;        /* per element: |err| <= rel * |x| + abs (plain types);
                             * per block: max |err| <= rel * max |x| + abs (block types) */
    double      abs;
    double      snr_lo, snr_hi;   /* the SNR (dB) this type gives weights like a model's */
    /* The tensor as a whole, for types quant/ reads but cannot write (no per-block bound
     * to measure, and an all-zero block meets "1.0 x the block's largest value"):
     * cosine >= cos_min and relative RMSE sqrt(sum err^2 / sum x^2) <= rel_rmse_max;
     * -INFINITY / INFINITY: not judged. */
    double      cos_min, rel_rmse_max;
} lc_vf_expect;

/* The expectation for a SRC tensor of dtype `from` compared with DST's of dtype `to`. */
lc_vf_expect lc_vf_expect_pair(lc_dtype from, lc_dtype to);
/* How lossy a class is: 0 exact, then f32 < f16 < bf16 < q8_0 < ... (for the model's
 * class, the lossiest pair of its matrices). */
int lc_vf_class_rank(lc_dtype cls);
const char *lc_vf_class_name(lc_dtype cls);    /* "exact", "F16", "Q8_0" */

/* Thresholds of the logits and hidden states for a model of class cls. */
typedef struct lc_vf_limits {
    double kl_mean;         /* mean KL divergence at most */
    double kl_p99;          /* 99th percentile of KL at most */
    double nmse;            /* NMSE of the logits at most (NAN: not judged) */
    double hidden;          /* relative RMS difference of a layer's hidden state at most */
} lc_vf_limits;
lc_vf_limits lc_vf_limits_for(lc_dtype cls);

/* ---- metadata ---- */

typedef struct lc_vf_diff {
    char key[128];          /* "llama.rope.freq_base", "tokenizer.ggml.tokens[17]", escaped */
    char src[96], dst[96];  /* the values, printable ("(absent)" when missing) */
} lc_vf_diff;

#define LC_VF_MAX_DIFFS 64          /* differences kept for the report (all are counted) */
#define LC_VF_MAX_DIFFS_PER_KEY 8   /* array items kept per key */

typedef struct lc_vf_meta {
    bool       compared;
    char       note[160];           /* why not, when not */
    size_t     n_keys;              /* keys compared */
    size_t     n_diffs;             /* differences found (keys, and items inside arrays) */
    lc_vf_diff diffs[LC_VF_MAX_DIFFS];
    size_t     n_kept;
} lc_vf_meta;

/* Compares src and dst's metadata into *r. LC_E_MISMATCH when the vocabularies differ
 * in size (the models cannot be compared further). */
lc_code lc_vf_meta_compare(const lc_vf_side *src, const lc_vf_side *dst, lc_vf_meta *r,
                           lc_error *err);
/* Records one difference (counted always, kept while there is room). */
void lc_vf_meta_add(lc_vf_meta *r, const char *key, const char *src, const char *dst);

/* ---- tensors ---- */

typedef enum lc_vf_repro {
    LC_VF_REPRO_NONE = 0,       /* DST's type is one we cannot write: not reproduced */
    LC_VF_REPRO_SAME,           /* DST's bytes (or, for a type holding every SRC value,
                                 * its values) are the reproduction's: proven */
    LC_VF_REPRO_DIFF,           /* reproduced, and DST differs (an importance matrix,
                                 * another quantizer, or a defect) */
} lc_vf_repro;

typedef struct lc_vf_tensor {
    char         name[96];      /* DST's name, escaped (lc_vf_escape) */
    char         src_name[96];  /* SRC's, escaped */
    const lc_arch_tensor *row;  /* the family's row (NULL: compared by name) */
    uint32_t     layer;         /* UINT32_MAX for top-level tensors */
    uint32_t     expert;        /* the expert compared; UINT32_MAX: not one expert's */
    lc_dtype     src_dt, dst_dt;
    uint32_t     ndim;
    uint64_t     shape[LC_MAX_DIMS];
    char         shape_s[48];
    bool         shape_ok;
    bool         permuted;      /* SRC's Q/K rows were reordered to DST's RoPE order */
    uint32_t     heads;         /* ... in this many heads */
    bool         perm_inverse;
    lc_vf_expect expect;
    uint64_t     n;             /* elements compared */
    double       rmse, max_abs, cosine, snr_db;
    double       rel_rmse;      /* sqrt(sum err^2 / sum SRC^2) */
    bool         floor_miss;    /* below the type's tensor-level floor (expect.cos_min,
                                 * expect.rel_rmse_max) */
    uint64_t     max_at;        /* flat index of the largest error */
    double       worst;         /* largest error / what its block or element may change */
    uint64_t     worst_row, worst_col;    /* where (col: the block's first element) */
    uint64_t     nonfinite;     /* elements where exactly one side is NaN/inf, or both
                                 * are but differ */
    /* The reproduction: SRC's values (in DST's row order) converted to DST's type by
     * our own code (quant/'s quantizers, byte-identical to llama-quantize's without an
     * importance matrix; libconvert's float rounding), DST's bytes compared with it. */
    lc_vf_repro  repro;
    lc_dtype     repro_dt;      /* the type the reproduction uses: DST's, or for a type we
                                 * cannot write the nearest one we can (the proxy) */
    uint64_t     repro_rows;    /* rows whose bytes differ from the reproduction's */
    uint64_t     repro_first;   /* the first of them */
    /* --imatrix: the entry the reproduction weighs this pair's rows by (SIZE_MAX: none),
     * as llama-quantize picks it for DST's stored tensor; row r of the pair uses matrix
     * im_mat0 + r / im_rows (an expert's piece of a stack: its expert, whole). */
    size_t       im_entry;
    uint64_t     im_mat0, im_rows;
    /* DST records an importance matrix and this tensor's type weighs by one: a weighted
     * quantizer moves a block further than the unweighted bounds allow (on random
     * log-normal matrices: Q4_1 2.8x its bound, IQ1_M 1.7x the block's largest value),
     * so a tensor not reproduced is held to LC_VF_WEIGHTED_BLOCK x its blocks' largest
     * value and, as a whole, to the reproduction's relative RMSE (repro_rel_rmse, the
     * unweighted quantizer's when the matrix is not given; measured at most 1.08x):
     * expect.rel_rmse_max = LC_VF_REPRO_FACTOR x it + LC_VF_WEIGHTED_RMSE. */
    bool         weighted_dst;
    double       repro_rel_rmse;    /* the reproduction's own against SRC (NAN: none) */
    bool         ok;            /* within the bound */
    bool         snr_low;       /* below the type's expected SNR range (a mark only) */
    char         diagnosis[160];
    const lc_tensor *src_t, *dst_t;   /* the views */
    const lc_tensor *dst_stored;      /* DST's tensor as its file names it (a stack for
                                       * an expert's piece) */
} lc_vf_tensor;

typedef struct lc_vf_tensors {
    lc_vf_tensor *t;            /* worst first after lc_vf_tensors_sort */
    size_t        n;
    size_t        n_bad;        /* outside their bound or of another shape */
    size_t        n_skipped;    /* computed or dropped by the family (rope_freqs, ...) */
    char          skipped[160]; /* which, for the report */
    char          extra[256];   /* DST tensors SRC lacks ("" when none) */
    size_t        n_extra;
    lc_dtype      cls;          /* the lossiest class of the pairs of matrices */
    size_t        n_proven;     /* LC_VF_REPRO_SAME */
    size_t        n_repro_diff; /* LC_VF_REPRO_DIFF */
    size_t        n_proxied;    /* LC_VF_REPRO_NONE: reproduced in a proxy type */
    size_t        n_weighted;   /* reproduced with an --imatrix vector (im_entry set) */
    const lc_imatrix *im;       /* --imatrix (borrowed), or NULL */
    lc_model     *derived;      /* views the pairing made (experts' pieces, gemma's + 1) */
} lc_vf_tensors;

/* Pairs SRC's tensors with DST's (model_verify_pairs.c): LC_E_MISMATCH naming the first
 * SRC tensor DST lacks. */
lc_code lc_vf_pair_up(const lc_vf_side *src, const lc_vf_side *dst, lc_vf_tensors *r,
                      lc_error *err);

/* Every tensor of DST proven (its bytes are SRC's reproduced) and none extra. */
bool lc_vf_tensors_proven(const lc_vf_tensors *r);

/* ---- the reproduction ---- */

/* The type a reproduction of a tensor of type dt with rows of `cols` elements uses: dt
 * itself when we can write it (a plain float type, or a type quant/ writes; one whose
 * quantizer requires an importance matrix, IQ2_XXS, IQ2_XS, IQ1_S, only when `weighted`:
 * the tensor has an --imatrix entry), else the writable type nearest in bits per weight
 * whose block divides cols (NVFP4 -> Q4_0, IQ2_*, IQ1_*, Q1_0, Q2_0 -> Q2_K,
 * Q8_1, Q8_K -> Q8_0); LC_DT_INVALID when none fits. *proxy tells which. */
lc_dtype lc_vf_repro_type(lc_dtype dt, uint64_t cols, bool weighted, bool *proxy);

/* A model with DST's tensor names, shapes and (where we can write them) types, read
 * lazily from SRC: a proven tensor is DST's own (the same bytes), any other paired one
 * SRC's converted to t->repro_dt (through the RoPE row order DST keeps), an unpaired
 * one DST's. What a correct conversion of SRC gives; its forward pass is what DST's
 * KL is judged against. *out owns everything it reads through, except the sides. */
lc_code lc_vf_repro_build(const lc_vf_side *src, const lc_vf_side *dst,
                          const lc_vf_tensors *t, lc_model **out, lc_error *err);

/* Pairs the tensors (LC_E_MISMATCH naming the first SRC tensor DST lacks), gives each
 * its --imatrix entry (im: NULL for none), then computes every pair's figures with
 * `threads` threads. */
lc_code lc_vf_tensors_compare(const lc_vf_side *src, const lc_vf_side *dst,
                              const lc_imatrix *im, const char *im_path, int threads,
                              lc_progress *p, lc_vf_tensors *r, lc_error *err);
void    lc_vf_tensors_free(lc_vf_tensors *r);

/* Reads rows [r0, r0 + nr) of columns [c0, c0 + nc) of t (viewed as [rows, cols]) as
 * float32 into dst [nr, nc], reading row lc_view_head_row(r) when heads > 0. raw must
 * hold nc columns' bytes for one row (when heads > 0 or nc < cols) or nr rows'. */
lc_code lc_vf_read_rows(const lc_tensor *t, uint64_t rows, uint64_t cols, uint64_t r0,
                        size_t nr, uint64_t c0, size_t nc, uint32_t heads, bool inverse,
                        float *dst, uint8_t *raw, lc_error *err);
/* A tensor as a matrix: rows x cols (1-D: one row, unless permuted: one column). */
void lc_vf_matrix(const lc_tensor *t, bool permuted, uint64_t *rows, uint64_t *cols);

/* For a tensor outside its bound, what it matches instead, in t->diagnosis. */
lc_code lc_vf_diagnose(const lc_vf_side *src, const lc_vf_side *dst, const lc_vf_tensors *r,
                       lc_vf_tensor *t, lc_error *err);

/* ---- --imatrix (model_verify_imatrix.c) ---- */

#define LC_VF_WEIGHTED_BLOCK 4.0
#define LC_VF_WEIGHTED_RMSE  0.01

/* Sets every pair's im_entry, im_mat0, im_rows and repro_dt as llama-quantize would
 * weigh DST's stored tensor: the entry named as it, of ne0 x ne2 values (the token
 * embedding's of another size is ignored, as llama.cpp does), for a type whose
 * quantizer uses one and a pair whose type changes; and weighted_dst (with its
 * relaxed block bound) where DST records a matrix. LC_E_MALFORMED naming im_path and
 * the entry for an entry of another size or a weight that is NaN or infinite (llama-
 * quantize refuses both). r->n_weighted counts the pairs with an entry. */
lc_code lc_vf_imatrix_assign(lc_vf_tensors *r, const lc_vf_side *dst, const lc_imatrix *im,
                             const char *im_path, lc_error *err);

/* Pair p's importance weights for row `row` of its matrix view (p->im_entry set): a
 * row's worth of columns into out. */
lc_code lc_vf_imatrix_row(const lc_vf_tensors *r, const lc_vf_tensor *p, uint64_t row,
                          float *out, lc_error *err);

/* What DST's own keys say about the matrix it was quantized with (quantize.imatrix.*,
 * written by llama-quantize and gguf-quantize). */
typedef struct lc_vf_imatrix_note {
    bool     given;             /* --imatrix */
    bool     dst_records;       /* DST has quantize.imatrix.file or .entries_count */
    char     dst_file[128];     /* quantize.imatrix.file as DST has it (raw, cut at a NUL
                                 * or 127 bytes; "" when absent) */
    int64_t  dst_entries;       /* quantize.imatrix.entries_count, -1 when absent */
    size_t   weighted;          /* pairs reproduced with an --imatrix vector */
    bool     lacking;           /* DST records one, none was given: its tensors cannot
                                 * be proven (the verdict says so) */
} lc_vf_imatrix_note;

/* *n from DST's keys; weighted: the pairs reproduced with --imatrix vectors; proven:
 * every tensor of DST reproduced (lc_vf_tensors_proven). */
void lc_vf_imatrix_recorded(const lc_vf_side *dst, size_t weighted, bool given, bool proven,
                            lc_vf_imatrix_note *n);

/* ---- logits ---- */

typedef struct lc_vf_logits {
    bool     ran;
    bool     unrunnable;        /* a side's tensors disagree with its own keys (a layer
                                 * its per-layer list calls attention has no attention
                                 * tensors): the note says which; the verdict fails */
    char     note[200];         /* why not, or what was cut */
    char     source[64];        /* "the bundled text", "--tokens", "--file F", "--text" */
    int32_t *tokens;            /* [n] */
    size_t   n;                 /* tokens run */
    size_t   n_scored;          /* positions 0..n-2: each predicts the next token */
    uint32_t vocab;
    bool     tok_differ;        /* DST's tokenizer gives other ids for the text */
    size_t   tok_at;            /* the first position where they differ */
    int32_t  tok_src, tok_dst;  /* the ids there (-1: the sequence ended) */
    double   nmse, max_abs, max_logit;
    double   kl_mean, kl_median, kl_p99, kl_max;
    double   dp_rms, dp_min, dp_p01, dp_p05, dp_median, dp_p95, dp_p99, dp_max;
    double   same_top1, same_top5;
    double   ppl_src, ppl_dst;
    float   *kl_pos;            /* [n_scored] KL at each scored position */
    /* layers */
    bool     layers;
    uint32_t n_layers;
    double  *layer_rel;         /* [n_layers] ||h_dst - h_src|| / ||h_src|| */
    double  *layer_cos;         /* [n_layers] */
    int      first_bad;         /* first layer where the models part ways (past the
                                 * class's limit, or growing LC_VF_JUMP x at once), -1 */
    int      first_over;        /* first layer past the class's limit, -1: none */
    double   jump;              /* rel[first_bad] / rel[first_bad - 1] (0 for layer 0) */
    /* the reproduction's own figures against SRC (repro_ran: it ran) */
    bool     repro_ran;
    double   repro_kl_mean, repro_kl_p99, repro_nmse, repro_same_top1;
    double  *repro_layer_rel;   /* [n_layers] */
} lc_vf_logits;

/* A layer "parts ways" when its hidden-state difference passes the class's limit, or
 * grows this many times over the previous layer's while above a tenth of the limit (an
 * intact conversion grows it at most 1.45x per layer on every fixture and type; a
 * skipped permutation or a swapped tensor, 3.4x and more). */
#define LC_VF_JUMP 2.5

/* Tokenizes (SRC's tokenizer; DST's must agree), runs both forward passes and fills
 * *r; with repro (NULL: none), a third pass on it (DST's names, SRC's hyperparameters)
 * whose figures against SRC go to r->repro_*. Skips (r->ran false, a note saying why) when a side has no hyperparameters or no
 * tokenizer and no --tokens was given. */
lc_code lc_vf_logits_run(const lc_job_verify_opts *o, const lc_vf_side *src,
                         const lc_vf_side *dst, const lc_model *repro, lc_dtype cls,
                         lc_progress *p, lc_vf_logits *r, lc_error *err);
void    lc_vf_logits_free(lc_vf_logits *r);
/* perplexity.cpp's percentile: linear between the order statistics around
 * fraction * (n - 1) of sorted v. */
double  lc_vf_percentile(const double *sorted, size_t n, double fraction);

/* ---- the whole run ---- */

/* How the logits were judged. */
typedef enum lc_vf_judge {
    LC_VF_JUDGE_LIMITS = 0,     /* the class's fixed limits (no reproduction ran) */
    LC_VF_JUDGE_PROVEN,         /* every tensor proven: reported, not judged */
    LC_VF_JUDGE_RELATIVE,       /* against the reproduction's own figures */
} lc_vf_judge;

/* DST's figures may be this many times the reproduction's, plus a small absolute term
 * (model_verify.c). */
#define LC_VF_REPRO_FACTOR 1.5

typedef struct lc_vf_run {
    const lc_job_verify_opts *o;
    lc_vf_side    src, dst;
    lc_vf_meta    meta;
    lc_vf_tensors tensors;
    lc_vf_logits  logits;
    lc_dtype      cls;          /* the model's class (tensors.cls) */
    lc_vf_limits  limits;       /* what the logits were held to (see verdict()) */
    lc_vf_judge   judge;
    lc_imatrix   *im;           /* --imatrix, or NULL */
    lc_vf_imatrix_note imx;
    bool          pass;
    char          why[256];     /* the failing parts, named ("" on pass) */
} lc_vf_run;

lc_code lc_vf_print_text(const lc_vf_run *r, FILE *f, lc_error *err);
lc_code lc_vf_print_json(const lc_vf_run *r, FILE *f, lc_error *err);
/* The object lc_vf_print_json prints, whole in memory (*text lc_free'd). */
lc_code lc_vf_json_text(const lc_vf_run *r, char **text, size_t *len, lc_error *err);
lc_code lc_vf_write_report(const lc_vf_run *r, const char *path, lc_error *err);

/* ---- small helpers ---- */

/* A printable, quoted copy of s[0..len) (control and invalid bytes as \xNN), cut with
 * "..." to fit cap. */
void lc_vf_quote(const char *s, size_t len, char *buf, size_t cap);
/* The same without the quotes, for names (tensor names, keys) taken from a file. */
void lc_vf_escape(const char *s, char *buf, size_t cap);
/* Appends to a JSON buffer a number, null for NaN/inf (JSON has no such numbers). */
lc_code lc_vf_json_num(lc_json_buf *b, double v, lc_error *err);

#endif
