/* hf/bpe.h: a byte-level BPE tokenizer.json as GGUF tokens and merges (hf/bpe.c). */
#ifndef LC_HF_BPE_H
#define LC_HF_BPE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "hf/vocab.h"
#include "libconvert/error.h"
#include "libconvert/value.h"

/* tokenizer.json BPE -> v (sized to cfg_vocab, or to the tokenizer when 0) and the
 * merges array (at most max_pad ids past the tokenizer's, see vocab.h); tokenizer.ggml.pre identified from the pre_tokenizer. */
lc_code lc_hf_bpe_vocab(const cJSON *tj, uint32_t cfg_vocab, uint64_t max_pad, lc_hf_vocab *v,
                        lc_value *merges, lc_error *err);
lc_code lc_hf_bpe_pre(const cJSON *tj, const char **name, lc_error *err);
/* model.merges ("a b" strings or ["a", "b"] pairs) as one GGUF string array. */
lc_code lc_hf_bpe_merges(const cJSON *list, lc_value *merges, lc_error *err);

#endif
