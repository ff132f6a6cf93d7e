/* arch/arch.c: the engine every family table runs on: finding a family, the one
 * layer-index parser, the name map both ways, expected shapes, the completeness check
 * and the hyperparameter keys (see arch.h). Nothing here knows a family by name. */
#include "arch/arch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"

extern const lc_arch lc_arch_llama, lc_arch_qwen2;

static const lc_arch *const FAMILIES[] = { &lc_arch_llama, &lc_arch_qwen2, NULL };

const lc_arch *const *lc_arch_all(void) { return FAMILIES; }

const lc_arch *lc_arch_by_hf_class(const char *cls) {
    for (const lc_arch *const *a = FAMILIES; cls && *a; a++)
        for (const char *const *c = (*a)->hf_classes; *c; c++)
            if (strcmp(*c, cls) == 0)
                return *a;
    return NULL;
}

const lc_arch *lc_arch_by_name(const char *name) {
    for (const lc_arch *const *a = FAMILIES; name && *a; a++)
        if (strcmp((*a)->name, name) == 0)
            return *a;
    return NULL;
}

void lc_arch_list_classes(char *buf, size_t cap) {
    size_t o = 0;
    if (cap)
        buf[0] = '\0';
    for (const lc_arch *const *a = FAMILIES; *a; a++)
        for (const char *const *c = (*a)->hf_classes; *c; c++) {
            int k = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", *c);
            if (k < 0 || (size_t)k >= cap - o)
                return;
            o += (size_t)k;
        }
}

/* ---- names ---- */

bool lc_arch_match(const char *pattern, const char *name, uint32_t *layer) {
    const char *hole = strstr(pattern, "%u");
    *layer = UINT32_MAX;
    if (!hole)
        return strcmp(pattern, name) == 0;
    const size_t pre = (size_t)(hole - pattern);
    if (strncmp(pattern, name, pre) != 0)
        return false;
    const char *p = name + pre;
    uint32_t n = 0;
    size_t digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits == 9)
            return false;
        n = n * 10 + (uint32_t)(*p - '0');
    }
    if (digits == 0 || (digits > 1 && name[pre] == '0') || strcmp(p, hole + 2) != 0)
        return false;
    *layer = n;
    return true;
}

static const char *spelling(const lc_arch_tensor *row, lc_spelling s) {
    return s == LC_SPELL_HF ? row->hf : s == LC_SPELL_META ? row->meta : row->gguf;
}

static const char *spelling_name(lc_spelling s) {
    return s == LC_SPELL_HF ? "Hugging Face" : s == LC_SPELL_META ? "Meta" : "GGUF";
}

const lc_arch_tensor *lc_arch_find(const lc_arch *a, lc_spelling from, const char *name,
                                   uint32_t *layer) {
    for (size_t i = 0; i < a->n_tensors; i++) {
        const char *p = spelling(&a->tensors[i], from);
        if (p && lc_arch_match(p, name, layer))
            return &a->tensors[i];
    }
    return NULL;
}

const lc_arch_tensor *lc_arch_role(const lc_arch *a, lc_role role) {
    for (size_t i = 0; i < a->n_tensors; i++)
        if (a->tensors[i].role == role)
            return &a->tensors[i];
    return NULL;
}

lc_code lc_arch_name(const lc_arch_tensor *row, lc_spelling to, uint32_t layer, char *buf,
                     size_t cap, lc_error *err) {
    const char *p = spelling(row, to);
    if (!p)
        return lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET, "the tensor has no %s name",
                       spelling_name(to));
    const char *hole = strstr(p, "%u");
    int k = hole ? snprintf(buf, cap, "%.*s%" PRIu32 "%s", (int)(hole - p), p, layer, hole + 2)
                 : snprintf(buf, cap, "%s", p);
    if (k < 0 || (size_t)k >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "name buffer of %zu bytes is too small", cap);
    return LC_OK;
}

lc_code lc_arch_map(const lc_arch *a, lc_spelling from, lc_spelling to, const char *name,
                    uint32_t n_layers, char *buf, size_t cap, const lc_arch_tensor **row,
                    lc_error *err) {
    uint32_t layer;
    *row = lc_arch_find(a, from, name, &layer);
    if (!*row) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.100s has no %s name for "
                "architecture %s", name, spelling_name(to), a->name);
        lc_err_context(err, NULL, name);
        return LC_E_UNSUPPORTED;
    }
    if (layer != UINT32_MAX && n_layers && layer >= n_layers) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.80s is in layer %" PRIu32
                " of a %" PRIu32 "-layer model", name, layer, n_layers);
        lc_err_context(err, NULL, name);
        return LC_E_MALFORMED;
    }
    if (!spelling(*row, to))
        return LC_E_NOTFOUND;       /* dropped on that side: not an error to report */
    return lc_arch_name(*row, to, layer == UINT32_MAX ? 0 : layer, buf, cap, err);
}

uint32_t lc_arch_rope_heads(const lc_arch_tensor *row, const lc_hparams *hp) {
    return row->flags & LC_AT_ROPE_Q ? hp->head_count
         : row->flags & LC_AT_ROPE_K ? hp->head_count_kv : 0;
}

/* ---- shapes and completeness ---- */

static uint64_t dim_value(lc_dim d, const lc_hparams *hp) {
    switch (d) {
    case LC_DIM_VOCAB: return hp->vocab_size;
    case LC_DIM_EMBD: return hp->embedding_length;
    case LC_DIM_FF: return hp->feed_forward_length;
    case LC_DIM_Q: return (uint64_t)hp->head_count * hp->head_dim;
    case LC_DIM_KV: return (uint64_t)hp->head_count_kv * hp->head_dim;
    case LC_DIM_HALF_HEAD: return hp->head_dim / 2;
    case LC_DIM_NONE: break;
    }
    return 0;
}

bool lc_arch_shape(const lc_arch_tensor *row, const lc_hparams *hp, uint32_t *nd,
                   uint64_t shape[2]) {
    if (row->ndim == 0)
        return false;
    *nd = row->ndim;
    for (uint32_t i = 0; i < 2; i++)
        shape[i] = i < row->ndim ? dim_value(row->shape[i], hp) : 0;
    return true;
}

lc_code lc_arch_seen_init(lc_arch_seen *s, const lc_arch *a, uint32_t n_layers, lc_error *err) {
    memset(s, 0, sizeof *s);
    if (a->n_tensors > 64)      /* one bit per row */
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "architecture %s has %zu tensor rows; "
                       "at most 64 are tracked", a->name, a->n_tensors);
    s->arch = a;
    s->n_layers = n_layers;
    if (n_layers && !(s->layer = lc_calloc(n_layers, sizeof *s->layer)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " layers",
                       n_layers);
    return LC_OK;
}

void lc_arch_seen_free(lc_arch_seen *s) {
    lc_free(s->layer);
    s->layer = NULL;
}

void lc_arch_seen_mark(lc_arch_seen *s, const lc_arch_tensor *row, uint32_t layer) {
    const uint64_t bit = 1ull << (size_t)(row - s->arch->tensors);
    if (layer == UINT32_MAX)
        s->top |= bit;
    else if (layer < s->n_layers)
        s->layer[layer] |= bit;
}

lc_code lc_arch_seen_check(const lc_arch_seen *s, lc_spelling sp, lc_error *err) {
    const lc_arch *a = s->arch;
    char name[160], gguf[160];
    for (size_t i = 0; i < a->n_tensors; i++) {
        const lc_arch_tensor *row = &a->tensors[i];
        if (!(row->flags & LC_AT_REQUIRED))
            continue;
        const bool per_layer = strstr(row->gguf, "%u") != NULL;
        for (uint32_t l = 0; l < (per_layer ? s->n_layers : 1); l++) {
            const uint64_t have = per_layer ? s->layer[l] : s->top;
            if (have & (1ull << i))
                continue;
            lc_arch_name(row, LC_SPELL_GGUF, l, gguf, sizeof gguf, NULL);
            if (!spelling(row, sp) || lc_arch_name(row, sp, l, name, sizeof name, NULL) != LC_OK)
                snprintf(name, sizeof name, "%s", gguf);
            if (per_layer)
                return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " of %" PRIu32
                               " has no %.80s (GGUF %.80s)", l, s->n_layers, name, gguf);
            return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the model has no %.80s", name);
        }
    }
    return LC_OK;
}

/* ---- hyperparameter keys ---- */

static double hp_get(const lc_hparams *hp, lc_hp f, uint32_t file_type) {
    switch (f) {
    case LC_HP_CONTEXT_LENGTH: return hp->context_length;
    case LC_HP_EMBEDDING_LENGTH: return hp->embedding_length;
    case LC_HP_BLOCK_COUNT: return hp->block_count;
    case LC_HP_FEED_FORWARD_LENGTH: return hp->feed_forward_length;
    case LC_HP_HEAD_COUNT: return hp->head_count;
    case LC_HP_HEAD_COUNT_KV: return hp->head_count_kv;
    case LC_HP_HEAD_DIM: return hp->head_dim;
    case LC_HP_VOCAB_SIZE: return hp->vocab_size;
    case LC_HP_RMS_EPS: return hp->rms_eps;
    case LC_HP_ROPE_THETA: return hp->rope_theta;
    case LC_HP_TIE_WORD_EMBEDDINGS: return hp->tie_word_embeddings;
    case LC_HP_ROPE_SCALING_FACTOR: return hp->rope_scaling_factor;
    case LC_HP_ROPE_SCALING_ORIG_CTX: return hp->rope_scaling_orig_ctx;
    case LC_HP_FILE_TYPE: return file_type;
    case LC_HP_ROPE_SCALING_TYPE: break;
    }
    return 0;
}

static bool key_applies(const lc_arch_key *k, const lc_hparams *hp) {
    const bool scaled = hp->rope_scaling == LC_ROPE_SCALING_LINEAR ||
                        hp->rope_scaling == LC_ROPE_SCALING_YARN;
    switch (k->when) {
    case LC_KEY_IF_SCALED: return scaled;
    case LC_KEY_IF_ORIG_CTX: return scaled && hp->rope_scaling_orig_ctx;
    case LC_KEY_IF_HEAD_DIM: return hp->head_dim_given;
    default: return true;
    }
}

static void key_name(const lc_arch *a, const lc_arch_key *k, char *buf, size_t cap) {
    const char *hole = strstr(k->key, "%s");
    if (hole)
        snprintf(buf, cap, "%.*s%s%s", (int)(hole - k->key), k->key, a->name, hole + 2);
    else
        snprintf(buf, cap, "%s", k->key);
}

lc_code lc_arch_write_keys(const lc_arch *a, const lc_hparams *hp, uint32_t file_type,
                           lc_model *m, lc_error *err) {
    char key[128];
    for (size_t i = 0; i < a->n_keys; i++) {
        const lc_arch_key *k = &a->keys[i];
        if (!key_applies(k, hp) || (k->hp == LC_HP_FILE_TYPE && file_type == LC_ARCH_NO_FILE_TYPE))
            continue;
        key_name(a, k, key, sizeof key);
        lc_value v;
        if (k->type == LC_KEY_STR) {
            const char *s = hp->rope_scaling == LC_ROPE_SCALING_YARN ? "yarn" : "linear";
            LC_TRY(lc_model_set_meta_str(m, key, s, err));
            continue;
        }
        if (k->type == LC_KEY_F32)
            v = lc_value_float(LC_VT_F32, (double)(float)hp_get(hp, k->hp, file_type));
        else
            v = lc_value_uint(LC_VT_U32, (uint64_t)hp_get(hp, k->hp, file_type));
        LC_TRY(lc_model_set_meta(m, key, &v, err));
    }
    return LC_OK;
}

/* Reads key k into hp; absent keys leave hp alone. */
static lc_code read_key(const lc_model *m, const lc_arch *a, const lc_arch_key *k,
                        lc_hparams *hp, bool *present, lc_error *err) {
    char key[128];
    key_name(a, k, key, sizeof key);
    const lc_value *v = lc_model_find_meta(m, key);
    *present = v != NULL;
    if (!v || k->hp == LC_HP_FILE_TYPE)
        return LC_OK;
    const bool ok = k->type == LC_KEY_STR ? v->type == LC_VT_STRING
                  : k->type == LC_KEY_F32 ? v->type == LC_VT_F32 || v->type == LC_VT_F64
                  : v->type == LC_VT_U32 || v->type == LC_VT_I32 || v->type == LC_VT_U64;
    if (!ok) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s has type %s", key,
                lc_vtype_name(v->type));
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    if (k->type == LC_KEY_STR) {
        hp->rope_scaling = strcmp(v->str.ptr, "yarn") == 0 ? LC_ROPE_SCALING_YARN
                         : strcmp(v->str.ptr, "linear") == 0 ? LC_ROPE_SCALING_LINEAR
                         : LC_ROPE_SCALING_NONE;
        return LC_OK;
    }
    const double d = k->type == LC_KEY_F32 ? v->f : v->type == LC_VT_I32 ? (double)v->i
                                                                          : (double)v->u;
    if (k->type != LC_KEY_F32 && !(d > 0 && d <= UINT32_MAX)) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is not a positive 32-bit count", key);
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    switch (k->hp) {
    case LC_HP_CONTEXT_LENGTH: hp->context_length = (uint32_t)d; break;
    case LC_HP_EMBEDDING_LENGTH: hp->embedding_length = (uint32_t)d; break;
    case LC_HP_BLOCK_COUNT: hp->block_count = (uint32_t)d; break;
    case LC_HP_FEED_FORWARD_LENGTH: hp->feed_forward_length = (uint32_t)d; break;
    case LC_HP_HEAD_COUNT: hp->head_count = (uint32_t)d; break;
    case LC_HP_HEAD_COUNT_KV: hp->head_count_kv = (uint32_t)d; break;
    case LC_HP_HEAD_DIM: hp->head_dim = (uint32_t)d; break;
    case LC_HP_VOCAB_SIZE: hp->vocab_size = (uint32_t)d; break;
    case LC_HP_RMS_EPS: hp->rms_eps = d; break;
    case LC_HP_ROPE_THETA: hp->rope_theta = d; break;
    case LC_HP_ROPE_SCALING_FACTOR: hp->rope_scaling_factor = d; break;
    case LC_HP_ROPE_SCALING_ORIG_CTX: hp->rope_scaling_orig_ctx = (uint32_t)d; break;
    default: break;
    }
    return LC_OK;
}

lc_code lc_arch_read_keys(const lc_model *m, const lc_arch **out, lc_hparams *hp,
                          lc_error *err) {
    const lc_value *name = lc_model_find_meta(m, "general.architecture");
    const lc_arch *a = name && name->type == LC_VT_STRING ? lc_arch_by_name(name->str.ptr) : NULL;
    if (!a) {
        char list[128] = "";
        for (const lc_arch *const *f = FAMILIES; *f; f++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", *list ? ", " : "",
                     (*f)->name);
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "general.architecture %.40s is not one of "
                "%s", name && name->type == LC_VT_STRING ? name->str.ptr : "(missing)", list);
        lc_err_context(err, NULL, "general.architecture");
        return LC_E_UNSUPPORTED;
    }
    lc_hparams h = { .rope_theta = 10000.0 };
    bool have_heads = false;
    for (size_t i = 0; i < a->n_keys; i++) {
        bool present;
        LC_TRY(read_key(m, a, &a->keys[i], &h, &present, err));
        have_heads |= present && a->keys[i].hp == LC_HP_HEAD_COUNT;
    }
    /* What no model runs without; the rest has llama.cpp's defaults. */
    static const char *const required[] = { "%s.attention.head_count", "%s.block_count",
                                            "%s.embedding_length" };
    const bool have[] = { have_heads, h.block_count != 0, h.embedding_length != 0 };
    for (size_t i = 0; i < sizeof have / sizeof *have; i++) {
        if (have[i])
            continue;
        char key[96];
        const lc_arch_key k = { required[i], LC_HP_BLOCK_COUNT, LC_KEY_U32, 0 };
        key_name(a, &k, key, sizeof key);
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is missing", key);
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    if (!h.head_count_kv)
        h.head_count_kv = h.head_count;
    if (!h.head_dim)
        h.head_dim = h.embedding_length / h.head_count;
    *out = a;
    *hp = h;
    return LC_OK;
}
