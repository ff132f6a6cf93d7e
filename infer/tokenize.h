/* infer/tokenize.h: text -> token ids with a model's own vocabulary, as llama.cpp does it.
 *
 * The tokenizer model-verify feeds both models with. It is built from the GGUF
 * tokenizer metadata (a GGUF file's, or the model hf/ builds in memory from an HF
 * folder), never from tokenizer.json / tokenizer.model, so both sides of a comparison
 * get the same ids, and those ids are llama.cpp's (src/llama-vocab.cpp, unicode.cpp):
 *
 *   1. tokenizer.ggml.model "llama": SentencePiece as llama.cpp runs it -- ' ' escaped
 *      as U+2581, a space prefixed to the text (add_space_prefix, default true) and
 *      after each special token, then pieces merged pairwise by highest score (ties:
 *      leftmost); a piece left that is not a token is spelled with its <0xXX> byte
 *      tokens. No normalizer (sentencepiece's own folds whitespace and applies NFKC;
 *      llama.cpp does neither).
 *   2. "gpt2": byte-level BPE -- the text split by the pre-tokenizer named by
 *      tokenizer.ggml.pre ("llama-bpe" and its aliases: Llama 3's split; "qwen2": the
 *      same with single digits; "gpt-2"; "default" or absent: llama.cpp's default
 *      chain), each piece mapped to GPT-2's byte alphabet and merged by rank
 *      (tokenizer.ggml.merges). Any other pre-tokenizer is refused.
 *   3. Special tokens (control, user-defined, unknown types) are cut out of the text
 *      first, longest first; control and unknown ones only with LC_TOK_PARSE_SPECIAL.
 *   4. Invalid UTF-8 is read as llama.cpp reads it: for BPE each bad byte becomes
 *      U+FFFD; SentencePiece cuts the bytes by their lead byte and spells what is not
 *      a token in bytes. Four-byte sequences above U+10FFFF make llama.cpp throw: we
 *      refuse them (LC_E_UNSUPPORTED).
 *
 * A tokenizer is immutable once open: encode and decode may run on many threads.
 * It copies what it needs, so the model it came from may be freed. */
#ifndef LC_INFER_TOKENIZE_H
#define LC_INFER_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

typedef struct lc_tok lc_tok;

enum {
    LC_TOK_ADD_SPECIAL   = 1u << 0,   /* BOS / EOS as tokenizer.ggml.add_{bos,eos}_token say */
    LC_TOK_PARSE_SPECIAL = 1u << 1,   /* "<|im_end|>" in the text is that control token */
};

/* Builds the tokenizer from the tokenizer.* metadata of M (tensors are not read).
 * LC_E_NOTFOUND when tokenizer.ggml.model or .tokens is absent; LC_E_UNSUPPORTED for a
 * model other than "llama"/"gpt2" or a pre-tokenizer we do not implement (the message
 * names it and the ones we do); LC_E_MALFORMED for a key of the wrong type, arrays
 * shorter than the token list, a duplicate token text, or add_bos/add_eos set with no
 * such token (where = the key); LC_E_NOMEM. On success *out owns copies of everything;
 * free with lc_tok_close. On failure *out is NULL. */
lc_code lc_tok_open(const lc_model *m, lc_tok **out, lc_error *err);
void lc_tok_close(lc_tok *tok);   /* NULL-safe */

/* Tokenizes LEN bytes of TEXT (any bytes; NUL is a character like any other). FLAGS:
 * LC_TOK_*. Writes at most CAP ids to IDS and sets *N to the number the text needs,
 * also when that is more than CAP: then LC_E_OVERFLOW (call again with a larger
 * buffer). LC_E_UNSUPPORTED for text llama.cpp cannot tokenize: a code point above
 * U+10FFFF for BPE (offset = its first byte in TEXT), a byte no token spells for
 * SentencePiece; LC_E_OVERFLOW for over 2^31-1 bytes; LC_E_NOMEM. Memory is a small
 * constant per byte of TEXT. */
lc_code lc_tok_encode(const lc_tok *tok, const char *text, size_t len, unsigned flags,
                      int32_t *ids, size_t cap, size_t *n, lc_error *err);

/* The bytes token ID stands for, as llama.cpp's token_to_piece: SentencePiece U+2581
 * back to ' ', <0xXX> to its byte, BPE's byte alphabet back to bytes; control and
 * unknown tokens give their text when SPECIAL, else nothing. Writes at most CAP bytes
 * (no NUL) and sets *N to the full length; LC_E_OVERFLOW when CAP is short, LC_E_ARG for
 * an id outside the vocabulary. */
lc_code lc_tok_decode_piece(const lc_tok *tok, int32_t id, bool special, char *buf,
                            size_t cap, size_t *n, lc_error *err);

uint32_t    lc_tok_n_vocab(const lc_tok *tok);
/* The id's text as stored in the vocabulary (NUL-terminated, valid until close), or NULL
 * when out of range. */
const char *lc_tok_text(const lc_tok *tok, int32_t id);
int32_t     lc_tok_bos(const lc_tok *tok);   /* -1 when the model has none */
int32_t     lc_tok_eos(const lc_tok *tok);
/* Whether LC_TOK_ADD_SPECIAL puts BOS first (tokenizer.ggml.add_bos_token). */
bool        lc_tok_adds_bos(const lc_tok *tok);

/* ---- the tool's token arguments ---- */

/* Parses "--tokens 1,2,3": decimal ids separated by commas (spaces around them allowed),
 * each below N_VOCAB (0: no bound). On success *ids (lc_free it) holds *n >= 1 ids.
 * LC_E_ARG naming the position for an empty list or item, a non-digit, a value past
 * int32 or N_VOCAB. */
lc_code lc_tok_parse_ids(const char *s, uint32_t n_vocab, int32_t **ids, size_t *n,
                         lc_error *err);

/* Reads all of PATH ("--file F") into *text (lc_free it; NUL-terminated, *len bytes
 * without it), refusing files over LIMIT bytes (LC_E_OVERFLOW). Opened as an input
 * (libconvert/input.h): LC_E_ARG for a folder, FIFO or device (never blocking), and an
 * output over it is refused later; LC_E_IO / LC_E_NOTFOUND from the OS, path in err. */
lc_code lc_tok_read_file(const char *path, size_t limit, char **text, size_t *len,
                         lc_error *err);

/* The text model-verify uses when given neither --tokens, --text nor --file: the first
 * paragraphs of Herman Melville's Moby-Dick (1851), chapter 1, "Loomings" -- public
 * domain; a few hundred tokens with punctuation, em dashes and an apostrophe. Static,
 * UTF-8, NUL-terminated. */
const char *lc_tok_default_text(void);

#endif
