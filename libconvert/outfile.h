/* libconvert/outfile.h: atomic output files.
 *
 * Bytes go to a new temporary file beside OUT, named
 *
 *     .NAME.lc-XXXXXXXXXX.tmp     (NAME: OUT's file name, its first 200 bytes;
 *                                  X: 10 random letters and digits)
 *
 * created with O_CREAT|O_EXCL|O_NOFOLLOW, so an existing path (a planted symlink or
 * hard link, another run's temporary, a FIFO) is never opened: on a clash the next
 * random name is tried. Its mode is 0666 less the umask, as for any new file.
 * lc_outfile_commit() flushes, fsyncs and renames it over OUT, so a reader never sees
 * a partial OUT; when two runs write the same OUT at once, each has its own temporary
 * and the last rename wins with a whole file. lc_outfile_abort() (or a failed commit)
 * removes the temporary, and while it exists it is registered with libconvert/cleanup,
 * whose signal handlers remove it when the process is interrupted. Only SIGKILL (or a
 * power loss) can leave one behind; it is recognisable by the pattern above, never
 * reused, and safe to delete.
 *
 * Before anything is created, OUT is checked: it may be absent or a regular file
 * (a symlink at OUT is replaced by the new file, never written through), but not a
 * folder, FIFO, socket or device, and not a file this process reads as an input
 * (libconvert/input.h: same device and inode, whatever the name). Writes are
 * buffered. One thread per outfile. */
#ifndef LC_LIBCONVERT_OUTFILE_H
#define LC_LIBCONVERT_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libconvert/cleanup.h"
#include "libconvert/error.h"

typedef struct lc_outfile lc_outfile;

/* Checks PATH and creates its temporary (see above). LC_E_ARG when PATH is a folder, a
 * special file or an input of this run (the message names the input), LC_E_IO when
 * the temporary cannot be created (errno's text). err's path is PATH. */
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
 * f is freed either way. A failed write, flush or fsync names OUT and says why; the
 * file-size limit (EFBIG, `ulimit -f`), a full disk (ENOSPC) and a quota (EDQUOT) are
 * ordinary LC_E_IO errors. */
lc_code lc_outfile_commit(lc_outfile *f, lc_error *err);
/* Commits N files as a set that appears whole or not at all: each is flushed, fsynced
 * and checked first (any failure removes every temporary, as lc_outfile_abort), then
 * they are renamed into place in order; if a rename fails, the files already renamed
 * are removed again (a file they replaced is lost, as with any commit), and while the
 * renames run the ones in place are registered with libconvert/cleanup, so a signal
 * removes them too. Every f is freed either way (fs[i] set to NULL). */
lc_code lc_outfile_commit_set(lc_outfile **fs, size_t n, lc_error *err);
/* Close and remove the temp file; NULL-safe. */
void lc_outfile_abort(lc_outfile *f);

/* Process-wide: whether commit fsyncs the file and its directory (default true).
 * Without it the rename is still atomic for other processes, but a power loss can
 * leave OUT empty or short. Set once by the tools (--no-fsync) before any output. */
void lc_outfile_set_durable(bool durable);
/* What lc_outfile_set_durable set. */
bool lc_outfile_durable(void);

/* ---- for lc_outdir and tests ---- */

/* Checks that PATH may be replaced by an output: absent, or a regular file (a folder
 * when want_dir) that is not an input of this run. LC_E_ARG otherwise, naming PATH. */
lc_code lc_outfile_check_target(const char *path, bool want_dir, lc_error *err);

/* Creates a temporary beside PATH under the pattern above: a file opened for writing
 * (*fd) or, when is_dir, a folder of mode 0700 (*fd = -1). Its path goes to tmp (cap
 * bytes) and it is registered for removal on signals (*slot, for lc_cleanup_remove).
 * LC_E_ARG when the name does not fit, LC_E_IO when the folder refuses (errno). */
lc_code lc_outfile_make_temp(const char *path, bool is_dir, char *tmp, size_t cap, int *fd,
                             lc_cleanup_tmp **slot, lc_error *err);

/* Test hook: names come from a fixed sequence seeded by `seed` (0: random again), so
 * a test can plant files at the names a run will try. Not thread-safe; tests only. */
void lc_outfile_test_names(uint64_t seed);

#endif
