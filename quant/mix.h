/* quant/mix.h: which type each tensor of a model gets when it is quantized to one of
 * llama.cpp's file types, decided as llama-quantize decides it.
 *
 * The source is llama.cpp's src/llama-quant.cpp as vendored by llama-cpp-python 0.3.36
 * (the build `make check-llama` uses): tensor_allows_quantization (which tensors are
 * quantized at all), llama_tensor_get_type and llama_tensor_get_type_impl (the options,
 * then the mixes' per-tensor rules), tensor_type_fallback (rows that are not whole
 * blocks) and tensor_requires_imatrix. mix.c holds those rules as one table, for every
 * file type llama.cpp defines, whether or not libconvert can write the types they pick
 * yet (lc_mix_ftype_writable says which it can); these rules change between llama.cpp
 * versions, so the table follows the pinned one and names it.
 *
 * What a tensor is (token embedding, attn_v, ffn_down, ...) comes from its row in the
 * family's table (arch/, lc_arch_find on the GGUF name). Where a rule depends on the
 * position of a tensor among its kind (use_more_bits(i, n) for attn_v and ffn_down),
 * llama.cpp counts the tensors of that kind in the order it quantizes them (its loader's
 * order: by layer, then by name; see lc_mix_pick) and lc_mix counts the same way, so the
 * tensors must be picked in that order.
 *
 * Deliberate differences from llama-quantize (jobs/gguf_quantize.h lists them all):
 *  - A type asked for explicitly (output_type, token_embd_type, a pattern) that a
 *    tensor's rows cannot hold is refused (LC_E_ARG naming the tensor): llama-quantize
 *    falls back silently for a pattern and aborts for the two options.
 *  - Patterns are llama-quantize's ECMAScript language without back-references and
 *    lookaround, matched in time linear in the name (libconvert/regex.h); both search
 *    anywhere in the name.
 */
#ifndef LC_QUANT_MIX_H
#define LC_QUANT_MIX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "arch/arch.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/tensor.h"

/* What the rules read about the model: llama.cpp's hyperparameters and model type. */
typedef struct lc_mix_model {
    const lc_arch *arch;    /* the family: tensor roles, and its name for family rules */
    uint32_t n_layer;       /* <arch>.block_count */
    uint32_t n_head;        /* <arch>.attention.head_count */
    uint32_t n_head_kv;     /* <arch>.attention.head_count_kv */
    uint32_t n_expert;      /* <arch>.expert_count; 0 when the key is absent */
} lc_mix_model;

/* One --tensor-type PATTERN=TYPE: tensors whose name the pattern matches get `type`. */
typedef struct lc_mix_pattern {
    const char *pattern;    /* borrowed; lower-cased before use, as llama-quantize does */
    lc_dtype    type;
} lc_mix_pattern;

typedef struct lc_mix_opts {
    uint32_t ftype;               /* the file type (llama-quantize's TYPE): its LLAMA_FTYPE
                                   * id, lc_ftype.id */
    lc_dtype base;                /* its base type, lc_ftype.base (llama.cpp's default_type) */
    bool     pure;                /* --pure: no per-tensor rules (patterns and the row-length
                                   * fallbacks still apply) */
    bool     leave_output;        /* --leave-output-tensor: output.weight keeps its type */
    lc_dtype output_type;         /* --output-tensor-type; LC_DT_INVALID: the rules' */
    lc_dtype token_embd_type;     /* --token-embedding-type; LC_DT_INVALID: the rules' */
    const lc_mix_pattern *patterns;   /* --tensor-type, in order: the first match wins */
    size_t   n_patterns;
    bool     has_imatrix;         /* an importance matrix is given (llama.cpp's
                                   * qs.has_imatrix): some rules differ */
} lc_mix_opts;

/* Why a tensor gets its type. */
typedef enum lc_mix_why {
    LC_MIX_KEPT = 0,    /* not a tensor llama-quantize quantizes (1-D, a norm, not a
                         * weight, ...): written in its own type */
    LC_MIX_BASE,        /* the file type's base type (llama.cpp's default_type) */
    LC_MIX_RULE,        /* a per-tensor rule of the mix */
    LC_MIX_OPTION,      /* output_type, token_embd_type or a pattern */
} lc_mix_why;

typedef struct lc_mix_choice {
    lc_dtype   type;        /* what the tensor is written as */
    lc_dtype   wanted;      /* the type before the row-length fallback (== type if none) */
    lc_mix_why why;
    bool       needs_imatrix;   /* llama.cpp refuses to make type without an importance
                                 * matrix (IQ1/IQ2/IQ3_XXS; Q2_K in Q2_K_S files) */
} lc_mix_choice;

typedef struct lc_mix lc_mix;

/* Compiles a --tensor-type PATTERN (p[0..n)) as the plan does: lower-cased, as
 * llama-quantize does, then libconvert/regex.h's language. LC_E_ARG or LC_E_OVERFLOW
 * with a message that quotes the pattern and names the byte; LC_E_NOMEM. *out is the
 * caller's (lc_re_free), NULL on failure. */
struct lc_re;
lc_code lc_mix_pattern_compile(const char *p, size_t n, struct lc_re **out, lc_error *err);

/* Starts a plan for a file whose tensors are NAMES (all of them, in any order: llama.cpp
 * counts the attn_v tensors and looks for output.weight before it picks). Patterns are
 * compiled here (lc_mix_pattern_compile): LC_E_ARG or LC_E_OVERFLOW naming a pattern
 * that does not compile. LC_E_ARG for a base
 * type that is LC_DT_INVALID or a model without a family; LC_E_NOMEM. On failure *out
 * is NULL. */
lc_code lc_mix_new(const lc_mix_opts *o, const lc_mix_model *mm, const char *const *names,
                   size_t n, lc_mix **out, lc_error *err);
void    lc_mix_free(lc_mix *m);

/* The type of tensor t (its name, dtype and shape are read). Call it once per tensor, in
 * the order they are written (lc_mix_order), since rules count tensors of a kind as they
 * go. Codes: LC_E_ARG (where = name) when a type asked for explicitly cannot hold t's
 * rows; LC_E_UNSUPPORTED when llama.cpp defines no fallback for the type a row needs, or
 * when t is a tensor llama-quantize quantizes but the family's table has no row for
 * (llama.cpp would place it by a part of its name: the rules cannot follow);
 * LC_E_MALFORMED (where = name) in a model with experts when t's layer, which the rules
 * need there, is not one of the model's (llama.cpp reads it from the name too).
 * Whether libconvert can write c->type (lc_quant_supported) and what to do about
 * c->needs_imatrix are the caller's questions. */
lc_code lc_mix_pick(lc_mix *m, const lc_tensor *t, lc_mix_choice *c, lc_error *err);

/* llama-quantize's loader order (llama_model_loader's weight_name_comparer): by the
 * layer number after "blk." (as sscanf("blk.%d.") reads it; -1 when there is none, so
 * tensors outside the layers come first), then by strcmp of the names. A qsort-style
 * comparison of two names. */
int lc_mix_order(const char *a, const char *b);

/* True when llama-quantize quantizes a tensor with this name and shape at all (its
 * tensor_allows_quantization): at least 2 dimensions once trailing dimensions of 1 are
 * dropped (ggml_n_dims), a name ending in "weight", not a norm, not output.weight under
 * leave_output, and none of the tensors llama.cpp always keeps (expert gates, position
 * embeddings, small convolutions...). */
bool lc_mix_quantizable(const char *name, uint32_t ndim, const uint64_t *shape,
                        bool leave_output);

/* llama.cpp's type for rows of `ncols` values that want `t`: t when ncols is a multiple of
 * its block, else its fallback (Q2_K, Q3_K, TQ1_0, TQ2_0 -> Q4_0; Q4_K -> Q5_0;
 * Q5_K -> Q5_1; Q6_K -> Q8_0; IQ* -> IQ4_NL), else F16. LC_DT_INVALID when t has blocks
 * of more than 32 and no fallback (llama.cpp refuses those). */
lc_dtype lc_mix_fallback(lc_dtype t, uint64_t ncols);

/* True when libconvert can write every type the file type gives the tensors of a dense
 * model (no experts, not falcon, not llama.cpp's "70B" type), the row-length fallbacks
 * of those types included, and none of them needs an importance matrix. Derived from
 * the rule table, so a mix becomes available as soon as the kernels of its types exist.
 * A 70B model or an expert model may still need a type that is missing: lc_mix_pick
 * names it per tensor and the caller refuses. */
bool lc_mix_ftype_writable(uint32_t ftype, lc_dtype base);

/* The same when an importance matrix is given: the types that need one count, and the
 * rules that hold only without one do not. */
bool lc_mix_ftype_writable_imatrix(uint32_t ftype, lc_dtype base);

#endif
