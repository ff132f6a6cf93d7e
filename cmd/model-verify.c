/* cmd/model-verify.c: did a conversion keep the model intact? Compares SRC and DST
 * (jobs/model_verify.h): metadata, every tensor, both forward passes. Exit 0 pass,
 * 1 fail, 2 error (unreadable or incomparable input, bad usage). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "jobs/model_verify.h"
#include "jobs/model_verify_print.h"
#include "libconvert/cli.h"

int main(int argc, char **argv) {
    lc_job_verify_opts o = { 0 };
    const char *max_tokens = NULL;
    const lc_cli_opt opts[] = {
        { "tokens", 0, "ID,ID,...", "run the models on these token ids", .str = &o.tokens },
        { "text", 0, "TEXT", "tokenize TEXT with SRC's own vocabulary", .str = &o.text },
        { "file", 0, "FILE", "tokenize the text of FILE", .str = &o.file },
        { "max-tokens", 0, "N", "cut the tokens at N (default 512; also at the model's "
          "context length)", .str = &max_tokens },
        { "layers", 0, NULL, "compare the hidden states after every layer and name the first "
          "layer where they part ways", .flag = &o.layers },
        { "imatrix", 0, "FILE", "the importance matrix DST was quantized with (llama-imatrix's "
          "GGUF or legacy .dat, as given to gguf-quantize or llama-quantize --imatrix): the "
          "reproduction weighs each tensor by it, so such a DST can be proven",
          .str = &o.imatrix },
        { "report", 0, "FILE.html", "also write a self-contained HTML page with the figures "
          "(implies --layers)", .str = &o.report },
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] SRC DST",
        .about = "SRC and DST are each an HF folder, a Meta folder, a .pth or .safetensors "
                 "file, or a GGUF; DST is usually the converted file. Compares the "
                 "hyperparameters and tokenizer (every difference named by key and token "
                 "id), every tensor pair (RMSE, max error, cosine, SNR against what DST's "
                 "type may change; the worst first) and both models' logits on the same "
                 "tokens (the bundled text unless --tokens, --text or --file): NMSE, KL "
                 "divergence, delta-p, same top-1/top-5, perplexity. SRC is also converted "
                 "to DST's types by our own quantizers (llama-quantize's bytes, weighted by "
                 "--imatrix when DST was made with one): a DST equal to that byte for byte "
                 "is proven, whatever its KL; otherwise its KL is held to 1.5x the "
                 "reproduction's own plus a margin (a DST that records an importance matrix "
                 "is judged so when --imatrix does not give it, and the report says the "
                 "reproduction lacks it).\n"
                 "Exit status: 0 DST is what a correct conversion of SRC gives, 1 it is "
                 "not (the tensor, layer or key is named), 2 an error (unreadable or "
                 "incomparable input, bad usage).",
        .opts = opts, .common = LC_CLI_QUIET | LC_CLI_THREADS | LC_CLI_JSON | LC_CLI_NO_FSYNC,
        .min_args = 2, .max_args = 2,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    if (max_tokens) {
        char *end;
        errno = 0;
        const unsigned long long n = strtoull(max_tokens, &end, 10);
        if (errno || *end || end == max_tokens || n < 2 || n > (1u << 20))
            return lc_cli_usage(&cli);
        o.max_tokens = (size_t)n;
    }
    o.src = cli.args[0], o.dst = cli.args[1];
    o.threads = cli.threads;
    lc_cli_start(&cli);
    lc_error err = { 0 };
    lc_job_verify_result res;
    lc_code rc = lc_job_model_verify(&o, cli.progress, &res, &err);
    if (rc == LC_OK)
        rc = cli.json ? lc_job_verify_print_json(&res, stdout, &err)
                      : lc_job_verify_print_text(&res, stdout, &err);
    if (rc != LC_OK) {
        lc_cli_report(&cli, &err);
        status = LC_EXIT_USAGE;     /* 2: an error, not a verdict */
    } else {
        status = res.pass ? LC_EXIT_OK : LC_EXIT_FAIL;
    }
    lc_job_verify_result_free(&res);
    fflush(stdout);
    lc_cli_finish(&cli);
    return status;
}
