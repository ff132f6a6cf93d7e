/* hf/special.c: special token ids, add_bos/add_eos/add_sep and the chat
 * template of an HF folder, by the rules of gguf-py's SpecialVocab:
 *
 *   1. tokenizer_config.json "<t>_token" (a string, or {"content": ...}) names the token
 *      for t in bos eos unk sep pad cls mask; its id is the first tokenizer.json
 *      added_tokens entry with that content (no tokenizer.json: no id from here).
 *      A missing bos falls back to cls, eos to sep. special_tokens_map.json fills in
 *      names tokenizer_config.json lacks (what transformers does when loading).
 *   2. config.json "<t>_token_id" integers fill the ids still unset; then
 *      generation_config.json bos/eos/pad (an integer, or the first of a list).
 *   3. add_bos/add_eos/add_sep: tokenizer.json's post_processor (TemplateProcessing
 *      "single": first special token == bos -> add_bos, last == eos -> add_eos; "pair":
 *      "A <sep|eos> B" -> add_sep; RobertaProcessing -> all three), then
 *      tokenizer_config.json "add_<t>_token" booleans.
 *   4. chat_template: tokenizer_config.json's string, else chat_template.jinja.
 * Keys written: tokenizer.ggml.{bos,eos,unknown,seperator,padding,mask}_token_id (u32;
 * gguf-py spells "seperator"), tokenizer.ggml.add_{bos,eos,sep}_token (bool),
 * tokenizer.chat_template (string). cls has no GGUF key. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hf/json.h"
#include "hf/special.h"
#include "hf/vocab.h"
#include "libconvert/alloc.h"
#include "libconvert/map.h"

enum { BOS, EOS, UNK, SEP, PAD, CLS, MASK, NTYPES };
static const char *const TYPE[NTYPES] = { "bos", "eos", "unk", "sep", "pad", "cls", "mask" };
static const char *const ID_KEY[NTYPES] = {
    "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id",
    "tokenizer.ggml.padding_token_id", NULL, "tokenizer.ggml.mask_token_id",
};

typedef struct special {
    const char *name[NTYPES];   /* token text, borrowed from the JSON trees */
    int64_t id[NTYPES];         /* -1 unset */
    int add[NTYPES];            /* -1 unset, else 0/1 */
} special;

/* A "<t>_token" entry: a string or an object with a string content. */
static const char *token_name(const cJSON *j) {
    if (cJSON_IsString(j))
        return j->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

static void set_id(special *s, int t, int64_t id, uint64_t n_vocab) {
    if (s->id[t] < 0 && id >= 0 && (uint64_t)id < n_vocab)
        s->id[t] = id;
}

static bool same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* The "id" of item i of a TemplateProcessing list when it is of kind KIND
 * ("SpecialToken" or "Sequence"), else NULL. */
static const char *piece_id(const cJSON *list, int i, const char *kind) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, i), kind);
    return token_name(cJSON_GetObjectItemCaseSensitive(k, "id"));
}

/* The "pair" template decides add_sep: strip the single template's leading and trailing
 * special tokens, then "A <sep|eos> [<sep|eos>] B" means a separator is added. */
static void from_pair(const cJSON *pair, const char *first, const char *last, special *s) {
    int lo = 0, hi = cJSON_GetArraySize(pair);
    if (first && hi > 0 && same(piece_id(pair, 0, "SpecialToken"), first))
        lo = 1;
    if (last && hi > lo && same(piece_id(pair, hi - 1, "SpecialToken"), last))
        hi--;
    if (hi - lo < 3 || !same(piece_id(pair, lo, "Sequence"), "A") ||
        !same(piece_id(pair, hi - 1, "Sequence"), "B"))
        return;
    const char *mid = piece_id(pair, lo + 1, "SpecialToken");
    bool sep_like = same(mid, s->name[SEP]) || same(mid, s->name[EOS]);
    bool add = mid && sep_like && !last;
    if (hi - lo == 4) {
        const char *mid2 = piece_id(pair, lo + 2, "SpecialToken");
        if (same(mid2, s->name[SEP]) || same(mid2, s->name[EOS]))
            add = true;
    }
    s->add[SEP] = add;
}

/* Step 3's post_processor part. */
static void from_post_processor(const cJSON *tj, special *s) {
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(tj, "post_processor");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(pp, "processors");
    const cJSON *one = cJSON_IsArray(list) ? list->child : pp;
    for (; one; one = cJSON_IsArray(list) ? one->next : NULL) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(one, "type");
        if (!cJSON_IsString(type))
            continue;
        if (strcmp(type->valuestring, "RobertaProcessing") == 0) {
            s->add[BOS] = s->add[EOS] = s->add[SEP] = 1;
            continue;
        }
        if (strcmp(type->valuestring, "TemplateProcessing") != 0)
            continue;
        const cJSON *single = cJSON_GetObjectItemCaseSensitive(one, "single");
        int n = cJSON_GetArraySize(single);
        if (n < 2)
            continue;
        const char *first = piece_id(single, 0, "SpecialToken");
        const char *last = piece_id(single, n - 1, "SpecialToken");
        if (first)
            s->add[BOS] = same(first, s->name[BOS]) || same(first, s->name[CLS]);
        if (last)
            s->add[EOS] = same(last, s->name[EOS]);
        from_pair(cJSON_GetObjectItemCaseSensitive(one, "pair"), first, last, s);
    }
}

/* Step 1's lookup: the first added token with this content. */
static int64_t added_id(const cJSON *tj, const char *name) {
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(tj, "added_tokens")) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsString(c) && strcmp(c->valuestring, name) == 0)
            return cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < 4294967296.0
                       ? (int64_t)id->valuedouble : -1;
    }
    return -1;
}

/* Step 2: "<t>_token_id" (or "<t>_token_id": [first, ...] when lists are allowed). */
static void from_ids(const cJSON *j, special *s, uint64_t n_vocab, bool lists, bool only_bep) {
    for (int t = 0; t < NTYPES; t++) {
        char key[32];
        if (only_bep && t != BOS && t != EOS && t != PAD)
            continue;
        snprintf(key, sizeof key, "%s_token_id", TYPE[t]);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
        if (lists && cJSON_IsArray(v))
            v = v->child;
        if (cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble)
            set_id(s, t, (int64_t)v->valuedouble, n_vocab);
    }
}

/* chat_template.jinja as a string value, when the file exists. */
static lc_code jinja(const char *dir, lc_model *m, lc_error *err) {
    char path[4096];
    lc_map *map = NULL;
    if (!lc_hf_json_exists(dir, "chat_template.jinja"))
        return LC_OK;
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, "chat_template.jinja", err));
    LC_TRY(lc_map_open(path, &map, err));
    lc_value v;
    lc_code rc = lc_value_string(&v, (const char *)map->data, (size_t)map->size, err);
    if (rc == LC_OK)
        rc = lc_model_set_meta(m, "tokenizer.chat_template", &v, err);
    lc_map_close(map);
    return rc;
}

static lc_code write_keys(const special *s, lc_model *m, lc_error *err) {
    for (int t = 0; t < NTYPES; t++)
        if (ID_KEY[t] && s->id[t] >= 0)
            LC_TRY(lc_hf_json_meta_u32(m, ID_KEY[t], (uint64_t)s->id[t], err));
    static const struct { int t; const char *key; } ADD[] = {
        { BOS, "tokenizer.ggml.add_bos_token" }, { EOS, "tokenizer.ggml.add_eos_token" },
        { SEP, "tokenizer.ggml.add_sep_token" },
    };
    for (size_t i = 0; i < sizeof ADD / sizeof *ADD; i++)
        if (s->add[ADD[i].t] >= 0)
            LC_TRY(lc_hf_json_meta_bool(m, ADD[i].key, s->add[ADD[i].t] != 0, err));
    return LC_OK;
}

lc_code lc_hf_special_to_gguf(const char *dir, const cJSON *tj, uint64_t n_vocab, lc_model *m,
                              lc_error *err) {
    cJSON *tc = NULL, *stm = NULL, *cfg = NULL, *gen = NULL;
    special s;
    lc_code rc;
    for (int t = 0; t < NTYPES; t++) {
        s.name[t] = NULL;
        s.id[t] = -1;
        s.add[t] = -1;
    }
    if ((rc = lc_hf_json_load(dir, "tokenizer_config.json", true, &tc, err)) != LC_OK ||
        (rc = lc_hf_json_load(dir, "special_tokens_map.json", true, &stm, err)) != LC_OK ||
        (rc = lc_hf_json_load(dir, "config.json", true, &cfg, err)) != LC_OK ||
        (rc = lc_hf_json_load(dir, "generation_config.json", true, &gen, err)) != LC_OK)
        goto done;
    for (int t = 0; t < NTYPES; t++) {
        char key[32];
        snprintf(key, sizeof key, "%s_token", TYPE[t]);
        s.name[t] = token_name(cJSON_GetObjectItemCaseSensitive(tc, key));
        if (!s.name[t])
            s.name[t] = token_name(cJSON_GetObjectItemCaseSensitive(stm, key));
    }
    if (tj) {
        if (!s.name[BOS] && tc)
            s.name[BOS] = s.name[CLS];
        if (!s.name[EOS] && tc)
            s.name[EOS] = s.name[SEP];
        from_post_processor(tj, &s);
        for (int t = 0; t < NTYPES; t++)
            if (s.name[t])
                set_id(&s, t, added_id(tj, s.name[t]), n_vocab);
    }
    for (int t = 0; t < NTYPES; t++) {
        char key[32];
        snprintf(key, sizeof key, "add_%s_token", TYPE[t]);
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(tc, key);
        if (cJSON_IsBool(a))
            s.add[t] = cJSON_IsTrue(a);
    }
    from_ids(cfg, &s, n_vocab, false, false);
    from_ids(gen, &s, n_vocab, true, true);
    if ((rc = write_keys(&s, m, err)) != LC_OK)
        goto done;
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(tc, "chat_template");
    if (cJSON_IsString(ct))
        rc = lc_model_set_meta_str(m, "tokenizer.chat_template", ct->valuestring, err);
    else if (tc)
        rc = jinja(dir, m, err);
done:
    cJSON_Delete(tc);
    cJSON_Delete(stm);
    cJSON_Delete(cfg);
    cJSON_Delete(gen);
    return rc;
}
