/* libconvert/cli.h: what every tool shares: common flags, error printing, exit codes.
 *
 * Each tool runs getopt_long over its own options plus LC_CLI_LONGOPTS and hands the
 * options it does not know to lc_cli_option(). Errors print as one line,
 * "TOOL: FILE: ENTRY @ 0xOFF: message". */
#ifndef LC_LIBCONVERT_CLI_H
#define LC_LIBCONVERT_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/progress.h"

enum { LC_EXIT_OK = 0, LC_EXIT_FAIL = 1, LC_EXIT_USAGE = 2 };

/* Long options every tool accepts; short forms -h -q -t. --version, --json and
 * --no-fsync (outputs are renamed into place but not flushed to disk) have none. The values are what getopt_long returns for them. */
enum { LC_OPT_VERSION = 0x1000, LC_OPT_JSON, LC_OPT_NO_FSYNC };
#define LC_CLI_SHORTOPTS "hqt:"
#define LC_CLI_LONGOPTS                                                                   \
    { "help", no_argument, NULL, 'h' }, { "quiet", no_argument, NULL, 'q' },              \
    { "threads", required_argument, NULL, 't' },                                          \
    { "version", no_argument, NULL, LC_OPT_VERSION },                                     \
    { "json", no_argument, NULL, LC_OPT_JSON },                                           \
    { "no-fsync", no_argument, NULL, LC_OPT_NO_FSYNC }

typedef struct lc_cli {
    const char  *prog;      /* basename of argv[0] */
    int          threads;   /* 0: as many as cores */
    bool         quiet, json;
    lc_progress *progress;  /* created by lc_cli_start; NULL-safe everywhere */
} lc_cli;

void lc_cli_init(lc_cli *cli, const char *argv0);
/* Handles a common option. Returns -1 when the tool should go on parsing, or an exit
 * code to return now (0 after --help or --version, 2 for a bad or unknown option). */
int lc_cli_option(lc_cli *cli, int opt, const char *arg, void (*usage)(FILE *));
/* Parses a --dtype argument that must name a float type a tool writes (f32, f16,
 * bf16). Returns -1 on success (*out set), else prints why and returns 2. */
int lc_cli_float_dtype(const lc_cli *cli, const char *arg, lc_dtype *out);
/* After parsing: installs temp-file cleanup on signals and creates the progress
 * reporter (enabled when stderr is a terminal and not -q). */
void lc_cli_start(lc_cli *cli);
/* Prints "prog: <error>" on stderr and returns LC_EXIT_FAIL. */
int lc_cli_report(const lc_cli *cli, const lc_error *err);
void lc_cli_finish(lc_cli *cli);

#endif
