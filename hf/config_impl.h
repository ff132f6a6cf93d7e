/* hf/config_impl.h: private to hf/config*.c: the family-specific parts of config.json
 * that the shared spellings (arch/ cfg tables) cannot say. */
#ifndef LC_HF_CONFIG_IMPL_H
#define LC_HF_CONFIG_IMPL_H

#include <cjson/cJSON.h>

#include "arch/arch.h"
#include "libconvert/error.h"

/* Gemma 4's sliding and full layers (lc_arch.per_layer_attention), read after the
 * shared fields into hp: the sliding layers' list (layer_types, one per layer), their
 * head size (head_dim) beside the full layers' (global_head_dim or per_layer_config),
 * KV heads per layer, the shared-KV count, the per-layer input width, the experts'
 * width and the full layers' proportional RoPE. LC_E_MALFORMED naming the key (where =
 * key) for a missing required key or a list of the wrong length; LC_E_UNSUPPORTED for
 * what the converter does not write (a full-attention RoPE that is not proportional,
 * use_double_wide_mlp). */
lc_code lc_hf_config_per_layer(const cJSON *root, lc_hparams *hp, lc_error *err);

#endif
