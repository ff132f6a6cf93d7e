/* formats/zip.h: a strict, zero-copy zip reader for PyTorch checkpoints.
 *
 * Wire format (PKWARE APPNOTE 6.3; all integers little-endian):
 *  1. Entries, back to back from offset 0: a local header
 *     (sig 0x04034b50, version, flags, method, time, date, crc32, compressed size,
 *     uncompressed size, name length, extra length, name, extra), the entry data,
 *     and, when flag bit 3 is set, a data descriptor (optional sig 0x08074b50,
 *     crc32, sizes of 4 bytes, or 8 bytes for ZIP64).
 *  2. The central directory: one header per entry (sig 0x02014b50) repeating the
 *     local fields plus comment length, disk, attributes and the local header offset.
 *  3. For ZIP64 archives: the ZIP64 end record (sig 0x06064b50) and its locator
 *     (sig 0x07064b50), which hold the 64-bit count, size and offset.
 *  4. The end-of-central-directory record (sig 0x06054b50) and its comment, which
 *     must end the file.
 *  Values too large for 32 bits are 0xffffffff in the headers, with the real value in
 *  the ZIP64 extra field (id 0x0001), in the order uncompressed size, compressed size,
 *  local header offset, disk.
 *
 * ONE VIEW. Scanners and loaders have been made to disagree about what a zip holds
 * (a local header that names another file than the central directory, sizes that
 * differ, data hidden between or over entries). lc_zip_open refuses every archive
 * in which two readers could see different contents: every entry's local header must
 * repeat the central directory's name bytes, flags, method and (where present) sizes
 * and CRC; entries must tile the bytes from offset 0 to the central directory with no
 * gap and no overlap; the central directory must end where the end records begin; the
 * end record's comment must end the file; names must be unique, printable UTF-8 and
 * relative (no "..", no backslash, no leading '/'). Encrypted, multi-disk and methods
 * other than stored (0) and DEFLATE (8) are refused.
 *
 * Errors carry the file offset of the offending header field and, for entry errors,
 * `where` = the entry name. Bytes are borrowed: the archive never copies entry data.
 * An open archive may be read from several threads at once (lc_zip_entry_pread locks). */
#ifndef LC_FORMATS_ZIP_H
#define LC_FORMATS_ZIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"

/* DEFLATE cannot expand more than this; a larger declared ratio is a lie (zip bomb). */
#define LC_ZIP_MAX_RATIO 1032u

enum { LC_ZIP_STORED = 0, LC_ZIP_DEFLATE = 8 };

typedef struct lc_zip lc_zip;

typedef struct lc_zip_entry {
    const char *name;      /* NUL-terminated, owned by the archive */
    uint16_t    method;    /* LC_ZIP_STORED or LC_ZIP_DEFLATE */
    uint16_t    flags;     /* general purpose bits, identical in both headers */
    uint32_t    crc32;
    uint64_t    comp_size; /* bytes of entry data in the file */
    uint64_t    size;      /* bytes after inflating (== comp_size when stored) */
    uint64_t    header_offset; /* local header */
    uint64_t    data_offset;   /* first byte of entry data */
    uint64_t    cd_offset;     /* central directory header, for messages */
} lc_zip_entry;

/* Parses and validates the archive in buf[0, size). The archive borrows buf, which
 * must outlive it. Codes: LC_E_TRUNCATED (a header runs past its container),
 * LC_E_MALFORMED (bad signature, inconsistent headers, bad name, duplicate, gap or
 * overlap), LC_E_UNSUPPORTED (encryption, multi-disk, method), LC_E_NOMEM. Reads only
 * headers, never entry data. On success *out owns the archive; on failure it is NULL. */
lc_code lc_zip_open_mem(const uint8_t *buf, uint64_t size, lc_zip **out, lc_error *err);

/* The same, for buf = a map of the open file FD (or FD -1: as lc_zip_open_mem): the
 * local headers, spread over the file, are read with pread so that parsing touches no
 * page of the map but the central directory's. Same codes, plus LC_E_IO. */
lc_code lc_zip_open_file_mem(const uint8_t *buf, uint64_t size, int fd, lc_zip **out,
                             lc_error *err);

/* Maps PATH and opens it like lc_zip_open_mem; the archive owns the map. Codes as
 * lc_map_open and lc_zip_open_mem; err->path is PATH. */
lc_code lc_zip_open(const char *path, lc_zip **out, lc_error *err);

/* Frees the archive (and its map if lc_zip_open made it). NULL-safe. Entry pointers,
 * names and views die with it. */
void lc_zip_close(lc_zip *z);
/* The same, typed for lc_model_own. */
void lc_zip_close_void(void *z);

size_t lc_zip_count(const lc_zip *z);
/* Entries in central directory order; NULL when i is out of range. */
const lc_zip_entry *lc_zip_entry_at(const lc_zip *z, size_t i);
/* The entry whose name is exactly NAME (byte comparison), or NULL. O(log n). */
const lc_zip_entry *lc_zip_find(const lc_zip *z, const char *name);

/* Zero-copy view of a stored entry's comp_size bytes (valid while the archive and its
 * bytes live); NULL for a DEFLATE entry. The CRC is NOT checked: torch storages can be
 * gigabytes, so checking is the caller's choice (lc_zip_entry_verify_crc). */
const uint8_t *lc_zip_entry_view(const lc_zip *z, const lc_zip_entry *e);

/* Reads the whole entry (inflating if needed) and compares its CRC-32 with the header.
 * LC_E_MALFORMED (offset = the central crc field, where = the entry) on a mismatch, or
 * the reader's codes. Costs one pass over the entry (a stored one of an archive with a
 * file is read with pread, not through the map); allocates only a buffer or the inflate
 * state. Thread-safe. A header CRC of 0 on
 * an entry with data is not checked, here or by the streaming reader: torch.save writes
 * 0 when told not to compute it (serialization config save.compute_crc32 = False), and
 * torch.load reads those files. */
lc_code lc_zip_entry_verify_crc(const lc_zip *z, const lc_zip_entry *e, lc_error *err);

/* ---- streaming reader (stored or DEFLATE) ---- */

typedef struct lc_zip_reader lc_zip_reader;

/* Starts a sequential read of E from its first byte. LC_E_NOMEM, LC_E_ARG when E is
 * not one of z's entries. *out is owned by the caller, freed with lc_zip_reader_close,
 * and must not outlive z. One reader belongs to one thread. */
lc_code lc_zip_reader_open(const lc_zip *z, const lc_zip_entry *e, lc_zip_reader **out,
                           lc_error *err);
/* Fills dst with up to len bytes; *got < len only at the end of the entry (0 after it).
 * Never produces more than e->size bytes and never allocates from declared sizes.
 * LC_E_MALFORMED when the stream is corrupt, produces more or fewer bytes than
 * declared, leaves compressed bytes unused, or ends with a CRC that differs from the
 * header (checked as the last byte is produced). Errors are sticky. */
lc_code lc_zip_reader_read(lc_zip_reader *rd, void *dst, size_t len, size_t *got,
                           lc_error *err);
/* Bytes produced so far. */
uint64_t lc_zip_reader_tell(const lc_zip_reader *rd);
void lc_zip_reader_close(lc_zip_reader *rd); /* NULL-safe */

/* Reads all of a small entry (data.pkl, version) into a new buffer: *buf (caller frees
 * with lc_free; one extra NUL byte follows the data) and *len. LC_E_OVERFLOW (offset =
 * the central size field) when e->size > max_bytes; the ratio to comp_size is already
 * capped at LC_ZIP_MAX_RATIO by lc_zip_open. CRC verified. On failure *buf is NULL. */
lc_code lc_zip_entry_read_all(const lc_zip *z, const lc_zip_entry *e, uint64_t max_bytes,
                              uint8_t **buf, size_t *len, lc_error *err);

/* Copies bytes [off, off + len) of the entry's uncompressed data into dst; LC_E_ARG
 * when the range passes e->size. Stored: a memcpy, CRC not checked. DEFLATE: the
 * archive keeps one cached stream per archive (under a mutex): a read at or after the
 * cached position continues it (cost: the skipped bytes), any other read restarts
 * from the entry's start (cost: inflating off bytes). Reading a DEFLATE entry front to
 * back in chunks is therefore linear, and checks the CRC when the last byte is read;
 * random access is quadratic. Thread-safe. */
lc_code lc_zip_entry_pread(const lc_zip *z, const lc_zip_entry *e, uint64_t off, void *dst,
                           size_t len, lc_error *err);

#endif
