/* libconvert/rd.h: the bounded cursor every parser reads untrusted bytes with.
 *
 * Each read checks `size - pos` first and fails with LC_E_TRUNCATED at the offset
 * of the field that does not fit; pos never passes size. `base_offset` is added to
 * reported offsets so a cursor over a sub-range (a zip entry, a header) reports
 * offsets in the file. */
#ifndef LC_LIBCONVERT_RD_H
#define LC_LIBCONVERT_RD_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include "libconvert/bytes.h"
#include "libconvert/error.h"

typedef struct lc_rd {
    const uint8_t *base;  /* borrowed; valid while the map lives */
    uint64_t size, pos;   /* invariant: pos <= size */
    uint64_t base_offset; /* file offset of base[0], for messages */
    lc_error *err;
} lc_rd;

static inline lc_rd lc_rd_init(const void *base, uint64_t size, uint64_t base_offset,
                               lc_error *err) {
    lc_rd r = { (const uint8_t *)base, size, 0, base_offset, err };
    return r;
}
static inline uint64_t lc_rd_left(const lc_rd *r) { return r->size - r->pos; }
static inline uint64_t lc_rd_at(const lc_rd *r) { return r->base_offset + r->pos; }

static inline lc_code lc_rd_need(lc_rd *r, uint64_t n, const char *what) {
    if (lc_rd_left(r) < n)
        return lc_fail(r->err, LC_E_TRUNCATED, lc_rd_at(r),
                       "%s needs %" PRIu64 " bytes, %" PRIu64 " left", what, n, lc_rd_left(r));
    return LC_OK;
}
static inline lc_code lc_rd_bytes(lc_rd *r, uint64_t n, const uint8_t **p, const char *what) {
    LC_TRY(lc_rd_need(r, n, what));
    *p = r->base + r->pos;
    r->pos += n;
    return LC_OK;
}
static inline lc_code lc_rd_u8(lc_rd *r, uint8_t *v, const char *what) {
    LC_TRY(lc_rd_need(r, 1, what));
    *v = r->base[r->pos++];
    return LC_OK;
}
static inline lc_code lc_rd_u16(lc_rd *r, uint16_t *v, const char *what) {
    LC_TRY(lc_rd_need(r, 2, what));
    *v = lc_load_le16(r->base + r->pos);
    r->pos += 2;
    return LC_OK;
}
static inline lc_code lc_rd_u32(lc_rd *r, uint32_t *v, const char *what) {
    LC_TRY(lc_rd_need(r, 4, what));
    *v = lc_load_le32(r->base + r->pos);
    r->pos += 4;
    return LC_OK;
}
static inline lc_code lc_rd_u64(lc_rd *r, uint64_t *v, const char *what) {
    LC_TRY(lc_rd_need(r, 8, what));
    *v = lc_load_le64(r->base + r->pos);
    r->pos += 8;
    return LC_OK;
}

#endif
