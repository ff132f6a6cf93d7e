/* Unit tests for the table-driven option parser (libconvert/cli.h): every kind of
 * destination, long and short forms, usage errors, the --help text, common flags. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/cli.h"
#include "libconvert/version.h"

/* The values one table fills; reset by every test (each runs in its own process). */
static bool     flag;
static int      mode;
static const char *str;
static lc_cli_list list;
static lc_dtype dtype = LC_DT_F32;

static const lc_cli_opt OPTS[] = {
    { "flag", 'f', NULL, "a flag", .flag = &flag },
    { "mode-a", 0, NULL, "first mode", .choice = &mode, .id = 1 },
    { "mode-b", 'b', NULL, "second mode", .choice = &mode, .id = 2 },
    { "str", 's', "S", "a string", .str = &str },
    { "item", 0, "X", "repeatable", .list = &list },
    { "dtype", 0, "f32|bf16|auto", "a dtype", .dtype = &dtype },
    { NULL },
};
static const lc_cli_tool TOOL = {
    .synopsis = "[options] A [B]\n--mode-b A",
    .about = "Does nothing; for the tests.",
    .opts = OPTS, .common = 0, .min_args = 1, .max_args = 2,
};

/* Parses the NULL-terminated words after "prog" (copied: getopt permutes argv). */
static int parse(lc_cli *cli, const lc_cli_tool *tool, const char *const *words) {
    static char store[200][64];
    static char *argv[201];
    int argc = 0;
    argv[argc] = strcpy(store[argc], "prog"), argc++;
    for (; words[argc - 1]; argc++)
        argv[argc] = strcpy(store[argc], words[argc - 1]);
    argv[argc] = NULL;
    return lc_cli_parse(cli, tool, argc, argv);
}
#define PARSE(cli, tool, ...) parse(cli, tool, (const char *const[]){ __VA_ARGS__, NULL })

static char *help_text(const lc_cli_tool *tool) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    lc_cli_help(tool, "prog", f);
    fclose(f);
    return buf;
}

Test(cli, every_kind_long_forms) {
    lc_cli cli;
    cr_assert_eq(PARSE(&cli, &TOOL, "--flag", "--str=abc", "--mode-a", "A", "--item", "x",
                       "--item=y", "--dtype", "BF16", "--mode-b", "B"), -1);
    cr_assert(flag);
    cr_assert_eq(mode, 2, "the last mode given wins");
    cr_assert_str_eq(str, "abc");
    cr_assert_eq(list.n, 2);
    cr_assert_str_eq(list.items[0], "x");
    cr_assert_str_eq(list.items[1], "y");
    cr_assert_eq(dtype, LC_DT_BF16);
    cr_assert_eq(cli.nargs, 2);
    cr_assert_str_eq(cli.args[0], "A");
    cr_assert_str_eq(cli.args[1], "B");
    cr_assert_eq(cli.given, 0x3f, "rows 0..5 given: %#llx", (unsigned long long)cli.given);
}

Test(cli, short_forms_and_given_bits) {
    lc_cli cli;
    cr_assert_eq(PARSE(&cli, &TOOL, "-f", "-s", "v1", "A"), -1);
    cr_assert(flag);
    cr_assert_str_eq(str, "v1");
    cr_assert_eq(cli.given, 0x9);     /* flag and str */
    cr_assert_eq(PARSE(&cli, &TOOL, "-svalue", "-b", "A"), -1);
    cr_assert_str_eq(str, "value");
    cr_assert_eq(mode, 2);
    cr_assert_eq(cli.given, 0xc);     /* mode-b and str */
    cr_assert_eq(PARSE(&cli, &TOOL, "--str", "spaced", "A"), -1);
    cr_assert_str_eq(str, "spaced");
    cr_assert_eq(PARSE(&cli, &TOOL, "A"), -1);
    cr_assert_eq(cli.given, 0);
    cr_assert_eq(cli.nargs, 1);
}

Test(cli, dtype_names_and_auto, .init = cr_redirect_stderr) {
    lc_cli cli;
    cr_assert_eq(PARSE(&cli, &TOOL, "--dtype=auto", "A"), -1);
    cr_assert_eq(dtype, LC_DT_INVALID);
    cr_assert_eq(PARSE(&cli, &TOOL, "--dtype", "f32", "A"), -1);
    cr_assert_eq(dtype, LC_DT_F32);
    /* A dtype the library knows but the row does not offer. */
    cr_assert_eq(PARSE(&cli, &TOOL, "--dtype", "f16", "A"), LC_EXIT_USAGE);
    cr_assert_eq(PARSE(&cli, &TOOL, "--dtype", "f3", "A"), LC_EXIT_USAGE);
}

Test(cli, usage_errors_exit_2, .init = cr_redirect_stderr) {
    lc_cli cli;
    cr_assert_eq(PARSE(&cli, &TOOL, "A", "--str"), LC_EXIT_USAGE, "missing argument");
    cr_assert_eq(PARSE(&cli, &TOOL, "A", "-s"), LC_EXIT_USAGE, "missing argument, short");
    cr_assert_eq(PARSE(&cli, &TOOL, "--bogus", "A"), LC_EXIT_USAGE, "unknown long");
    cr_assert_eq(PARSE(&cli, &TOOL, "-z", "A"), LC_EXIT_USAGE, "unknown short");
    cr_assert_eq(PARSE(&cli, &TOOL, "--flag=1", "A"), LC_EXIT_USAGE, "argument to a flag");
    cr_assert_eq(parse(&cli, &TOOL, (const char *const[]){ NULL }), LC_EXIT_USAGE, "no operand");
    cr_assert_eq(PARSE(&cli, &TOOL, "A", "B", "C"), LC_EXIT_USAGE, "too many operands");
}

Test(cli, usage_error_prints_help_on_stderr, .init = cr_redirect_stderr) {
    lc_cli cli;
    cr_assert_eq(PARSE(&cli, &TOOL, "--bogus", "A"), LC_EXIT_USAGE);
    fflush(stderr);
    cr_assert_stderr_neq_str("");
}

Test(cli, list_is_bounded, .init = cr_redirect_stderr) {
    lc_cli cli;
    const char *w[2 * LC_CLI_LIST_MAX + 4];
    int n = 0;
    for (int i = 0; i <= LC_CLI_LIST_MAX; i++)
        w[n++] = "--item", w[n++] = "v";
    w[n++] = "A";
    w[n] = NULL;
    cr_assert_eq(parse(&cli, &TOOL, w), LC_EXIT_USAGE);
    w[n - 3] = "A", w[n - 2] = NULL;   /* exactly LC_CLI_LIST_MAX */
    list.n = 0;
    cr_assert_eq(parse(&cli, &TOOL, w), -1);
    cr_assert_eq(list.n, LC_CLI_LIST_MAX);
}

Test(cli, help_lists_every_option) {
    char *h = help_text(&TOOL);
    cr_assert(strstr(h, "usage: prog [options] A [B]\n       prog --mode-b A\n"), "%s", h);
    cr_assert(strstr(h, "  Does nothing; for the tests.\n"), "%s", h);
    static const char *const want[] = {
        "\n  -f, --flag  ", "\n      --mode-a  ", "\n  -b, --mode-b  ", "\n  -s, --str S  ",
        "\n      --item X  ", "\n      --dtype f32|bf16|auto\n", "\n  -h, --help  ",
        "\n  -V, --version  ",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(h, want[i]), "no '%s' in:\n%s", want[i], h);
    for (size_t i = 0; OPTS[i].name; i++)
        cr_assert(strstr(h, OPTS[i].help), "no help for --%s", OPTS[i].name);
    /* The tool declared no common flag besides -h and -V. */
    cr_assert_null(strstr(h, "--threads"));
    cr_assert_null(strstr(h, "--quiet"));
    cr_assert_null(strstr(h, "--json"));
    cr_assert_null(strstr(h, "--no-fsync"));
    free(h);
}

Test(cli, help_wraps_long_lines) {
    static const lc_cli_opt o[] = {
        { "long-option-name", 0, "SOME=ARGUMENT", "word word word word word word word word "
          "word word word word word word word word word word word word", .str = &str },
        { NULL },
    };
    const lc_cli_tool t = { .synopsis = "X", .opts = o, .min_args = 0, .max_args = 0 };
    char *h = help_text(&t);
    for (char *line = strtok(h, "\n"); line; line = strtok(NULL, "\n"))
        cr_assert_leq(strlen(line), 79, "too wide: '%s'", line);
    free(h);
}

Test(cli, help_and_version_exit_0, .init = cr_redirect_stdout) {
    lc_cli cli;
    cr_assert_eq(PARSE(&cli, &TOOL, "-V"), LC_EXIT_OK);
    cr_assert_eq(PARSE(&cli, &TOOL, "--version"), LC_EXIT_OK);
    cr_assert_eq(PARSE(&cli, &TOOL, "--help", "--bogus"), LC_EXIT_OK, "help before the error");
    fflush(stdout);
    char want[256];
    snprintf(want, sizeof want, "prog (libconvert) %s\nprog (libconvert) %s\n", LC_VERSION,
             LC_VERSION);
    FILE *f = cr_get_redirected_stdout();
    char got[4096] = { 0 };
    size_t n = fread(got, 1, sizeof got - 1, f);
    cr_assert_gt(n, strlen(want));
    cr_assert_eq(strncmp(got, want, strlen(want)), 0, "%s", got);
    cr_assert(strstr(got + strlen(want), "usage: prog "), "%s", got);
}

Test(cli, common_flags_only_when_declared, .init = cr_redirect_stderr) {
    lc_cli cli;
    cr_assert_eq(PARSE(&cli, &TOOL, "--threads", "2", "A"), LC_EXIT_USAGE);
    cr_assert_eq(PARSE(&cli, &TOOL, "-t2", "A"), LC_EXIT_USAGE);
    cr_assert_eq(PARSE(&cli, &TOOL, "-q", "A"), LC_EXIT_USAGE);
    cr_assert_eq(PARSE(&cli, &TOOL, "--json", "A"), LC_EXIT_USAGE);
    cr_assert_eq(PARSE(&cli, &TOOL, "--no-fsync", "A"), LC_EXIT_USAGE);

    lc_cli_tool writer = TOOL;
    writer.common = LC_CLI_WRITER;
    cr_assert_eq(PARSE(&cli, &writer, "-t", "3", "--no-fsync", "-q", "A"), -1);
    cr_assert_eq(cli.threads, 3);
    cr_assert(cli.quiet);
    cr_assert_eq(cli.given, 0, "common flags are not the tool's rows");
    cr_assert_eq(PARSE(&cli, &writer, "--threads=4", "A"), -1);
    cr_assert_eq(cli.threads, 4);
    cr_assert_eq(PARSE(&cli, &writer, "--threads", "x", "A"), LC_EXIT_USAGE);
    cr_assert_eq(PARSE(&cli, &writer, "-t", "1025", "A"), LC_EXIT_USAGE);
    cr_assert_eq(PARSE(&cli, &writer, "--json", "A"), LC_EXIT_USAGE);
    char *h = help_text(&writer);
    cr_assert(strstr(h, "  -t, --threads N "), "%s", h);
    cr_assert(strstr(h, "  -q, --quiet "), "%s", h);
    cr_assert(strstr(h, "      --no-fsync "), "%s", h);
    cr_assert_null(strstr(h, "--json"));
    free(h);

    lc_cli_tool inspect = TOOL;
    inspect.common = LC_CLI_JSON;
    cr_assert_eq(PARSE(&cli, &inspect, "--json", "A"), -1);
    cr_assert(cli.json);
    cr_assert_eq(PARSE(&cli, &inspect, "-t", "2", "A"), LC_EXIT_USAGE);
}

Test(cli, bad_tables_are_refused, .init = cr_redirect_stderr) {
    lc_cli cli;
    bool b;
    const char *s;
    const lc_cli_opt two_dests[] = { { "x", 0, NULL, "", .flag = &b, .str = &s }, { NULL } };
    const lc_cli_opt no_dest[] = { { "x", 0, NULL, "" }, { NULL } };
    const lc_cli_opt flag_arg[] = { { "x", 0, "V", "", .flag = &b }, { NULL } };
    const lc_cli_opt str_no_arg[] = { { "x", 0, NULL, "", .str = &s }, { NULL } };
    const lc_cli_opt takes_h[] = { { "x", 'h', NULL, "", .flag = &b }, { NULL } };
    const lc_cli_opt takes_help[] = { { "help", 0, NULL, "", .flag = &b }, { NULL } };
    const lc_cli_opt *bad[] = { two_dests, no_dest, flag_arg, str_no_arg, takes_h, takes_help };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const lc_cli_tool t = { .synopsis = "A", .opts = bad[i], .min_args = 1, .max_args = 1 };
        cr_assert_eq(PARSE(&cli, &t, "A"), LC_EXIT_USAGE, "table %zu", i);
    }
}
