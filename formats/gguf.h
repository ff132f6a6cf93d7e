/* formats/gguf.h: GGUF (ggml's model container) reader and writer.
 *
 * The wire format, all little-endian:
 *  1. magic "GGUF" (47 47 55 46), u32 version (2 or 3 read, 3 written),
 *     u64 tensor count, u64 metadata count.
 *  2. Metadata entries: key string, u32 value type, value. A string is a u64 length
 *     and that many bytes (no terminator). An array is a u32 element type, a u64
 *     count and the elements; arrays may nest.
 *  3. Tensor infos: name string, u32 n_dims (<= 4), u64 ne[n_dims] innermost first,
 *     u32 ggml type, u64 offset relative to the data section.
 *  4. Zero padding to `general.alignment` (a u32 key, power of two, default 32).
 *  5. The data section: each tensor's bytes at its offset; ggml requires every
 *     offset to equal the running sum of the previous sizes, each padded to the
 *     alignment, in tensor-info order.
 *
 * The IR's shape is row-major, outermost first, so ne[] is reversed on the way in
 * and on the way out. Metadata maps 1:1 onto lc_value (same type ids). */
#ifndef LC_FORMATS_GGUF_H
#define LC_FORMATS_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/progress.h"

#define LC_GGUF_DEFAULT_ALIGNMENT 32
#define LC_GGUF_MAX_DIMS 4
/* Arrays of arrays deeper than this are refused (LC_E_OVERFLOW); ggml reads none. */
#define LC_GGUF_MAX_DEPTH 8
/* ggml's GGML_MAX_NAME: it refuses tensor names of this many bytes or more. */
#define LC_GGUF_MAX_NAME 64
/* The spec's longest key, and ggml's GGUF_MAX_STRING_LENGTH / GGUF_MAX_ARRAY_ELEMENTS. */
#define LC_GGUF_MAX_KEY 65535
#define LC_GGUF_MAX_STRING ((uint64_t)1 << 30)
#define LC_GGUF_MAX_ARRAY ((uint64_t)1 << 30)

/* Facts about a parsed file that are not part of the model. */
typedef struct lc_gguf_info {
    uint32_t version;      /* 2 or 3 */
    uint32_t alignment;    /* general.alignment, or 32 when the key is absent */
    uint64_t n_tensors;
    uint64_t n_kv;
    uint64_t data_offset;  /* file offset of the data section */
} lc_gguf_info;

/* Maps PATH and parses it into a new model whose tensors are zero-copy views into
 * the map (the model owns it). Metadata is added in file order with its GGUF types;
 * general.alignment stays an ordinary key. Every count, length, dimension and
 * offset is checked against the bytes left and for overflow before anything is
 * allocated, and the file is held to every rule ggml's loader and the spec set (the
 * table in gguf.c, with each rule's source). Codes: LC_E_NOTFOUND / LC_E_IO
 * (open/map), LC_E_TRUNCATED (a field or tensor data runs past the end),
 * LC_E_MALFORMED (bad magic, unknown value type, an empty, over-long or ill-formed
 * key, duplicate key or tensor, a tensor name of 64 bytes or more, bad alignment,
 * n_dims > 4, misplaced tensor offset, non-zero padding before the data, row not a
 * multiple of the block size), LC_E_OVERFLOW (count/size arithmetic, a string or
 * array above ggml's limits, nesting too deep), LC_E_UNSUPPORTED (version 1 or > 3,
 * big-endian file, unknown ggml type). err->offset is the file offset of the
 * offending field and err->where the key or tensor name when known. On failure
 * *out is NULL. */
lc_code lc_gguf_load(const char *path, lc_model **out, lc_error *err);

/* Flags for lc_gguf_open. LC_GGUF_LENIENT: for model-inspect, which must show a file
 * llama.cpp would refuse and say why. Rules the reader can read past (an over-long or
 * duplicate name, a key the spec forbids, an offset off the running sum, a bool of 2,
 * ...) become warnings on the model (lc_model_warning, refused = true; a duplicate
 * shows its first entry only), and the rules we accept but the spec or llama.cpp do
 * not (arrays of arrays, non-ASCII keys, invalid UTF-8 strings, missing
 * general.architecture or general.quantization_version, non-zero padding between
 * tensors) are checked too (refused = false). What cannot be read past still fails. */
#define LC_GGUF_LENIENT 1u
lc_code lc_gguf_open(const char *path, unsigned flags, lc_model **out, lc_gguf_info *info,
                     lc_error *err);
lc_code lc_gguf_open_mem(const void *buf, uint64_t size, unsigned flags, lc_model **out,
                         lc_gguf_info *info, lc_error *err);

/* As lc_gguf_load, and fills *info (may be NULL) on success. */
lc_code lc_gguf_load_ex(const char *path, lc_model **out, lc_gguf_info *info, lc_error *err);

/* Parses SIZE bytes at BUF (tests, fuzzing, embedded files). The tensors borrow BUF:
 * it must outlive the model. Same codes as lc_gguf_load. */
lc_code lc_gguf_load_mem(const void *buf, uint64_t size, lc_model **out, lc_error *err);
lc_code lc_gguf_load_mem_ex(const void *buf, uint64_t size, lc_model **out,
                            lc_gguf_info *info, lc_error *err);

typedef struct lc_gguf_write_opts {
    size_t chunk_bytes;    /* bytes per lc_tensor_read while copying data; 0: 256 KiB */
    int threads;           /* tensor readers in parallel; 0: one per core (at most 8) */
} lc_gguf_write_opts;

/* Writes M as a version 3 GGUF at PATH, atomically (lc_outfile): header, metadata in
 * model order, tensor infos with offsets computed from the IR, zero padding to the
 * alignment, then each tensor's data read through lc_tensor_read in chunks of at most
 * chunk_bytes, each tensor padded to the alignment (ggml's running-sum layout).
 * Chunks are read by `threads` workers at once (sources must allow that, as
 * lc_source_ops says) and written in order; the file is the same for any count.
 * The alignment is the model's general.alignment (must be a u32 power of two and at
 * least 8, else LC_E_ARG: what the reader accepts) or 32. LC_E_UNSUPPORTED (where = tensor name) for a dtype GGUF lacks,
 * more than 4 dimensions, or a name of 64 bytes or more (ggml cannot load it);
 * LC_E_ARG for an array whose items do not all have its element type; LC_E_IO. A
 * failed read of a tensor's source passes through with where = tensor name and the
 * source's offset but no path (the caller knows which file it read: add it with
 * lc_err_context). O and P may be NULL. On failure no file is left. */
lc_code lc_gguf_write(const lc_model *m, const char *path, const lc_gguf_write_opts *o,
                      lc_progress *p, lc_error *err);

/* The bytes lc_gguf_write writes for M before its data section (header, metadata, tensor
 * infos, padding) into *bytes (lc_free it; *len bytes), and the whole file's size
 * (file_size may be NULL): what a file M was written to must start with and measure.
 * The writer's checks and codes; nothing is read from the tensors' sources. */
lc_code lc_gguf_header(const lc_model *m, uint8_t **bytes, size_t *len, uint64_t *file_size,
                       lc_error *err);

/* Writes models[i] at paths[i] for each of the N, as lc_gguf_write writes one, and
 * commits them as a set (lc_outfile_commit_set): either every file appears or none
 * does. The split parts of --keep-split. */
lc_code lc_gguf_write_set(const lc_model *const *models, const char *const *paths, size_t n,
                          const lc_gguf_write_opts *o, lc_progress *p, lc_error *err);

#endif
