/* formats/any.h: open a model file of any format we read, chosen by its bytes.
 *
 * formats/ owns containers only: zip, pickle (a restricted VM that never runs
 * anything), pth (torch checkpoints over zip and pickle), safetensors and GGUF, and
 * this detection, the one place that knows every reader. Model families, tokenizers
 * and Hugging Face folders are hf/'s and arch/'s; block arithmetic is quant/'s.
 *
 * The one place that knows every reader. Detection, in order: a directory or a
 * name ending in ".index.json" is a sharded checkpoint (PyTorch when the name ends
 * in ".bin.index.json" or the folder holds pytorch_model.bin.index.json and no
 * model.safetensors.index.json; safetensors otherwise); "GGUF" magic
 * is GGUF; a zip ("PK\3\4") or a pickle (0x80, protocol <= 5, and no '{' at byte
 * 8 where a safetensors header would start) is a PyTorch checkpoint; anything
 * else goes to the safetensors reader, the one format with no magic, whose own
 * checks then explain what is wrong. */
#ifndef LC_FORMATS_ANY_H
#define LC_FORMATS_ANY_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "formats/pth.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

typedef struct lc_any_info {
    const char *format;      /* "safetensors", "safetensors-sharded", "gguf",
                                "gguf-split" (the first part: every part's tensors),
                                "pth", "pth-sharded" (static) */
    uint64_t    file_size;   /* bytes of the file (0 for a folder) */
    uint64_t    header_size; /* bytes of the format's header, 0 when it has none */
} lc_any_info;

/* Opens PATH with the reader its bytes call for. On success *out owns everything
 * it needs and *format (if not NULL) names the format (a static string). On
 * failure *out is NULL and err carries the reader's code, offset and path. */
lc_code lc_model_open_any(const char *path, lc_model **out, const char **format, lc_error *err);
/* Same, filling *info (not NULL) with what model-inspect prints about the file. */
lc_code lc_model_open_any_info(const char *path, lc_model **out, lc_any_info *info,
                               lc_error *err);
/* Same, for model-inspect: a GGUF is opened leniently (LC_GGUF_LENIENT), so a file
 * llama.cpp or the spec refuses is still shown, with every rule it breaks recorded on
 * the model (lc_model_warning); lc_model_first_refusal then says whether a normal
 * open would have failed. Other formats open as lc_model_open_any_info does. */
lc_code lc_model_open_any_lenient(const char *path, lc_model **out, lc_any_info *info,
                                  lc_error *err);

/* As lc_model_open_any_info, with PTH (may be NULL) as the options of a PyTorch
 * checkpoint's reader (which state dict, zero-copy views of the mapped file). */
lc_code lc_model_open_any_pth(const char *path, const lc_pth_opts *pth, lc_model **out,
                              lc_any_info *info, lc_error *err);

#endif
