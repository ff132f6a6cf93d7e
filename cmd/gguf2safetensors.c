/* cmd/gguf2safetensors.c: a GGUF file into a .safetensors file. A model GGUF
 * (general.architecture and token_embd.weight) gets its Hugging Face tensor names
 * back, the inverse Q/K permutation and --dtype (block types dequantized), no
 * metadata. Any other GGUF is a container: dtypes recorded by safetensors2gguf are
 * restored; other metadata goes to __metadata__ (non-string values as JSON text). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/gguf_bare.h"
#include "hf/hf.h"
#include "formats/safetensors.h"
#include "libconvert/cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: gguf2safetensors [-q] [--dtype f32|f16|bf16] IN.gguf OUT.safetensors\n"
               "  A llama/qwen2 model GGUF: Hugging Face tensor names, Q/K rows un-permuted,\n"
               "  every tensor as --dtype (default: f32/f16/bf16 kept, blocks dequantized to\n"
               "  f32). Any other GGUF: its tensors, restoring the dtypes safetensors2gguf\n"
               "  widened; metadata goes to __metadata__ (non-strings as JSON text).\n"
               "  -t, --threads N  convert on N threads (default: one per core, at most 8)\n"
               "  -q, --quiet  no progress; --no-fsync; -h, --help  this text; --version\n");
}

int main(int argc, char **argv) {
    enum { OPT_DTYPE = 0x2000 };
    static const struct option longopts[] = {
        LC_CLI_LONGOPTS, { "dtype", required_argument, NULL, OPT_DTYPE }, { NULL, 0, NULL, 0 },
    };
    lc_cli cli;
    lc_cli_init(&cli, argv[0]);
    lc_dtype dtype = LC_DT_INVALID;
    int opt;
    while ((opt = getopt_long(argc, argv, LC_CLI_SHORTOPTS, longopts, NULL)) != -1) {
        if (opt == OPT_DTYPE) {
            int rc = lc_cli_float_dtype(&cli, optarg, &dtype);
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
    lc_error err = { 0 };
    lc_model *in = NULL, *m = NULL;
    const lc_st_write_opts o = { .stringify_meta = true, .threads = cli.threads };
    int status = LC_EXIT_OK;
    lc_code rc = lc_gguf_load(argv[optind], &in, &err);
    if (rc == LC_OK) {
        /* A model (it has the token embedding) goes back to HF; anything else is a
         * container, even with an architecture key. */
        if (lc_model_find_meta(in, "general.architecture") &&
            lc_model_find_tensor(in, "token_embd.weight"))
            rc = lc_hf_from_gguf(in, dtype, &m, &err);      /* takes in */
        else if (dtype != LC_DT_INVALID) {
            rc = lc_fail(&err, LC_E_ARG, LC_NO_OFFSET, "--dtype needs a model GGUF "
                         "(general.architecture and token_embd.weight)");
            lc_model_free(in);
        } else
            rc = lc_gguf_bare_decode(in, &m, &err);         /* takes in */
    }
    if (rc == LC_OK)
        rc = lc_safetensors_write(m, argv[optind + 1], &o, cli.progress, &err);
    if (rc != LC_OK) {
        lc_err_context(&err, argv[optind], NULL);
        status = lc_cli_report(&cli, &err);
    }
    lc_model_free(m);
    lc_cli_finish(&cli);
    return status;
}
