/* formats/pth.h: PyTorch checkpoints (torch.save) read without running a pickle.
 *
 * The formats (torch/serialization.py; FORMATS.md "PyTorch checkpoints"):
 *  1. Zip (torch >= 1.6): one top-level folder P (the file's stem, or "archive").
 *     P/data.pkl is a pickle of the saved object; P/data/<key> holds the raw bytes
 *     of storage <key>; P/byteorder is "little" or "big" (absent before torch 2:
 *     little); P/version, P/.format_version, P/.storage_alignment,
 *     P/.data/serialization_id are bookkeeping. Entries are stored (torch) or
 *     DEFLATE-compressed (re-zipped by other tools).
 *  2. In the pickle a tensor is a call that is never made here:
 *       torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
 *                                       backward_hooks[, metadata])
 *       torch._utils._rebuild_tensor_v3(... same ..., dtype[, metadata])  (untyped)
 *       torch._utils._rebuild_tensor(storage, offset, size, stride)        (oldest)
 *     wrapped for parameters in torch._utils._rebuild_parameter(tensor, rg, hooks)
 *     or _rebuild_parameter_with_state(tensor, rg, hooks, state), and for tensors
 *     with Python state in torch._tensor._rebuild_from_type_v2(fn, type, args, state).
 *     offset, size and stride count elements. metadata {"neg": True} marks a
 *     negated view: the storage holds x, the tensor is -x.
 *  3. A storage is a persistent id: the tuple ("storage", class, key, location,
 *     numel). class is torch.FloatStorage & co (dtype implied, numel in elements)
 *     or torch.storage.UntypedStorage (numel in bytes, dtype from _v3).
 *  4. Legacy (torch < 1.6, or _use_new_zipfile_serialization=False): five pickles
 *     back to back: the magic 0x1950a86a20f9469cfc6c, the protocol 1001, a sys-info
 *     dict, the object (storage ids are 6-tuples ending in view metadata, None),
 *     the list of storage keys; then per key in that order an 8-byte little-endian
 *     element count and the storage's bytes.
 *  5. A sharded checkpoint (Hugging Face): a folder with pytorch_model.bin.index.json
 *     {"metadata": {...}, "weight_map": {tensor: shard file}} and the shards, each a
 *     checkpoint of format 1 or 4.
 *
 * Safety: the pickle is interpreted by formats/pickle.h (allowlist, nothing called),
 * and the zip is opened by formats/zip.h (one view: central directory and local
 * headers must agree). Every offset, size and stride is checked against its
 * storage before a tensor exists. */
#ifndef LC_FORMATS_PTH_H
#define LC_FORMATS_PTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

typedef struct lc_pth_opts {
    /* Which part of the saved object holds the tensors: a '.'-separated path of dict
     * keys ("model", "state_dict.module"); "" or NULL chooses automatically:
     *   the root when it is a dict of tensors; else the first of "state_dict",
     *   "model_state_dict", "model", "module", "net", "params" whose value holds
     *   tensors (a training checkpoint: tensors beside it are left out, and `note`
     *   says how many and where); else the one top-level dict that holds tensors when
     *   nothing else does; else every tensor in the object. "." takes the whole
     *   object as it is. Nested dicts and lists below the choice are flattened with
     *   '.' ("layers.0.weight"). A choice without tensors is LC_E_NOTFOUND. */
    const char *key;
    /* Drop every tensor whose bytes overlap those of a tensor that covers its whole
     * storage, as safetensors' convert script does: of each overlapping group the
     * whole-storage tensor with the smallest name stays. Each dropped name becomes
     * metadata "dropped name" = "kept name". Groups without a whole-storage tensor
     * stay as they are (safetensors refuses them). */
    bool dedupe;
    /* Make contiguous tensors of stored storages zero-copy views of the mapped file
     * (t->data): free random access, but every page read stays in the process's
     * resident set. Off, they are read with pread into the caller's buffer, which
     * keeps a streaming conversion's memory flat. lc_pth_load_mem always views. */
    bool zero_copy;
    /* Let views of a storage write more than 16 times its bytes + 4 KiB in all (a
     * stride-0 view: torch's expand()). Off, such a checkpoint is LC_E_OVERFLOW at load,
     * before anything is written: 642 bytes can otherwise ask for 64 GiB. */
    bool allow_expand;
    /* Called (when not NULL) once a file has loaded if the automatic key choice left
     * tensors out; note->msg says what was taken and what was left, path, where and
     * offset locate it (code is LC_OK). note_ctx is passed through. */
    void (*note)(void *note_ctx, const lc_error *note);
    void *note_ctx;
} lc_pth_opts;

/* Loads a checkpoint: a zip or legacy file, or a sharded folder (PATH is the folder
 * or its pytorch_model.bin.index.json). Tensors come in the pickle's order (shards
 * sorted by file name); scalar values (int, float, bool, str) at the top level of a
 * nested checkpoint become metadata under their key ("epoch" = 5).
 * Tensor data is a lazy source that produces contiguous little-endian bytes
 * (pread for stored storages, strides gathered, big-endian swapped, DEFLATE
 * inflated, negation applied), or with opts->zero_copy a view of the mapped file
 * when the storage is stored, little-endian, contiguous and not negated.
 * Codes: the zip's and the pickle's (LC_E_FORBIDDEN names the global), and
 * LC_E_MALFORMED (not a checkpoint, a tensor call of the wrong shape, a view past
 * its storage, a storage whose size disagrees with its entry, two tensors of one
 * name), LC_E_NOTFOUND (no data.pkl, a storage entry missing, opts->key absent, no
 * tensor at all, a sharded tensor missing), LC_E_OVERFLOW (a limit, the walk's
 * budgets, which grow with the pickle's bytes, or an expanded view),
 * LC_E_UNSUPPORTED (complex or quantized dtypes, a storage on another device that
 * we cannot place, more than LC_MAX_DIMS dims), LC_E_MISMATCH (a shard disagrees
 * with the index). opts may be NULL. On success *out owns everything (maps,
 * archives, pickles); on failure *out is NULL. */
lc_code lc_pth_load(const char *path, const lc_pth_opts *opts, lc_model **out, lc_error *err);

/* Same for one checkpoint in memory (zip or legacy); the model borrows buf, which
 * must outlive it. For tests and the fuzzer. */
lc_code lc_pth_load_mem(const uint8_t *buf, uint64_t size, const lc_pth_opts *opts,
                        lc_model **out, lc_error *err);

/* One global a checkpoint's pickle names, for scanners. */
typedef struct lc_pth_ref {
    const char *entry;   /* "archive/data.pkl", or "pickle" for a legacy file */
    uint64_t    offset;  /* file offset of the opcode */
    const char *module, *name;
    bool        allowed;
} lc_pth_ref;
typedef void (*lc_pth_scan_fn)(void *ctx, const lc_pth_ref *ref);

/* Lists every global that PATH's pickle(s) name (all of them, not only the first
 * forbidden one) through fn, then loads the checkpoint to check its structure.
 * Returns LC_E_FORBIDDEN when any global is off the allowlist (err names the first),
 * otherwise what lc_pth_load would return. Never runs anything. */
lc_code lc_pth_scan(const char *path, lc_pth_scan_fn fn, void *ctx, lc_error *err);

/* ---- sharded folders (Hugging Face) ---- */

/* True when PATH is a folder (read through its pytorch_model.bin.index.json) or a
 * file whose name ends in ".index.json". */
bool lc_pth_is_index(const char *path);
/* The shard files the index at PATH names, sorted by name, as paths beside
 * the index. *files is an array of *n strings; lc_free each and the array.
 * LC_E_NOTFOUND (no index), LC_E_MALFORMED (bad JSON, a shard name with '/'). */
lc_code lc_pth_index_shards(const char *path, char ***files, size_t *n, lc_error *err);
/* "pytorch_model-00001-of-00002.bin" -> "model-00001-of-00002.safetensors"; other
 * names lose a .bin/.pth/.pt ending and gain ".safetensors". Truncates to cap. */
void lc_pth_shard_out_name(const char *shard, char *buf, size_t cap);

/* An index for converted shards: {"metadata": {"total_size": N}, "weight_map":
 * {tensor: file}}, N the sum of the tensors' bytes, laid out byte for byte as
 * Hugging Face writes it (indent 2, sorted keys, ASCII). NULL when out of memory. */
typedef struct lc_pth_index_out lc_pth_index_out;
lc_pth_index_out *lc_pth_index_out_new(void);
/* Maps every tensor of m to FILE (names already mapped are the caller's concern:
 * lc_pth_load refuses a tensor in two shards). */
lc_code lc_pth_index_out_add(lc_pth_index_out *ix, const lc_model *m, const char *file,
                             lc_error *err);
/* Writes the index to PATH atomically (lc_outfile). */
lc_code lc_pth_index_out_write(lc_pth_index_out *ix, const char *path, lc_error *err);
void lc_pth_index_out_free(lc_pth_index_out *ix);   /* NULL-safe */

#endif
