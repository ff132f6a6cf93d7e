/* libconvert/outfile.h: atomic output files.
 *
 * Bytes go to "OUT.tmp" in OUT's directory; lc_outfile_commit() flushes, fsyncs and
 * renames it over OUT, so a reader never sees a partial OUT. lc_outfile_abort()
 * (or a failed commit) removes the temporary file. While a file is open its temporary
 * path is registered so that lc_outfile_cleanup_on_signal() can remove it when the
 * process is interrupted. Writes are buffered. One thread per outfile. */
#ifndef LC_LIBCONVERT_OUTFILE_H
#define LC_LIBCONVERT_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"

typedef struct lc_outfile lc_outfile;

/* Creates PATH.tmp (replacing a stale one). LC_E_IO when it cannot. */
lc_code lc_outfile_open(const char *path, lc_outfile **out, lc_error *err);
lc_code lc_outfile_write(lc_outfile *f, const void *buf, size_t len, lc_error *err);
/* Appends bytes [off, off + len) of the open file `fd` (not its file position) after
 * flushing what is buffered: copy_file_range, so unchanged data never enters this
 * process, with a pread/write fallback where the kernel cannot copy (other file
 * system, old kernel). LC_E_TRUNCATED (offset in the source) when fd ends early. */
lc_code lc_outfile_copy_from(lc_outfile *f, int fd, uint64_t off, uint64_t len, lc_error *err);
/* Writes `len` zero bytes (padding). */
lc_code lc_outfile_pad(lc_outfile *f, size_t len, lc_error *err);
/* Bytes written so far. */
uint64_t lc_outfile_tell(const lc_outfile *f);
/* Tells the filesystem the file will hold SIZE bytes, so that it allocates the blocks
 * at once instead of one write at a time (on ext4 on a 1.5 GiB GGUF: ~20% less time).
 * Advice: nothing fails, and the file's size still follows what is written. */
void lc_outfile_reserve(lc_outfile *f, uint64_t size);
/* Flush, fsync, rename over the final path, free. On failure the temp file is removed.
 * f is freed either way. */
lc_code lc_outfile_commit(lc_outfile *f, lc_error *err);
/* Close and remove the temp file; NULL-safe. */
void lc_outfile_abort(lc_outfile *f);

/* Process-wide: whether commit fsyncs the file and its directory (default true).
 * Without it the rename is still atomic for other processes, but a power loss can
 * leave OUT empty or short. Set once by the tools (--no-fsync) before any output. */
void lc_outfile_set_durable(bool durable);

/* Installs SIGINT/SIGTERM/SIGHUP handlers that remove every open temp file and exit
 * with 128+signal. Called by the tools, never by the library. */
void lc_outfile_cleanup_on_signal(void);

#endif
