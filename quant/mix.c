/* quant/mix.c: llama-quantize's per-tensor type rules as one table (see mix.h).
 *
 * Ported from src/llama-quant.cpp of the llama.cpp that llama-cpp-python 0.3.36 vendors;
 * the names in comments are that file's. llama.cpp's "has_imatrix" tests read
 * lc_mix_opts.has_imatrix (a rule's `im`). */
#include "quant/mix.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/regex.h"
#include "quant/quant.h"

/* llama.h's enum llama_ftype; quant/ftype.c holds the names, tests/unit/test_mix.c
 * checks that each id here is the one quant/ftype.c gives the same name. */
enum {
    FT_ALL_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8,
    FT_Q5_1 = 9, FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13,
    FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18,
    FT_IQ2_XXS = 19, FT_IQ2_XS = 20, FT_Q2_K_S = 21, FT_IQ3_XS = 22, FT_IQ3_XXS = 23,
    FT_IQ1_S = 24, FT_IQ4_NL = 25, FT_IQ3_S = 26, FT_IQ3_M = 27, FT_IQ2_S = 28,
    FT_IQ2_M = 29, FT_IQ4_XS = 30, FT_IQ1_M = 31, FT_BF16 = 32, FT_TQ1_0 = 36,
    FT_TQ2_0 = 37, FT_MXFP4_MOE = 38, FT_NVFP4 = 39, FT_Q1_0 = 40, FT_Q2_0 = 41,
};
#define F(x) (UINT64_C(1) << FT_##x)
#define ALL  UINT64_MAX
/* The 1-2 bit IQ file types, which have a block of rules of their own. */
#define LOW_IQ (F(IQ2_XXS) | F(IQ2_XS) | F(IQ1_S) | F(IQ2_S) | F(IQ2_M) | F(IQ1_M))

/* What a tensor is for, as far as the rules care (llama.cpp's tensor_category). */
typedef enum cat {
    CAT_OTHER = 0, CAT_TOKEN_EMBD, CAT_OUTPUT, CAT_ATTN_Q, CAT_ATTN_K, CAT_ATTN_V,
    CAT_ATTN_QKV, CAT_ATTN_KV_B, CAT_ATTN_OUT, CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN,
} cat;

/* Which rows of the table a tensor reads. */
typedef enum group {
    G_ANY = 0,      /* in a row: every tensor (none has this group itself) */
    G_OUTPUT,       /* output.weight, and token_embd.weight when there is no output.weight
                     * (llama.cpp quantizes a tied embedding as the output) */
    G_TOKEN_EMBD,
    G_ATTN_V,       /* attn_v, and the fused attn_qkv and attn_kv_b: llama.cpp's
                     * category_is_attn_v (which makes its own attn_qkv block unreachable) */
    G_ATTN_K, G_ATTN_Q, G_ATTN_OUT, G_FFN_DOWN, G_FFN_GATE, G_FFN_UP,
    G_NONE,         /* other tensors: only G_ANY rows */
} group;

/* When a row applies, besides its group and file types. i and n: the tensor's position
 * among the tensors of its kind and their count (see position()). */
typedef enum when {
    W_ALWAYS = 0,
    W_GQA4,             /* n_head / n_head_kv >= 4 */
    W_GQA4_OR_EXP4,     /* ... or n_expert >= 4 */
    W_EXP8,             /* n_expert == 8 */
    W_FALCON,
    W_NOT_FALCON,
    W_NOT_FALCON_EXP8,
    W_MORE_BITS,        /* use_more_bits(i, n) */
    W_I_LT_2,
    W_I_LT_4,
    W_I_LT_N8,          /* i < n/8 */
    W_I_LT_N16,
    W_I_MID,            /* n/8 <= i < 7n/8 */
    W_COUNTER_LT_N8,    /* ffn_down's own counter < n/8 (llama.cpp reads the counter, not the
                         * layer, in the low-IQ block; they differ only with experts) */
    W_NOT_FALCON_OR_MORE_BITS,
    W_I_LT_N8_OR_EXP8_MORE_BITS,
    W_FALCON_I_LT_N16,
    W_FALCON_MORE_BITS,
    W_NOT_FALCON_I_LT_N8,
    W_ROW_NOT_BASE,     /* the row is not whole blocks of the file's base type */
    W_EXPERTS,          /* a stack of experts: ne[2] > 1 (for bailingmoe3 only its ffn
                         * up/gate/down) */
} when;

/* The conditions that hold only for falcon or expert models: lc_mix_ftype_writable
 * leaves their rows out. */
static bool special(when w) {
    return w == W_EXP8 || w == W_FALCON || w == W_NOT_FALCON_EXP8 || w == W_FALCON_I_LT_N16 ||
           w == W_FALCON_MORE_BITS || w == W_EXPERTS;
}

#define KEEP LC_DT_INVALID      /* a row's type: the type the tensor has so far */
enum { R_V_AFTER = 1 };         /* then attn_v's adjustments (see pick_rules) */

/* A rule that holds only with (IM_WITH) or only without (IM_WITHOUT) an importance
 * matrix; 0 (the rows that say nothing): either way. */
enum { IM_WITH = 1, IM_WITHOUT = 2 };

typedef struct rule {
    uint8_t  group;     /* group */
    uint8_t  when;      /* when */
    uint8_t  flags;     /* R_* */
    lc_dtype type;      /* the type it gives, or KEEP */
    uint64_t ftypes;    /* F(...) of the file types it applies to */
    uint8_t  im;        /* IM_*, or 0 */
} rule;

#define Q(T) LC_DT_##T

/* llama_tensor_get_type_impl, in its order. The first row whose group, file types and
 * condition all hold decides; a tensor no row takes keeps the base type. Each block
 * ends where llama.cpp's if/else chain for it ends (a KEEP row where the chain stops
 * with no change). */
static const rule RULES[] = {
    /* output.weight (and a tied token_embd.weight); an --output-tensor-type wins first */
    { G_OUTPUT, W_ALWAYS, 0, Q(Q8_0), F(MXFP4_MOE) },
    { G_OUTPUT, W_FALCON, 0, Q(Q8_0), ALL },
    { G_OUTPUT, W_ROW_NOT_BASE, 0, Q(Q8_0), ALL },
    { G_OUTPUT, W_ALWAYS, 0, Q(Q5_K), F(IQ2_XXS) | F(IQ2_XS) | F(IQ3_XXS) | F(IQ1_S) |
                                      F(IQ2_S) | F(IQ2_M) | F(IQ1_M) },
    { G_OUTPUT, W_ALWAYS, 0, Q(Q6_K), ALL & ~F(Q8_0) },     /* "new_type != Q8_0" */
    { G_OUTPUT, W_ALWAYS, 0, KEEP, ALL },

    /* MXFP4_MOE: stacks of experts MXFP4, everything else Q8_0 */
    { G_ANY, W_EXPERTS, 0, Q(MXFP4), F(MXFP4_MOE) },
    { G_ANY, W_ALWAYS, 0, Q(Q8_0), F(MXFP4_MOE) },

    /* token_embd.weight when not tied; a --token-embedding-type wins first */
    { G_TOKEN_EMBD, W_ALWAYS, 0, Q(Q2_K), F(IQ2_XXS) | F(IQ2_XS) | F(IQ1_S) | F(IQ1_M) },
    { G_TOKEN_EMBD, W_ALWAYS, 0, Q(IQ3_S), F(IQ2_S) | F(IQ2_M) | F(IQ3_XXS) },
    { G_TOKEN_EMBD, W_ALWAYS, 0, Q(Q4_K), F(TQ1_0) | F(TQ2_0) | F(Q2_0) },
    { G_TOKEN_EMBD, W_ALWAYS, 0, KEEP, ALL },

    /* the 1-2 bit IQ file types */
    { G_ATTN_V, W_GQA4_OR_EXP4, 0, Q(Q4_K), LOW_IQ },
    { G_ATTN_V, W_ALWAYS, 0, Q(IQ3_S), F(IQ2_S) | F(IQ2_M) },
    { G_ATTN_V, W_ALWAYS, 0, Q(Q2_K), LOW_IQ },
    { G_ATTN_K, W_EXP8, 0, Q(Q4_K), LOW_IQ },
    { G_FFN_DOWN, W_COUNTER_LT_N8, 0, Q(IQ3_S), F(IQ2_S) | F(IQ2_M) },
    { G_FFN_DOWN, W_COUNTER_LT_N8, 0, Q(Q2_K), LOW_IQ },
    { G_ATTN_OUT, W_EXP8, 0, Q(Q5_K), LOW_IQ },
    { G_ATTN_OUT, W_ALWAYS, 0, Q(IQ2_XXS), F(IQ1_S) | F(IQ1_M) },
    { G_ATTN_OUT, W_ALWAYS, 0, Q(IQ3_S), F(IQ2_S) | F(IQ2_M) },
    { G_ANY, W_ALWAYS, 0, KEEP, LOW_IQ },

    /* attn_v (attn_qkv, attn_kv_b) */
    { G_ATTN_V, W_GQA4, R_V_AFTER, Q(Q4_K), F(Q2_K) },
    { G_ATTN_V, W_ALWAYS, R_V_AFTER, Q(Q3_K), F(Q2_K) },
    { G_ATTN_V, W_GQA4, R_V_AFTER, Q(Q4_K), F(Q2_K_S) },
    { G_ATTN_V, W_GQA4, R_V_AFTER, Q(Q4_K), F(IQ3_XXS) },
    { G_ATTN_V, W_ALWAYS, R_V_AFTER, Q(IQ3_S), F(IQ3_XXS), IM_WITHOUT },
    { G_ATTN_V, W_GQA4, R_V_AFTER, Q(Q4_K), F(IQ3_XS) | F(IQ3_S) },
    { G_ATTN_V, W_ALWAYS, R_V_AFTER, Q(Q4_K), F(IQ3_M) },
    { G_ATTN_V, W_I_LT_2, R_V_AFTER, Q(Q5_K), F(Q3_K_M) },
    { G_ATTN_V, W_ALWAYS, R_V_AFTER, Q(Q4_K), F(Q3_K_M) },
    { G_ATTN_V, W_ALWAYS, R_V_AFTER, Q(Q5_K), F(Q3_K_L) },
    { G_ATTN_V, W_GQA4, R_V_AFTER, Q(Q5_K), F(IQ4_NL) | F(IQ4_XS) },
    { G_ATTN_V, W_MORE_BITS, R_V_AFTER, Q(Q6_K), F(Q4_K_M) | F(Q5_K_M) },
    { G_ATTN_V, W_I_LT_4, R_V_AFTER, Q(Q5_K), F(Q4_K_S) },
    { G_ATTN_V, W_ALWAYS, R_V_AFTER, KEEP, ALL },

    /* attn_k */
    { G_ATTN_K, W_EXP8, 0, Q(Q8_0), ALL },
    { G_ATTN_K, W_ALWAYS, 0, Q(IQ3_XXS), F(IQ3_XS) },
    { G_ATTN_K, W_ALWAYS, 0, Q(IQ2_S), F(IQ3_XXS) },

    /* attn_q */
    { G_ATTN_Q, W_ALWAYS, 0, Q(IQ3_XXS), F(IQ3_XS) },
    { G_ATTN_Q, W_ALWAYS, 0, Q(IQ2_S), F(IQ3_XXS) },

    /* ffn_down */
    { G_FFN_DOWN, W_ALWAYS, 0, Q(Q3_K), F(Q2_K) },
    { G_FFN_DOWN, W_I_LT_N8, 0, Q(Q4_K), F(Q2_K_S) },
    { G_FFN_DOWN, W_ALWAYS, 0, KEEP, F(Q2_K_S) },
    { G_FFN_DOWN, W_I_LT_N8, 0, Q(Q4_K), F(IQ3_XXS), IM_WITHOUT },
    { G_FFN_DOWN, W_ALWAYS, 0, Q(Q3_K), F(IQ3_XXS), IM_WITHOUT },
    { G_FFN_DOWN, W_I_LT_N16, 0, Q(Q5_K), F(Q3_K_M) },
    { G_FFN_DOWN, W_NOT_FALCON_OR_MORE_BITS, 0, Q(Q4_K), F(Q3_K_M) },
    { G_FFN_DOWN, W_ALWAYS, 0, Q(Q3_K), F(Q3_K_M) },
    { G_FFN_DOWN, W_I_LT_N8_OR_EXP8_MORE_BITS, 0, Q(Q4_K), F(IQ3_M) },
    { G_FFN_DOWN, W_FALCON, 0, Q(Q4_K), F(Q3_K_L) },
    { G_FFN_DOWN, W_ALWAYS, 0, Q(Q5_K), F(Q3_K_L) },
    { G_FFN_DOWN, W_FALCON_I_LT_N16, 0, Q(Q6_K), F(Q4_K_M) },
    { G_FFN_DOWN, W_FALCON_MORE_BITS, 0, Q(Q5_K), F(Q4_K_M) },
    { G_FFN_DOWN, W_FALCON, 0, Q(Q4_K), F(Q4_K_M) },
    { G_FFN_DOWN, W_MORE_BITS, 0, Q(Q6_K), F(Q4_K_M) },
    { G_FFN_DOWN, W_ALWAYS, 0, KEEP, F(Q4_K_M) },
    { G_FFN_DOWN, W_I_LT_N8, 0, Q(Q5_K), F(IQ4_NL) | F(IQ4_XS), IM_WITHOUT },
    { G_FFN_DOWN, W_MORE_BITS, 0, Q(Q6_K), F(Q5_K_M) },
    { G_FFN_DOWN, W_NOT_FALCON_I_LT_N8, 0, Q(Q5_K), F(Q4_K_S) },
    /* Q4_0 and Q5_0 bump the first layers only with an imatrix */
    { G_FFN_DOWN, W_I_LT_N8, 0, Q(Q4_1), F(Q4_0), IM_WITH },
    { G_FFN_DOWN, W_I_LT_N8, 0, Q(Q5_1), F(Q5_0), IM_WITH },

    /* attn_output */
    { G_ATTN_OUT, W_NOT_FALCON_EXP8, 0, Q(Q5_K), F(Q2_K) | F(IQ3_XS) | F(IQ3_XXS) |
          F(Q3_K_S) | F(Q3_K_M) | F(IQ4_NL) | F(Q4_K_S) | F(Q4_K_M) | F(IQ3_S) |
          F(IQ3_M) | F(IQ4_XS) },
    { G_ATTN_OUT, W_NOT_FALCON_EXP8, 0, KEEP, ALL },
    { G_ATTN_OUT, W_NOT_FALCON, 0, Q(Q3_K), F(Q2_K) },
    { G_ATTN_OUT, W_NOT_FALCON, 0, Q(IQ3_S), F(IQ3_XXS) },
    { G_ATTN_OUT, W_NOT_FALCON, 0, Q(Q4_K), F(Q3_K_M) | F(IQ3_M) },
    { G_ATTN_OUT, W_NOT_FALCON, 0, Q(Q5_K), F(Q3_K_L) },
    { G_ATTN_OUT, W_FALCON, 0, Q(Q4_K), F(Q3_K_L) },

    /* (llama.cpp's attn_qkv block is never reached: attn_v's takes attn_qkv) */

    /* ffn_gate, ffn_up */
    { G_FFN_GATE, W_I_MID, 0, Q(IQ3_XXS), F(IQ3_XS) },
    { G_FFN_UP, W_I_MID, 0, Q(IQ3_XXS), F(IQ3_XS) },
};
#define NRULES (sizeof RULES / sizeof RULES[0])

/* Names llama-quantize never quantizes, whatever the file type
 * (tensor_allows_quantization; glm5-next's own list is left out: no family here has
 * those tensors). */
static const char *const NEVER_PART[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
    "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight",
    "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
    "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
    "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
    ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
    ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};
static const char *const NEVER_NAME[] = { "position_embd.weight", "token_types.weight" };

/* llama.cpp's LLM_TYPE_70B, the one model type the rules read (each family's
 * load_arch_hparams); families arch/ does not describe are not listed. */
static const struct { const char *arch; uint32_t n_layer; bool needs_gqa; } TYPE_70B[] = {
    { "llama", 80, true },      /* 65B when n_head == n_head_kv; 8x7B etc. with 8 experts */
    { "qwen2", 80, false },
};

struct lc_mix {
    lc_mix_opts o;
    lc_mix_model mm;
    lc_re **re;             /* o.n_patterns compiled patterns (libconvert/regex.h) */
    size_t n_re;
    bool tied;              /* no output.weight: token_embd.weight is the output too */
    bool falcon, is_70b;
    uint32_t gqa;
    /* quantize_state_impl's counters */
    int n_attn_v, i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up, n_ffn;
};

/* ---- names and shapes ---- */

/* ggml_n_dims: dimensions once the trailing (outermost) ones of size <= 1 are dropped. */
static uint32_t ggml_dims(uint32_t ndim, const uint64_t *shape) {
    for (uint32_t i = ndim; i-- > 1;)           /* i: ggml's index, innermost first */
        if (shape[ndim - 1 - i] > 1)
            return i + 1;
    return 1;
}

bool lc_mix_quantizable(const char *name, uint32_t ndim, const uint64_t *shape,
                        bool leave_output) {
    if (ggml_dims(ndim, shape) < 2)
        return false;
    /* name.rfind("weight") == name.size() - 6 in size_t: a name ending in "weight", and
     * (npos == 5 - 6) any 5-byte name; kept as llama.cpp has it. */
    const size_t len = strlen(name);
    size_t pos = SIZE_MAX;
    for (const char *p = strstr(name, "weight"); p; p = strstr(p + 1, "weight"))
        pos = (size_t)(p - name);
    if (pos != len - 6)
        return false;
    if (leave_output && strcmp(name, "output.weight") == 0)
        return false;
    for (size_t i = 0; i < sizeof NEVER_PART / sizeof *NEVER_PART; i++)
        if (strstr(name, NEVER_PART[i]))
            return false;
    for (size_t i = 0; i < sizeof NEVER_NAME / sizeof *NEVER_NAME; i++)
        if (strcmp(name, NEVER_NAME[i]) == 0)
            return false;
    return true;
}

/* sscanf(s, "blk.%d.", &layer) == 1 ? layer : -1 */
static long blk_layer(const char *s) {
    if (strncmp(s, "blk.", 4) != 0)
        return -1;
    char *end;
    const long v = strtol(s + 4, &end, 10);    /* %d: blanks, a sign, digits */
    return end == s + 4 ? -1 : (long)(int)v;
}

int lc_mix_order(const char *a, const char *b) {
    const long la = blk_layer(a), lb = blk_layer(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a, b);
}

static cat category(const lc_mix *m, const char *name, uint32_t *layer) {
    *layer = UINT32_MAX;
    const lc_arch_tensor *row = lc_arch_find(m->mm.arch, LC_SPELL_GGUF, name, layer);
    switch (row ? row->role : LC_ROLE_NONE) {
    /* llama.cpp's token-embedding names are both tables */
    case LC_ROLE_TOKEN_EMBD: case LC_ROLE_PER_LAYER_TOKEN_EMBD: return CAT_TOKEN_EMBD;
    case LC_ROLE_OUTPUT: return CAT_OUTPUT;
    case LC_ROLE_ATTN_Q: return CAT_ATTN_Q;
    case LC_ROLE_ATTN_K: return CAT_ATTN_K;
    case LC_ROLE_ATTN_V: return CAT_ATTN_V;
    case LC_ROLE_ATTN_OUT: return CAT_ATTN_OUT;
    /* qwen35's recurrent q, k, v rows are GGUF's attn_qkv.weight too */
    case LC_ROLE_ATTN_QKV: case LC_ROLE_SSM_QKV: return CAT_ATTN_QKV;
    /* llama.cpp's categories are substrings: "ffn_up" is ffn_up_exps too */
    case LC_ROLE_FFN_UP: case LC_ROLE_FFN_UP_EXPS: case LC_ROLE_FFN_UP_SHEXP:
        return CAT_FFN_UP;
    case LC_ROLE_FFN_GATE: case LC_ROLE_FFN_GATE_EXPS: case LC_ROLE_FFN_GATE_INP:
    case LC_ROLE_FFN_GATE_UP_EXPS:      /* "ffn_gate_up_exps" holds "ffn_gate" */
    case LC_ROLE_FFN_GATE_SHEXP: case LC_ROLE_FFN_GATE_INP_SHEXP:
        return CAT_FFN_GATE;
    case LC_ROLE_FFN_DOWN: case LC_ROLE_FFN_DOWN_EXPS: case LC_ROLE_FFN_DOWN_SHEXP:
        return CAT_FFN_DOWN;
    default: return CAT_OTHER;
    }
}

static group group_of(cat c, bool tied) {
    switch (c) {
    case CAT_OUTPUT: return G_OUTPUT;
    case CAT_TOKEN_EMBD: return tied ? G_OUTPUT : G_TOKEN_EMBD;
    case CAT_ATTN_V: case CAT_ATTN_QKV: case CAT_ATTN_KV_B: return G_ATTN_V;
    case CAT_ATTN_K: return G_ATTN_K;
    case CAT_ATTN_Q: return G_ATTN_Q;
    case CAT_ATTN_OUT: return G_ATTN_OUT;
    case CAT_FFN_DOWN: return G_FFN_DOWN;
    case CAT_FFN_GATE: return G_FFN_GATE;
    case CAT_FFN_UP: return G_FFN_UP;
    default: return G_NONE;
    }
}

/* ---- types ---- */

static bool writable(lc_dtype t) {
    return t == LC_DT_F32 || t == LC_DT_F16 || t == LC_DT_BF16 || lc_quant_writable(t);
}

/* tensor_type_fallback's switch: the type a row that is not whole blocks of t tries
 * next; t itself for types of blocks <= 32 (then F16); LC_DT_INVALID when none. */
static lc_dtype fallback_of(lc_dtype t) {
    switch (t) {
    case LC_DT_IQ1_S: case LC_DT_IQ1_M: case LC_DT_IQ2_XXS: case LC_DT_IQ2_XS:
    case LC_DT_IQ2_S: case LC_DT_IQ3_XXS: case LC_DT_IQ3_S: case LC_DT_IQ4_XS:
        return LC_DT_IQ4_NL;
    case LC_DT_Q2_K: case LC_DT_Q3_K: case LC_DT_TQ1_0: case LC_DT_TQ2_0:
        return LC_DT_Q4_0;
    case LC_DT_Q4_K: return LC_DT_Q5_0;
    case LC_DT_Q5_K: return LC_DT_Q5_1;
    case LC_DT_Q6_K: return LC_DT_Q8_0;
    default:
        return lc_dtype_get(t)->block_size <= 32 ? t : LC_DT_INVALID;
    }
}

lc_dtype lc_mix_fallback(lc_dtype t, uint64_t ncols) {
    const uint32_t bs = lc_dtype_get(t)->block_size;
    if (bs == 0 || ncols % bs == 0)
        return t;
    const lc_dtype r = fallback_of(t);
    if (r == LC_DT_INVALID)
        return r;
    return ncols % lc_dtype_get(r)->block_size != 0 ? LC_DT_F16 : r;
}

/* tensor_requires_imatrix, for a tensor other than the token embedding and output. */
static bool needs_imatrix(uint32_t ftype, lc_dtype t) {
    switch (t) {
    case LC_DT_IQ3_XXS: case LC_DT_IQ2_XXS: case LC_DT_IQ2_XS: case LC_DT_IQ2_S:
    case LC_DT_IQ1_M: case LC_DT_IQ1_S:
        return true;
    case LC_DT_Q2_K:
        return ftype == FT_Q2_K_S;
    default:
        return false;
    }
}

/* ---- the rules ---- */

/* Where a tensor stands among the tensors of its kind, as the rules read it. */
typedef struct pos {
    int i, n;           /* attn_v: counter and count; ffn_*: llama.cpp's layer_info */
    int counter, count; /* ffn_down's counter itself and n_layer */
    uint64_t ncols, ne2;
    cat c;
} pos;

static bool more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static bool holds(const lc_mix *m, when w, const pos *p) {
    const int i = p->i, n = p->n;
    const uint32_t nexp = m->mm.n_expert;
    switch (w) {
    case W_ALWAYS: return true;
    case W_GQA4: return m->gqa >= 4;
    case W_GQA4_OR_EXP4: return m->gqa >= 4 || nexp >= 4;
    case W_EXP8: return nexp == 8;
    case W_FALCON: return m->falcon;
    case W_NOT_FALCON: return !m->falcon;
    case W_NOT_FALCON_EXP8: return !m->falcon && nexp == 8;
    case W_MORE_BITS: return more_bits(i, n);
    case W_I_LT_2: return i < 2;
    case W_I_LT_4: return i < 4;
    case W_I_LT_N8: return i < n / 8;
    case W_I_LT_N16: return i < n / 16;
    case W_I_MID: return i >= n / 8 && i < 7 * n / 8;
    case W_COUNTER_LT_N8: return p->counter < p->count / 8;
    case W_NOT_FALCON_OR_MORE_BITS: return !m->falcon || more_bits(i, n);
    case W_I_LT_N8_OR_EXP8_MORE_BITS: return i < n / 8 || (nexp == 8 && more_bits(i, n));
    case W_FALCON_I_LT_N16: return m->falcon && i < n / 16;
    case W_FALCON_MORE_BITS: return m->falcon && more_bits(i, n);
    case W_NOT_FALCON_I_LT_N8: return !m->falcon && i < n / 8;
    case W_ROW_NOT_BASE: return p->ncols % lc_dtype_get(m->o.base)->block_size != 0;
    case W_EXPERTS:
        return p->ne2 > 1 && (strcmp(m->mm.arch->name, "bailingmoe3") != 0 ||
                              p->c == CAT_FFN_UP || p->c == CAT_FFN_GATE ||
                              p->c == CAT_FFN_DOWN);
    }
    return false;
}

/* The type the table gives a tensor of group g that has type t so far. */
static lc_dtype apply_rules(const lc_mix *m, group g, const pos *p, lc_dtype t) {
    const uint64_t bit = UINT64_C(1) << m->o.ftype;
    for (size_t k = 0; k < NRULES; k++) {
        const rule *r = &RULES[k];
        if ((r->group != G_ANY && r->group != g) || !(r->ftypes & bit) ||
            (r->im == IM_WITH && !m->o.has_imatrix) ||
            (r->im == IM_WITHOUT && m->o.has_imatrix) || !holds(m, (when)r->when, p))
            continue;
        lc_dtype out = r->type != KEEP ? r->type : t;
        if (r->flags & R_V_AFTER) {
            /* "70B": 8 heads share each attn_v, which is then small enough for more bits */
            if (m->is_70b && (out == LC_DT_Q3_K || out == LC_DT_Q4_K))
                out = LC_DT_Q5_K;
            if (m->mm.n_expert == 8)
                out = LC_DT_Q8_0;
        }
        return out;
    }
    return t;
}

/* p->i, p->n for group g; advances the kind's counter (after reading it) as llama.cpp
 * does each time its rules see such a tensor. */
static lc_code position(lc_mix *m, group g, const char *name, uint32_t layer, pos *p,
                        lc_error *err) {
    int *counter = g == G_ATTN_V ? &m->i_attn_v : g == G_FFN_DOWN ? &m->i_ffn_down :
                   g == G_FFN_GATE ? &m->i_ffn_gate : g == G_FFN_UP ? &m->i_ffn_up : NULL;
    if (!counter)
        return LC_OK;
    p->counter = m->i_ffn_down;
    p->count = m->n_ffn;
    if (g == G_ATTN_V) {
        p->i = m->i_attn_v, p->n = m->n_attn_v;
    } else if (m->mm.n_expert > 1) {
        /* layer_info: experts are not in layer order, so the layer comes from the name */
        if (layer == UINT32_MAX || layer >= (uint32_t)m->n_ffn)
            return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, name, "cannot tell the "
                              "layer of tensor %.80s in a %d-layer model", name, m->n_ffn);
        p->i = (int)layer, p->n = m->n_ffn;
    } else {
        p->i = *counter, p->n = m->n_ffn;
    }
    (*counter)++;
    return LC_OK;
}

static bool fits(lc_dtype t, uint64_t ncols) {
    return ncols % lc_dtype_get(t)->block_size == 0;
}

lc_code lc_mix_pick(lc_mix *m, const lc_tensor *t, lc_mix_choice *c, lc_error *err) {
    *c = (lc_mix_choice){ .type = t->dtype, .wanted = t->dtype, .why = LC_MIX_KEPT };
    if (!lc_mix_quantizable(t->name, t->ndim, t->shape, m->o.leave_output))
        return LC_OK;
    pos p = { .ncols = t->ndim ? t->shape[t->ndim - 1] : 1,
              .ne2 = t->ndim >= 3 ? t->shape[t->ndim - 3] : 1 };
    uint32_t layer;
    p.c = category(m, t->name, &layer);
    if (!lc_arch_find(m->mm.arch, LC_SPELL_GGUF, t->name, &layer)) {
        /* llama.cpp would place it by a part of its name; without a row in the family's
         * table the rules cannot, so refuse rather than differ silently */
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "architecture %s has no tensor of this "
                "name in arch/, so the rules cannot place it", m->mm.arch->name);
        lc_err_context(err, NULL, t->name);
        return LC_E_UNSUPPORTED;
    }
    lc_dtype want = m->o.base;
    lc_mix_why why = LC_MIX_BASE;
    const char *asked = NULL;      /* the option that asked for `want` explicitly */
    if (m->o.token_embd_type != LC_DT_INVALID && p.c == CAT_TOKEN_EMBD) {
        want = m->o.token_embd_type, asked = "--token-embedding-type";
    } else if (m->o.output_type != LC_DT_INVALID && p.c == CAT_OUTPUT) {
        want = m->o.output_type, asked = "--output-tensor-type";
    } else if (lc_dtype_is_quant(m->o.base)) {
        for (size_t k = 0; k < m->n_re && !asked; k++) {
            bool hit;
            LC_TRY(lc_re_search(m->re[k], t->name, strlen(t->name), &hit, err));
            if (hit)
                want = m->o.patterns[k].type, asked = "--tensor-type";
        }
        const group g = group_of(p.c, m->tied);
        if (!asked && !m->o.pure && g == G_OUTPUT && m->o.output_type != LC_DT_INVALID) {
            want = m->o.output_type, asked = "--output-tensor-type";   /* tied embedding */
        } else if (!asked && !m->o.pure) {
            LC_TRY(position(m, g, t->name, layer, &p, err));
            want = apply_rules(m, g, &p, want);
            if (want != m->o.base)
                why = LC_MIX_RULE;
        }
        if (!asked) {
            const lc_dtype fb = lc_mix_fallback(want, p.ncols);
            if (fb == LC_DT_INVALID) {
                lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "rows of %" PRIu64 " values are not "
                        "whole %s blocks and llama.cpp defines no fallback", p.ncols,
                        lc_dtype_name(want));
                lc_err_context(err, NULL, t->name);
                return LC_E_UNSUPPORTED;
            }
            c->wanted = want;
            c->type = fb;
            c->why = why;
        }
    }
    if (asked) {
        if (!fits(want, p.ncols)) {
            lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s asks for %s, but its rows of %" PRIu64
                    " values are not whole %u-value blocks", asked,
                    lc_dtype_name(want), p.ncols, lc_dtype_get(want)->block_size);
            lc_err_context(err, NULL, t->name);
            return LC_E_ARG;
        }
        c->type = c->wanted = want;
        c->why = LC_MIX_OPTION;
    } else if (why == LC_MIX_BASE && !lc_dtype_is_quant(m->o.base)) {
        c->type = c->wanted = want;
        c->why = LC_MIX_BASE;
    }
    const bool embd_or_out = strcmp(t->name, "token_embd.weight") == 0 ||
                             strcmp(t->name, "per_layer_token_embd.weight") == 0 ||
                             strcmp(t->name, "output.weight") == 0;
    c->needs_imatrix = !embd_or_out && needs_imatrix(m->o.ftype, c->type);
    return LC_OK;
}

/* ---- the plan ---- */

lc_code lc_mix_pattern_compile(const char *p, size_t n, lc_re **out, lc_error *err) {
    *out = NULL;
    char *text = lc_malloc(n + 1);
    if (!text)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    /* All of it, escapes too ("\\D" becomes "\\d"), as llama-quantize's parse_tensor_type
     * does before std::regex sees it. */
    for (size_t i = 0; i < n; i++)
        text[i] = (char)tolower((unsigned char)p[i]);
    lc_error why = { 0 };
    const lc_code rc = lc_re_compile(text, n, out, &why);
    lc_free(text);
    if (rc != LC_OK)
        return lc_fail(err, rc, LC_NO_OFFSET, "--tensor-type pattern '%.*s%s': %s",
                       n > 80 ? 80 : (int)n, p, n > 80 ? "..." : "", why.msg);
    return LC_OK;
}

void lc_mix_free(lc_mix *m) {
    if (!m)
        return;
    for (size_t i = 0; i < m->n_re; i++)
        lc_re_free(m->re[i]);
    lc_free(m->re);
    lc_free(m);
}

lc_code lc_mix_new(const lc_mix_opts *o, const lc_mix_model *mm, const char *const *names,
                   size_t n, lc_mix **out, lc_error *err) {
    *out = NULL;
    if (o->base == LC_DT_INVALID || o->ftype >= 64 || !mm->arch)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "file type %" PRIu32 " has no base type "
                       "or the model no family", o->ftype);
    lc_mix *m = lc_calloc(1, sizeof *m);
    if (!m || (o->n_patterns && !(m->re = lc_calloc(o->n_patterns, sizeof *m->re)))) {
        lc_mix_free(m);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    m->o = *o;
    m->mm = *mm;
    for (size_t i = 0; i < o->n_patterns; i++) {
        const char *pat = o->patterns[i].pattern;
        const lc_code rc = lc_mix_pattern_compile(pat, strlen(pat), &m->re[i], err);
        if (rc != LC_OK) {
            lc_mix_free(m);
            return rc;
        }
        m->n_re++;
    }
    m->tied = true;                 /* "assume tied until we see output.weight" */
    for (size_t i = 0; i < n; i++) {
        uint32_t layer;
        const cat c = category(m, names[i], &layer);
        if (group_of(c, false) == G_ATTN_V)
            m->n_attn_v++;
        if (c == CAT_OUTPUT)
            m->tied = false;
    }
    m->n_ffn = (int)mm->n_layer;
    m->gqa = mm->n_head_kv ? mm->n_head / mm->n_head_kv : 0;
    m->falcon = strcmp(mm->arch->name, "falcon") == 0;
    for (size_t i = 0; i < sizeof TYPE_70B / sizeof *TYPE_70B; i++)
        if (strcmp(mm->arch->name, TYPE_70B[i].arch) == 0 && mm->n_layer == TYPE_70B[i].n_layer &&
            (!TYPE_70B[i].needs_gqa || (mm->n_head != mm->n_head_kv && mm->n_expert != 8)))
            m->is_70b = true;
    *out = m;
    return LC_OK;
}

/* ---- what can be written ---- */

/* t, and the type its rows fall back to, are written by libconvert (with an importance
 * matrix when `im`). */
static bool type_ok(uint32_t ftype, lc_dtype t, bool im) {
    if (t == LC_DT_INVALID)
        return true;                /* KEEP */
    const lc_dtype fb = fallback_of(t);
    return writable(t) && (im || !needs_imatrix(ftype, t)) &&
           (fb == LC_DT_INVALID || writable(fb));
}

static bool ftype_writable(uint32_t ftype, lc_dtype base, bool im) {
    if (ftype >= 64 || base == LC_DT_INVALID || !type_ok(ftype, base, im))
        return false;
    if (!lc_dtype_is_quant(base))
        return true;                /* F32, F16, BF16: no rules apply */
    for (size_t k = 0; k < NRULES; k++)
        if ((RULES[k].ftypes & (UINT64_C(1) << ftype)) && !special((when)RULES[k].when) &&
            RULES[k].im != (im ? IM_WITHOUT : IM_WITH) && !type_ok(ftype, RULES[k].type, im))
            return false;
    return true;
}

bool lc_mix_ftype_writable(uint32_t ftype, lc_dtype base) {
    return ftype_writable(ftype, base, false);
}

bool lc_mix_ftype_writable_imatrix(uint32_t ftype, lc_dtype base) {
    return ftype_writable(ftype, base, true);
}
