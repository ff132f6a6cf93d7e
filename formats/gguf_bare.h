/* formats/gguf_bare.h: a bare tensor container (a safetensors file with no config.json)
 * carried in GGUF and back, losslessly.
 *
 * GGUF lacks some plain dtypes safetensors has. On the way in each such tensor is
 * widened to the smallest GGUF type that holds every value, and its original dtype is
 * recorded as a string key LC_GGUF_BARE_DTYPE_PREFIX + tensor name:
 *     BOOL -> I8, U8 -> I16, U16 -> I32, U32 -> I64, U64 -> I64 (values >= 2^63 fail
 *     when read, LC_E_OVERFLOW), F8_E4M3, F8_E5M2 and their FNUZ
 *     variants -> F16 (F8_E8M0 has no carrier: nothing converts back into it).
 * On the way out those keys are removed and each tensor is narrowed back, so a
 * safetensors -> GGUF -> safetensors round trip gives the same tensors and the same
 * other metadata. The file is a container, not a model llama.cpp can run, so it has no
 * general.architecture: a __metadata__ that holds one (a GGUF's keys, all strings now)
 * has it renamed to LC_GGUF_BARE_ARCH_KEY on the way in and back on the way out. Kept,
 * it would make llama.cpp read the strings as a model's typed keys and fail on them. */
#ifndef LC_FORMATS_GGUF_BARE_H
#define LC_FORMATS_GGUF_BARE_H

#include "libconvert/error.h"
#include "libconvert/model.h"

#define LC_GGUF_BARE_DTYPE_PREFIX "safetensors.dtype."
#define LC_GGUF_BARE_ARCH_KEY     "safetensors.general.architecture"

/* The GGUF dtype a plain dtype is carried as: itself when GGUF has it, its widening
 * above, or LC_DT_INVALID when there is none (block types pass as themselves). */
lc_dtype lc_gguf_bare_carrier(lc_dtype dt);

/* Rewrites M in place for lc_gguf_write: widens tensors (lazily, through
 * lc_tensor_cast) and records their dtypes; renames general.architecture.
 * LC_E_UNSUPPORTED (where = key) when a metadata key already starts with the prefix or
 * is LC_GGUF_BARE_ARCH_KEY, LC_E_NOMEM. On failure M may be partly
 * rewritten and should be freed. */
lc_code lc_gguf_bare_encode(lc_model *m, lc_error *err);

/* Builds from M (read from a GGUF) a new model *out without the dtype keys (and with
 * LC_GGUF_BARE_ARCH_KEY named general.architecture again), whose
 * tensors read M's tensors and are narrowed back to their recorded dtypes. *out takes
 * ownership of M, even on failure (then M is freed and *out is NULL). LC_E_MALFORMED
 * (where = key) for a dtype key that names no tensor, is not a string, names an
 * unknown dtype or one the tensor's type is not the carrier of. */
lc_code lc_gguf_bare_decode(lc_model *m, lc_model **out, lc_error *err);

#endif
