/* cmd/safetensors-rewrite.c: read safetensors (one file or a sharded checkpoint) and
 * write one safetensors file, laid out as the reference writer lays it out. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/safetensors.h"
#include "libconvert/cli.h"
#include "libconvert/convert.h"

enum { OPT_STRINGIFY = 0x2000, OPT_DTYPE };

static void usage(FILE *f) {
    fprintf(f, "usage: safetensors-rewrite [-q] [--dtype f32|f16|bf16] [--stringify-meta] IN OUT\n"
               "  Reads IN (a .safetensors file, or a sharded checkpoint's folder or\n"
               "  model.safetensors.index.json) and writes every tensor and the metadata\n"
               "  to OUT as one safetensors file, byte for byte as the reference writer\n"
               "  orders it. OUT appears only when complete. Lossless without --dtype.\n"
               "  --dtype T         cast every floating-point tensor to T (f32, f16, bf16),\n"
               "                    rounding to nearest even; integer tensors are kept\n"
               "  --stringify-meta  write non-string metadata as JSON text instead of failing\n"
               "  -t, --threads N   convert on N threads (default: one per core, at most 8)\n"
               "  -q, --quiet       no progress; --no-fsync; -h, --help this text; --version\n");
}

static int is_sharded(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    return (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ||
           (n >= 11 && strcmp(path + n - 11, ".index.json") == 0);
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        LC_CLI_LONGOPTS, { "stringify-meta", no_argument, NULL, OPT_STRINGIFY },
        { "dtype", required_argument, NULL, OPT_DTYPE },
        { NULL, 0, NULL, 0 } };
    lc_cli cli;
    lc_st_write_opts opts = { false };
    lc_dtype cast = LC_DT_INVALID;
    lc_cli_init(&cli, argv[0]);
    int opt;
    while ((opt = getopt_long(argc, argv, LC_CLI_SHORTOPTS, longopts, NULL)) != -1) {
        if (opt == OPT_STRINGIFY) {
            opts.stringify_meta = true;
            continue;
        }
        if (opt == OPT_DTYPE) {
            int rc = lc_cli_float_dtype(&cli, optarg, &cast);
            if (rc >= 0)
                return rc;
            continue;
        }
        int rc = lc_cli_option(&cli, opt, optarg, usage);
        if (rc >= 0)
            return rc;
    }
    if (argc - optind != 2) {
        usage(stderr);
        return LC_EXIT_USAGE;
    }
    lc_cli_start(&cli);
    opts.threads = cli.threads;
    const char *in = argv[optind], *out = argv[optind + 1];
    lc_error err = {0};
    lc_model *m = NULL;
    int status = LC_EXIT_OK;
    lc_code rc = is_sharded(in) ? lc_safetensors_load_index(in, &m, &err)
                                : lc_safetensors_load(in, &m, &err);
    if (rc == LC_OK && cast != LC_DT_INVALID)
        rc = lc_model_cast(m, cast, NULL, &err); /* lazy: converts while writing */
    if (rc == LC_OK)
        rc = lc_safetensors_write(m, out, &opts, cli.progress, &err);
    if (rc != LC_OK)
        status = lc_cli_report(&cli, &err);
    lc_model_free(m);
    lc_cli_finish(&cli);
    return status;
}
