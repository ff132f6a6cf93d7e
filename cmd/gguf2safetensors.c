/* cmd/gguf2safetensors.c: a GGUF file's plain tensors into a .safetensors file.
 * Dtypes recorded by safetensors2gguf are restored; other metadata goes to
 * __metadata__ (non-string values as their JSON text). Quantized tensors are refused
 * until dequantization lands. */
#include <getopt.h>
#include <stdio.h>

#include "formats/gguf.h"
#include "formats/gguf_bare.h"
#include "formats/safetensors.h"
#include "libconvert/cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: gguf2safetensors [-q] IN.gguf OUT.safetensors\n"
               "  Writes the tensors of IN to a safetensors file, restoring the dtypes that\n"
               "  safetensors2gguf widened; metadata goes to __metadata__ (non-strings as\n"
               "  JSON text). Quantized tensors are not supported yet.\n"
               "  -q, --quiet  no progress; -h, --help  this text; --version the version\n");
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
    if (argc - optind != 2) {
        usage(stderr);
        return LC_EXIT_USAGE;
    }
    lc_cli_start(&cli);
    lc_error err = { 0 };
    lc_model *in = NULL, *m = NULL;
    const lc_st_write_opts o = { .stringify_meta = true };
    int status = LC_EXIT_OK;
    if (lc_gguf_load(argv[optind], &in, &err) != LC_OK ||
        lc_gguf_bare_decode(in, &m, &err) != LC_OK ||   /* takes in */
        lc_safetensors_write(m, argv[optind + 1], &o, cli.progress, &err) != LC_OK)
        status = lc_cli_report(&cli, &err);
    lc_model_free(m);
    lc_cli_finish(&cli);
    return status;
}
