/* cmd/gguf2safetensors.c: a GGUF file into a .safetensors file: a model GGUF back to
 * Hugging Face names and layout, any other GGUF as a container (jobs/gguf2safetensors.h). */
#include "jobs/gguf2safetensors.h"
#include "libconvert/cli.h"

int main(int argc, char **argv) {
    lc_job_gguf2st_opts o = { .dtype = LC_DT_INVALID };
    const lc_cli_opt opts[] = {
        { "dtype", 0, "f32|f16|bf16", "every tensor of a model GGUF as this type (default: "
          "f32/f16/bf16 kept, blocks dequantized to f32)", .dtype = &o.dtype },
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] IN.gguf OUT.safetensors",
        .about = "A llama/qwen2 model GGUF: Hugging Face tensor names, Q/K rows un-permuted, "
                 "every tensor as --dtype. Any other GGUF: its tensors, restoring the dtypes "
                 "safetensors2gguf widened; metadata goes to __metadata__ (non-strings as "
                 "JSON text).",
        .opts = opts, .common = LC_CLI_WRITER, .min_args = 2, .max_args = 2,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    lc_cli_start(&cli);
    o.in = cli.args[0], o.out = cli.args[1], o.threads = cli.threads;
    lc_error err = { 0 };
    return lc_cli_end(&cli, lc_job_gguf2safetensors(&o, cli.progress, &err), &err);
}
