/* jobs/model_side_impl.h: one model opened to run our forward pass on, whatever it is
 * (a GGUF, an HF or Meta folder, a .pth or .safetensors file; model_verify_open.c):
 * what model-verify (both of its sides) and model-imatrix share (private to jobs/model*). */
#ifndef LC_JOBS_MODEL_SIDE_IMPL_H
#define LC_JOBS_MODEL_SIDE_IMPL_H

#include <stdbool.h>

#include "arch/arch.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* ---- one side ---- */

typedef enum lc_vf_kind { LC_VF_GGUF, LC_VF_HF, LC_VF_META, LC_VF_BARE } lc_vf_kind;

typedef struct lc_vf_side {
    const char    *path;        /* as given (borrowed) */
    const char    *label;       /* "SRC" or "DST" */
    lc_vf_kind     kind;
    const char    *format;      /* the reader's format ("gguf", "safetensors", ...) */
    lc_model      *m;           /* the reader's model: tensors in their own spelling */
    lc_model      *views;       /* the same tensors, read with pread or a map view that
                                 * gives pages back: what everything reads */
    lc_model      *meta;        /* GGUF-shaped metadata: m for a GGUF, lc_hf_to_gguf's
                                 * vocab-only model for a folder, NULL for a bare file */
    const lc_arch *arch;        /* NULL when the side does not say */
    lc_hparams     hp;          /* what its forward pass runs with */
    bool           have_hp;
    lc_spelling    spelling;    /* how its tensors are named */
} lc_vf_side;

/* Opens PATH as one side (see model_verify_open.c for what each kind reads). */
lc_code lc_vf_side_open(lc_vf_side *s, const char *path, const char *label, lc_error *err);
void    lc_vf_side_close(lc_vf_side *s);
/* A bare side (no metadata) takes the other side's family and hyperparameters and the
 * spelling most of its names match. LC_E_MISMATCH when neither side names a family or
 * when both do and they differ. */
lc_code lc_vf_sides_align(lc_vf_side *src, lc_vf_side *dst, lc_error *err);
/* "HF folder", "GGUF", ... for messages. */
const char *lc_vf_kind_name(lc_vf_kind k);
const char *lc_vf_spelling_name(lc_spelling sp);

#endif
