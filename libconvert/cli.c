/* libconvert/cli.c: the option-table parser, the common flags, the --help text, the
 * error line and progress set-up for the tools. */
#include "libconvert/cli.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "libconvert/cleanup.h"
#include "libconvert/outfile.h"
#include "libconvert/version.h"

/* ---- the common flags: defined once, taken by a tool through lc_cli_tool.common ---- */

enum { HELP = 1u << 8, VERSION = 1u << 9 };   /* every tool; outside the LC_CLI_* bits */

/* In --help order, after the tool's own options. */
static const struct { unsigned bit; lc_cli_opt opt; } COMMON[] = {
    { LC_CLI_JSON, { "json", 0, NULL, "print one JSON object instead of text" } },
    { LC_CLI_THREADS,
      { "threads", 't', "N", "convert on N threads (default: one per core, max 8)" } },
    { LC_CLI_QUIET, { "quiet", 'q', NULL, "no progress" } },
    { LC_CLI_NO_FSYNC,
      { "no-fsync", 0, NULL, "skip the final fsync (OUT still appears atomically)" } },
    { HELP, { "help", 'h', NULL, "print this text and exit" } },
    { VERSION, { "version", 'V', NULL, "print the version and exit" } },
};
#define N_COMMON (sizeof COMMON / sizeof *COMMON)

/* One row of the merged table: a tool's option (bit 0, index into tool->opts) or a
 * common flag (its bit). */
typedef struct row {
    const lc_cli_opt *opt;
    unsigned          bit;
    int               index;
} row;

/* The tool's rows, then the common flags it takes. -1 when the table is too long. */
static int merge(const lc_cli_tool *tool, row *rows) {
    int n = 0;
    for (int i = 0; tool->opts && tool->opts[i].name; i++) {
        if (n == LC_CLI_MAX_OPTS)
            return -1;
        rows[n++] = (row){ &tool->opts[i], 0, i };
    }
    for (size_t i = 0; i < N_COMMON; i++)
        if (COMMON[i].bit & (tool->common | HELP | VERSION))
            rows[n++] = (row){ &COMMON[i].opt, COMMON[i].bit, -1 };
    return n;
}

/* A table the parser cannot honour is the tool's bug: say which row, exit 2. */
static const char *table_error(const row *rows, int n) {
    for (int i = 0; i < n; i++) {
        const lc_cli_opt *o = rows[i].opt;
        int dests = !!o->flag + !!o->choice + !!o->str + !!o->list + !!o->dtype;
        if (!rows[i].bit && dests != 1)
            return "wants exactly one destination";
        if (!rows[i].bit && !o->arg != (o->flag || o->choice))
            return "takes an argument if and only if it is not a flag or a choice";
        for (int j = 0; j < i; j++)
            if (strcmp(o->name, rows[j].opt->name) == 0 ||
                (o->letter && o->letter == rows[j].opt->letter))
                return "repeats a name or a letter";
        if (o->letter == '?' || o->letter == ':' || o->letter == '-')
            return "has a letter getopt reserves";
    }
    return NULL;
}

/* ---- --help ---- */

#define HELP_WIDTH 79   /* last column used */
#define HELP_COL   28   /* where an option's help starts */

/* Prints text with the cursor at column col, breaking lines at spaces before
 * HELP_WIDTH and at '\n'; every further line starts at column indent. */
static void wrap(FILE *f, const char *text, int col, int indent) {
    bool fresh = true;   /* nothing on this line yet */
    for (const char *p = text; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        int len = (int)strcspn(p, " \n");
        if (*p == '\n' || (!fresh && col + 1 + len > HELP_WIDTH)) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            fresh = true;
            p += *p == '\n';
            continue;
        }
        fprintf(f, "%s%.*s", fresh ? "" : " ", len, p);
        col += len + !fresh;
        fresh = false;
        p += len;
    }
    fputc('\n', f);
}

static void help_row(FILE *f, const lc_cli_opt *o) {
    char left[128];
    int n = o->letter ? snprintf(left, sizeof left, "  -%c, --%s", o->letter, o->name)
                      : snprintf(left, sizeof left, "      --%s", o->name);
    if (o->arg && n > 0 && (size_t)n < sizeof left)
        snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg);
    n = (int)strlen(left);
    if (n + 2 > HELP_COL)
        fprintf(f, "%s\n%*s", left, HELP_COL, "");
    else
        fprintf(f, "%-*s", HELP_COL, left);
    wrap(f, o->help, HELP_COL, HELP_COL);
}

void lc_cli_help(const lc_cli_tool *tool, const char *prog, FILE *f) {
    const char *s = tool->synopsis, *lead = "usage: ";
    do {   /* one line per form */
        int len = (int)strcspn(s, "\n");
        fprintf(f, "%s%s %.*s\n", lead, prog, len, s);
        lead = "       ";
        s += len + (s[len] == '\n');
    } while (*s);
    if (tool->about) {
        fputs("  ", f);
        wrap(f, tool->about, 2, 2);
    }
    row rows[LC_CLI_MAX_OPTS + N_COMMON];
    int n = merge(tool, rows);
    for (int i = 0; i < n; i++)
        help_row(f, rows[i].opt);
}

int lc_cli_usage(const lc_cli *cli) {
    lc_cli_help(cli->tool, cli->prog, stderr);
    return LC_EXIT_USAGE;
}

/* ---- parsing ---- */

/* "f32|f16|bf16" -> "f32, f16 or bf16", for the error line. */
static void list_names(const char *names, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (const char *p = names; *p && k + 1 < cap;) {
        size_t len = strcspn(p, "|");
        const char *sep = p == names ? "" : p[len] ? ", " : " or ";
        int w = snprintf(buf + k, cap - k, "%s%.*s", sep, (int)len, p);
        if (w < 0)
            break;
        k = (size_t)w < cap - k ? k + (size_t)w : cap - 1;
        p += len + (p[len] == '|');
    }
}

static int parse_dtype(const lc_cli *cli, const lc_cli_opt *o, const char *arg) {
    for (const char *p = o->arg; *p;) {
        size_t len = strcspn(p, "|");
        if (len == strlen(arg) && strncasecmp(p, arg, len) == 0) {
            *o->dtype = strcasecmp(arg, "auto") == 0 ? LC_DT_INVALID : lc_dtype_from_name(arg);
            return -1;
        }
        p += len + (p[len] == '|');
    }
    char names[256];
    list_names(o->arg, names, sizeof names);
    fprintf(stderr, "%s: --%s wants %s, not '%s'\n", cli->prog, o->name, names, arg);
    return LC_EXIT_USAGE;
}

/* True when writing stdout failed because nobody reads it any more: `model-inspect x | head`.
 * A pipe whose read end is closed polls POLLERR on its write end. */
static bool stdout_reader_gone(void) {
    struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };
    return ferror(stdout) && poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/* After --help or --version: LC_EXIT_OK only if the text reached stdout (lc_cli_end's
 * rule, for the two answers printed before a tool starts). */
static int stdout_written(const lc_cli *cli) {
    if (fflush(stdout) == 0 && !ferror(stdout))
        return LC_EXIT_OK;
    if (stdout_reader_gone())
        return LC_EXIT_PIPE;
    fprintf(stderr, "%s: standard output: cannot write: %s\n", cli->prog, strerror(errno));
    return LC_EXIT_FAIL;
}

static int common_flag(lc_cli *cli, unsigned bit, const char *arg) {
    switch (bit) {
    case HELP:
        lc_cli_help(cli->tool, cli->prog, stdout);
        return stdout_written(cli);
    case VERSION:
        printf("%s (libconvert) %s\n", cli->prog, LC_VERSION);
        return stdout_written(cli);
    case LC_CLI_QUIET:
        cli->quiet = true;
        return -1;
    case LC_CLI_NO_FSYNC:
        lc_outfile_set_durable(false);
        return -1;
    case LC_CLI_JSON:
        cli->json = true;
        return -1;
    default: {   /* LC_CLI_THREADS */
        char *end;
        long n = strtol(arg, &end, 10);
        if (*end || n < 0 || n > 1024) {
            fprintf(stderr, "%s: --threads wants a number from 0 to 1024, not '%s'\n",
                    cli->prog, arg);
            return LC_EXIT_USAGE;
        }
        cli->threads = (int)n;
        return -1;
    }
    }
}

/* Stores one option's value where its row says; -1 to go on, else an exit code. */
static int take(lc_cli *cli, const row *r, const char *arg) {
    const lc_cli_opt *o = r->opt;
    if (r->bit)
        return common_flag(cli, r->bit, arg);
    cli->given |= UINT64_C(1) << r->index;
    if (o->flag)
        *o->flag = true;
    else if (o->choice)
        *o->choice = o->id;
    else if (o->str)
        *o->str = arg;
    else if (o->dtype)
        return parse_dtype(cli, o, arg);
    else if (o->list->n < LC_CLI_LIST_MAX)
        o->list->items[o->list->n++] = arg;
    else {
        fprintf(stderr, "%s: --%s is given more than %d times\n", cli->prog, o->name,
                LC_CLI_LIST_MAX);
        return LC_EXIT_USAGE;
    }
    return -1;
}

/* The row getopt_long's return value c stands for (see lc_cli_parse), or -1. */
static int find_row(const row *rows, int n, int c) {
    if (c >= 0x100)
        return c - 0x100 < n ? c - 0x100 : -1;
    for (int i = 0; i < n; i++)
        if (rows[i].opt->letter && rows[i].opt->letter == c)
            return i;
    return -1;
}

int lc_cli_parse(lc_cli *cli, const lc_cli_tool *tool, int argc, char **argv) {
    memset(cli, 0, sizeof *cli);
    const char *slash = strrchr(argv[0], '/');
    cli->prog = slash ? slash + 1 : argv[0];
    cli->tool = tool;
    row rows[LC_CLI_MAX_OPTS + N_COMMON];
    int n = merge(tool, rows);
    const char *bad = n < 0 ? "has more than LC_CLI_MAX_OPTS rows" : table_error(rows, n);
    if (bad) {
        fprintf(stderr, "%s: the option table %s\n", cli->prog, bad);
        return LC_EXIT_USAGE;
    }
    /* getopt_long returns a row's letter, or 0x100 + its index when it has none. */
    struct option lo[LC_CLI_MAX_OPTS + N_COMMON + 1];
    char so[3 * (LC_CLI_MAX_OPTS + N_COMMON) + 1], *s = so;
    for (int i = 0; i < n; i++) {
        const lc_cli_opt *o = rows[i].opt;
        int has_arg = o->arg ? required_argument : no_argument;
        lo[i] = (struct option){ o->name, has_arg, NULL, o->letter ? o->letter : 0x100 + i };
        if (o->letter) {
            *s++ = o->letter;
            if (o->arg)
                *s++ = ':';
        }
    }
    lo[n] = (struct option){ NULL, 0, NULL, 0 };
    *s = '\0';
    optind = 0;   /* glibc: start afresh (tests parse more than once per process) */
    int c;
    while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        int i = find_row(rows, n, c);
        if (i < 0)
            return lc_cli_usage(cli);   /* '?': getopt said why */
        int rc = take(cli, &rows[i], optarg);
        if (rc >= 0)
            return rc;
    }
    cli->args = argv + optind;
    cli->nargs = argc - optind;
    if (cli->nargs < tool->min_args || cli->nargs > tool->max_args)
        return lc_cli_usage(cli);
    return -1;
}

/* ---- running ---- */

void lc_cli_start(lc_cli *cli) {
    lc_cleanup_install(cli->prog);
    cli->progress = lc_progress_new(!cli->quiet && isatty(STDERR_FILENO));
}

_Static_assert(LC_EXIT_PIPE == 128 + SIGPIPE, "LC_EXIT_PIPE is a SIGPIPE death's status");

int lc_cli_report(const lc_cli *cli, const lc_error *err) {
    char line[1024];
    lc_progress_end(cli->progress);
    /* SIGPIPE is ignored (cleanup.h) so that a file's EPIPE is an error naming it; but a
     * report whose reader left is not one: end quietly with the status a tool killed by
     * SIGPIPE gives its shell, as cat or grep would. */
    if (stdout_reader_gone())
        return LC_EXIT_PIPE;           /* 128 + SIGPIPE */
    lc_err_format(err, line, sizeof line);
    fprintf(stderr, "%s: %s\n", cli->prog, line);
    return LC_EXIT_FAIL;
}

void lc_cli_finish(lc_cli *cli) {
    lc_progress_free(cli->progress);
    cli->progress = NULL;
}

int lc_cli_end(lc_cli *cli, lc_code rc, const lc_error *err) {
    /* A report that did not reach stdout (a full disk behind `> plan.txt`, a reader that
     * left) is a failure too, as GNU tools' close_stdout makes it: never exit 0 for it. */
    lc_error out_err = { 0 };
    const int flushed = rc == LC_OK ? fflush(stdout) : 0;
    if (rc == LC_OK && (flushed != 0 || ferror(stdout))) {
        rc = lc_fail(&out_err, LC_E_IO, LC_NO_OFFSET, "cannot write: %s",
                     flushed != 0 ? strerror(errno) : "an earlier write failed");
        lc_err_context(&out_err, "standard output", NULL);
        err = &out_err;
    } else if (rc != LC_OK && err && !err->path[0] && ferror(stdout)) {
        out_err = *err;     /* a report writer's error ("cannot write the report"): say where */
        lc_err_context(&out_err, "standard output", NULL);
        err = &out_err;
    }
    int status = rc == LC_OK ? LC_EXIT_OK : lc_cli_report(cli, err);
    lc_cli_finish(cli);
    return status;
}
