/* jobs/model_verify_meta.c: the metadata of both sides, key by key.
 *
 * Both sides are read as GGUF keys (an HF or Meta folder's are what hf/ writes for it).
 * Compared:
 *   1. the family's hyperparameters: every key of arch/'s key table and every <arch>.*
 *      key either side has, each as its own value (below); a key one side leaves out
 *      and the other writes with llama.cpp's default (head_count_kv = head_count,
 *      freq_base 10000) agrees; named by GGUF key;
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

/* ---- hyperparameters ----
 *
 * Every key of the family's table and every <arch>.* key either side has is compared
 * as its own value, never through lc_hparams (where key_length, value_length and
 * rope.dimension_count fill one field, and keys a family does not parse, such as a MoE
 * model's expert counts, would not be seen at all): llama.cpp reads each key by
 * itself. A table key one side leaves out takes the value our converter writes for
 * that side's parsed hyperparameters (lc_arch_write_keys after lc_arch_read_keys, which
 * applies llama.cpp's defaults: head_count_kv = head_count, key_length = embd / heads,
 * freq_base 10000), so that "absent" agrees with the default written out. A key the
 * table does not know has no default: absent on one side is a difference. */

/* Equal as the table's type reads them: counts as integers, reals as float32 (what
 * llama.cpp holds), strings by bytes; anything else (a key the table does not know,
 * a value of the wrong type) as values. */
static bool same_as(lc_key_type kt, const lc_value *a, const lc_value *b) {
    const bool num_a = is_int(a->type) || a->type == LC_VT_F32 || a->type == LC_VT_F64;
    const bool num_b = is_int(b->type) || b->type == LC_VT_F32 || b->type == LC_VT_F64;
    if (kt == LC_KEY_F32 && num_a && num_b) {
        const float x = (float)(is_int(a->type) ? (is_signed(a->type) ? (double)a->i : (double)a->u)
                                                : a->f);
        const float y = (float)(is_int(b->type) ? (is_signed(b->type) ? (double)b->i : (double)b->u)
                                                : b->f);
        return x == y || (isnan(x) && isnan(y));
    }
    return same_value(a, b);
}

/* The table's keys of family a written for side s's parsed hyperparameters: each
 * key's default there. key_length/value_length are written whether or not the side
 * named them (their default is the parsed head size). */
static lc_code defaults(const lc_vf_side *s, lc_model **out, lc_error *err) {
    const lc_arch *a;
    lc_hparams hp;
    *out = NULL;
    LC_TRY(lc_arch_read_keys(s->meta, &a, &hp, err));
    hp.head_dim_given = true;
    lc_model *m = lc_model_new();
    if (!m)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = lc_arch_write_keys(a, &hp, LC_ARCH_NO_FILE_TYPE, m, err);
    if (rc != LC_OK) {
        lc_model_free(m);
        return rc;
    }
    *out = m;
    return LC_OK;
}

/* One key of the family: raw values, a missing one replaced by its side's default. */
static void compare_hkey(lc_vf_meta *r, const char *key, lc_key_type kt, bool in_table,
                         const lc_vf_side *src, const lc_vf_side *dst, const lc_model *da,
                         const lc_model *db) {
    const lc_value *ra = lc_model_find_meta(src->meta, key);
    const lc_value *rb = lc_model_find_meta(dst->meta, key);
    if (!ra && !rb)
        return;                         /* neither says: both run with the default */
    r->n_keys++;
    const lc_value *va = ra ? ra : in_table ? lc_model_find_meta(da, key) : NULL;
    const lc_value *vb = rb ? rb : in_table ? lc_model_find_meta(db, key) : NULL;
    if (va && vb && va->type == LC_VT_ARRAY && vb->type == LC_VT_ARRAY) {
        r->n_keys--;                    /* counted there: a per-layer list, item by item */
        compare_key(r, key, va, vb);
        return;
    }
    if (va && vb && same_as(kt, va, vb))
        return;
    char sa[96], sb[96], v[64];
    fmt_value(va, v, sizeof v);
    snprintf(sa, sizeof sa, ra || !va ? "%s" : "%s (absent: the default)", v);
    fmt_value(vb, v, sizeof v);
    snprintf(sb, sizeof sb, rb || !vb ? "%s" : "%s (absent: the default)", v);
    lc_vf_meta_add(r, key, sa, sb);
}

static void key_name(const lc_arch *a, const lc_arch_key *k, char *buf, size_t cap) {
    const char *hole = strstr(k->key, "%s");     /* "%s" is the architecture */
    if (hole)
        snprintf(buf, cap, "%.*s%s%s", (int)(hole - k->key), k->key, a->name, hole + 2);
    else
        snprintf(buf, cap, "%s", k->key);
}

/* Whether key is one of the family's table (its type in *kt). */
static bool table_key(const lc_arch *a, const char *key, lc_key_type *kt) {
    char name[128];
    for (size_t i = 0; i < a->n_keys; i++) {
        key_name(a, &a->keys[i], name, sizeof name);
        if (strcmp(name, key) == 0) {
            *kt = a->keys[i].type;
            return true;
        }
    }
    return false;
}

/* The <arch>.* keys of m the table does not list. */
static void compare_others(lc_vf_meta *r, const lc_arch *a, const lc_model *m, bool is_src,
                           const lc_vf_side *src, const lc_vf_side *dst) {
    const size_t plen = strlen(a->name);
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        lc_key_type kt;
        if (strncmp(kv->key, a->name, plen) != 0 || kv->key[plen] != '.' ||
            table_key(a, kv->key, &kt))
            continue;
        if (!is_src && lc_model_find_meta(src->meta, kv->key))
            continue;                   /* compared from SRC's side */
        compare_hkey(r, kv->key, LC_KEY_STR, false, src, dst, NULL, NULL);
    }
}

static lc_code compare_hparams(const lc_vf_side *src, const lc_vf_side *dst, lc_vf_meta *r,
                               lc_error *err) {
    lc_model *da = NULL, *db = NULL;
    lc_code rc = defaults(src, &da, err);
    if (rc == LC_OK)
        rc = defaults(dst, &db, err);
    const lc_arch *a = src->arch ? src->arch : dst->arch;
    if (rc == LC_OK && a) {
        char key[128];
        for (size_t i = 0; i < a->n_keys; i++) {
            const lc_arch_key *k = &a->keys[i];
            if (k->hp == LC_HP_FILE_TYPE)
                continue;               /* the file's, not the model's */
            bool seen = false;          /* a key listed twice (written in one place or
                                         * the other: qwen35's rope sections) */
            for (size_t j = 0; j < i; j++)
                seen |= strcmp(a->keys[j].key, k->key) == 0;
            if (seen)
                continue;
            key_name(a, k, key, sizeof key);
            compare_hkey(r, key, k->type, true, src, dst, da, db);
        }
        compare_others(r, a, src->meta, true, src, dst);
        compare_others(r, a, dst->meta, false, src, dst);
    }
    lc_model_free(da);
    lc_model_free(db);
    return rc;
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
