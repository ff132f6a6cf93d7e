/* formats/hf_impl.h: private helpers shared by the hf_* modules (not installed).
 *
 * The HF folder is a handful of small JSON files next to the weights. These read one
 * of them whole into a cJSON tree and pull typed fields out of it with range checks,
 * so every hf_* module reports bad JSON the same way. */
#ifndef LC_FORMATS_HF_IMPL_H
#define LC_FORMATS_HF_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

/* Largest JSON file we parse (tokenizer.json of big vocabularies is ~10-20 MB). */
#define LC_HF_MAX_JSON (256u << 20)

/* Parses LEN bytes of JSON. LC_E_MALFORMED at the byte where cJSON stopped. */
lc_code lc_hf_json_parse(const char *buf, size_t len, cJSON **out, lc_error *err);

/* Reads DIR/NAME and parses it. When the file does not exist: LC_OK with *out NULL if
 * `optional`, else LC_E_NOTFOUND. Errors carry the path. Caller frees with cJSON_Delete. */
lc_code lc_hf_json_load(const char *dir, const char *name, bool optional, cJSON **out,
                        lc_error *err);

/* Joins DIR/NAME into buf; LC_E_ARG when it does not fit. */
lc_code lc_hf_json_path(char *buf, size_t cap, const char *dir, const char *name, lc_error *err);
/* True when DIR/NAME is an existing regular file. */
bool lc_hf_json_exists(const char *dir, const char *name);

/* A JSON number that is an integer in [lo, hi]. LC_E_MALFORMED otherwise (key named). */
lc_code lc_hf_json_int(const cJSON *j, const char *key, int64_t lo, int64_t hi, int64_t *v,
                       lc_error *err);

/* Sets metadata KEY on m to a scalar or a string (the GGUF types gguf-py writes). */
lc_code lc_hf_json_meta_u32(lc_model *m, const char *key, uint64_t v, lc_error *err);
lc_code lc_hf_json_meta_f32(lc_model *m, const char *key, double v, lc_error *err);
lc_code lc_hf_json_meta_bool(lc_model *m, const char *key, bool v, lc_error *err);


/* ---- the vocabulary (hf_vocab.c), shared by hf_tokenizer.c, hf_bpe.c, hf_special.c ---- */
/* GGUF token types (tokenizer.ggml.token_type, i32), equal to SentencePiece's. */
enum { LC_TOK_NORMAL = 1, LC_TOK_UNKNOWN = 2, LC_TOK_CONTROL = 3, LC_TOK_USER_DEFINED = 4,
       LC_TOK_UNUSED = 5, LC_TOK_BYTE = 6 };

/* The vocabulary being built: three parallel GGUF arrays of n items. */
typedef struct lc_hf_vocab {
    uint64_t n;
    lc_value tokens;   /* array of string */
    lc_value scores;   /* array of f32; only the SentencePiece path writes it */
    lc_value types;    /* array of i32 */
} lc_hf_vocab;

/* n placeholder tokens "[PAD<i>]", score -10000, type unused, as llama.cpp starts. */
lc_code lc_hf_vocab_init(lc_hf_vocab *v, uint64_t n, lc_error *err);
void    lc_hf_vocab_clear(lc_hf_vocab *v);
/* Sets token i (replacing what was there). */
lc_code lc_hf_vocab_set(lc_hf_vocab *v, uint64_t i, const char *text, size_t len, double score,
                        int type, lc_error *err);
/* An added token (tokenizer_config added_tokens_decoder or tokenizer.json added_tokens):
 * control when special or when it looks special, else user defined with U+2581 turned
 * into a space, as llama.cpp's converter does. */
lc_code lc_hf_vocab_set_added(lc_hf_vocab *v, uint64_t i, const char *content, bool special,
                              double score, lc_error *err);

/* tokenizer.json BPE -> v (sized to cfg_vocab, or to the tokenizer when 0) and the
 * merges array; tokenizer.ggml.pre identified from the pre_tokenizer. */
lc_code lc_hf_bpe_vocab(const cJSON *tj, uint32_t cfg_vocab, lc_hf_vocab *v, lc_value *merges,
                        lc_error *err);
lc_code lc_hf_bpe_pre(const cJSON *tj, const char **name, lc_error *err);

/* SpecialVocab's rules: special token ids, add_bos/add_eos/add_sep, chat template. TJ
 * (tokenizer.json) may be NULL. Ids at or past n_vocab are skipped. */
lc_code lc_hf_special_to_gguf(const char *dir, const cJSON *tj, uint64_t n_vocab, lc_model *m,
                              lc_error *err);

#endif
