/* infer/tokenize_impl.h: what the tokenizer's files share (private to infer/tokenize*.c).
 *
 *   tokenize.c          open (metadata -> vocabulary), special-token partition, encode,
 *                       decode
 *   tokenize_map.c      the keyed string -> index table (vocabulary, merges), id lists
 *   tokenize_unicode.c  UTF-8 as llama.cpp reads it, code point classes (the table in
 *                       tokenize_ucd_impl.h), GPT-2's byte alphabet
 *   tokenize_pre.c      the BPE pre-tokenizers: text -> pieces
 *   tokenize_spm.c      SentencePiece's score-ordered pair merging
 *   tokenize_bpe.c      byte-level BPE's rank-ordered merging
 *   tokenize_args.c     --tokens / --file helpers and the default text */
#ifndef LC_INFER_TOKENIZE_IMPL_H
#define LC_INFER_TOKENIZE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "infer/tokenize.h"
#include "libconvert/error.h"

/* ---- strings and the index over them ---- */

typedef struct lc_tok_str {
    const char *s;     /* NUL-terminated too */
    uint32_t    len;
} lc_tok_str;

/* Open addressing over borrowed keys; slots hold key index + 1 (0: empty). The hash is
 * keyed per process, so a vocabulary cannot be built to collide. */
typedef struct lc_tok_index {
    const lc_tok_str *keys;
    uint32_t *slots;
    size_t    mask;
} lc_tok_index;

/* Indexes KEYS[0..n). With UNIQUE a repeated key fails (LC_E_MALFORMED, *dup = the
 * later index); without, the first of equal keys wins. */
lc_code lc_tok_index_build(lc_tok_index *ix, const lc_tok_str *keys, size_t n, bool unique,
                           size_t *dup, lc_error *err);
/* Index of the key equal to S[0..len), or -1. */
int64_t lc_tok_index_find(const lc_tok_index *ix, const char *s, size_t len);
void    lc_tok_index_free(lc_tok_index *ix);

/* ---- token attributes (llama.cpp's llama_token_attr bits) ---- */

enum {
    LC_TA_UNKNOWN = 1 << 0, LC_TA_UNUSED = 1 << 1, LC_TA_NORMAL = 1 << 2,
    LC_TA_CONTROL = 1 << 3, LC_TA_USER_DEFINED = 1 << 4, LC_TA_BYTE = 1 << 5,
    /* Set by model name (tokenize.c, name_attrs), not read from the file: the space
     * before (LSTRIP) or after (RSTRIP) a special token in the text is dropped. */
    LC_TA_LSTRIP = 1 << 6, LC_TA_RSTRIP = 1 << 7,
};

enum lc_tok_kind { LC_TOK_SPM, LC_TOK_BPE };
/* The splits, by the llama.cpp pre type that owns each (STARCODER: every \p{N} code point
 * alone, then GPT-2's; refact and command-r split so too. FALCON: the default chain with
 * '`' among the punctuation and no \p{N}+ step. DEEPSEEK_*: chains of five and six
 * std::regex splits, tokenize_pre.c). */
enum lc_tok_pre { LC_PRE_DEFAULT, LC_PRE_LLAMA3, LC_PRE_QWEN2, LC_PRE_GPT2, LC_PRE_STARCODER,
                  LC_PRE_FALCON, LC_PRE_QWEN35, LC_PRE_DEEPSEEK_CODER, LC_PRE_DEEPSEEK_LLM,
                  /* tokenizer model "gemma4": SentencePiece-style BPE, runs of newlines
                   * and runs of the rest; pieces in raw UTF-8, spaces as U+2581, a
                   * missing byte as its "<0xXX>" token (tokenize_bpe.c) */
                  LC_PRE_GEMMA4 };

struct lc_tok {
    enum lc_tok_kind kind;
    enum lc_tok_pre  pre;
    uint32_t    n_vocab;
    lc_tok_str *text;          /* [n_vocab], into arena */
    float      *score;         /* [n_vocab] */
    uint8_t    *attr;          /* [n_vocab], LC_TA_* */
    char       *arena;
    lc_tok_index vocab;        /* text -> id */
    lc_tok_str *merges;        /* [n_merges] "left right", into merge_arena */
    size_t      n_merges;
    char       *merge_arena;
    lc_tok_index merge_ix;     /* merge string -> rank (first wins) */
    int32_t    *special;       /* ids cut out of the text first, longest text first */
    size_t      n_special;
    int32_t     bos, eos;      /* -1: none */
    bool        add_bos, add_eos, add_space_prefix;
    bool        ignore_merges; /* llama-bpe: a piece that is a token is taken whole */
    int32_t     spm_byte[256]; /* SentencePiece byte fallback token, -1: none */
};

/* ---- growable id list ---- */

typedef struct lc_tok_ids {
    int32_t *v;
    size_t   n, cap;
} lc_tok_ids;

lc_code lc_tok_ids_push(lc_tok_ids *o, int32_t id, lc_error *err);

/* ---- Unicode ---- */

enum {
    LC_UC_UNDEFINED = 0x01, LC_UC_NUMBER = 0x02, LC_UC_LETTER = 0x04, LC_UC_SEPARATOR = 0x08,
    LC_UC_MARK = 0x10, LC_UC_PUNCT = 0x20, LC_UC_SYMBOL = 0x40, LC_UC_CONTROL = 0x80,
    LC_UC_WHITESPACE = 0x100,
};

/* The class bits of a code point (LC_UC_*); above U+10FFFF: LC_UC_UNDEFINED, as in
 * llama.cpp. Never 0: 0 is what the splitters use for "outside the piece". */
uint16_t lc_tok_uc_flags(uint32_t cp);
/* Unicode version of the class table. */
const char *lc_tok_uc_version(void);

/* Bytes in a UTF-8 sequence by its lead byte, as llama.cpp's unicode_len_utf8: 1 for
 * ASCII and for continuation bytes, 2, 3, 4 by the high bits. */
size_t lc_tok_utf8_len(uint8_t lead);
/* Decodes one code point at S[*at] (< len) like llama.cpp's unicode_cpt_from_utf8,
 * advancing *at; a bad sequence gives U+FFFD and advances by one byte. Four-byte
 * sequences are not range-checked (they may exceed U+10FFFF). */
uint32_t lc_tok_utf8_next(const uint8_t *s, size_t len, size_t *at);
/* Writes CP (<= 0x10FFFF) as UTF-8 into OUT, returns its length. */
size_t lc_tok_utf8_put(uint32_t cp, char out[4]);
/* GPT-2's byte-level alphabet: the code point byte B is written as. */
uint32_t lc_tok_byte_cp(uint8_t b);
/* The byte a code point of that alphabet stands for, or -1. */
int lc_tok_cp_byte(uint32_t cp);

/* ---- pre-tokenizers ---- */

/* Splits CPTS[0..n) (n > 0) by PRE into pieces, appending each piece's length in code
 * points to *out. */
lc_code lc_tok_pre_split(enum lc_tok_pre pre, const uint32_t *cpts, size_t n,
                         lc_tok_ids *out, lc_error *err);

/* ---- the two merge algorithms, one fragment each ---- */

/* SentencePiece over TEXT (already space-prefixed and escaped), appending ids. */
lc_code lc_tok_spm_encode(const lc_tok *tok, const char *text, size_t len, lc_tok_ids *out,
                          lc_error *err);
/* Byte-level BPE over one raw fragment, appending ids. BASE is the fragment's offset in
 * the caller's text, for errors. */
lc_code lc_tok_bpe_encode(const lc_tok *tok, const char *text, size_t len, size_t base,
                          lc_tok_ids *out, lc_error *err);

#endif
