/* formats/pth_index_impl.h: pth_index.c, private to formats/pth (not installed).
 *
 * Hugging Face sharded folders (pytorch_model.bin.index.json); the public part
 * (lc_pth_is_index, lc_pth_index_shards, the index writer) is in pth.h. */
#ifndef LC_FORMATS_PTH_INDEX_IMPL_H
#define LC_FORMATS_PTH_INDEX_IMPL_H

#include "formats/pth.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* Reads the sharded checkpoint at PATH (see lc_pth_is_index) into m: every shard
 * with lc_pth_load_file, then checks the shards against the index. */
lc_code lc_pth_index_load(const char *path, const lc_pth_opts *o, lc_model *m, lc_error *err);

#endif
