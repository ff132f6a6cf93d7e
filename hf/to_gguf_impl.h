/* hf/to_gguf_impl.h: private to hf/to_gguf*.c: the conversion state and the tensor
 * half of HF -> GGUF (to_gguf_tensors.c), which to_gguf.c strings together. */
#ifndef LC_HF_TO_GGUF_IMPL_H
#define LC_HF_TO_GGUF_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/arch.h"
#include "hf/config.h"
#include "hf/hf.h"
#include "hf/weights.h"
#include "libconvert/model.h"

/* Per layer, the sources of the stacked rows spelled one expert per tensor. */
typedef struct lc_tg_experts {
    size_t n_rows;                      /* stacked rows with a per-expert spelling */
    const lc_arch_tensor *row[8];       /* ... in table order (the order they are written) */
    uint32_t n_expert;
    const lc_tensor **slot;             /* [layer][n_rows][n_expert] */
    uint64_t *count;                    /* [layer] sources seen */
    size_t *last;                       /* [layer] index in `in` of the last one */
} lc_tg_experts;

/* The conversion state. */
typedef struct lc_tg {
    const char *dir;
    const lc_hf_opts *o;
    lc_hf_config cfg;
    lc_spelling spelling;   /* the source's names: transformers' or Meta's */
    const char *cfg_file;   /* "config.json" or "params.json", for messages */
    lc_model *in;           /* the source tensors (owned by out once handed) */
    bool in_owned;
    lc_hf_weights *weights; /* the HF folder's files (owned by out once handed) */
    lc_model *views;        /* pread / map views of sources, named as the sources; stacks
                             * and parts of fused tensors, named as in GGUF */
    lc_model *work;         /* F32 intermediates feeding quantizers, named as in GGUF */
    bool parts_owned;       /* views and work were handed to out */
    lc_model *out;
    lc_dtype ftype;         /* the resolved out type */
    lc_arch_seen seen;
    lc_tg_experts exps;
    bool validated;         /* the tensors confirmed the config's sizes */
    uint64_t params;        /* every tensor's elements */
    uint64_t expert_params; /* the stacked ones' elements, per expert */
} lc_tg;

/* Every source tensor against the table and config before anything is built from the
 * config's numbers: names, dtypes, shapes (per expert and fused too), every expert of
 * every stacked row, and no required tensor missing. So a config.json that declares
 * huge sizes fails here, on the tensors that are there. */
lc_code lc_tg_check_tensors(lc_tg *c, lc_error *err);

/* The tensors the converter computes (llama3's rope_freqs, phi3's longrope factors), in
 * its order, then every source tensor in the source's order: stacks of experts where
 * their last expert is, each part of a fused tensor where it is. */
lc_code lc_tg_add_tensors(lc_tg *c, lc_error *err);

void lc_tg_free(lc_tg *c);

#endif
