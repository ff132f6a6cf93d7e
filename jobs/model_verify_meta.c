/* jobs/model_verify_meta.c: the metadata of both sides, key by key.
 *
 * Both sides are read as GGUF keys (an HF or Meta folder's are what hf/ writes for it).
 * Compared:
 *   1. the family's hyperparameters, through arch/'s key table and lc_arch_read_keys,
 *      so that a key one side leaves out and the other writes with llama.cpp's default
 *      (head_count_kv = head_count, freq_base 10000) agrees; named by GGUF key;
 *   2. every tokenizer.* key either side has: the vocabulary, scores, token types,
 *      merges, special ids, add_bos/add_eos, the pre-tokenizer, the chat template;
 *      arrays item by item, named "key[index]" (for the vocabulary, the token id).
 * general.* keys (name, file type, quantization version, sampling) describe the file,
 * not the model, and are not compared. */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void lc_vf_meta_add(lc_vf_meta *r, const char *key, const char *src, const char *dst) {
    r->n_diffs++;
    if (r->n_kept == LC_VF_MAX_DIFFS)
        return;
    lc_vf_diff *d = &r->diffs[r->n_kept++];
    lc_vf_escape(key, d->key, sizeof d->key);
    snprintf(d->src, sizeof d->src, "%s", src);
    snprintf(d->dst, sizeof d->dst, "%s", dst);
}

/* ---- values ---- */

static bool is_int(lc_vtype t) {
    return t == LC_VT_U8 || t == LC_VT_U16 || t == LC_VT_U32 || t == LC_VT_U64 ||
           t == LC_VT_I8 || t == LC_VT_I16 || t == LC_VT_I32 || t == LC_VT_I64;
}
static bool is_signed(lc_vtype t) {
    return t == LC_VT_I8 || t == LC_VT_I16 || t == LC_VT_I32 || t == LC_VT_I64;
}

static void fmt_value(const lc_value *v, char *buf, size_t cap) {
    if (!v) {
        snprintf(buf, cap, "(absent)");
    } else if (is_int(v->type)) {
        if (is_signed(v->type))
            snprintf(buf, cap, "%" PRId64, v->i);
        else
            snprintf(buf, cap, "%" PRIu64, v->u);
    } else if (v->type == LC_VT_F32 || v->type == LC_VT_F64) {
        snprintf(buf, cap, v->type == LC_VT_F32 ? "%.9g" : "%.17g", v->f);
    } else if (v->type == LC_VT_BOOL) {
        snprintf(buf, cap, "%s", v->b ? "true" : "false");
    } else if (v->type == LC_VT_STRING) {
        lc_vf_quote(v->str.ptr, (size_t)v->str.len, buf, cap);
    } else {
        snprintf(buf, cap, "[%" PRIu64 " x %s]", v->arr.count, lc_vtype_name(v->arr.elem));
    }
}

/* Equal as values: integers by value whatever their width and sign, floats by value
 * (NaN equals NaN), strings by bytes, arrays item by item. */
static bool same_value(const lc_value *a, const lc_value *b) {
    if (is_int(a->type) && is_int(b->type)) {
        if (is_signed(a->type) && is_signed(b->type))
            return a->i == b->i;
        if (!is_signed(a->type) && !is_signed(b->type))
            return a->u == b->u;
        const lc_value *s = is_signed(a->type) ? a : b, *u = s == a ? b : a;
        return s->i >= 0 && (uint64_t)s->i == u->u;
    }
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case LC_VT_F32: case LC_VT_F64:
        return a->f == b->f || (isnan(a->f) && isnan(b->f));
    case LC_VT_BOOL:
        return a->b == b->b;
    case LC_VT_STRING:
        return a->str.len == b->str.len && memcmp(a->str.ptr, b->str.ptr, a->str.len) == 0;
    case LC_VT_ARRAY:
        if (a->arr.count != b->arr.count)
            return false;
        for (uint64_t i = 0; i < a->arr.count; i++) {
            const lc_value x = lc_value_arr_get(a, i), y = lc_value_arr_get(b, i);   /* views */
            if (!same_value(&x, &y))
                return false;
        }
        return true;
    default:
        return false;
    }
}

/* One key: whole, or for two arrays of one length, item by item. */
static void compare_key(lc_vf_meta *r, const char *key, const lc_value *a, const lc_value *b) {
    char sa[96], sb[96], name[128];
    r->n_keys++;
    if (a && b && a->type == LC_VT_ARRAY && b->type == LC_VT_ARRAY &&
        a->arr.count == b->arr.count) {
        size_t kept = 0;
        for (uint64_t i = 0; i < a->arr.count; i++) {
            const lc_value x = lc_value_arr_get(a, i), y = lc_value_arr_get(b, i);   /* views */
            if (same_value(&x, &y))
                continue;
            if (kept == LC_VF_MAX_DIFFS_PER_KEY) {
                r->n_diffs++;           /* counted, not kept */
                continue;
            }
            kept++;
            fmt_value(&x, sa, sizeof sa);
            fmt_value(&y, sb, sizeof sb);
            snprintf(name, sizeof name, "%.100s[%" PRIu64 "]", key, i);
            lc_vf_meta_add(r, name, sa, sb);
        }
        return;
    }
    if (a && b && same_value(a, b))
        return;
    if (a && b && a->type == LC_VT_ARRAY && b->type == LC_VT_ARRAY) {
        snprintf(sa, sizeof sa, "%" PRIu64 " items", a->arr.count);
        snprintf(sb, sizeof sb, "%" PRIu64 " items", b->arr.count);
    } else {
        fmt_value(a, sa, sizeof sa);
        fmt_value(b, sb, sizeof sb);
    }
    lc_vf_meta_add(r, key, sa, sb);
}

/* ---- hyperparameters ---- */

static double hp_value(const lc_hparams *h, lc_hp which) {
    switch (which) {
    case LC_HP_CONTEXT_LENGTH:      return h->context_length;
    case LC_HP_EMBEDDING_LENGTH:    return h->embedding_length;
    case LC_HP_BLOCK_COUNT:         return h->block_count;
    case LC_HP_FEED_FORWARD_LENGTH: return h->feed_forward_length;
    case LC_HP_HEAD_COUNT:          return h->head_count;
    case LC_HP_HEAD_COUNT_KV:       return h->head_count_kv;
    case LC_HP_HEAD_DIM:            return h->head_dim;
    case LC_HP_VOCAB_SIZE:          return h->vocab_size;
    case LC_HP_RMS_EPS:             return h->rms_eps;
    case LC_HP_ROPE_THETA:          return h->rope_theta;
    case LC_HP_TIE_WORD_EMBEDDINGS: return h->tie_word_embeddings;
    case LC_HP_ROPE_SCALING_TYPE:   return h->rope_scaling;
    case LC_HP_ROPE_SCALING_FACTOR: return h->rope_scaling_factor;
    case LC_HP_ROPE_SCALING_ORIG_CTX: return h->rope_scaling_orig_ctx;
    default:                        return 0;
    }
}

static lc_code compare_hparams(const lc_vf_side *src, const lc_vf_side *dst, lc_vf_meta *r,
                               lc_error *err) {
    const lc_arch *a, *b;
    lc_hparams ha, hb;
    LC_TRY(lc_arch_read_keys(src->meta, &a, &ha, err));
    LC_TRY(lc_arch_read_keys(dst->meta, &b, &hb, err));
    for (size_t i = 0; i < a->n_keys; i++) {
        const lc_arch_key *k = &a->keys[i];
        if (k->hp == LC_HP_FILE_TYPE)
            continue;                   /* the file's, not the model's */
        char key[128], sa[96], sb[96];
        const char *hole = strstr(k->key, "%s");     /* "%s" is the architecture */
        if (hole)
            snprintf(key, sizeof key, "%.*s%s%s", (int)(hole - k->key), k->key, a->name, hole + 2);
        else
            snprintf(key, sizeof key, "%s", k->key);
        r->n_keys++;
        const double va = hp_value(&ha, k->hp), vb = hp_value(&hb, k->hp);
        if (va == vb)
            continue;
        /* Each as the file says it, when it does: the raw key, else the default. */
        const lc_value *ra = lc_model_find_meta(src->meta, key);
        const lc_value *rb = lc_model_find_meta(dst->meta, key);
        if (ra)
            fmt_value(ra, sa, sizeof sa);
        else
            snprintf(sa, sizeof sa, "%.9g (absent: the default)", va);
        if (rb)
            fmt_value(rb, sb, sizeof sb);
        else
            snprintf(sb, sizeof sb, "%.9g (absent: the default)", vb);
        lc_vf_meta_add(r, key, sa, sb);
    }
    return LC_OK;
}

/* ---- tokenizer ---- */

static bool is_tok_key(const char *k) { return strncmp(k, "tokenizer.", 10) == 0; }

static void compare_tokenizer(const lc_vf_side *src, const lc_vf_side *dst, lc_vf_meta *r) {
    for (size_t i = 0; i < lc_model_meta_count(src->meta); i++) {
        const lc_kv *kv = lc_model_meta(src->meta, i);
        if (is_tok_key(kv->key))
            compare_key(r, kv->key, &kv->val, lc_model_find_meta(dst->meta, kv->key));
    }
    for (size_t i = 0; i < lc_model_meta_count(dst->meta); i++) {
        const lc_kv *kv = lc_model_meta(dst->meta, i);
        if (is_tok_key(kv->key) && !lc_model_find_meta(src->meta, kv->key))
            compare_key(r, kv->key, NULL, &kv->val);
    }
}

static uint64_t n_tokens(const lc_model *m) {
    const lc_value *v = lc_model_find_meta(m, "tokenizer.ggml.tokens");
    return v && v->type == LC_VT_ARRAY ? v->arr.count : 0;
}

lc_code lc_vf_meta_compare(const lc_vf_side *src, const lc_vf_side *dst, lc_vf_meta *r,
                           lc_error *err) {
    memset(r, 0, sizeof *r);
    if (!src->meta || !dst->meta) {
        snprintf(r->note, sizeof r->note, "%s is bare tensors: no metadata to compare",
                 !src->meta ? src->label : dst->label);
        return LC_OK;
    }
    r->compared = true;
    const uint64_t na = n_tokens(src->meta), nb = n_tokens(dst->meta);
    if (na && nb && na != nb) {
        lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the vocabularies differ in size: SRC has "
                "%" PRIu64 " tokens, DST %" PRIu64, na, nb);
        lc_err_context(err, NULL, "tokenizer.ggml.tokens");
        return LC_E_MISMATCH;
    }
    LC_TRY(compare_hparams(src, dst, r, err));
    compare_tokenizer(src, dst, r);
    return LC_OK;
}
