/* hf/tokenizer.h: an HF folder's tokenizer as GGUF tokenizer.* metadata.
 *
 * Files read from the folder:
 *   1. tokenizer.model (SentencePiece protobuf; see hf/spm.h) when present: model "llama",
 *      pre "default", tokens/scores/token_type in id order, padded to config vocab_size
 *      with "[PAD<i>]" (score -10000, unused); SentencePiece user-defined pieces become
 *      normal tokens, as in llama.cpp's converter.
 *   2. otherwise tokenizer.json with a byte-level BPE model: model "gpt2", pre from the
 *      pre_tokenizer structure, tokens (model.vocab + added_tokens by id), token_type,
 *      merges (from "a b" strings or ["a", "b"] pairs).
 *   3. added_tokens.json and tokenizer_config.json's added_tokens_decoder (overrides),
 *      tokenizer_config.json / special_tokens_map.json / config.json /
 *      generation_config.json for special ids and add_bos/add_eos, chat_template (or
 *      chat_template.jinja).
 * A family naming its own vocabulary model (lc_arch.hf_vocab_model: gemma4) has 1. and 2.
 * replaced by tokenizer.json read its way, whatever else the folder holds (hf/vocab_hf.c).
 * Value types are gguf-py's: strings; scores f32[]; token_type i32[]; ids u32; flags bool. */
#ifndef LC_HF_TOKENIZER_H
#define LC_HF_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "arch/arch.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* Adds the tokenizer.* keys for the folder DIR to m, with CFG_VOCAB tokens (config.json's
 * vocab_size: extra ids become "[PAD<i>]"; 0: as many as the tokenizer has), refusing
 * (LC_E_MISMATCH) more than MAX_PAD extra ids (hf/vocab.h). PRE, when not NULL, is written as
 * tokenizer.ggml.pre instead of the identified name (BPE only). LC_E_NOTFOUND when the
 * folder has neither tokenizer file, LC_E_UNSUPPORTED for a tokenizer.json that is not
 * byte-level BPE or whose pre-tokenizer is not recognised (the message says to pass
 * --pre NAME), LC_E_MALFORMED / LC_E_TRUNCATED for bad files (path in err). ARCH (may
 * be NULL) chooses the family's rules for a SentencePiece vocabulary's added tokens. */
lc_code lc_hf_tokenizer_to_gguf(const char *dir, uint32_t cfg_vocab, uint64_t max_pad,
                                const char *pre, const lc_arch *arch,
                                lc_model *m, lc_error *err);

/* The vocabulary of a family with lc_arch.hf_vocab_model (gemma4): tokenizer.json read
 * as gguf-py's LlamaHfVocab reads it, written under MODEL_NAME with its merges, special
 * ids, add_space_prefix false and add_bos true (hf/vocab_hf.c). LC_E_UNSUPPORTED for a
 * tokenizer.json that is not BPE with byte fallback. */
lc_code lc_hf_vocab_hf_to_gguf(const char *dir, const char *model_name, lc_model *m,
                               lc_error *err);

/* Identifies tokenizer.ggml.pre from tokenizer.json text: "llama-bpe" (Llama 3 split
 * regex + byte-level), "qwen2" (Qwen2 regex + byte-level), "gpt-2" (byte-level with its
 * own regex). *name is static. LC_E_UNSUPPORTED when the structure is not one of these. */
lc_code lc_hf_tokenizer_pre(const char *json, size_t len, const char **name, lc_error *err);

#endif
