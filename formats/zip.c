/* formats/zip.c: the zip reader (see zip.h for the contract and the one-view rules).
 *
 * Byte layouts read here (offsets from the signature; all little-endian):
 *
 *   local header (30 + n + x)      central header (46 + n + x + c)
 *    0 u32 0x04034b50               0 u32 0x02014b50        28 u16 name length n
 *    4 u16 version needed           4 u16 version made by   30 u16 extra length x
 *    6 u16 flags                    6 u16 version needed    32 u16 comment length c
 *    8 u16 method                   8 u16 flags             34 u16 disk number start
 *   10 u16 time, 12 u16 date       10 u16 method            36 u16 internal attributes
 *   14 u32 crc32                   12 u16 time, 14 date     38 u32 external attributes
 *   18 u32 compressed size         16 u32 crc32             42 u32 local header offset
 *   22 u32 uncompressed size       20 u32 compressed size   46 name, extra, comment
 *   26 u16 n, 28 u16 x             24 u32 uncompressed size
 *   30 name, extra
 *
 *   end record (22 + c)            zip64 locator (20)       zip64 end record (56 + ...)
 *    0 u32 0x06054b50               0 u32 0x07064b50         0 u32 0x06064b50
 *    4 u16 this disk                4 u32 disk of zip64 end  4 u64 size of the rest
 *    6 u16 disk of central dir      8 u64 zip64 end offset  12 u16 made by, 14 needed
 *    8 u16 entries on this disk    16 u32 total disks       16 u32 this disk
 *   10 u16 entries total                                    20 u32 disk of central dir
 *   12 u32 central directory size                           24 u64 entries on this disk
 *   16 u32 central directory offset                         32 u64 entries total
 *   20 u16 comment length c                                 40 u64 central dir size
 *   22 comment                                              48 u64 central dir offset
 *
 *   extra field: u16 id, u16 size, data; ZIP64 (id 1): u64 uncompressed, u64 compressed,
 *   u64 local offset, u32 disk, each present only when its header field is all ones.
 *   data descriptor (flag bit 3): [u32 0x08074b50] u32 crc, u32|u64 compressed, same
 *   uncompressed. */
#define ZLIB_CONST
#include "formats/zip.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/map.h"
#include "libconvert/rd.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END     0x06054b50u
#define SIG_END64   0x06064b50u
#define SIG_LOC64   0x07064b50u
#define SIG_DESC    0x08074b50u
#define END_MIN     22u
#define END_SCAN    (END_MIN + 0xffffu) /* record plus the longest comment */
#define CEN_MIN     46u
#define LOC_MIN     30u
#define LOC_MAX     (LOC_MIN + 2u * 0xffffu)   /* with the longest name and extra */
#define LOC_NAME_GUESS 226u                     /* read with the fixed part at once */
#define FLAG_ENCRYPTED 0x0001u
#define FLAG_DESCRIPTOR 0x0008u
#define FLAG_STRONG 0x0040u
#define FLAG_MASKED 0x2000u
#define CHUNK (1u << 30)     /* zlib counts in uInt */
#define INBUF (256u << 10)   /* compressed bytes per pread */
/* Inflated bytes kept behind each cached stream's position. Writers read an entry on
 * several threads, so requests arrive a few chunks out of order; without this each
 * late one would restart inflating from the entry's start (2 threads on an 850 MB
 * DEFLATE checkpoint: 69 s instead of 5.5 s). At most NSTREAM x HIST = 32 MiB. */
#define HIST ((uint64_t)8 << 20)
/* Streams kept at once: workers finishing one tensor while others start the next read
 * two or three entries at a time (one stream made each switch restart the other). */
#define NSTREAM 4

/* File offsets of the central fields an error may point at. */
typedef struct fields {
    uint64_t crc, csize, usize, lho, name;
} fields;

/* One cached DEFLATE stream of an entry, and the bytes it made last. */
typedef struct stream {
    lc_zip_reader  *rd;        /* or NULL */
    const lc_zip_entry *e;     /* the entry it reads */
    uint8_t        *hist;      /* its last HIST output bytes, a ring by offset */
    uint64_t        hist_len;  /* of them valid, ending at the stream's position */
    uint64_t        used;      /* when last used, for eviction */
} stream;

typedef struct cache {
    pthread_mutex_t mu;
    stream          s[NSTREAM];
    uint64_t        tick;
    uint8_t        *skip;  /* scratch for skipped bytes */
} cache;

struct lc_zip {
    const uint8_t *base;
    uint64_t       size;
    lc_map        *map;    /* owned when opened by path */
    int            fd;     /* the file base maps, or -1: local headers are pread from it */
    uint8_t       *loc;    /* scratch for one local header read with pread */
    size_t         n;
    lc_zip_entry  *ents;
    fields        *at;
    const lc_zip_entry **by_name; /* entries sorted by name, for lc_zip_find */
    char          *names;
    cache         *cache;
};

struct lc_zip_reader {
    const lc_zip       *z;
    const lc_zip_entry *e;
    const fields       *at;
    z_stream zs;
    bool     zinit, stream_end, done;
    lc_code  failed;
    uint64_t in_pos;  /* compressed bytes handed to zlib */
    uint8_t *in;      /* INBUF bytes of input read with pread, when the archive has a file */
    uint64_t out_pos; /* bytes produced */
    uLong    crc;
};

/* ---- small helpers ---- */

/* Whether e's CRC-32 is to be checked. torch.save with torch.utils.serialization.config
 * .save.compute_crc32 = False (torch 2.7 and later) writes 0 for every entry, and
 * torch.load reads such files: a 0 on an entry with data means "not computed" (the one
 * entry in 2^32 whose CRC really is 0 goes unchecked). An empty entry's CRC is 0 anyway. */
static bool crc_given(const lc_zip_entry *e) { return e->crc32 != 0; }

static uint32_t crc_update(uLong crc, const uint8_t *p, uint64_t n) {
    while (n > 0) {
        uInt k = n > CHUNK ? CHUNK : (uInt)n;
        crc = crc32(crc, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)crc;
}

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF); returns the
 * length of the sequence at s, or 0 when it is invalid. */
static size_t utf8_seq(const uint8_t *s, size_t left) {
    uint8_t c = s[0], lo = 0x80, hi = 0xbf;
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else
        return 0;
    if (left < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* A name must be safe to use as a relative path on any system and print as itself. */
static lc_code check_name(const uint8_t *s, size_t n, uint64_t at, lc_error *err) {
    if (n == 0)
        return lc_fail(err, LC_E_MALFORMED, at, "entry name is empty");
    if (s[0] == '/')
        return lc_fail(err, LC_E_MALFORMED, at, "entry name is an absolute path");
    if (n >= 2 && s[1] == ':')
        return lc_fail(err, LC_E_MALFORMED, at, "entry name starts with a drive letter");
    size_t comp = 0; /* start of the current path component */
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x20 || c == 0x7f)
            return lc_fail(err, LC_E_MALFORMED, at + i,
                           "entry name has control byte 0x%02x at %zu", c, i);
        if (c == '\\')
            return lc_fail(err, LC_E_MALFORMED, at + i, "entry name has a backslash at %zu", i);
        size_t k = utf8_seq(s + i, n - i);
        if (k == 0)
            return lc_fail(err, LC_E_MALFORMED, at + i, "entry name is not valid utf-8 at %zu",
                           i);
        i += k;
        if (i == n || s[i] == '/') {
            if (i - comp == 2 && s[comp] == '.' && s[comp + 1] == '.')
                return lc_fail(err, LC_E_MALFORMED, at + comp,
                               "entry name has a \"..\" component");
            comp = i + 1;
        }
    }
    return LC_OK;
}

/* Walks the extra fields of one header; they must tile [p, p + len) exactly. Sets
 * *z64 to the data of the ZIP64 field (or NULL) and *z64len to its size. */
static lc_code scan_extra(const uint8_t *p, uint64_t len, uint64_t at, const uint8_t **z64,
                          uint64_t *z64len, uint64_t *z64at, lc_error *err) {
    *z64 = NULL;
    *z64len = 0;
    *z64at = at;
    uint64_t i = 0;
    while (i < len) {
        if (len - i < 4)
            return lc_fail(err, LC_E_MALFORMED, at + i,
                           "extra field has %" PRIu64 " stray bytes at its end", len - i);
        uint16_t id = lc_load_le16(p + i), sz = lc_load_le16(p + i + 2);
        if (sz > len - i - 4)
            return lc_fail(err, LC_E_TRUNCATED, at + i + 2,
                           "extra field 0x%04x of %u bytes runs past the %" PRIu64
                           " extra bytes", id, sz, len);
        if (id == 1) {
            if (*z64)
                return lc_fail(err, LC_E_MALFORMED, at + i, "two zip64 extra fields");
            *z64 = p + i + 4;
            *z64len = sz;
            *z64at = at + i + 4;
        }
        i += 4 + (uint64_t)sz;
    }
    return LC_OK;
}

/* Replaces each all-ones value in vals[0..3] (u64 except vals[3], a u32 disk) with the
 * next value of the ZIP64 field, in the APPNOTE order. */
static lc_code apply_zip64(uint64_t vals[4], const uint8_t *z64, uint64_t z64len,
                           uint64_t z64at, uint64_t field_at, lc_error *err) {
    static const uint64_t sentinel[4] = { 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffu };
    uint64_t pos = 0;
    for (int k = 0; k < 4; k++) {
        if (vals[k] != sentinel[k])
            continue;
        uint64_t w = k == 3 ? 4 : 8;
        if (!z64)
            return lc_fail(err, LC_E_MALFORMED, field_at,
                           "a header field is all ones but there is no zip64 extra field");
        if (z64len - pos < w)
            return lc_fail(err, LC_E_TRUNCATED, z64at + pos,
                           "zip64 extra field of %" PRIu64 " bytes lacks a value", z64len);
        vals[k] = w == 8 ? lc_load_le64(z64 + pos) : lc_load_le32(z64 + pos);
        pos += w;
    }
    return LC_OK;
}

/* ---- end records ---- */

typedef struct dir {
    uint64_t count, cd_size, cd_off, cd_end;
    uint64_t count_at, size_at, off_at; /* offsets of the fields, for errors */
} dir;

/* The zip64 locator sits right before the end record; the zip64 end record right
 * before the locator. Its values override the end record's all-ones fields, and any
 * field that is not all ones must agree with it. */
static lc_code read_end64(const uint8_t *b, uint64_t loc, dir *d, lc_error *err) {
    if (lc_load_le32(b + loc + 4) != 0 || lc_load_le32(b + loc + 16) > 1)
        return lc_fail(err, LC_E_UNSUPPORTED, loc + 4, "zip64 locator names disk %" PRIu32
                       " of %" PRIu32 "; multi-disk archives are not supported",
                       lc_load_le32(b + loc + 4), lc_load_le32(b + loc + 16));
    uint64_t at = lc_load_le64(b + loc + 8);
    if (at > loc || loc - at < 56)
        return lc_fail(err, LC_E_MALFORMED, loc + 8,
                       "zip64 end record offset %" PRIu64 " leaves no room before the "
                       "locator at %" PRIu64, at, loc);
    if (lc_load_le32(b + at) != SIG_END64)
        return lc_fail(err, LC_E_MALFORMED, at, "no zip64 end record signature at %" PRIu64, at);
    uint64_t rest = lc_load_le64(b + at + 4);
    if (rest < 44 || rest != loc - at - 12)
        return lc_fail(err, LC_E_MALFORMED, at + 4,
                       "zip64 end record size %" PRIu64 " does not reach the locator", rest);
    if (lc_load_le32(b + at + 16) != 0 || lc_load_le32(b + at + 20) != 0)
        return lc_fail(err, LC_E_UNSUPPORTED, at + 16,
                       "zip64 end record is on a later disk; multi-disk archives are not "
                       "supported");
    uint64_t on_disk = lc_load_le64(b + at + 24), count = lc_load_le64(b + at + 32);
    if (on_disk != count)
        return lc_fail(err, LC_E_UNSUPPORTED, at + 24,
                       "%" PRIu64 " of %" PRIu64 " entries on this disk; multi-disk archives "
                       "are not supported", on_disk, count);
    const uint64_t v64[3] = { count, lc_load_le64(b + at + 40), lc_load_le64(b + at + 48) };
    const uint64_t v32[3] = { d->count, d->cd_size, d->cd_off };
    const uint64_t ones[3] = { 0xffffu, 0xffffffffu, 0xffffffffu };
    const uint64_t at32[3] = { d->count_at, d->size_at, d->off_at };
    static const char *const what[3] = { "entry count", "central directory size",
                                         "central directory offset" };
    for (int k = 0; k < 3; k++)
        if (v32[k] != ones[k] && v32[k] != v64[k])
            return lc_fail(err, LC_E_MALFORMED, at32[k],
                           "end record %s %" PRIu64 " disagrees with zip64 value %" PRIu64,
                           what[k], v32[k], v64[k]);
    d->count = v64[0];
    d->cd_size = v64[1];
    d->cd_off = v64[2];
    d->count_at = at + 32;
    d->size_at = at + 40;
    d->off_at = at + 48;
    d->cd_end = at;
    return LC_OK;
}

/* Finds the end record: the last signature in the final 65557 bytes, whose comment
 * must reach exactly to the end of the file (the choice every major reader makes, so
 * refusing a lying comment length leaves no second candidate to disagree about). */
static lc_code read_end(const uint8_t *b, uint64_t size, dir *d, lc_error *err) {
    if (size < END_MIN)
        return lc_fail(err, LC_E_TRUNCATED, 0,
                       "file of %" PRIu64 " bytes is shorter than an end record", size);
    uint64_t lo = size > END_SCAN ? size - END_SCAN : 0, end = size - END_MIN;
    for (;; end--) {
        if (lc_load_le32(b + end) == SIG_END)
            break;
        if (end == lo)
            return lc_fail(err, LC_E_MALFORMED, lo,
                           "no end-of-central-directory record in the last %" PRIu64 " bytes",
                           size - lo);
    }
    uint16_t clen = lc_load_le16(b + end + 20);
    if (clen != size - end - END_MIN)
        return lc_fail(err, LC_E_MALFORMED, end + 20,
                       "comment length %u disagrees with the %" PRIu64
                       " bytes after the end record", clen, size - end - END_MIN);
    uint16_t disk = lc_load_le16(b + end + 4), cd_disk = lc_load_le16(b + end + 6);
    uint16_t on_disk = lc_load_le16(b + end + 8);
    d->count = lc_load_le16(b + end + 10);
    d->cd_size = lc_load_le32(b + end + 12);
    d->cd_off = lc_load_le32(b + end + 16);
    d->count_at = end + 10;
    d->size_at = end + 12;
    d->off_at = end + 16;
    d->cd_end = end;
    if ((disk != 0 && disk != 0xffff) || (cd_disk != 0 && cd_disk != 0xffff))
        return lc_fail(err, LC_E_UNSUPPORTED, end + 4,
                       "end record is on disk %u, central directory on %u; multi-disk "
                       "archives are not supported", disk, cd_disk);
    if (on_disk != d->count)
        return lc_fail(err, LC_E_UNSUPPORTED, end + 8,
                       "%u of %" PRIu64 " entries on this disk; multi-disk archives are not "
                       "supported", on_disk, d->count);
    if (end >= 20 && lc_load_le32(b + end - 20) == SIG_LOC64)
        LC_TRY(read_end64(b, end - 20, d, err));
    uint64_t cd_stop;
    if (lc_add_u64(d->cd_off, d->cd_size, &cd_stop) || cd_stop > d->cd_end)
        return lc_fail(err, LC_E_TRUNCATED, d->size_at,
                       "central directory of %" PRIu64 " bytes at %" PRIu64
                       " runs past the end records at %" PRIu64,
                       d->cd_size, d->cd_off, d->cd_end);
    if (cd_stop != d->cd_end)
        return lc_fail(err, LC_E_MALFORMED, d->size_at,
                       "central directory ends at %" PRIu64 ", %" PRIu64
                       " bytes before the end records", cd_stop, d->cd_end - cd_stop);
    /* Before anything is allocated from the count: each header takes 46 bytes. */
    if (d->count > d->cd_size / CEN_MIN)
        return lc_fail(err, LC_E_MALFORMED, d->count_at,
                       "%" PRIu64 " entries cannot fit in a central directory of %" PRIu64
                       " bytes", d->count, d->cd_size);
    return LC_OK;
}

/* ---- central directory ---- */

static lc_code read_central(lc_zip *z, lc_rd *r, size_t i, char **name_out, lc_error *err) {
    lc_zip_entry *e = &z->ents[i];
    fields *f = &z->at[i];
    const uint64_t at = lc_rd_at(r);
    const uint8_t *h;
    LC_TRY(lc_rd_bytes(r, CEN_MIN, &h, "central directory header"));
    if (lc_load_le32(h) != SIG_CENTRAL)
        return lc_fail(err, LC_E_MALFORMED, at,
                       "central directory entry %zu has signature 0x%08" PRIx32, i,
                       lc_load_le32(h));
    e->flags = lc_load_le16(h + 8);
    e->method = lc_load_le16(h + 10);
    e->crc32 = lc_load_le32(h + 16);
    uint16_t nlen = lc_load_le16(h + 28), xlen = lc_load_le16(h + 30);
    uint16_t clen = lc_load_le16(h + 32);
    f->crc = at + 16;
    f->csize = at + 20;
    f->usize = at + 24;
    f->lho = at + 42;
    f->name = at + CEN_MIN;
    if ((uint64_t)nlen + xlen + clen > lc_rd_left(r))
        return lc_fail(err, LC_E_TRUNCATED, at + 28,
                       "name, extra and comment of %u bytes run past the central directory",
                       nlen + xlen + clen);
    const uint8_t *name, *extra;
    LC_TRY(lc_rd_bytes(r, nlen, &name, "entry name"));
    LC_TRY(lc_rd_bytes(r, xlen, &extra, "extra field"));
    const uint8_t *comment;
    LC_TRY(lc_rd_bytes(r, clen, &comment, "entry comment"));
    LC_TRY(check_name(name, nlen, f->name, err));
    memcpy(*name_out, name, nlen);
    (*name_out)[nlen] = '\0';
    e->name = *name_out;
    *name_out += nlen + 1;
    /* From here on errors name the entry. */
    lc_code rc = LC_OK;
    if (e->flags & (FLAG_ENCRYPTED | FLAG_STRONG | FLAG_MASKED)) {
        rc = lc_fail(err, LC_E_UNSUPPORTED, at + 8, "entry is encrypted (flags 0x%04x)",
                     e->flags);
        goto done;
    }
    if (e->method != LC_ZIP_STORED && e->method != LC_ZIP_DEFLATE) {
        rc = lc_fail(err, LC_E_UNSUPPORTED, at + 10,
                     "compression method %u (only 0 stored and 8 deflate)", e->method);
        goto done;
    }
    const uint8_t *z64;
    uint64_t z64len, z64at;
    if ((rc = scan_extra(extra, xlen, at + CEN_MIN + nlen, &z64, &z64len, &z64at, err)))
        goto done;
    uint64_t v[4] = { lc_load_le32(h + 24), lc_load_le32(h + 20), lc_load_le32(h + 42),
                      lc_load_le16(h + 34) };
    if ((rc = apply_zip64(v, z64, z64len, z64at, at + 20, err)))
        goto done;
    e->size = v[0];
    e->comp_size = v[1];
    e->header_offset = v[2];
    if (v[3] != 0) {
        rc = lc_fail(err, LC_E_UNSUPPORTED, at + 34,
                     "entry starts on disk %" PRIu64 "; multi-disk archives are not supported",
                     v[3]);
        goto done;
    }
    if (e->method == LC_ZIP_STORED && e->size != e->comp_size) {
        rc = lc_fail(err, LC_E_MALFORMED, f->csize,
                     "stored entry has compressed size %" PRIu64 " but size %" PRIu64,
                     e->comp_size, e->size);
        goto done;
    }
    uint64_t most;
    if (e->method == LC_ZIP_DEFLATE && !lc_mul_u64(e->comp_size, LC_ZIP_MAX_RATIO, &most) &&
        e->size > most) {
        rc = lc_fail(err, LC_E_MALFORMED, f->usize,
                     "declares %" PRIu64 " bytes from %" PRIu64
                     " compressed, more than deflate can produce", e->size, e->comp_size);
        goto done;
    }
done:
    lc_err_context(err, NULL, e->name);
    return rc;
}

/* ---- local headers ---- */

/* Reads a data descriptor at p: [sig] crc, then 4- or 8-byte sizes, each of which must
 * equal the central directory's. Returns its length, or 0 when none matches. */
static uint64_t match_descriptor(const uint8_t *p, uint64_t room, const lc_zip_entry *e) {
    for (int sig = 1; sig >= 0; sig--) {
        uint64_t s = sig ? 4 : 0;
        if (sig && (room < 4 || lc_load_le32(p) != SIG_DESC))
            continue;
        if (room - s >= 12 && lc_load_le32(p + s) == e->crc32 &&
            lc_load_le32(p + s + 4) == e->comp_size && lc_load_le32(p + s + 8) == e->size)
            return s + 12;
        if (room - s >= 20 && lc_load_le32(p + s) == e->crc32 &&
            lc_load_le64(p + s + 4) == e->comp_size && lc_load_le64(p + s + 12) == e->size)
            return s + 20;
    }
    return 0;
}

/* The first min(want, avail) bytes of the local header at `at` (avail bytes before
 * the central directory): in the map, or, when the archive knows its file, read with
 * pread into z->loc. Local headers lie all over the file, and with large folios each
 * touch of the map would put a whole folio, up to megabytes, into the RSS (with the
 * data descriptors below: 74 MiB for the 90 entries of a 1 GiB torch checkpoint,
 * 1.5 MiB without). *have is what *p holds. */
static lc_code local_bytes(lc_zip *z, uint64_t at, uint64_t avail, uint64_t want,
                           const uint8_t **p, uint64_t *have, lc_error *err) {
    if (z->fd < 0) {
        *p = z->base + at;
        *have = avail;
        return LC_OK;
    }
    const size_t n = (size_t)(avail < want ? avail : want);   /* want <= LOC_MAX */
    if (!z->loc && !(z->loc = lc_malloc(LOC_MAX)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    LC_TRY(lc_pread_all(z->fd, at, z->loc, n, err));
    *p = z->loc;
    *have = n;
    return LC_OK;
}

/* Checks entry e's local header at e->header_offset == *pos against the central one,
 * sets data_offset and advances *pos past the data and any descriptor. */
static lc_code read_local(lc_zip *z, size_t i, uint64_t cd_off, uint64_t *pos,
                          const uint8_t *cname, lc_error *err) {
    lc_zip_entry *e = &z->ents[i];
    const fields *f = &z->at[i];
    const uint64_t at = e->header_offset;
    if (at != *pos)
        return lc_fail(err, LC_E_MALFORMED, f->lho,
                       "entry starts at %" PRIu64 " but the previous one ends at %" PRIu64
                       " (%s)", at, *pos, at < *pos ? "overlap" : "gap");
    const uint64_t avail = cd_off - at;
    const uint8_t *p;
    uint64_t have;
    LC_TRY(local_bytes(z, at, avail, LOC_MIN + LOC_NAME_GUESS, &p, &have, err));
    lc_rd r = lc_rd_init(p, have, at, err);
    const uint8_t *h, *name, *extra;
    LC_TRY(lc_rd_bytes(&r, LOC_MIN, &h, "local header"));
    if (lc_load_le32(h) != SIG_LOCAL)
        return lc_fail(err, LC_E_MALFORMED, at, "local header has signature 0x%08" PRIx32,
                       lc_load_le32(h));
    if (lc_load_le16(h + 6) != e->flags)
        return lc_fail(err, LC_E_MALFORMED, at + 6,
                       "local flags 0x%04x differ from central 0x%04x", lc_load_le16(h + 6),
                       e->flags);
    if (lc_load_le16(h + 8) != e->method)
        return lc_fail(err, LC_E_MALFORMED, at + 8, "local method %u differs from central %u",
                       lc_load_le16(h + 8), e->method);
    uint16_t nlen = lc_load_le16(h + 26), xlen = lc_load_le16(h + 28);
    if (nlen != strlen(e->name))
        return lc_fail(err, LC_E_MALFORMED, at + 26,
                       "local name length %u differs from central %zu", nlen, strlen(e->name));
    if ((uint64_t)nlen + xlen > avail - LOC_MIN)
        return lc_fail(err, LC_E_TRUNCATED, at + 26,
                       "local name and extra of %u bytes run into the central directory",
                       nlen + xlen);
    if (LOC_MIN + (uint64_t)nlen + xlen > have) {   /* a long name or extra: read it all */
        LC_TRY(local_bytes(z, at, avail, LOC_MIN + (uint64_t)nlen + xlen, &p, &have, err));
        r = lc_rd_init(p, have, at, err);
        LC_TRY(lc_rd_bytes(&r, LOC_MIN, &h, "local header"));
    }
    LC_TRY(lc_rd_bytes(&r, nlen, &name, "local name"));
    LC_TRY(lc_rd_bytes(&r, xlen, &extra, "local extra"));
    if (memcmp(name, cname, nlen) != 0)
        return lc_fail(err, LC_E_MALFORMED, at + LOC_MIN, "local name differs from central");
    const uint8_t *z64;
    uint64_t z64len, z64at;
    LC_TRY(scan_extra(extra, xlen, at + LOC_MIN + nlen, &z64, &z64len, &z64at, err));
    uint64_t v[4] = { lc_load_le32(h + 22), lc_load_le32(h + 18), 0, 0 };
    LC_TRY(apply_zip64(v, z64, z64len, z64at, at + 18, err));
    /* With a data descriptor the local values may be zero; nonzero ones must agree. */
    const bool desc = e->flags & FLAG_DESCRIPTOR;
    const uint64_t local[3] = { lc_load_le32(h + 14), v[1], v[0] };
    const uint64_t central[3] = { e->crc32, e->comp_size, e->size };
    const uint64_t field[3] = { at + 14, at + 18, at + 22 };
    static const char *const what[3] = { "crc32", "compressed size", "size" };
    for (int k = 0; k < 3; k++)
        if (local[k] != central[k] && !(desc && local[k] == 0))
            return lc_fail(err, LC_E_MALFORMED, field[k],
                           "local %s %" PRIu64 " differs from central %" PRIu64, what[k],
                           local[k], central[k]);
    e->data_offset = at + LOC_MIN + nlen + xlen;
    uint64_t end;
    if (lc_add_u64(e->data_offset, e->comp_size, &end) || end > z->size)
        return lc_fail(err, LC_E_TRUNCATED, f->csize,
                       "%" PRIu64 " bytes of data at %" PRIu64 " run past the end of the file",
                       e->comp_size, e->data_offset);
    if (end > cd_off)
        return lc_fail(err, LC_E_MALFORMED, f->csize,
                       "%" PRIu64 " bytes of data at %" PRIu64
                       " run into the central directory at %" PRIu64,
                       e->comp_size, e->data_offset, cd_off);
    if (desc) {
        /* The descriptor follows the data: read it like the header, not from the map. */
        const uint8_t *dp = z->base + end;
        uint64_t room = cd_off - end;
        uint8_t dbuf[24];
        if (z->fd >= 0) {
            room = room < sizeof dbuf ? room : sizeof dbuf;
            LC_TRY(lc_pread_all(z->fd, end, dbuf, (size_t)room, err));
            dp = dbuf;
        }
        uint64_t n = match_descriptor(dp, room, e);
        if (n == 0)
            return lc_fail(err, LC_E_MALFORMED, end,
                           "no data descriptor matching the central crc and sizes");
        end += n;
    }
    *pos = end;
    return LC_OK;
}

/* ---- open and close ---- */

/* qsort over pointers to entries, so the comparators need no context. */
static int by_name(const void *a, const void *b) {
    return strcmp((*(const lc_zip_entry *const *)a)->name, (*(const lc_zip_entry *const *)b)->name);
}
static int by_offset(const void *a, const void *b) {
    uint64_t x = (*(const lc_zip_entry *const *)a)->header_offset;
    uint64_t y = (*(const lc_zip_entry *const *)b)->header_offset;
    return (x > y) - (x < y);
}

static lc_code parse(lc_zip *z, lc_error *err) {
    dir d = {0};
    const lc_zip_entry **order = NULL;
    lc_code rc;
    LC_TRY(read_end(z->base, z->size, &d, err));
    z->n = (size_t)d.count; /* <= size / 46, so it fits */
    z->ents = lc_calloc(z->n ? z->n : 1, sizeof *z->ents);
    z->at = lc_calloc(z->n ? z->n : 1, sizeof *z->at);
    z->by_name = lc_calloc(z->n ? z->n : 1, sizeof *z->by_name);
    order = lc_calloc(z->n ? z->n : 1, sizeof *order);
    /* Names plus their NULs fit in the directory: each header has >= 46 other bytes. */
    z->names = lc_malloc(d.cd_size ? d.cd_size : 1);
    z->cache = lc_calloc(1, sizeof *z->cache);
    if (!z->ents || !z->at || !z->by_name || !order || !z->names || !z->cache) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu entries", z->n);
        goto done;
    }
    if (pthread_mutex_init(&z->cache->mu, NULL) != 0) {
        lc_free(z->cache);
        z->cache = NULL;
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot create a mutex");
        goto done;
    }
    lc_rd r = lc_rd_init(z->base + d.cd_off, d.cd_size, d.cd_off, err);
    char *np = z->names;
    for (size_t i = 0; i < z->n; i++)
        if ((rc = read_central(z, &r, i, &np, err)))
            goto done;
    if (lc_rd_left(&r) != 0) {
        rc = lc_fail(err, LC_E_MALFORMED, d.count_at,
                     "central directory has %" PRIu64 " bytes after its %zu entries",
                     lc_rd_left(&r), z->n);
        goto done;
    }
    for (size_t i = 0; i < z->n; i++)
        z->by_name[i] = order[i] = &z->ents[i];
    qsort(z->by_name, z->n, sizeof *z->by_name, by_name);
    for (size_t i = 1; i < z->n; i++) {
        const lc_zip_entry *a = z->by_name[i - 1], *b = z->by_name[i];
        if (strcmp(a->name, b->name) == 0) {
            const lc_zip_entry *later = a > b ? a : b;
            rc = lc_fail(err, LC_E_MALFORMED, z->at[later - z->ents].name,
                         "duplicate entry name");
            lc_err_context(err, NULL, a->name);
            goto done;
        }
    }
    /* Entries must tile [0, cd_off): walk them in file order. */
    qsort(order, z->n, sizeof *order, by_offset);
    uint64_t pos = 0;
    for (size_t k = 0; k < z->n; k++) {
        size_t i = (size_t)(order[k] - z->ents);
        const uint8_t *cname = z->base + z->at[i].name;
        if ((rc = read_local(z, i, d.cd_off, &pos, cname, err))) {
            lc_err_context(err, NULL, z->ents[i].name);
            goto done;
        }
    }
    if (pos != d.cd_off) {
        rc = lc_fail(err, LC_E_MALFORMED, d.off_at,
                     "%" PRIu64 " bytes between the last entry and the central directory",
                     d.cd_off - pos);
        goto done;
    }
    rc = LC_OK;
done:
    lc_free(order);
    return rc;
}

lc_code lc_zip_open_mem(const uint8_t *buf, uint64_t size, lc_zip **out, lc_error *err) {
    return lc_zip_open_file_mem(buf, size, -1, out, err);
}

lc_code lc_zip_open_file_mem(const uint8_t *buf, uint64_t size, int fd, lc_zip **out,
                             lc_error *err) {
    lc_code rc;
    *out = NULL;
    lc_zip *z = lc_calloc(1, sizeof *z);
    if (!z)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    z->base = buf;
    z->size = size;
    z->fd = fd;
    if ((rc = parse(z, err)) != LC_OK)
        goto done;
    *out = z;
    z = NULL;
done:
    lc_zip_close(z);
    return rc;
}

lc_code lc_zip_open(const char *path, lc_zip **out, lc_error *err) {
    lc_map *m = NULL;
    lc_code rc;
    *out = NULL;
    if ((rc = lc_map_open(path, &m, err)) == LC_OK) {
        if ((rc = lc_zip_open_file_mem(m->data, m->size, m->fd, out, err)) == LC_OK)
            (*out)->map = m;
        else
            lc_map_close(m);
    }
    lc_err_context(err, path, NULL);
    return rc;
}

void lc_zip_close(lc_zip *z) {
    if (!z)
        return;
    if (z->cache) {
        for (int i = 0; i < NSTREAM; i++) {
            lc_zip_reader_close(z->cache->s[i].rd);
            lc_free(z->cache->s[i].hist);
        }
        lc_free(z->cache->skip);
        pthread_mutex_destroy(&z->cache->mu);
        lc_free(z->cache);
    }
    lc_free(z->ents);
    lc_free(z->at);
    lc_free(z->by_name);
    lc_free(z->names);
    lc_free(z->loc);
    lc_map_close(z->map);
    lc_free(z);
}

void lc_zip_close_void(void *z) { lc_zip_close(z); }

/* ---- entries ---- */

size_t lc_zip_count(const lc_zip *z) { return z->n; }

const lc_zip_entry *lc_zip_entry_at(const lc_zip *z, size_t i) {
    return i < z->n ? &z->ents[i] : NULL;
}

const lc_zip_entry *lc_zip_find(const lc_zip *z, const char *name) {
    size_t lo = 0, hi = z->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(z->by_name[mid]->name, name);
        if (c == 0)
            return z->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The central field offsets of e, or NULL when e is not one of z's entries. */
static const fields *fields_of(const lc_zip *z, const lc_zip_entry *e) {
    if (!e || e < z->ents || e >= z->ents + z->n)
        return NULL;
    return &z->at[e - z->ents];
}

const uint8_t *lc_zip_entry_view(const lc_zip *z, const lc_zip_entry *e) {
    if (!fields_of(z, e) || e->method != LC_ZIP_STORED)
        return NULL;
    return z->base + e->data_offset;
}

/* ---- reading ---- */

lc_code lc_zip_reader_open(const lc_zip *z, const lc_zip_entry *e, lc_zip_reader **out,
                           lc_error *err) {
    *out = NULL;
    const fields *f = fields_of(z, e);
    if (!f)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "entry does not belong to this archive");
    lc_zip_reader *rd = lc_calloc(1, sizeof *rd);
    if (!rd)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    rd->z = z;
    rd->e = e;
    rd->at = f;
    rd->crc = crc32(0, Z_NULL, 0);
    if (e->method == LC_ZIP_DEFLATE) {
        /* -15: raw deflate, 32 KiB window, no zlib header or trailer. */
        int zr = inflateInit2(&rd->zs, -15);
        if (zr != Z_OK) {
            lc_free(rd);
            return lc_fail(err, zr == Z_MEM_ERROR ? LC_E_NOMEM : LC_E_IO, LC_NO_OFFSET,
                           "inflateInit2 failed (%d)", zr);
        }
        rd->zinit = true;
    }
    *out = rd;
    return LC_OK;
}

void lc_zip_reader_close(lc_zip_reader *rd) {
    if (!rd)
        return;
    if (rd->zinit)
        inflateEnd(&rd->zs);
    lc_free(rd->in);
    lc_free(rd);
}

uint64_t lc_zip_reader_tell(const lc_zip_reader *rd) { return rd->out_pos; }

/* Records a failure with the entry name; the reader stays failed (errors are sticky). */
__attribute__((format(printf, 5, 6)))
static lc_code reader_fail(lc_zip_reader *rd, lc_error *err, lc_code code, uint64_t off,
                           const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rd->failed = code;
    lc_fail(err, code, off, "%s", msg);
    lc_err_context(err, NULL, rd->e->name);
    return code;
}

/* Hands zlib the next piece of the entry's compressed bytes when it has none: from
 * the map, or, when the archive knows its file, read with pread into rd->in so that
 * the compressed bytes never join our RSS as mapped pages (an 850 MB DEFLATE
 * checkpoint peaked at 829 MiB through the map). */
static lc_code feed(lc_zip_reader *rd, lc_error *err) {
    if (rd->zs.avail_in != 0 || rd->in_pos >= rd->e->comp_size)
        return LC_OK;
    const uint64_t n = rd->e->comp_size - rd->in_pos, at = rd->e->data_offset + rd->in_pos;
    if (rd->z->fd < 0) {
        rd->zs.next_in = rd->z->base + at;
        rd->zs.avail_in = n > CHUNK ? CHUNK : (uInt)n;
    } else {
        if (!rd->in && !(rd->in = lc_malloc(INBUF)))
            return reader_fail(rd, err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        const size_t k = n > INBUF ? INBUF : (size_t)n;
        lc_error e = { 0 };
        if (lc_pread_all(rd->z->fd, at, rd->in, k, &e) != LC_OK)
            return reader_fail(rd, err, e.code, e.offset, "%s", e.msg);
        rd->zs.next_in = rd->in;
        rd->zs.avail_in = (uInt)k;
    }
    rd->in_pos += rd->zs.avail_in;
    return LC_OK;
}

static uint64_t consumed(const lc_zip_reader *rd) { return rd->in_pos - rd->zs.avail_in; }

/* One inflate step into dst[0, n); returns the bytes made or sets rd->failed. */
static size_t inflate_step(lc_zip_reader *rd, uint8_t *dst, size_t n, lc_error *err) {
    if (feed(rd, err) != LC_OK)
        return 0;
    rd->zs.next_out = dst;
    rd->zs.avail_out = n > CHUNK ? CHUNK : (uInt)n;
    uInt before = rd->zs.avail_out;
    int zr = inflate(&rd->zs, Z_NO_FLUSH);
    size_t made = before - rd->zs.avail_out;
    if (zr == Z_STREAM_END)
        rd->stream_end = true;
    else if (zr == Z_BUF_ERROR) /* no progress: all input used, no end yet */
        reader_fail(rd, err, LC_E_MALFORMED, rd->e->data_offset + rd->e->comp_size,
                    "deflate stream is cut short: %" PRIu64 " compressed bytes give %" PRIu64
                    " bytes and no end", rd->e->comp_size, rd->out_pos + made);
    else if (zr == Z_MEM_ERROR)
        reader_fail(rd, err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory in inflate after %" PRIu64
                    " of %" PRIu64 " bytes", rd->out_pos, rd->e->size);
    else if (zr != Z_OK)
        reader_fail(rd, err, LC_E_MALFORMED, rd->e->data_offset + consumed(rd),
                    "corrupt deflate data after %" PRIu64 " compressed bytes (%" PRIu64
                    " bytes made)", consumed(rd), rd->out_pos + made);
    return made;
}

/* Runs once the declared size has been produced: the stream must end here, use every
 * compressed byte, and match the CRC. */
static lc_code finish(lc_zip_reader *rd, lc_error *err) {
    const lc_zip_entry *e = rd->e;
    if (rd->zinit) {
        uint8_t extra;
        while (!rd->stream_end && !rd->failed) {
            if (inflate_step(rd, &extra, 1, err) != 0)
                return reader_fail(rd, err, LC_E_MALFORMED, rd->at->usize,
                                   "deflate stream makes more than the declared %" PRIu64
                                   " bytes", e->size);
        }
        if (rd->failed)
            return rd->failed;
        if (consumed(rd) != e->comp_size)
            return reader_fail(rd, err, LC_E_MALFORMED, e->data_offset + consumed(rd),
                               "deflate stream ends after %" PRIu64 " of %" PRIu64
                               " compressed bytes", consumed(rd), e->comp_size);
    }
    if (crc_given(e) && (uint32_t)rd->crc != e->crc32)
        return reader_fail(rd, err, LC_E_MALFORMED, rd->at->crc,
                           "crc32 of the data is 0x%08" PRIx32 ", header says 0x%08" PRIx32,
                           (uint32_t)rd->crc, e->crc32);
    rd->done = true;
    return LC_OK;
}

lc_code lc_zip_reader_read(lc_zip_reader *rd, void *dst, size_t len, size_t *got,
                           lc_error *err) {
    const lc_zip_entry *e = rd->e;
    uint8_t *out = dst;
    *got = 0;
    if (rd->failed)
        return reader_fail(rd, err, rd->failed, LC_NO_OFFSET, "reader failed before (%" PRIu64
                           " of %" PRIu64 " bytes read)", rd->out_pos, e->size);
    while (*got < len && rd->out_pos < e->size) {
        uint64_t want = e->size - rd->out_pos;
        if (want > len - *got)
            want = len - *got;
        size_t made;
        if (!rd->zinit) {
            made = (size_t)want;
            memcpy(out + *got, rd->z->base + e->data_offset + rd->out_pos, made);
        } else {
            made = inflate_step(rd, out + *got, (size_t)want, err);
            if (rd->failed)
                return rd->failed;
            if (rd->stream_end && rd->out_pos + made < e->size)
                return reader_fail(rd, err, LC_E_MALFORMED, rd->at->usize,
                                   "deflate stream ends after %" PRIu64 " bytes, %" PRIu64
                                   " declared", rd->out_pos + made, e->size);
        }
        if (crc_given(e))
            rd->crc = crc_update(rd->crc, out + *got, made);
        rd->out_pos += made;
        *got += made;
    }
    if (rd->out_pos == e->size && !rd->done)
        LC_TRY(finish(rd, err));
    return LC_OK;
}

lc_code lc_zip_entry_read_all(const lc_zip *z, const lc_zip_entry *e, uint64_t max_bytes,
                              uint8_t **buf, size_t *len, lc_error *err) {
    *buf = NULL;
    *len = 0;
    const fields *f = fields_of(z, e);
    if (!f)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "entry does not belong to this archive");
    if (e->size > max_bytes || e->size >= SIZE_MAX) {
        lc_fail(err, LC_E_OVERFLOW, f->usize, "entry of %" PRIu64 " bytes passes the limit of %"
                PRIu64, e->size, max_bytes);
        lc_err_context(err, NULL, e->name);
        return LC_E_OVERFLOW;
    }
    lc_zip_reader *rd = NULL;
    uint8_t *b = lc_malloc((size_t)e->size + 1);
    size_t got = 0;
    lc_code rc;
    if (!b) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " bytes",
                     e->size);
        goto done;
    }
    if ((rc = lc_zip_reader_open(z, e, &rd, err)) != LC_OK)
        goto done;
    if ((rc = lc_zip_reader_read(rd, b, (size_t)e->size, &got, err)) != LC_OK)
        goto done;
    /* A zero-length read still ran finish(): an empty entry's stream is checked too. */
    b[got] = 0;
    *buf = b;
    *len = got;
    b = NULL;
done:
    lc_zip_reader_close(rd);
    lc_free(b);
    lc_err_context(err, NULL, e->name);
    return rc;
}

lc_code lc_zip_entry_verify_crc(const lc_zip *z, const lc_zip_entry *e, lc_error *err) {
    const fields *f = fields_of(z, e);
    if (!f)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "entry does not belong to this archive");
    if (e->method == LC_ZIP_STORED) {
        if (!crc_given(e))
            return LC_OK;                         /* nothing else to check in stored bytes */
        uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);
        if (z->fd < 0) {
            crc = crc_update(crc, z->base + e->data_offset, e->size);
        } else {
            /* Streamed through one buffer with pread: the map's pages stay out of this
             * process's resident set, as on the pread and kernel-copy paths. */
            uint8_t *buf = lc_malloc(INBUF);
            if (!buf)
                return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            lc_code rc = LC_OK;
            for (uint64_t at = 0; rc == LC_OK && at < e->size; at += INBUF) {
                const size_t k = e->size - at < INBUF ? (size_t)(e->size - at) : INBUF;
                if ((rc = lc_pread_all(z->fd, e->data_offset + at, buf, k, err)) == LC_OK)
                    crc = crc_update(crc, buf, k);
            }
            lc_free(buf);
            if (rc != LC_OK) {
                lc_err_context(err, NULL, e->name);
                return rc;
            }
        }
        if (crc != e->crc32) {
            lc_fail(err, LC_E_MALFORMED, f->crc,
                    "crc32 of the data is 0x%08" PRIx32 ", header says 0x%08" PRIx32, crc,
                    e->crc32);
            lc_err_context(err, NULL, e->name);
            return LC_E_MALFORMED;
        }
        return LC_OK;
    }
    lc_zip_reader *rd = NULL;
    uint8_t *buf = lc_malloc(1u << 16);
    size_t got;
    lc_code rc;
    if (!buf) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if ((rc = lc_zip_reader_open(z, e, &rd, err)) != LC_OK)
        goto done;
    do {
        if ((rc = lc_zip_reader_read(rd, buf, 1u << 16, &got, err)) != LC_OK)
            goto done;
    } while (got > 0);
done:
    lc_zip_reader_close(rd);
    lc_free(buf);
    lc_err_context(err, NULL, e->name);
    return rc;
}

/* Records n bytes the stream made at output offset `at` in the history ring. */
static void hist_put(stream *c, uint64_t at, const uint8_t *src, size_t n) {
    const size_t total = n;
    if (n > HIST) {              /* only the last HIST bytes can stay */
        src += n - HIST;
        at += n - HIST;
        n = (size_t)HIST;
    }
    while (n) {
        const size_t i = (size_t)(at % HIST), k = (size_t)(HIST - i) < n ? (size_t)(HIST - i) : n;
        memcpy(c->hist + i, src, k);
        src += k;
        at += k;
        n -= k;
    }
    c->hist_len = c->hist_len + total > HIST ? HIST : c->hist_len + total;
}

/* Copies n bytes at output offset `at`, which the history holds. */
static void hist_get(const stream *c, uint64_t at, uint8_t *dst, size_t n) {
    while (n) {
        const size_t i = (size_t)(at % HIST), k = (size_t)(HIST - i) < n ? (size_t)(HIST - i) : n;
        memcpy(dst, c->hist + i, k);
        dst += k;
        at += k;
        n -= k;
    }
}

lc_code lc_zip_entry_pread(const lc_zip *z, const lc_zip_entry *e, uint64_t off, void *dst,
                           size_t len, lc_error *err) {
    const fields *f = fields_of(z, e);
    uint64_t stop;
    if (!f)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "entry does not belong to this archive");
    if (lc_add_u64(off, len, &stop) || stop > e->size) {
        lc_fail(err, LC_E_ARG, LC_NO_OFFSET,
                "read of %zu bytes at %" PRIu64 " passes the entry's %" PRIu64 " bytes", len,
                off, e->size);
        lc_err_context(err, NULL, e->name);
        return LC_E_ARG;
    }
    if (e->method == LC_ZIP_STORED) {
        if (len)
            memcpy(dst, z->base + e->data_offset + off, len);
        return LC_OK;
    }
    cache *cc = z->cache;
    lc_code rc = LC_OK;
    size_t got;
    uint8_t *out = dst;
    pthread_mutex_lock(&cc->mu);
    /* This entry's stream, else a free slot, else the least recently used one. */
    stream *c = NULL;
    for (int i = 0; i < NSTREAM && !c; i++)
        if (cc->s[i].rd && cc->s[i].e == e)
            c = &cc->s[i];
    for (int i = 0; i < NSTREAM && !c; i++)
        if (!cc->s[i].rd)
            c = &cc->s[i];
    if (!c) {
        c = &cc->s[0];
        for (int i = 1; i < NSTREAM; i++)
            if (cc->s[i].used < c->used)
                c = &cc->s[i];
        lc_zip_reader_close(c->rd);
        c->rd = NULL;
    }
    c->used = ++cc->tick;
    if ((!cc->skip && !(cc->skip = lc_malloc(1u << 16))) ||
        (!c->hist && !(c->hist = lc_malloc((size_t)HIST)))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if (c->rd && c->rd->failed) {
        lc_zip_reader_close(c->rd);
        c->rd = NULL;
    }
    if (c->rd) {                 /* what lies in the history: copy it from there */
        const uint64_t pos = lc_zip_reader_tell(c->rd);
        if (off < pos && off >= pos - c->hist_len) {
            const size_t k = (size_t)(pos - off < len ? pos - off : len);
            hist_get(c, off, out, k);
            off += k;
            out += k;
            len -= k;
        }
        if (len && off < pos) {  /* before the history: start the stream again */
            lc_zip_reader_close(c->rd);
            c->rd = NULL;
        }
    }
    if (!len)
        goto done;
    if (!c->rd) {
        if ((rc = lc_zip_reader_open(z, e, &c->rd, err)) != LC_OK)
            goto done;
        c->e = e;
        c->hist_len = 0;
    }
    while (lc_zip_reader_tell(c->rd) < off) {
        const uint64_t at = lc_zip_reader_tell(c->rd), n = off - at;
        if ((rc = lc_zip_reader_read(c->rd, cc->skip, n > (1u << 16) ? (1u << 16) : (size_t)n,
                                     &got, err)) != LC_OK)
            goto done;
        hist_put(c, at, cc->skip, got);
    }
    if ((rc = lc_zip_reader_read(c->rd, out, len, &got, err)) != LC_OK)
        goto done;
    hist_put(c, off, out, got);
done:
    pthread_mutex_unlock(&cc->mu);
    lc_err_context(err, NULL, e->name);
    return rc;
}
