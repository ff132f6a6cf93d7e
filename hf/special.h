/* hf/special.h: special token ids, add_bos/add_eos and the chat template, as gguf-py's
 * SpecialVocab finds them in an HF folder (hf/special.c). */
#ifndef LC_HF_SPECIAL_H
#define LC_HF_SPECIAL_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

/* SpecialVocab's rules: special token ids, add_bos/add_eos/add_sep, chat template. TJ
 * (tokenizer.json) may be NULL. Ids at or past n_vocab are skipped. */
lc_code lc_hf_special_to_gguf(const char *dir, const cJSON *tj, uint64_t n_vocab, lc_model *m,
                              lc_error *err);

#endif
