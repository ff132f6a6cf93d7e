/* cmd/model-imatrix.c: an importance matrix from our own forward pass, in llama-imatrix's
 * GGUF format (jobs/model_imatrix.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/model_imatrix.h"
#include "libconvert/cli.h"
#include "libconvert/escape.h"
#include "libconvert/json.h"

/* A count option: min .. max, else false. */
static bool parse_count(const char *s, unsigned long long min, unsigned long long max,
                        uint32_t *v) {
    char *end;
    errno = 0;
    const unsigned long long n = strtoull(s, &end, 10);
    if (errno || *end || end == s || *s == '-' || n < min || n > max)
        return false;
    *v = (uint32_t)n;
    return true;
}

/* --json: the figures and every chunk's ids (what a reference run needs to repeat it). */
static lc_code print_json(const lc_job_imatrix_opts *o, const lc_job_imatrix_result *r,
                          lc_error *err) {
    lc_json_buf b = { 0 };
    lc_code rc = lc_json_printf(&b, err, "{\"model\":");
    if (rc == LC_OK)
        rc = lc_json_put_display(&b, o->model, strlen(o->model), err);
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, ",\"out\":");
    if (rc == LC_OK)
        rc = lc_json_put_display(&b, o->out, strlen(o->out), err);
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, ",\"text_tokens\":%zu,\"chunks\":%" PRIu32 ",\"chunk_size\":%"
                            PRIu32 ",\"chunk_count\":%" PRIu32 ",\"entries\":%zu,\"seconds\":%.3f,"
                            "\"tokens\":[", r->n_text_tokens, r->chunks, r->chunk_size,
                            r->chunk_count, r->entries, r->seconds);
    for (uint32_t c = 0; rc == LC_OK && c < r->chunks; c++)
        for (uint32_t i = 0; rc == LC_OK && i < r->chunk_size; i++)
            rc = lc_json_printf(&b, err, "%s%" PRId32, i == 0 ? (c ? "],[" : "[") : ",",
                                r->tokens[(size_t)c * r->chunk_size + i]);
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, "]]}\n");
    if (rc == LC_OK && fwrite(b.data, 1, b.len, stdout) != b.len)
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "writing the report to stdout");
    lc_json_buf_free(&b);
    return rc;
}

/* --show-statistics: llama-imatrix's table and per-layer averages, its format. */
static void print_stats(const char *path, const lc_job_imatrix_stats *r) {
    char name[160], layer[64], tensor[400];
    lc_escape(name, sizeof name, path, strlen(path));
    printf("\nComputing statistics for %s (%d tensors)\n", name, (int)r->n);
    printf("\n%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", " Layer",
           "       Tensor", "          \u03a3(Act\u00b2)", "  Min", "            Max",
           "           \u03bc", "   \u03c3", " % Active", "N", "   Entropy", "E (norm)", "ZD",
           "  CosSim");
    for (int i = 0; i < 169; i++)
        putchar('=');
    putchar('\n');
    for (size_t i = 0; i < r->n; i++) {
        const lc_imatrix_tstat *t = &r->t[i];
        lc_escape(layer, sizeof layer, t->layer, strlen(t->layer));
        lc_escape(tensor, sizeof tensor, t->tensor, strlen(t->tensor));
        const float norm = t->elements > 0 ? 100.0f * (t->entropy / log2f((float)t->elements))
                                           : 0.0f;
        printf("%5s\t%-20s\t%10.2f\t%8.4f\t%11.4f\t%6.2f\t%6.2f\t%8.2f%%\t%6d\t%10.4f\t"
               "%6.2f%%\t%10.2f%%\t%8.4f\n", layer, tensor, (double)t->total, (double)t->min,
               (double)t->max, (double)t->mean, (double)t->stddev, (double)(t->active * 100.0f),
               t->elements, (double)t->entropy, (double)norm, (double)(100.0f * t->zd),
               (double)t->cossim);
    }
    printf("\nComputing weighted average statistics per layer (%d layers)\n", (int)r->nl);
    printf("\n%s\t%s\t%s\t%s\n", "  Layer", "     \u03bc\u03a3(Act\u00b2)", "      \u03bcZD",
           "\u03bcCosSim");
    printf("================================================\n");
    for (size_t i = 0; i < r->nl; i++)
        printf("%5d\t%14.2f\t%10.4f%%\t%6.4f\n", r->l[i].layer, (double)r->l[i].bias,
               (double)(100.0f * r->l[i].zd), (double)r->l[i].cossim);
    printf("\n");
}

int main(int argc, char **argv) {
    lc_job_imatrix_opts o = { .ctx = 512 };
    const char *ctx = NULL, *chunks = NULL, *format = NULL;
    bool parse_special = false, show = false;
    const lc_cli_opt opts[] = {
        { "file", 'f', "FILE", "the calibration text (default: the bundled text, the first "
          "paragraphs of Moby-Dick: a few hundred to a thousand tokens)", .str = &o.file },
        { "ctx", 'c', "N", "tokens per chunk (default 512, as llama-imatrix)", .str = &ctx },
        { "chunks", 0, "N", "at most N chunks (default: all the text gives)", .str = &chunks },
        { "process-output", 0, NULL, "record output.weight too", .flag = &o.process_output },
        { "parse-special", 0, NULL, "special tokens' texts in FILE are those tokens",
          .flag = &parse_special },
        { "output-format", 0, "gguf|dat", "OUT as llama-imatrix's GGUF (default) or its "
          "legacy .dat", .str = &format },
        { "show-statistics", 0, NULL, "print llama-imatrix's statistics of the imatrix file "
          "IMATRIX (GGUF or .dat) instead", .flag = &show },
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] MODEL OUT.gguf\n--show-statistics IMATRIX",
        .about = "MODEL is a GGUF, an HF or Meta folder, or a .pth or .safetensors file "
                 "beside its config. Runs our forward pass over the text, tokenized by the "
                 "model's own tokenizer and cut into chunks of --ctx tokens, each a sequence "
                 "of its own starting with BOS (when the model adds one), and records for "
                 "every weight matrix of the blk.* layers the sum over tokens of each input "
                 "column's squared activation and the token count (per expert for a stack of "
                 "experts, from the tokens routed to each), as llama-imatrix does. OUT is "
                 "llama-imatrix's GGUF: gguf-quantize --imatrix OUT (and llama-quantize) "
                 "read it. --json prints the figures and every chunk's token ids on stdout.",
        .opts = opts, .common = LC_CLI_WRITER | LC_CLI_JSON, .min_args = 1, .max_args = 2,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    if (show != (cli.nargs == 1) ||
        (format && strcmp(format, "gguf") != 0 && strcmp(format, "dat") != 0))
        return lc_cli_usage(&cli);
    o.dat = format && strcmp(format, "dat") == 0;
    if (show) {
        lc_cli_start(&cli);
        lc_error err = { 0 };
        lc_job_imatrix_stats st;
        const lc_code rc = lc_job_imatrix_statistics(cli.args[0], &st, &err);
        if (rc == LC_OK)
            print_stats(cli.args[0], &st);
        lc_job_imatrix_stats_free(&st);
        fflush(stdout);
        return lc_cli_end(&cli, rc, &err);
    }
    /* --ctx 0 is the job's one-line error, not a usage error */
    if ((ctx && !parse_count(ctx, 0, 1u << 20, &o.ctx)) ||
        (chunks && !parse_count(chunks, 1, UINT32_MAX, &o.chunks)))
        return lc_cli_usage(&cli);
    o.model = cli.args[0], o.out = cli.args[1];
    o.threads = cli.threads, o.parse_special = parse_special;
    lc_cli_start(&cli);
    lc_error err = { 0 };
    lc_job_imatrix_result r;
    lc_code rc = lc_job_model_imatrix(&o, cli.progress, &r, &err);
    if (rc == LC_OK && cli.json)
        rc = print_json(&o, &r, &err);
    else if (rc == LC_OK && !cli.quiet)
        fprintf(stderr, "%s: %zu matrices from %" PRIu32 " chunks of %" PRIu32 " tokens "
                "(%.1f s, %.0f tokens/s)\n", cli.prog, r.entries, r.chunks, r.chunk_size,
                r.seconds, r.seconds > 0 ? (double)r.chunks * r.chunk_size / r.seconds : 0.0);
    lc_job_imatrix_result_free(&r);
    return lc_cli_end(&cli, rc, &err);
}
