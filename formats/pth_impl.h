/* formats/pth_impl.h: what the pth reader's files share (not installed).
 *
 *   pth.c        containers: zip and legacy files, load/scan entry points
 *   pth_walk.c   the pickle tree -> storages and tensor descriptions -> the model
 *   pth_source.c the lazy source: strides, byte order, negation, DEFLATE
 *   pth_index.c  Hugging Face sharded folders (pytorch_model.bin.index.json) */
#ifndef LC_FORMATS_PTH_IMPL_H
#define LC_FORMATS_PTH_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "formats/pickle.h"
#include "formats/pth.h"
#include "formats/zip.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* Walks deeper than this are refused (pickles can build cycles through the memo). */
#define LC_PTH_MAX_DEPTH 64u
/* Values one walk may visit (memo references can make a small pickle a huge tree). */
#define LC_PTH_MAX_VISITS (1u << 22)
/* Tensors one file may name (the largest real checkpoints have ~10^5). */
#define LC_PTH_MAX_TENSORS (1u << 20)

/* One storage of a checkpoint, as the pickle declares it and the container binds it. */
typedef struct lc_pth_storage {
    char          *key;         /* "0"; the zip entry is <prefix>data/<key> */
    lc_dtype       dtype;       /* from the class; LC_DT_INVALID for UntypedStorage */
    uint64_t       nbytes;      /* declared numel x element size (untyped: numel) */
    uint64_t       at;          /* pickle offset of its first reference, for messages */
    /* Filled by the container: */
    bool           bound;
    bool           big_endian;
    const uint8_t *bytes;       /* mapped bytes (zero-copy views), or NULL */
    int            fd;          /* else read with pread at file_offset, when >= 0 */
    const lc_zip  *zip;         /* for deflated entries */
    const lc_zip_entry *entry;
    uint64_t       file_offset; /* of byte 0 in the file, LC_NO_OFFSET when deflated */
} lc_pth_storage;

/* A tensor found in the pickle, before it joins the model. */
typedef struct lc_pth_tensor {
    char           *name;
    lc_pth_storage *st;
    lc_dtype        dtype;
    uint32_t        ndim;
    uint64_t        shape[LC_MAX_DIMS];
    uint64_t        stride[LC_MAX_DIMS];  /* elements */
    uint64_t        offset;               /* elements into the storage */
    bool            neg;                  /* metadata {"neg": True}: the tensor is -storage */
    uint64_t        at;                   /* pickle offset of the rebuild call */
} lc_pth_tensor;

/* Everything one file's pickle describes. */
typedef struct lc_pth_found {
    lc_pth_storage **st;
    size_t           n_st, cap_st;
    uint32_t        *index;     /* open addressing over st by key: slot = i + 1 */
    size_t           index_cap; /* power of two or 0 */
    lc_pth_tensor   *t;
    size_t           n_t, cap_t;
} lc_pth_found;

/* Finds the tensors under the object opts->key chooses (see lc_pth_opts) and
 * records them and their storages in f; top-level scalars of the root become
 * metadata of m. LC_E_NOTFOUND for a missing key, LC_E_MALFORMED / LC_E_UNSUPPORTED
 * for rebuild calls we cannot read, LC_E_OVERFLOW past the walk limits. */
lc_code lc_pth_walk(const lc_pickle_val *root, const lc_pth_opts *o, lc_pth_found *f,
                    lc_model *m, lc_error *err);
/* The storage with this key, or NULL. */
lc_pth_storage *lc_pth_found_storage(const lc_pth_found *f, const char *key);
/* After the container bound every storage: checks each view against its storage,
 * applies opts->dedupe, and adds the tensors to m with their sources. The storage
 * table moves to m (lc_model_own) even on failure; f is emptied either way. */
lc_code lc_pth_commit(lc_pth_found *f, const lc_pth_opts *o, lc_model *m, lc_error *err);
void lc_pth_found_free(lc_pth_found *f);

/* Gives t its data: a zero-copy view when possible, else a lazy source. */
lc_code lc_pth_source_attach(lc_tensor *t, const lc_pth_tensor *pt, lc_error *err);

/* Loads one checkpoint (zip or legacy) from buf into m. With fd >= 0 (the same file,
 * open) and !o->zero_copy, stored storages are read with pread instead of viewed. */
lc_code lc_pth_load_into(const uint8_t *buf, uint64_t size, int fd, const lc_pth_opts *o,
                         lc_model *m, lc_error *err);
/* Maps PATH (the map, owned by m, keeps the descriptor pread uses) and loads it. */
lc_code lc_pth_load_file(const char *path, const lc_pth_opts *o, lc_model *m, lc_error *err);

/* Reads the sharded checkpoint at PATH (see lc_pth_is_index) into m. */
lc_code lc_pth_index_load(const char *path, const lc_pth_opts *o, lc_model *m, lc_error *err);

#endif
