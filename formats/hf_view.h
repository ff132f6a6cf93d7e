/* formats/hf_view.h: lazy tensor sources for the HF <-> GGUF conversion (hf.c).
 *
 * Each makes a tensor whose bytes are computed from another tensor (or a file) on
 * read, any byte range at a time, so lc_gguf_write / lc_safetensors_write can stream:
 *  1. quant: rows of F32 -> rows of a block type (quant/'s reference quantizer), or
 *     the reverse (dequantizer). Works a batch of about 1 MiB of floats at a time.
 *  2. map: copies a zero-copy (mapped) tensor's bytes and, once reads have moved 1 MiB
 *     past a range, gives those pages back (MADV_DONTNEED), so a whole-model pass does
 *     not grow the process's RSS to the model size.
 *  3. file: pread from a descriptor at the tensor's file offset. */
#ifndef LC_FORMATS_HF_VIEW_H
#define LC_FORMATS_HF_VIEW_H

#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

/* Makes dst read src through the quantizer (quantize: src is F32, dst is `qtype`) or
 * the dequantizer (dst is F32, src is `qtype`); dst's data/ops/ctx are replaced and
 * src is borrowed. LC_E_ARG when the rows are not whole blocks, LC_E_NOMEM. Reads
 * report LC_E_NOMEM for the batch buffers and whatever src reports. */
lc_code lc_hf_view_quant(lc_tensor *dst, const lc_tensor *src, lc_dtype qtype, bool quantize,
                         lc_error *err);

/* Adds to `work` a tensor NAME with s's dtype and shape that copies s's mapped bytes
 * and gives the pages back behind the reads; *out is it. When s is not a zero-copy
 * view, nothing is added and *out is s. s is borrowed. s->data MUST point into a
 * read-only file mapping (lc_map): MADV_DONTNEED on anonymous or written memory
 * would zero it or drop its changes. */
lc_code lc_hf_view_map(lc_model *work, const char *name, const lc_tensor *s,
                       const lc_tensor **out, lc_error *err);

/* Adds to `work` a tensor NAME reading s's bytes with pread at s->file_offset of fd
 * (borrowed; it must stay open while the tensor is read). Reads report LC_E_IO or
 * LC_E_TRUNCATED with the file offset. */
lc_code lc_hf_view_file(lc_model *work, const char *name, const lc_tensor *s, int fd,
                        const lc_tensor **out, lc_error *err);

#endif
