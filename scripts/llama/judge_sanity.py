"""The llama.cpp judge's sanity check (scripts/bootstrap-llama.sh): load MODEL and
evaluate a few tokens. Exit 0 with one line when the logits are finite; 1 when they are
not; a crash of llama.cpp itself (SIGILL on a CPU it was not built for) ends the process
with that signal, which the caller names."""
import sys

import llama_cpp
import numpy as np


def main(path):
    llm = llama_cpp.Llama(model_path=path, n_ctx=32, n_threads=1, logits_all=True,
                          verbose=False)
    tokens = [1, 7, 42, 300]
    llm.eval(tokens)
    logits = np.asarray(llm.scores[:len(tokens)], dtype=np.float32)
    if not np.isfinite(logits).all() or not np.abs(logits).max() > 0:
        print(f"judge_sanity: {path}: llama.cpp's logits are not finite or all zero")
        return 1
    print(f"judge_sanity: llama.cpp {llama_cpp.__version__} evaluated {len(tokens)} tokens "
          f"of {path} (logits {logits.shape}, finite)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
