/* libconvert/cli.h: what every tool shares: its option table, the common flags, the
 * --help text, error printing, exit codes.
 *
 * A tool declares each of its options once, as a row of an lc_cli_opt table (long
 * name, short letter, argument name, help, where the value goes), plus a synopsis and
 * an about paragraph (lc_cli_tool). lc_cli_parse builds getopt_long's option array
 * and short-option string from those rows and from the common flags the tool takes,
 * stores every value where its row says, and prints --help from the same rows, so
 * the help cannot drift from what is parsed. Errors print as one line,
 * "TOOL: FILE: ENTRY @ 0xOFF: message".
 *
 * Common flags, one definition each (cli.c): -h/--help and -V/--version (every tool),
 * and what the tool asks for in lc_cli_tool.common: -q/--quiet, -t/--threads N,
 * --json, --no-fsync (outputs are renamed into place but not flushed to disk). */
#ifndef LC_LIBCONVERT_CLI_H
#define LC_LIBCONVERT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/progress.h"

enum { LC_EXIT_OK = 0, LC_EXIT_FAIL = 1, LC_EXIT_USAGE = 2, LC_EXIT_PIPE = 141 };

/* The common flags a tool may take (lc_cli_tool.common). */
enum {
    LC_CLI_QUIET    = 1u << 0,   /* -q, --quiet: no progress */
    LC_CLI_THREADS  = 1u << 1,   /* -t, --threads N: lc_cli.threads, 0..1024 */
    LC_CLI_JSON     = 1u << 2,   /* --json: lc_cli.json */
    LC_CLI_NO_FSYNC = 1u << 3,   /* --no-fsync: lc_outfile_set_durable(false) */
    LC_CLI_WRITER   = LC_CLI_QUIET | LC_CLI_THREADS | LC_CLI_NO_FSYNC,   /* tools that write */
};

/* Most rows one tool may declare, and most values a repeatable option may collect. */
#define LC_CLI_MAX_OPTS 32
#define LC_CLI_LIST_MAX 64

/* The arguments of a repeatable option, in the order given, borrowed from argv. */
typedef struct lc_cli_list {
    const char *items[LC_CLI_LIST_MAX];
    size_t      n;
} lc_cli_list;

/* One option. Set exactly one destination; which one says what the option is:
 *   flag    takes no argument; sets *flag = true
 *   choice  takes no argument; sets *choice = id (modes that exclude each other: the
 *           last one given wins)
 *   str     *str = the argument (the last one given wins)
 *   list    appends the argument (repeatable, at most LC_CLI_LIST_MAX times)
 *   dtype   the argument must be one of the '|'-separated names in `arg` (matched as
 *           lc_dtype_from_name matches, case-insensitively); *dtype = that dtype, or
 *           LC_DT_INVALID for the name "auto"
 * A row whose name is NULL ends a table. */
typedef struct lc_cli_opt {
    const char  *name;     /* long name, without "--" */
    char         letter;   /* short form ('k' for -k), or 0 for none */
    const char  *arg;      /* the argument as --help shows it ("N", "KEY=TYPE:VALUE");
                            * NULL for an option that takes none */
    const char  *help;     /* what it does; --help wraps it to the terminal width */
    bool        *flag;
    int         *choice;
    int          id;       /* the value stored in *choice */
    const char **str;
    lc_cli_list *list;
    lc_dtype    *dtype;
} lc_cli_opt;

typedef struct lc_cli_tool {
    const char       *synopsis;   /* after "usage: TOOL "; '\n' starts another form */
    const char       *about;      /* what the tool does; '\n' starts a paragraph */
    const lc_cli_opt *opts;       /* the tool's own options; NULL when it has none */
    unsigned          common;     /* LC_CLI_* flags it takes besides -h and -V */
    int               min_args, max_args;   /* how many operands it takes */
} lc_cli_tool;

typedef struct lc_cli {
    const char        *prog;      /* basename of argv[0] */
    const lc_cli_tool *tool;
    int                threads;   /* 0: as many as cores */
    bool               quiet, json;
    uint64_t           given;     /* bit i: the tool's opts[i] was on the command line */
    char             **args;      /* the operands, nargs of them (into argv) */
    int                nargs;
    lc_progress       *progress;  /* created by lc_cli_start; NULL-safe everywhere */
} lc_cli;

/* Parses argv against tool's options and the common flags it takes (GNU getopt_long
 * rules: --opt=value, --opt value, -ovalue, -o value, options after operands).
 * Returns -1 when the tool should go on (cli->args set), or an exit code to return
 * now: LC_EXIT_OK after --help (on stdout) or --version ("TOOL (libconvert) VERSION"),
 * LC_EXIT_USAGE after an unknown option, a missing or bad argument or a wrong number
 * of operands (the help goes to stderr). Uses getopt's globals: not thread-safe. */
int lc_cli_parse(lc_cli *cli, const lc_cli_tool *tool, int argc, char **argv);
/* Prints the --help text of tool, made from its table, to f. */
void lc_cli_help(const lc_cli_tool *tool, const char *prog, FILE *f);
/* For a usage check after parsing: prints the help on stderr, returns LC_EXIT_USAGE. */
int lc_cli_usage(const lc_cli *cli);
/* After parsing: installs the signal handlers of libconvert/cleanup.h (temporaries
 * removed on every terminating signal, SIGPIPE/SIGXFSZ ignored, a truncated input
 * reported) and creates the progress reporter (enabled when stderr is a terminal and
 * not -q). */
void lc_cli_start(lc_cli *cli);
/* Prints "prog: <error>" on stderr and returns LC_EXIT_FAIL; when the error came from
 * writing stdout after its reader went away (`TOOL ... | head`), prints nothing and returns
 * LC_EXIT_PIPE, as a tool killed by SIGPIPE would end. */
int lc_cli_report(const lc_cli *cli, const lc_error *err);
void lc_cli_finish(lc_cli *cli);
/* The end of a tool's main: reports err when rc is not LC_OK, then lc_cli_finish.
 * Returns LC_EXIT_OK, LC_EXIT_FAIL or LC_EXIT_PIPE. */
int lc_cli_end(lc_cli *cli, lc_code rc, const lc_error *err);

#endif
