/* libconvert/outdir.h: atomic output folders: a set of files (shards and their
 * index) that appears at once, or not at all.
 *
 * lc_outdir_open(OUT) checks OUT and creates a temporary folder beside it, under the
 * pattern of outfile.h (".NAME.lc-XXXXXXXXXX.tmp", mode 0700 while it is built),
 * registered with libconvert/cleanup so that a signal removes it with its files. The
 * caller writes each file of the set inside it through lc_outfile, at the path
 * lc_outdir_file() gives, so each file is whole or absent. lc_outdir_commit() gives
 * the folder the mode any new folder gets (0777 less the umask), fsyncs it and puts
 * it at OUT:
 *   - OUT absent, or an empty folder: rename(2), atomic;
 *   - OUT a folder whose every entry is a regular file that the new set also has (a
 *     re-run of the same conversion): the two folders are swapped atomically
 *     (renameat2 RENAME_EXCHANGE), then the old files are removed;
 *   - anything else is refused with LC_E_ARG naming an entry that would be lost (a
 *     file the new set does not have, a subfolder, a symlink), so nothing the user
 *     had at OUT is deleted unless the new set replaces it. OUT that is not a folder,
 *     holds a subfolder or symlink, or holds an input of this run is refused already
 *     by lc_outdir_open, before any work. On a file system that cannot swap folders
 *     (no RENAME_EXCHANGE), replacing a non-empty OUT is refused too.
 * lc_outdir_abort(), or a failed commit, removes the temporary folder and its files.
 * One thread per outdir. */
#ifndef LC_LIBCONVERT_OUTDIR_H
#define LC_LIBCONVERT_OUTDIR_H

#include <stddef.h>

#include "libconvert/error.h"

typedef struct lc_outdir lc_outdir;

/* Checks OUT (see above) and creates the temporary folder. LC_E_ARG when OUT cannot
 * be replaced, LC_E_IO when the folder cannot be created (errno's text). */
lc_code lc_outdir_open(const char *path, lc_outdir **out, lc_error *err);
/* The path of file NAME inside the temporary folder, into buf (cap bytes): where the
 * caller writes it (lc_outfile_open). NAME must be a plain file name: not empty, no
 * '/', not "." or ".."; LC_E_ARG otherwise or when it does not fit. */
lc_code lc_outdir_file(const lc_outdir *d, const char *name, char *buf, size_t cap,
                       lc_error *err);
/* The temporary folder's path; valid until commit or abort. */
const char *lc_outdir_tmp_path(const lc_outdir *d);
/* Puts the set at OUT (see above). d is freed either way; on failure the temporary
 * folder is removed and OUT is as it was. */
lc_code lc_outdir_commit(lc_outdir *d, lc_error *err);
/* Removes the temporary folder and its files; NULL-safe. Files still open through
 * lc_outfile must be aborted first. */
void lc_outdir_abort(lc_outdir *d);

#endif
