/* jobs/model_verify.h: the model-verify job. "Did my conversion keep the model intact?"
 *
 * Compares two models of one family, SRC (usually the original: an HF folder, Meta's
 * layout, a .pth or .safetensors file, a GGUF) and DST (usually the converted file), and
 * says where they part ways:
 *   1. metadata: the family's hyperparameters (rope base, epsilon, head counts, ...) and
 *      every tokenizer.* key (vocabulary, scores, types, merges, special ids), each side
 *      as GGUF keys (an HF or Meta folder's are what hf/ makes of it); every difference
 *      named by key, and inside an array by index (for the vocabulary: the token id);
 *   2. tensors: both sides' names mapped to the family's roles and layers (arch/), Q/K
 *      rows brought to one RoPE order, then shape, RMSE, max |error|, cosine and SNR of
 *      every pair, streamed in row chunks, against what the conversion to DST's type
 *      may change (float rounding, or a bound per block of a quantized type); a tensor
 *      outside it is named, worst first, with a guess at what happened (transposed,
 *      Q/K rows in the other RoPE order, another layer's tensor);
 *   3. logits: infer/'s forward pass on both models over the same token ids (SRC's own
 *      tokenizer; DST's must give the same ids): NMSE, max |diff|, KL divergence (mean,
 *      median, p99, max), delta-p of the next token, same top-1 and top-5, perplexity of
 *      each; with `layers`, the hidden state after every layer, and the first layer
 *      where the two part ways;
 *   4. a verdict: pass when every metadata key agrees, every tensor is within its type's
 *      bound and the logits are what a correct conversion gives: SRC is converted to
 *      DST's types by our own quantizers (byte-identical to llama-quantize's, with the
 *      importance matrix `imatrix` when given); when every
 *      tensor of DST is that byte for byte, it is proven and the logits are reported,
 *      not judged; otherwise DST's KL is held to 1.5x the reproduction's own plus a
 *      margin (README "model-verify", "How the verdict is reached").
 * Memory: no model is ever held in float32; tensors are read with pread (or through a
 * view that gives mapped pages back) a chunk of rows at a time; the forward pass holds
 * one layer's activations and each model's final hidden states [n, embd]; the logits are
 * taken a chunk of positions at a time (never [n, vocab] whole: a huge vocabulary on a
 * small model would cost far more than its file); with layers, SRC's hidden state of
 * every layer [layers, n, embd] until DST's pass has compared them. */
#ifndef LC_JOBS_MODEL_VERIFY_H
#define LC_JOBS_MODEL_VERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "libconvert/error.h"
#include "libconvert/progress.h"

/* Tokens per forward pass when the caller gives no other number: llama-perplexity's
 * default context. The text is cut there and at the model's context length. */
#define LC_VERIFY_MAX_TOKENS 512

typedef struct lc_job_verify_opts {
    const char *src, *dst;   /* HF folder, Meta folder, .pth, .safetensors or GGUF */
    const char *tokens;      /* "1,2,3": the ids themselves, or NULL */
    const char *text;        /* a text to tokenize, or NULL */
    const char *file;        /* a file whose text to tokenize, or NULL; at most one of
                              * tokens, text, file (none: the bundled text) */
    size_t      max_tokens;  /* 0: LC_VERIFY_MAX_TOKENS */
    bool        layers;      /* compare the hidden states after every layer */
    const char *report;      /* an HTML page to write (atomically), or NULL */
    const char *imatrix;     /* llama-imatrix's matrix (GGUF or legacy .dat) DST was
                              * quantized with, or NULL: the reproduction weighs each
                              * tensor by it as llama-quantize --imatrix does */
    int         threads;     /* 0: one per core (at most 8) */
} lc_job_verify_opts;

/* The verdict and the headline figures of a run. Every figure behind them (each key
 * difference, tensor pair, logit and layer statistic) is in `run`, which the report
 * printers read (jobs/model_verify_print.h): the text report, the JSON object. */
typedef struct lc_job_verify_result {
    bool        pass;
    const char *why;            /* the failing parts, named ("" on pass) */
    const char *judged;         /* "proven" (every tensor reproduced byte for byte),
                                 * "relative" (against the reproduction's figures) or
                                 * "limits" (the class's fixed limits) */
    const char *cls;            /* the model's class: "exact", "F16", "Q8_0", ... */
    size_t      keys, key_diffs;        /* metadata keys compared, differences found */
    size_t      tensors, outside, proven;   /* pairs compared, outside their bound,
                                             * reproduced byte for byte */
    bool        logits_ran;
    size_t      tokens;         /* run through both models */
    double      kl_mean, kl_p99, nmse, same_top1, ppl_src, ppl_dst;   /* NAN: not run */
    struct lc_vf_run *run;      /* owned; private (jobs/model_verify_impl.h). It keeps
                                 * both models open and reads o (its paths) until
                                 * lc_job_verify_result_free */
} lc_job_verify_result;

/* Frees what r owns and zeroes it; NULL-safe. */
void lc_job_verify_result_free(lc_job_verify_result *r);

/* Runs the comparison into *res (zeroed on failure). LC_OK means the comparison ran,
 * whatever the verdict (res->pass). Errors (exit 2 in the tool): the readers' codes for a file that cannot be
 * read (truncated, malformed), LC_E_MISMATCH for models that cannot be compared
 * (families differ, vocabularies of different sizes, a tensor of SRC missing from DST,
 * where = that tensor), LC_E_UNSUPPORTED for a dtype nothing dequantizes, the imatrix
 * reader's codes and LC_E_MALFORMED for a matrix that does not fit DST (path = the
 * matrix, where = its entry), LC_E_ARG for
 * options (more than one token source, bad --tokens), LC_E_IO when the report cannot
 * be written. p may be NULL. */
lc_code lc_job_model_verify(const lc_job_verify_opts *o, lc_progress *p,
                            lc_job_verify_result *res, lc_error *err);

#endif
