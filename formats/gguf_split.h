/* formats/gguf_split.h: a GGUF model split across files, as llama.cpp's gguf-split
 * writes it and its model loader reads it (the llama.cpp that llama-cpp-python 0.3.36
 * vendors: src/llama-model-loader.cpp, src/llama.cpp llama_split_path/_prefix).
 *
 * The convention:
 *  1. Part k of n (k from 1) is named PREFIX-%05d-of-%05d.gguf (k, n): the model
 *     "m" in three parts is m-00001-of-00003.gguf, m-00002-of-00003.gguf,
 *     m-00003-of-00003.gguf.
 *  2. Every part is a whole GGUF with its own tensors and data section. Each holds the
 *     keys split.no (u16, k - 1), split.count (u16, n) and split.tensors.count (i32,
 *     the tensors of all parts together).
 *  3. The first part holds the model's metadata; llama.cpp reads no other key of the
 *     other parts. A tensor name appears in one part only.
 * A file without split.count, or with split.count 0 or 1, is an ordinary model. */
#ifndef LC_FORMATS_GGUF_SPLIT_H
#define LC_FORMATS_GGUF_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

#define LC_GGUF_SPLIT_NO "split.no"
#define LC_GGUF_SPLIT_COUNT "split.count"
#define LC_GGUF_SPLIT_TENSORS "split.tensors.count"

/* Which parts a model was read from. */
typedef struct lc_gguf_split {
    uint32_t  count;        /* parts; 1 for an ordinary file */
    char    **paths;        /* count paths; paths[0] is the one given (owned) */
    uint32_t *part;         /* for tensor i of the model, the part (from 0) it is in */
    size_t    n_tensors;
} lc_gguf_split;

/* Part NO (from 0) of COUNT of the model PREFIX, as llama_split_path names it, into buf
 * (cap bytes). LC_E_ARG when it does not fit or NO >= COUNT. */
lc_code lc_gguf_split_path(const char *prefix, uint32_t no, uint32_t count, char *buf,
                           size_t cap, lc_error *err);

/* The PREFIX of PATH when PATH is part NO (from 0) of COUNT by its name (ends in
 * "-%05d-of-%05d.gguf" with something before it), into buf (cap bytes); false when
 * it is not, or the prefix does not fit. As llama_split_prefix. */
bool lc_gguf_split_prefix(const char *path, uint32_t no, uint32_t count, char *buf,
                          size_t cap);

/* Opens PATH as lc_gguf_load does and, when its split.count is above 1, every other
 * part, found by the naming rule from PATH's name. *model gets the first part's
 * metadata (in order, split keys included) and the tensors of every part, part by part,
 * each in its file's order; each tensor is the part's zero-copy view (file_offset is
 * its offset in its own part, lc_tensor_file_range names that part's descriptor). The
 * model owns every part's map. *split (may be NULL) says which part each tensor is in.
 * Refused, naming the part's file (path) and the key or tensor (where):
 *  - PATH not the first part (split.no not 0), or its name not ending in
 *    "-00001-of-<count>.gguf" (LC_E_ARG);
 *  - a part that is missing (LC_E_NOTFOUND) or not a regular file (LC_E_ARG), or not
 *    a valid GGUF (lc_gguf_load's codes);
 *  - a split key of the wrong type, a part whose split.no is not its position or
 *    whose split.count or split.tensors.count differ from the first part's
 *    (LC_E_MALFORMED: llama.cpp checks split.no only);
 *  - a tensor name in two parts, or a tensor total other than split.tensors.count
 *    (LC_E_MALFORMED).
 * The parts are opened one at a time and each is checked before the next is opened,
 * so the work is bounded by the bytes of the parts that exist. On failure *model and
 * *split are NULL. */
lc_code lc_gguf_split_load(const char *path, lc_model **model, lc_gguf_split **split,
                           lc_error *err);

/* lc_gguf_split_load for a first part already open as m (PATH: its file): adds the other
 * parts' tensors to m when its split.count is above 1, refused as above; nothing to do
 * for an ordinary file. On failure m may hold some parts' tensors: free it. */
lc_code lc_gguf_split_extend(lc_model *m, const char *path, lc_gguf_split **split,
                             lc_error *err);

/* NULL-safe. */
void lc_gguf_split_free(lc_gguf_split *s);

#endif
