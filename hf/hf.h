/* hf/hf.h: a Hugging Face model folder as a GGUF model llama.cpp runs, and back.
 *
 * hf/ owns Hugging Face folders: config.json read through the family tables of arch/,
 * the tokenizers (SentencePiece tokenizer.model, BPE tokenizer.json) as GGUF tokenizer
 * keys, special tokens, Meta's original layout, the folder's weight files, and the
 * assembly of a GGUF model from them and back. It uses formats/ for the containers,
 * quant/ for block types and arch/ for what a family is; it knows no family by name.
 *
 * The folder (transformers' save_pretrained layout):
 *  1. config.json: the family (arch/) and its hyperparameters (hf/config.h).
 *  2. model.safetensors, or model.safetensors.index.json + its shards; else
 *     pytorch_model.bin or pytorch_model.bin.index.json + shards (formats/pth.h).
 *  3. tokenizer.model (SentencePiece) or tokenizer.json (BPE), tokenizer_config.json,
 *     special_tokens_map.json, generation_config.json (hf/tokenizer.h).
 * Or Meta's original llama layout (no config.json; params.json, consolidated.00.pth,
 * tokenizer.model): see hf/meta_layout.h. The same keys and GGUF tensors come out, with
 * hyperparameters from params.json and no Q/K permutation (Meta's rows are already
 * interleaved); rope.freqs is dropped.
 * The GGUF model built from it follows llama.cpp's convert_hf_to_gguf.py (as vendored
 * by llama-cpp-python 0.3.36) key by key and byte by byte, except where hf/to_gguf.c's comment
 * "Differences from convert_hf_to_gguf.py" says otherwise:
 *  - keys: general.architecture, general.type = "model", general.sampling.* from
 *    generation_config.json, general.name (the folder name in title form),
 *    general.size_label (parameter count, e.g. "1.2M"), the <arch>.* hyperparameters,
 *    general.file_type, general.quantization_version = 2, tokenizer.*;
 *  - tensors: GGUF names, llama Q/K rows permuted (qwen2 not), rotary_emb.inv_freq
 *    dropped, 1-D tensors, norms and non-".weight" tensors F32, the rest the out type
 *    (Q8_0 falls back to F16 for rows that are not a multiple of 32), rope_freqs.weight
 *    for rope scaling type llama3.
 * Every tensor stays lazy: lc_gguf_write streams it, so memory is bounded by a chunk. */
#ifndef LC_HF_HF_H
#define LC_HF_HF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#include "libconvert/error.h"
#include "libconvert/model.h"
#include "quant/device.h"

/* One tensor of the conversion's plan, as the dry run shows it. */
typedef struct lc_hf_plan_row {
    char     *src;          /* the source tensor's name, or what computed it (owned) */
    char     *gguf;         /* its GGUF name (owned) */
    lc_dtype  from, to;
    uint32_t  ndim;
    uint64_t  shape[LC_MAX_DIMS];
    uint64_t  nbytes;
    bool      computed;     /* made by the converter (rope factors), not read */
} lc_hf_plan_row;

/* The plan of a conversion: its tensors in the order they were added. */
typedef struct lc_hf_plan {
    lc_hf_plan_row *rows;
    size_t          n, cap;
} lc_hf_plan;

/* Frees the rows and zeroes p; NULL-safe. */
void lc_hf_plan_free(lc_hf_plan *p);

typedef struct lc_hf_opts {
    lc_dtype    outtype;    /* F32, F16, BF16, Q8_0, or LC_DT_INVALID for auto: the dtype
                             * of the first 2-D+ source tensor if BF16/F16, else F16 */
    const char *pre;        /* tokenizer.ggml.pre override (BPE), or NULL */
    bool        vocab_only; /* metadata only, no tensors */
    lc_hf_plan *plan;       /* when not NULL, gets a row per tensor as it is added (also
                             * those added before a failure) */
    lc_qdev    *device;     /* casts and Q8_0 run there (same bytes; borrowed, must
                             * outlive the model); NULL: the CPU */
} lc_hf_opts;

/* Builds in *out the GGUF model for the HF (or Meta) folder DIR (see above). *out owns
 * the loaded weight files. Codes: LC_E_NOTFOUND (no config.json, no weights, no
 * tokenizer), LC_E_UNSUPPORTED (architecture, rope scaling, tensor name, pre-tokenizer
 * without o->pre, a source dtype that is not a number, Meta model-parallel shards), LC_E_MISMATCH (a required
 * tensor missing or with a shape other than config.json implies; where = tensor),
 * LC_E_MALFORMED / LC_E_TRUNCATED from the files (path in err). On failure *out is
 * NULL. */
lc_code lc_hf_to_gguf(const char *dir, const lc_hf_opts *o, lc_model **out, lc_error *err);

/* The GGUF naming convention's default file name for a model made by lc_hf_to_gguf:
 * "<Name>-<SizeLabel>-<ENCODING>.gguf" (spaces and '/' in the name become '-'), or
 * "<Name>-vocab.gguf" with vocab_only. LC_E_ARG when cap is too small. */
lc_code lc_hf_default_name(const lc_model *m, bool vocab_only, char *buf, size_t cap,
                           lc_error *err);

/* The way back: from a GGUF model with general.architecture llama or qwen2 (as
 * lc_hf_to_gguf writes) builds *out with HF tensor names, the inverse Q/K permutation
 * (llama), every tensor cast or dequantized to `dtype` (F32, F16, BF16; LC_DT_INVALID
 * keeps F32/F16/BF16 tensors as they are and dequantizes others to F32), and no
 * metadata. rope_freqs.weight is dropped. Takes ownership of in, even on failure.
 * LC_E_UNSUPPORTED for another architecture, an unknown tensor name or a block type
 * without a dequantizer; LC_E_MALFORMED for missing hyperparameter keys. */
lc_code lc_hf_from_gguf(lc_model *in, lc_dtype dtype, lc_model **out, lc_error *err);

#endif
