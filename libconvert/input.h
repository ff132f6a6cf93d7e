/* libconvert/input.h: opening input files, and remembering which files are inputs.
 *
 * Every reader opens its files through lc_input_open(): it never blocks on a FIFO or a
 * device (the file is opened with O_NONBLOCK and checked before anything is read), it
 * refuses anything but a regular file with a message that says what the path is, and
 * it notes the file's identity (device and inode) in a process-wide registry. Before
 * an output replaces a path, lc_outfile_open() asks the registry whether that path is
 * one of the inputs of this run (under any name: a hard link or a symlink counts), so
 * `tool X X` or an output over one shard of a sharded input is refused before a byte
 * is written. The registry only grows: a file read once stays an input until
 * lc_input_forget_all() (a library caller running several jobs in one process calls
 * it between jobs). Thread-safe. */
#ifndef LC_LIBCONVERT_INPUT_H
#define LC_LIBCONVERT_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "libconvert/error.h"

/* Opens PATH read-only (close-on-exec) as an input: *fd and *size (the file's size) on
 * success. LC_E_NOTFOUND when it does not exist, LC_E_ARG when it is a folder, FIFO,
 * socket or device (the message says which), LC_E_IO for other refusals (errno's
 * text), LC_E_NOMEM when the registry cannot grow. err's path is PATH. The caller
 * owns *fd; *fd is -1 on failure. */
lc_code lc_input_open(const char *path, int *fd, uint64_t *size, lc_error *err);

/* The path under which the file (dev, ino) was opened as an input, or NULL when it was
 * not. The string stays valid until lc_input_forget_all(). */
const char *lc_input_find(uint64_t dev, uint64_t ino);

/* "a FIFO", "a folder", "a socket", "a character device", "a block device",
 * "a symbolic link", "a regular file": what a st_mode is, for messages. */
const char *lc_input_kind(unsigned mode);

/* Empties the registry (for a process that runs one job after another). Not to be
 * called while another thread opens inputs. */
void lc_input_forget_all(void);

#endif
