/* cmd/model-inspect.c: print the header, metadata and tensor table of a model file. */
#include <getopt.h>
#include <stdio.h>

#include "formats/any.h"
#include "libconvert/cli.h"
#include "libconvert/inspect.h"

static void usage(FILE *f) {
    fprintf(f, "usage: model-inspect [--json] [-q] FILE\n"
               "  Prints the format, header size, metadata and tensor table (name, dtype,\n"
               "  shape, bytes, file offset) of FILE: a .safetensors file, or a sharded\n"
               "  checkpoint's folder or model.safetensors.index.json.\n"
               "  --json      one JSON object with every tensor and metadata value\n"
               "  -h, --help  this text; --version the version\n");
}

int main(int argc, char **argv) {
    static const struct option longopts[] = { LC_CLI_LONGOPTS, { NULL, 0, NULL, 0 } };
    lc_cli cli;
    lc_cli_init(&cli, argv[0]);
    int opt;
    while ((opt = getopt_long(argc, argv, LC_CLI_SHORTOPTS, longopts, NULL)) != -1) {
        int rc = lc_cli_option(&cli, opt, optarg, usage);
        if (rc >= 0)
            return rc;
    }
    if (argc - optind != 1) {
        usage(stderr);
        return LC_EXIT_USAGE;
    }
    lc_cli_start(&cli);
    const char *path = argv[optind];
    lc_error err = {0};
    lc_model *m = NULL;
    lc_any_info any;
    int status = LC_EXIT_OK;
    if (lc_model_open_any_info(path, &m, &any, &err) != LC_OK) {
        status = lc_cli_report(&cli, &err);
    } else {
        lc_inspect_info info = { path, any.format, any.file_size, any.header_size };
        lc_code rc = cli.json ? lc_inspect_print_json(stdout, m, &info, &err)
                              : lc_inspect_print_text(stdout, m, &info, &err);
        if (rc != LC_OK)
            status = lc_cli_report(&cli, &err);
    }
    lc_model_free(m);
    lc_cli_finish(&cli);
    return status;
}
