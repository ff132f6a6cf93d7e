/* formats/safetensors.h: read and write safetensors files.
 *
 * The format (huggingface/safetensors README and safetensors/src/tensor.rs):
 *  1. u64 little-endian N, the header length; N <= 100,000,000.
 *  2. N bytes of UTF-8 JSON: one object, right-padded with spaces. Each key is a
 *     tensor name mapping to {"dtype": "F32", "shape": [d0, ...],
 *     "data_offsets": [begin, end]}; the optional key "__metadata__" maps to an
 *     object of string values only.
 *  3. The byte buffer. Offsets are relative to its start. Sorted by begin, tensors
 *     start at 0 and each starts where the previous ended (no holes, no overlaps);
 *     end - begin == numel * dtype size; the file ends exactly at the last end.
 *  4. Data is little-endian and row-major, with no strides. Rank-0 and zero-size
 *     tensors are valid.
 * The reference writer orders tensors by dtype (largest alignment first, in its
 * Dtype enum order) and then by name, and pads the header with spaces to a
 * multiple of 8 so that the buffer starts 8-aligned. */
#ifndef LC_FORMATS_SAFETENSORS_H
#define LC_FORMATS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"

#define LC_SAFETENSORS_MAX_HEADER 100000000u
/* JSON tokens (strings, numbers, literals, objects, arrays) one header may hold.
 * cJSON spends about 64 bytes per value, so this bounds a hostile header's memory
 * to about a gigabyte; real headers use about 13 tokens per tensor. */
#define LC_SAFETENSORS_MAX_TOKENS (1u << 24)

/* Loads PATH by mapping it: tensors are zero-copy views into the map, which the
 * model owns, with t->file_offset set. Metadata from "__metadata__" becomes string
 * values in file order; tensors keep the header's order.
 * Codes: LC_E_TRUNCATED (file shorter than 8 bytes, header or tensor data past the
 * end), LC_E_OVERFLOW (N above the limit, shape product, too many tokens),
 * LC_E_MALFORMED (bad UTF-8 or JSON, wrong types, duplicate keys, holes, overlaps,
 * size mismatch, trailing bytes), LC_E_UNSUPPORTED (a dtype we lack, more than
 * LC_MAX_DIMS dims, a NUL inside a JSON string), LC_E_NOTFOUND / LC_E_IO.
 * Offsets in errors are file offsets: of the length field for length errors, of
 * the offending byte for UTF-8 and JSON syntax, and of the offending JSON value
 * (its first byte) for every per-entry error; `where` names the tensor or key.
 * Stricter than the reference on purpose (it accepts these): duplicate metadata
 * keys, "__metadata__": null, unknown fields in a tensor entry, dtypes the IR lacks
 * (F4, F6_*, F8_E8M0, the FNUZ types, C64), more than LC_MAX_DIMS dimensions, and
 * \u0000 inside names. On failure *out is NULL. Thread-safe for different files,
 * except that cJSON records its last error position in a global. */
lc_code lc_safetensors_load(const char *path, lc_model **out, lc_error *err);
/* Same, and *header_len (if not NULL) receives N on success. */
lc_code lc_safetensors_load_hdr(const char *path, lc_model **out, uint64_t *header_len,
                                lc_error *err);
/* Parses an in-memory file. The model borrows buf: it must outlive the model.
 * Same codes and offsets as lc_safetensors_load. */
lc_code lc_safetensors_load_mem(const uint8_t *buf, uint64_t size, lc_model **out,
                                lc_error *err);

/* Loads a sharded checkpoint from its index (model.safetensors.index.json), given
 * either the index file or the folder holding it. Every shard named in
 * "weight_map" is loaded (paths relative to the index; absolute paths and ".."
 * are refused with LC_E_MALFORMED). LC_E_MISMATCH (where = tensor) when a tensor
 * in the map is in no shard, when a shard holds a tensor the map does not list,
 * or lists under another shard. Tensors come in shard order (shard file names
 * sorted), then shard header order; metadata is the union of the shards' (first
 * value of a key wins, in that shard order). */
lc_code lc_safetensors_load_index(const char *index_json_path_or_dir, lc_model **out,
                                  lc_error *err);

typedef struct lc_st_write_opts {
    /* Non-string metadata values (from GGUF, say) are refused with LC_E_UNSUPPORTED
     * naming the key unless this is set; then they are written as their JSON text
     * ("32", "[1, 2]", "true"). */
    bool stringify_meta;
    int threads;           /* tensor readers in parallel; 0: one per core (at most 8) */
} lc_st_write_opts;

/* Writes m to PATH atomically (PATH.tmp, fsync, rename) and byte-identical to what
 * safetensors' serialize_file writes for the same tensors and metadata in the same
 * metadata order (the reference's own metadata order is a Rust HashMap's, so it is
 * not reproducible when there are two or more keys). Streams: the header is built
 * from the IR first; tensors that are unchanged ranges of an input file are copied
 * from its descriptor (back-to-back ones as one run: copy_file_range for runs of
 * 256 KiB and more, pread below that), never through a map; others are read with
 * lc_tensor_read in 256 KiB chunks by `threads` workers at once (libconvert/
 * segments.h) while this thread writes; the file is the same for any count. Memory
 * stays bounded by the header and 4 chunks per worker. opts and progress may be
 * NULL.
 * Codes: LC_E_UNSUPPORTED (a dtype safetensors lacks, non-string metadata without
 * stringify_meta, a name that is not UTF-8), LC_E_OVERFLOW (header above the limit),
 * LC_E_IO, and whatever a tensor's source reports: then where = tensor and the
 * source's offset, but no path, since the offset is in an input file the caller
 * names (lc_err_context); every other error names PATH. */
lc_code lc_safetensors_write(const lc_model *m, const char *path, const lc_st_write_opts *opts,
                             lc_progress *progress, lc_error *err);

#endif
