/* libconvert/model.h: the model, ordered tensors plus ordered typed metadata.
 *
 * libconvert/ is the bottom layer every other folder builds on: the IR (model, tensor
 * with lazy sources, typed metadata, dtypes), errors, bounded and mapped reads, atomic
 * output files, threads and the ordered pipeline, generic lazy views, dtype
 * conversion, the CPU-feature probe and progress. It uses libc and pthreads only.
 *
 * Every reader produces one and every writer consumes one. The model owns its
 * tensors' names, their lazy sources, its metadata, and any resources a reader
 * hands it (maps, zip readers) through lc_model_own(); tensors' zero-copy views
 * stay valid until lc_model_free(). Not thread-safe to modify; concurrent reads
 * of tensor data are fine. */
#ifndef LC_LIBCONVERT_MODEL_H
#define LC_LIBCONVERT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/tensor.h"
#include "libconvert/value.h"

typedef struct lc_model lc_model;

typedef struct lc_kv {
    char    *key;   /* owned */
    lc_value val;   /* owned */
} lc_kv;

/* NULL when out of memory. */
lc_model *lc_model_new(void);
/* Frees tensors, sources, metadata, then owned resources in reverse order. NULL-safe. */
void lc_model_free(lc_model *m);

/* Appends a tensor with a copy of `name`, computing nbytes from dtype and shape.
 * LC_E_MALFORMED for a duplicate name (where = name), size errors as lc_shape_nbytes.
 * On success *out (if not NULL) points at the new tensor, valid until lc_model_free;
 * the caller then sets data or ops/ctx. */
lc_code lc_model_add_tensor(lc_model *m, const char *name, lc_dtype dtype, uint32_t ndim,
                            const uint64_t *shape, lc_tensor **out, lc_error *err);

size_t     lc_model_tensor_count(const lc_model *m);
lc_tensor *lc_model_tensor(const lc_model *m, size_t i);          /* NULL when out of range */
lc_tensor *lc_model_find_tensor(const lc_model *m, const char *name);

/* Appends or replaces metadata KEY, taking ownership of *val (even on failure; *val
 * is cleared either way). Order of first insertion is kept. */
lc_code lc_model_set_meta(lc_model *m, const char *key, lc_value *val, lc_error *err);
/* Like set, but LC_E_MALFORMED if the key exists (readers use this to refuse duplicates). */
lc_code lc_model_add_meta(lc_model *m, const char *key, lc_value *val, lc_error *err);
size_t       lc_model_meta_count(const lc_model *m);
const lc_kv *lc_model_meta(const lc_model *m, size_t i);
const lc_value *lc_model_find_meta(const lc_model *m, const char *key);
/* Moves the value of entry i (i < lc_model_meta_count) into *out, leaving the entry
 * its key and a U8 zero: for a model being consumed into another, so that a large
 * array is not copied. */
void lc_model_take_meta(lc_model *m, size_t i, lc_value *out);
/* Renames entry i (i < lc_model_meta_count) to KEY, keeping its place and value.
 * LC_E_MALFORMED (where = KEY) when another entry has that key, LC_E_NOMEM. */
lc_code lc_model_rename_meta(lc_model *m, size_t i, const char *key, lc_error *err);
/* Convenience: a string value for KEY. */
lc_code lc_model_set_meta_str(lc_model *m, const char *key, const char *s, lc_error *err);

/* ---- rule violations a lenient reader found (model-inspect) ----
 *
 * A reader opened leniently does not stop at a rule the file breaks when it can go on
 * (a name too long for ggml, a duplicate key, an offset off the running sum): it
 * records a warning here and shows what it read. `refused` says the normal (strict)
 * reader refuses the file for it; otherwise the rule is one the spec or llama.cpp
 * holds and we do not (arrays of arrays, a non-ASCII key). e.code, e.offset, e.where
 * and e.msg say what and where, as an error would; e.path stays empty (the caller
 * knows the file). At most LC_MODEL_MAX_WARNINGS are kept, plus the first refusal
 * when it comes later; the rest are counted. */
#define LC_MODEL_MAX_WARNINGS 256

typedef struct lc_warning {
    const char *rule;    /* static, stable: "gguf.key-duplicate" */
    bool        refused;
    lc_error    e;
} lc_warning;

/* Records a warning; LC_E_NOMEM when it cannot (then err names the rule). */
lc_code lc_model_warn(lc_model *m, const char *rule, bool refused, const lc_error *e,
                      lc_error *err);
size_t lc_model_warning_count(const lc_model *m);       /* kept */
size_t lc_model_warnings_dropped(const lc_model *m);    /* beyond the cap */
const lc_warning *lc_model_warning(const lc_model *m, size_t i);   /* NULL out of range */
/* The first warning with `refused` set, or NULL: the error a strict open reports. */
const lc_warning *lc_model_first_refusal(const lc_model *m);

/* Hands a resource to the model: free_fn(res) runs at lc_model_free, after the
 * tensors, in reverse order of handing. Takes ownership even on failure (then
 * free_fn(res) runs at once). */
lc_code lc_model_own(lc_model *m, void *res, void (*free_fn)(void *), lc_error *err);

#endif
