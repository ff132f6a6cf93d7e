/* hf/spm.h: a SentencePiece tokenizer.model (protobuf ModelProto) reader.
 *
 * Wire format (protobuf; every field is key varint = field << 3 | wire type, then
 * wire type 0: varint, 1: 8 bytes, 2: varint length + bytes, 5: 4 bytes):
 *   1. ModelProto      1 pieces (repeated SentencePiece, type 2), 2 trainer_spec (2),
 *                      3 normalizer_spec (2); other fields skipped
 *   2. SentencePiece   1 piece (string), 2 score (float, type 5), 3 type (varint:
 *                      1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte)
 *   3. TrainerSpec     3 model_type (1 unigram, 2 bpe, 3 word, 4 char), 4 vocab_size,
 *                      35 byte_fallback, 40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id
 *   4. NormalizerSpec  3 add_dummy_prefix, 4 remove_extra_whitespaces
 * Unknown fields are skipped by wire type; groups (types 3, 4) are refused. */
#ifndef LC_HF_SPM_H
#define LC_HF_SPM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"

/* SentencePiece piece types, which equal GGUF's token types. */
enum {
    LC_SPM_NORMAL = 1, LC_SPM_UNKNOWN = 2, LC_SPM_CONTROL = 3, LC_SPM_USER_DEFINED = 4,
    LC_SPM_UNUSED = 5, LC_SPM_BYTE = 6
};

typedef struct lc_hf_spm_piece {
    const char *text;   /* borrowed from the parsed buffer; not NUL-terminated */
    uint32_t    len;
    float       score;
    uint8_t     type;   /* LC_SPM_* */
} lc_hf_spm_piece;

typedef struct lc_hf_spm {
    lc_hf_spm_piece *pieces;   /* in id order */
    uint64_t n_pieces;
    int32_t  model_type;       /* 1 unigram (default), 2 bpe, 3 word, 4 char */
    int32_t  vocab_size;       /* trainer's request; 0 when absent */
    int32_t  unk_id, bos_id, eos_id, pad_id;   /* defaults 0, 1, 2, -1 */
    bool     byte_fallback;
    bool     add_dummy_prefix;           /* default true */
    bool     remove_extra_whitespaces;   /* default true */
} lc_hf_spm;

/* Parses LEN bytes of a tokenizer.model; offsets in errors are BASE + position.
 * LC_E_TRUNCATED for a varint, length or fixed field past the end of its message,
 * LC_E_MALFORMED for a varint over 10 bytes, field number 0, a known field with the
 * wrong wire type, a piece type outside 1..6 or an int32 out of range,
 * LC_E_UNSUPPORTED for group wire types. On success *out owns the piece table, whose
 * texts borrow BUF (keep it alive); free with lc_hf_spm_free. On failure *out is NULL. */
lc_code lc_hf_spm_parse(const uint8_t *buf, uint64_t len, uint64_t base, lc_hf_spm **out,
                        lc_error *err);

/* NULL-safe. */
void lc_hf_spm_free(lc_hf_spm *m);

#endif
