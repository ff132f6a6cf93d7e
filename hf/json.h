/* hf/json.h: the small JSON files of a Hugging Face folder (not installed).
 *
 * The HF folder is a handful of small JSON files next to the weights. These read one
 * of them whole into a cJSON tree and pull typed fields out of it with range checks,
 * so every hf/ module reports bad JSON the same way. */
#ifndef LC_HF_JSON_H
#define LC_HF_JSON_H

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
/* True when something exists at DIR/NAME (a FIFO or folder too: opening it says what). */
bool lc_hf_json_exists(const char *dir, const char *name);

/* A JSON number that is an integer in [lo, hi]. LC_E_MALFORMED otherwise (key named). */
lc_code lc_hf_json_int(const cJSON *j, const char *key, int64_t lo, int64_t hi, int64_t *v,
                       lc_error *err);

/* Sets metadata KEY on m to a scalar or a string (the GGUF types gguf-py writes). */
lc_code lc_hf_json_meta_u32(lc_model *m, const char *key, uint64_t v, lc_error *err);
lc_code lc_hf_json_meta_f32(lc_model *m, const char *key, double v, lc_error *err);
lc_code lc_hf_json_meta_bool(lc_model *m, const char *key, bool v, lc_error *err);

#endif
