/* cmd/safetensors-rewrite.c: read safetensors (one file or a sharded checkpoint) and
 * write one safetensors file, laid out as the reference writer lays it out. */
#include "jobs/safetensors_rewrite.h"
#include "libconvert/cli.h"

int main(int argc, char **argv) {
    lc_job_st_rewrite_opts o = { .cast = LC_DT_INVALID };
    const lc_cli_opt opts[] = {
        { "dtype", 0, "f32|f16|bf16", "cast every floating-point tensor, rounding to nearest "
          "even; integer tensors are kept", .dtype = &o.cast },
        { "stringify-meta", 0, NULL, "write non-string metadata as JSON text instead of "
          "failing", .flag = &o.stringify_meta },
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] IN OUT",
        .about = "Reads IN (a .safetensors file, or a sharded checkpoint's folder or "
                 "model.safetensors.index.json) and writes every tensor and the metadata to "
                 "OUT as one safetensors file, byte for byte as the reference writer orders "
                 "it. OUT appears only when complete. Lossless without --dtype.",
        .opts = opts, .common = LC_CLI_WRITER, .min_args = 2, .max_args = 2,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    lc_cli_start(&cli);
    o.in = cli.args[0], o.out = cli.args[1], o.threads = cli.threads;
    lc_error err = { 0 };
    return lc_cli_end(&cli, lc_job_safetensors_rewrite(&o, cli.progress, &err), &err);
}
