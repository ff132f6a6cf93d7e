/* hf/spm.c: a minimal protobuf reader for SentencePiece's tokenizer.model.
 *
 * Wire layout (see hf/spm.h for the field numbers):
 *
 *   message := { key value }*            key   := varint (field << 3 | wire)
 *   varint  := 1..10 bytes, 7 bits each, low first, high bit = more
 *   wire 0  := varint       wire 1 := 8 bytes      wire 5 := 4 bytes (float: LE IEEE)
 *   wire 2  := varint n, then n bytes (a string or a nested message)
 *
 * Every read goes through an lc_rd over exactly the bytes of its message, so a nested
 * length can never reach past its parent. */
#include "hf/spm.h"

#include <inttypes.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/rd.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

static lc_code rd_varint(lc_rd *r, uint64_t *v) {
    const uint64_t at = lc_rd_at(r);
    uint64_t x = 0;
    for (int i = 0;; i++) {
        if (lc_rd_left(r) == 0)
            return lc_fail(r->err, LC_E_TRUNCATED, at, "varint runs past the end of its message");
        const uint8_t b = r->base[r->pos++];
        /* The tenth byte may only carry bit 63. */
        if (i == 9 && b > 1)
            return lc_fail(r->err, LC_E_MALFORMED, at, "varint is longer than 64 bits");
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return LC_OK;
        }
    }
}

/* Reads a key; *at is the key's file offset for later messages. */
static lc_code rd_key(lc_rd *r, uint32_t *field, uint32_t *wire, uint64_t *at) {
    uint64_t k;
    *at = lc_rd_at(r);
    LC_TRY(rd_varint(r, &k));
    if (k >> 3 == 0 || k >> 3 > 0x1fffffff)   /* protobuf field numbers are 1..2^29-1 */
        return lc_fail(r->err, LC_E_MALFORMED, *at, "field number %" PRIu64 " is invalid",
                       k >> 3);
    *field = (uint32_t)(k >> 3);
    *wire = (uint32_t)(k & 7);
    return LC_OK;
}

/* A length-delimited payload as a cursor over exactly its bytes. */
static lc_code rd_len(lc_rd *r, lc_rd *sub) {
    const uint64_t at = lc_rd_at(r);
    uint64_t n;
    LC_TRY(rd_varint(r, &n));
    if (n > lc_rd_left(r))
        return lc_fail(r->err, LC_E_TRUNCATED, at,
                       "%" PRIu64 "-byte field runs past the end of its message (%" PRIu64
                       " left)", n, lc_rd_left(r));
    *sub = lc_rd_init(r->base + r->pos, n, lc_rd_at(r), r->err);
    r->pos += n;
    return LC_OK;
}

static lc_code skip(lc_rd *r, uint32_t wire, uint64_t at) {
    uint64_t v;
    lc_rd sub;
    switch (wire) {
    case WT_VARINT: return rd_varint(r, &v);
    case WT_I64:    return lc_rd_u64(r, &v, "fixed64 field");
    case WT_I32: {
        uint32_t w;
        return lc_rd_u32(r, &w, "fixed32 field");
    }
    case WT_LEN:    return rd_len(r, &sub);
    case WT_SGROUP:
    case WT_EGROUP:
        return lc_fail(r->err, LC_E_UNSUPPORTED, at, "protobuf groups are not supported");
    default:
        return lc_fail(r->err, LC_E_MALFORMED, at, "wire type %u is invalid", wire);
    }
}

static lc_code want_wire(lc_rd *r, uint32_t field, uint32_t wire, uint32_t want, uint64_t at) {
    if (wire != want)
        return lc_fail(r->err, LC_E_MALFORMED, at, "field %u has wire type %u, expected %u",
                       field, wire, want);
    return LC_OK;
}

static lc_code rd_i32(lc_rd *r, int32_t *v) {
    const uint64_t at = lc_rd_at(r);
    uint64_t x;
    LC_TRY(rd_varint(r, &x));
    /* int32 is sent sign-extended to 64 bits. */
    const int64_t s = (int64_t)x;
    if (s < INT32_MIN || s > INT32_MAX)
        return lc_fail(r->err, LC_E_MALFORMED, at, "int32 field holds %" PRId64, s);
    *v = (int32_t)s;
    return LC_OK;
}

static lc_code rd_bool(lc_rd *r, bool *v) {
    uint64_t x;
    LC_TRY(rd_varint(r, &x));
    *v = x != 0;
    return LC_OK;
}

static lc_code parse_piece(lc_rd *r, lc_hf_spm_piece *p) {
    p->text = "";
    p->len = 0;
    p->score = 0.0f;
    p->type = LC_SPM_NORMAL;
    while (lc_rd_left(r)) {
        uint32_t field, wire;
        uint64_t at, x;
        LC_TRY(rd_key(r, &field, &wire, &at));
        if (field == 1) {
            lc_rd s;
            LC_TRY(want_wire(r, field, wire, WT_LEN, at));
            LC_TRY(rd_len(r, &s));
            if (s.size > UINT32_MAX)
                return lc_fail(r->err, LC_E_OVERFLOW, at, "piece of %" PRIu64 " bytes", s.size);
            p->text = (const char *)s.base;
            p->len = (uint32_t)s.size;
        } else if (field == 2) {
            uint32_t bits;
            LC_TRY(want_wire(r, field, wire, WT_I32, at));
            LC_TRY(lc_rd_u32(r, &bits, "piece score"));
            p->score = lc_bits_to_f32(bits);
        } else if (field == 3) {
            LC_TRY(want_wire(r, field, wire, WT_VARINT, at));
            const uint64_t vat = lc_rd_at(r);
            LC_TRY(rd_varint(r, &x));
            if (x < LC_SPM_NORMAL || x > LC_SPM_BYTE)
                return lc_fail(r->err, LC_E_MALFORMED, vat, "piece type %" PRIu64
                               " is not one of 1..6", x);
            p->type = (uint8_t)x;
        } else {
            LC_TRY(skip(r, wire, at));
        }
    }
    return LC_OK;
}

static lc_code parse_trainer(lc_rd *r, lc_hf_spm *m) {
    while (lc_rd_left(r)) {
        uint32_t field, wire;
        uint64_t at;
        LC_TRY(rd_key(r, &field, &wire, &at));
        int32_t *dst = field == 3 ? &m->model_type : field == 4 ? &m->vocab_size
                     : field == 40 ? &m->unk_id : field == 41 ? &m->bos_id
                     : field == 42 ? &m->eos_id : field == 43 ? &m->pad_id : NULL;
        if (dst) {
            LC_TRY(want_wire(r, field, wire, WT_VARINT, at));
            LC_TRY(rd_i32(r, dst));
        } else if (field == 35) {
            LC_TRY(want_wire(r, field, wire, WT_VARINT, at));
            LC_TRY(rd_bool(r, &m->byte_fallback));
        } else {
            LC_TRY(skip(r, wire, at));
        }
    }
    return LC_OK;
}

static lc_code parse_normalizer(lc_rd *r, lc_hf_spm *m) {
    while (lc_rd_left(r)) {
        uint32_t field, wire;
        uint64_t at;
        LC_TRY(rd_key(r, &field, &wire, &at));
        bool *dst = field == 3 ? &m->add_dummy_prefix
                  : field == 4 ? &m->remove_extra_whitespaces : NULL;
        if (dst) {
            LC_TRY(want_wire(r, field, wire, WT_VARINT, at));
            LC_TRY(rd_bool(r, dst));
        } else {
            LC_TRY(skip(r, wire, at));
        }
    }
    return LC_OK;
}

/* Appends one piece slot, growing the table geometrically. Each piece costs at least
 * two bytes of input, so the table never outgrows the file. */
static lc_code push_piece(lc_hf_spm *m, uint64_t *cap, lc_error *err) {
    if (m->n_pieces == *cap) {
        uint64_t ncap = *cap ? *cap * 2 : 256;
        lc_hf_spm_piece *p = lc_realloc_array(m->pieces, (size_t)ncap, sizeof *p);
        if (!p)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " pieces",
                           ncap);
        m->pieces = p;
        *cap = ncap;
    }
    m->n_pieces++;
    return LC_OK;
}

static lc_code parse_model(lc_rd *r, lc_hf_spm *m) {
    uint64_t cap = 0;
    while (lc_rd_left(r)) {
        uint32_t field, wire;
        uint64_t at;
        lc_rd sub;
        LC_TRY(rd_key(r, &field, &wire, &at));
        if (field >= 1 && field <= 3) {
            LC_TRY(want_wire(r, field, wire, WT_LEN, at));
            LC_TRY(rd_len(r, &sub));
        }
        if (field == 1) {
            LC_TRY(push_piece(m, &cap, r->err));
            LC_TRY(parse_piece(&sub, &m->pieces[m->n_pieces - 1]));
        } else if (field == 2) {
            LC_TRY(parse_trainer(&sub, m));
        } else if (field == 3) {
            LC_TRY(parse_normalizer(&sub, m));
        } else {
            LC_TRY(skip(r, wire, at));
        }
    }
    return LC_OK;
}

lc_code lc_hf_spm_parse(const uint8_t *buf, uint64_t len, uint64_t base, lc_hf_spm **out,
                        lc_error *err) {
    *out = NULL;
    lc_hf_spm *m = lc_calloc(1, sizeof *m);
    if (!m)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    m->model_type = 1;
    m->unk_id = 0;
    m->bos_id = 1;
    m->eos_id = 2;
    m->pad_id = -1;
    m->add_dummy_prefix = true;
    m->remove_extra_whitespaces = true;
    lc_rd r = lc_rd_init(buf, len, base, err);
    lc_code rc = parse_model(&r, m);
    if (rc != LC_OK) {
        lc_hf_spm_free(m);
        return rc;
    }
    *out = m;
    return LC_OK;
}

void lc_hf_spm_free(lc_hf_spm *m) {
    if (!m)
        return;
    lc_free(m->pieces);
    lc_free(m);
}
