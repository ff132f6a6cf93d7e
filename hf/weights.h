/* hf/weights.h: the weight files of a Hugging Face folder, opened once, and a lazy
 * view of each tensor that reads it with pread.
 *
 * Files tried, in order: model.safetensors.index.json + its shards, model.safetensors,
 * pytorch_model.bin.index.json + its shards, pytorch_model.bin (torch.save checkpoints
 * through formats/pth.h, whose tensors are lazy already). */
#ifndef LC_HF_WEIGHTS_H
#define LC_HF_WEIGHTS_H

#include "libconvert/error.h"
#include "libconvert/model.h"

typedef struct lc_hf_weights lc_hf_weights;

/* Loads the folder's tensors into *in (owned by the caller) and keeps what views need
 * in *w (free with lc_hf_weights_free, after every view made from it). LC_E_NOTFOUND
 * when the folder has no weights; the readers' codes otherwise. */
lc_code lc_hf_weights_open(const char *dir, lc_model **in, lc_hf_weights **w, lc_error *err);

/* A tensor of `views` (named as s) whose bytes are s's, read with pread from s's file
 * when s is a zero-copy view of a safetensors file of the folder (the map's pages would
 * otherwise count in the RSS of every thread that touched them, and an unchanged copy
 * becomes a kernel copy), else through a map view that gives pages back, else s itself
 * (lazy sources). *out is valid while views and s live. */
lc_code lc_hf_weights_view(lc_hf_weights *w, lc_model *views, const lc_tensor *s,
                           const lc_tensor **out, lc_error *err);

/* Closes the files; NULL-safe. */
void lc_hf_weights_free(lc_hf_weights *w);

#endif
