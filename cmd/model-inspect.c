/* cmd/model-inspect.c: print the header, metadata and tensor table of a model file. */
#include <stdio.h>

#include "jobs/model_inspect.h"
#include "libconvert/inspect.h"
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
    const lc_job_inspect_opts o = { .path = cli.args[0] };
    lc_error err = { 0 };
    lc_job_inspect_result res;
    lc_code rc = lc_job_model_inspect(&o, cli.progress, &res, &err);
    /* The report, also of a file our readers refuse (then the refusal is the error);
     * a report that cannot be written is the error instead. */
    if (res.model) {
        lc_error perr = { 0 };
        const lc_code prc = cli.json ? lc_inspect_print_json(stdout, res.model, &res.info, &perr)
                                     : lc_inspect_print_text(stdout, res.model, &res.info, &perr);
        if (prc != LC_OK) {
            rc = prc;
            err = perr;
        }
    }
    lc_job_inspect_result_free(&res);
    return lc_cli_end(&cli, rc, &err);
}
