/* formats/pth_commit_impl.h: pth_commit.c, private to formats/pth (not installed).
 *
 * The last step of reading one checkpoint file: the walk's tensors (pth_walk_impl.h),
 * their storages bound to bytes by the container (pth_file.c), join the model. */
#ifndef LC_FORMATS_PTH_COMMIT_IMPL_H
#define LC_FORMATS_PTH_COMMIT_IMPL_H

#include "formats/pth.h"
#include "formats/pth_walk_impl.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* What views of one storage may write, together, unless lc_pth_opts.allow_expand:
 * LC_PTH_EXPAND_FACTOR times its bytes plus LC_PTH_EXPAND_SLACK. A view with stride 0
 * repeats elements (torch's expand()), so 16 bytes of storage can stand for 64 GiB of
 * output. Real checkpoints write each storage once (views are slices, transposes) or
 * a few times (tied weights, each the whole storage); 16 leaves room for those, and
 * the slack for a scalar broadcast to a small vector (4096 bytes: 1024 floats). */
#define LC_PTH_EXPAND_FACTOR 16u
#define LC_PTH_EXPAND_SLACK  4096u

/* After the container bound every storage: applies opts->dedupe, and adds the tensors
 * to m with their sources (pth_source.c). The storage table moves to m (lc_model_own)
 * even on failure; f is emptied either way. */
lc_code lc_pth_commit(lc_pth_found *f, const lc_pth_opts *o, lc_model *m, lc_error *err);

#endif
