/* cmd/model-inspect.c: print the header, metadata and tensor table of a model file. */
#include <stdio.h>

#include "jobs/model_inspect.h"
#include "libconvert/cli.h"

static const lc_cli_tool TOOL = {
    .synopsis = "[--json] [-q] FILE",
    .about = "Prints the format, header size, metadata and tensor table (name, dtype, shape, "
             "bytes, file offset) of FILE: a .safetensors file, or a sharded checkpoint's "
             "folder or model.safetensors.index.json, a GGUF, or a PyTorch checkpoint. With "
             "--json, one JSON object with every tensor and metadata value.",
    .common = LC_CLI_QUIET | LC_CLI_JSON,
    .min_args = 1, .max_args = 1,
};

int main(int argc, char **argv) {
    lc_cli cli;
    int status = lc_cli_parse(&cli, &TOOL, argc, argv);
    if (status >= 0)
        return status;
    lc_cli_start(&cli);
    const lc_job_inspect_opts o = { .path = cli.args[0], .json = cli.json, .print = stdout };
    lc_error err = { 0 };
    return lc_cli_end(&cli, lc_job_model_inspect(&o, cli.progress, &err), &err);
}
