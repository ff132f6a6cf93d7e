/* formats/gguf_split.h: a GGUF model split across files, as llama.cpp's gguf-split
 * writes it and its model loader reads it (the llama.cpp that llama-cpp-python 0.3.36
 * vendors: tools/gguf-split/gguf-split.cpp, src/llama-model-loader.cpp, src/llama.cpp
 * llama_split_path/_prefix): reading one, and the one split plan every GGUF writer
 * (gguf-split, safetensors2gguf, gguf-quantize) writes by.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"
#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"

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

/* ---- writing a split ----
 *
 * How gguf-split --split cuts a model M (split_strategy in gguf-split.cpp), which every
 * writer here follows, so that a writer's parts are exactly what gguf-split makes of
 * the one file the writer would write otherwise:
 *  1. The tensors keep M's order and are cut into consecutive runs, one per part:
 *     - by count (--split-max-tensors N; gguf-split's default, N = 128): a part starts
 *       at every N-th tensor;
 *     - by size (--split-max-size N, in units of 10^6 (M) or 10^9 (G) bytes): each
 *       tensor counts its bytes padded to 32; a part ends before the tensor that would
 *       take its tensors past N (the metadata is not counted). A tensor larger than N
 *       alone would leave a part without tensors: refused, as gguf-split refuses it.
 *     - --no-tensor-first-split: part 1 holds the metadata and no tensor; the tensors,
 *       cut as above, start in part 2.
 *  2. Part 1 holds M's metadata, in order, less any split key M has; every other part
 *     none. Every part then ends with split.no (u16, from 0), split.tensors.count (i32,
 *     M's tensors) and split.count (u16): that order, because gguf-split sets
 *     split.count last and a key that is set moves to the end.
 *  3. A tensor's dimensions are ggml's (ggml_n_dims: trailing ne of 1 dropped).
 *  4. Part k of n is PREFIX-%05d-of-%05d.gguf (lc_gguf_split_path); for the writers
 *     PREFIX is OUT without a trailing ".gguf" (as llama-quantize --keep-split names
 *     its parts), for gguf-split its OUT as given.
 * A plan of one part still writes PREFIX-00001-of-00001.gguf with the split keys, as
 * gguf-split does. Where gguf-split differs on purpose: the parts appear as a set (or
 * not at all); a part whose metadata sets general.alignment is laid out at that
 * alignment (gguf-split keeps the key but lays data out at 32: a file ggml misreads). */

#define LC_GGUF_SPLIT_DEFAULT_TENSORS 128
#define LC_GGUF_SPLIT_MAX_PARTS 65535       /* split.count is a u16 */

/* The split options every writer takes (the command line's --split-max-size,
 * --split-max-tensors, --no-tensor-first-split, --part K/N, --skip-existing). */
typedef struct lc_gguf_split_opts {
    bool     split;           /* write a split set: one of the three below was given */
    uint64_t max_bytes;       /* by size, in bytes; 0: by count */
    uint32_t max_tensors;     /* by count; 0: 128 (when max_bytes is 0 too) */
    bool     no_tensor_first; /* metadata alone in part 1 */
    uint32_t part, parts;     /* --part K/N: write part K (from 1) only, and N must be the
                               * plan's count; 0: every part */
    bool     skip_existing;   /* a part already at its path, whole and this run's (see
                               * lc_gguf_write_parts), is kept instead of written */
} lc_gguf_split_opts;

/* The options as a command line gives them (NULL or false: not given). */
typedef struct lc_gguf_split_args {
    const char *max_size;     /* "N[M|G]": a whole number N > 0 and the unit */
    const char *max_tensors;  /* a whole number > 0 */
    bool        no_tensor_first;
    const char *part;         /* "K/N", 1 <= K <= N <= 65535 */
    bool        skip_existing;
} lc_gguf_split_args;

/* Parses the options into *o. LC_E_ARG (a usage error) for a malformed value, both
 * --split-max-size and --split-max-tensors (gguf-split refuses that too), --part 0/N or
 * K > N, and --part without a split option unless part_alone (gguf-quantize
 * --keep-split, whose parts are the input's). */
lc_code lc_gguf_split_parse(const lc_gguf_split_args *a, bool part_alone,
                            lc_gguf_split_opts *o, lc_error *err);

/* OUT without a trailing ".gguf", into buf (cap bytes): the writers' PREFIX. LC_E_ARG
 * when it does not fit or nothing is left. */
lc_code lc_gguf_split_prefix_of(const char *out, char *buf, size_t cap, lc_error *err);

/* Which part (from 0) each tensor of m goes to under o, into part (one per tensor), and
 * how many parts there are (*count). LC_E_ARG when a tensor alone is larger than
 * max_bytes (where = its name) or the plan passes LC_GGUF_SPLIT_MAX_PARTS. */
lc_code lc_gguf_split_plan(const lc_model *m, const lc_gguf_split_opts *o, uint32_t *part,
                           uint32_t *count, lc_error *err);

/* A split set ready to write: the parts of m under a plan, as models whose tensors read
 * m's (borrowed: m must outlive the set), and their paths. */
typedef struct lc_gguf_split_set {
    uint32_t   count;
    uint32_t  *part;          /* for tensor i of m, its part (from 0) */
    lc_model **models;        /* count models: part k's metadata and tensors */
    char     **paths;         /* count paths: PREFIX-%05d-of-%05d.gguf */
} lc_gguf_split_set;

/* Plans m under o (lc_gguf_split_plan) and builds the parts (rule 2 and 3 above) named
 * from PREFIX. LC_E_ARG for a bad plan or a --part count other than the plan's ("the
 * plan gives 4 parts"); LC_E_NOMEM. On failure *out is NULL. */
lc_code lc_gguf_split_set_new(const lc_model *m, const char *prefix,
                              const lc_gguf_split_opts *o, lc_gguf_split_set **out,
                              lc_error *err);
/* NULL-safe. */
void lc_gguf_split_set_free(lc_gguf_split_set *s);

/* Writes the n models at their paths as lc_gguf_write_set does (all appear or none),
 * or, with o->part, only part o->part (o->parts must be n: LC_E_ARG otherwise). With
 * o->skip_existing a part already at its path is checked first, without reading its
 * data: the GGUF header and size this run would write, byte for byte. It is kept when
 * they agree (*kept counts those; may be NULL); a part that is shorter ("truncated"),
 * a file that is not a GGUF, or one whose split keys or header differ (another run's
 * part: "belongs to another split" / "another run's part") is refused with LC_E_ARG
 * naming the file, before anything is written. o may be NULL (every part, no checks). */
lc_code lc_gguf_write_parts(const lc_model *const *models, const char *const *paths,
                            uint32_t n, const lc_gguf_split_opts *o,
                            const lc_gguf_write_opts *wo, lc_progress *p, uint32_t *kept,
                            lc_error *err);

/* What every writer calls with its finished model m: without o->split, m at OUT
 * (lc_gguf_write; with skip_existing, kept when OUT is already this file); with it, the
 * set of m's parts named from OUT less ".gguf", or the one part --part asks for. kept
 * as lc_gguf_write_parts. */
lc_code lc_gguf_split_write(const lc_model *m, const char *out, const lc_gguf_split_opts *o,
                            const lc_gguf_write_opts *wo, lc_progress *p, uint32_t *kept,
                            lc_error *err);

/* The model gguf-split --merge writes from a split model m (lc_gguf_split_load's: every
 * part's tensors, the first part's metadata): the first part's metadata with split.count
 * moved to the end and set to 0 (so the file is not taken for a split again; split.no
 * and split.tensors.count stay where they are), and every tensor in order with ggml's
 * dimensions, reading m's (borrowed: m must outlive *out). LC_E_ARG when m has no
 * split.count (not a split model). On failure *out is NULL. */
lc_code lc_gguf_split_merged(const lc_model *m, lc_model **out, lc_error *err);

#endif
