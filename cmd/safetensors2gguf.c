/* cmd/safetensors2gguf.c: a bare .safetensors file (no config.json) into a GGUF
 * container: same tensors (dtypes GGUF lacks widened losslessly, originals recorded),
 * __metadata__ as string keys, no architecture. gguf2safetensors reverses it. */
#include <getopt.h>
#include <stdio.h>

#include "formats/gguf.h"
#include "formats/gguf_bare.h"
#include "formats/safetensors.h"
#include "libconvert/cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: safetensors2gguf [-q] IN.safetensors OUT.gguf\n"
               "  Writes the tensors and __metadata__ of IN as a GGUF container. Dtypes GGUF\n"
               "  lacks are widened (BOOL->I8, U8->I16, U16->I32, U32/U64->I64, F8->F16) and\n"
               "  recorded, so gguf2safetensors restores them. No architecture is added.\n"
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
    lc_model *m = NULL;
    int status = LC_EXIT_OK;
    if (lc_safetensors_load(argv[optind], &m, &err) != LC_OK ||
        lc_gguf_bare_encode(m, &err) != LC_OK ||
        lc_gguf_write(m, argv[optind + 1], NULL, cli.progress, &err) != LC_OK) {
        lc_err_context(&err, argv[optind], NULL); /* a failed source read: the input */
        status = lc_cli_report(&cli, &err);
    }
    lc_model_free(m);
    lc_cli_finish(&cli);
    return status;
}
