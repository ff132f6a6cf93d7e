/* formats/pth_walk_impl.h: the walk's output, private to formats/pth (not installed).
 *
 * Owned by pth_walk.c: the pickle tree of one checkpoint file becomes an lc_pth_found,
 * a table of storages and tensor descriptions that nothing has checked against bytes
 * yet. The files above it read these types: pth_file.c binds each storage to its
 * bytes, pth_commit.c checks the views and adds the tensors to the model, and
 * pth_source.c reads them. */
#ifndef LC_FORMATS_PTH_WALK_IMPL_H
#define LC_FORMATS_PTH_WALK_IMPL_H

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
/* Tensors one file may name (the largest real checkpoints have ~10^5). */
#define LC_PTH_MAX_TENSORS (1u << 20)

/* The walk's budgets. Memo references let a few pickle bytes stand for a tree of any
 * size (a container holding the one below it twice, 60 times over), so what the walk
 * may do is proportional to the bytes the pickle takes in its file: a deflated
 * data.pkl counts its compressed bytes, since those are what the file paid for.
 *   work:  values visited (every pass: choosing the state dict, then the walk)
 *   names: bytes of the tensor names made, NUL included
 * torch's pickler spends ~60 bytes on a tensor and a few on each container, so a real
 * checkpoint uses a small fraction of either (a tied weight is a 2-byte memo
 * reference, and stays far inside); past a budget the load stops with
 * LC_E_OVERFLOW, naming it. The hard caps hold whatever the size. */
#define LC_PTH_WORK_PER_BYTE  8u
#define LC_PTH_WORK_BASE      4096u
#define LC_PTH_MAX_VISITS     (1u << 22)
#define LC_PTH_NAME_PER_BYTE  32u
#define LC_PTH_NAME_BASE      (64u << 10)
#define LC_PTH_MAX_NAME_BYTES ((uint64_t)256 << 20)


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
    bool           crc_ok;      /* a stored entry's CRC-32 checked (atomic; pth_source.c) */
    const char    *path;        /* the file, for messages (owned by the model); or NULL */
    /* Kept by pth_commit.c: bytes its tensors write (see LC_PTH_EXPAND_FACTOR). */
    uint64_t       out_bytes;
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

/* A found tensor as the list keeps it: a checkpoint may hold a hundred thousand, so
 * its sizes and strides (ndim of each) live in the list's dims pool, not in two arrays
 * of LC_MAX_DIMS. lc_pth_found_tensor unpacks one. */
typedef struct lc_pth_packed {
    char           *name;
    lc_pth_storage *st;
    uint64_t        offset, at;   /* as in lc_pth_tensor */
    size_t          dims;         /* index in the pool: ndim sizes, then ndim strides */
    lc_dtype        dtype;
    uint8_t         ndim;
    bool            neg;
} lc_pth_packed;

/* Everything one file's pickle describes. */
typedef struct lc_pth_found {
    lc_pth_storage **st;
    size_t           n_st, cap_st;
    uint32_t        *index;     /* open addressing over st by key: slot = i + 1 */
    size_t           index_cap; /* power of two or 0 */
    lc_pth_packed   *t;
    size_t           n_t, cap_t;
    uint64_t        *dims;      /* the tensors' sizes and strides */
    size_t           n_dims, cap_dims;
    /* Set by the walk when the automatic choice left tensors out (msg and offset;
     * code stays LC_OK); pth_file.c adds the file and entry and tells the caller. */
    lc_error         note;
} lc_pth_found;

/* Finds the tensors under the object opts->key chooses (see lc_pth_opts) and
 * records them and their storages in f; top-level scalars of the root become
 * metadata of m. stored_bytes is what the pickle takes in its file (the compressed
 * size of a deflated entry) and sets the budgets above. LC_E_NOTFOUND for a missing
 * key or no tensor at all, LC_E_MALFORMED / LC_E_UNSUPPORTED for rebuild calls we
 * cannot read, LC_E_OVERFLOW past a budget or limit. */
lc_code lc_pth_walk(const lc_pickle_val *root, uint64_t stored_bytes, const lc_pth_opts *o,
                    lc_pth_found *f, lc_model *m, lc_error *err);
/* Tensor i of f (i < f->n_t), unpacked into *out (its name and storage borrowed). */
void lc_pth_found_tensor(const lc_pth_found *f, size_t i, lc_pth_tensor *out);
/* The storage with this key, or NULL. */
lc_pth_storage *lc_pth_found_storage(const lc_pth_found *f, const char *key);
/* Frees what f holds and empties it; f itself is the caller's. */
void lc_pth_found_free(lc_pth_found *f);

#endif
