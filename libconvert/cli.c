/* libconvert/cli.c: common flags, error line, progress set-up for the tools. */
#include "libconvert/cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libconvert/outfile.h"
#include "libconvert/version.h"

void lc_cli_init(lc_cli *cli, const char *argv0) {
    memset(cli, 0, sizeof *cli);
    const char *slash = strrchr(argv0, '/');
    cli->prog = slash ? slash + 1 : argv0;
}

int lc_cli_option(lc_cli *cli, int opt, const char *arg, void (*usage)(FILE *)) {
    switch (opt) {
    case 'h':
        usage(stdout);
        return LC_EXIT_OK;
    case LC_OPT_VERSION:
        printf("%s (libconvert) %s\n", cli->prog, LC_VERSION);
        return LC_EXIT_OK;
    case 'q':
        cli->quiet = true;
        return -1;
    case LC_OPT_NO_FSYNC:
        lc_outfile_set_durable(false);
        return -1;
    case LC_OPT_JSON:
        cli->json = true;
        return -1;
    case 't': {
        char *end;
        long n = strtol(arg, &end, 10);
        if (*end || n < 0 || n > 1024) {
            fprintf(stderr, "%s: --threads wants a number from 0 to 1024, not '%s'\n", cli->prog,
                    arg);
            return LC_EXIT_USAGE;
        }
        cli->threads = (int)n;
        return -1;
    }
    default:
        usage(stderr);
        return LC_EXIT_USAGE;
    }
}

int lc_cli_float_dtype(const lc_cli *cli, const char *arg, lc_dtype *out) {
    lc_dtype t = lc_dtype_from_name(arg);
    if (t != LC_DT_F32 && t != LC_DT_F16 && t != LC_DT_BF16) {
        fprintf(stderr, "%s: --dtype wants f32, f16 or bf16, not '%s'\n", cli->prog, arg);
        return LC_EXIT_USAGE;
    }
    *out = t;
    return -1;
}

void lc_cli_start(lc_cli *cli) {
    lc_outfile_cleanup_on_signal();
    cli->progress = lc_progress_new(!cli->quiet && isatty(STDERR_FILENO));
}

int lc_cli_report(const lc_cli *cli, const lc_error *err) {
    char line[1024];
    lc_progress_end(cli->progress);
    lc_err_format(err, line, sizeof line);
    fprintf(stderr, "%s: %s\n", cli->prog, line);
    return LC_EXIT_FAIL;
}

void lc_cli_finish(lc_cli *cli) {
    lc_progress_free(cli->progress);
    cli->progress = NULL;
}
