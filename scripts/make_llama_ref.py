#!/usr/bin/env python3
"""Generates fixtures/hf-ref/<model>-<outtype>.gguf: what llama.cpp's own converter,
convert_hf_to_gguf.py, writes from each fixtures/hf/<model> folder. tests/llama/ holds
our safetensors2gguf output up against these files (llama.cpp is the judge).

Not run in CI. Needs a Python with torch (the converter imports it), transformers,
sentencepiece and the rest of scripts/llama/ref-requirements.txt:
    LC_TORCH_SITE=/path/to/torch/site-packages scripts/llama/make-ref-venv.sh
    export LC_REF_PY=build/ref-venv/bin/python
    $LC_REF_PY scripts/make_llama_ref.py          # or any python3: it re-runs under $LC_REF_PY

Where the converter comes from: PyPI's llama-cpp-python sdist (pip download --no-binary),
unpacked under build/llama-src/. It vendors llama.cpp, whose convert_hf_to_gguf.py and
gguf-py (put first on PYTHONPATH, as the script itself does) are used unmodified except
for one documented substitution:

  - get_vocab_base_pre(): llama.cpp names a BPE pre-tokenizer by hashing the token ids
    its tokenizer gives for a fixed text and looking the hash up in a table of known
    models. Our fixtures' BPE tokenizers are trained on a tiny corpus, so no hash can
    match and the converter stops ("BPE pre-tokenizer was not recognized"). The
    fixtures copy the pre-tokenizer regexes of Llama 3 (llama-bpe) and Qwen2 (qwen2), so
    the name is supplied per folder from PRE below: the names llama.cpp gives those
    regexes. Everything else the converter decides for itself.

For the bench (scripts/bench.sh runs the converter side by side with ours):
    python3 scripts/make_llama_ref.py --converter-path
fetches the sdist if needed and prints the path of convert_hf_to_gguf.py, to be run as
    $LC_REF_PY "$(python3 scripts/make_llama_ref.py --converter-path)" FOLDER --outfile X

Outputs are deterministic (no timestamps in convert_hf_to_gguf's output); MANIFEST rows
for fixtures/hf-ref/ are replaced with fresh ones.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.3.36"
SRC = ROOT / "build" / "llama-src"
SDIST = SRC / f"llama_cpp_python-{VERSION}"
LLAMA = SDIST / "vendor" / "llama.cpp"
OUT = ROOT / "fixtures" / "hf-ref"
MODELS = ["llama-spm", "llama-bpe", "qwen2", "llama-tf"]
OUTTYPES = ["f32", "f16", "bf16", "q8_0"]
# The llama.cpp pre-tokenizer name of the regex each BPE fixture copies (None: SentencePiece).
PRE = {"llama-spm": None, "llama-bpe": "llama-bpe", "qwen2": "qwen2", "llama-tf": None}
PRODUCER = "llama.cpp convert_hf_to_gguf.py"


def fetch_sdist():
    """PyPI's llama-cpp-python sdist, unpacked once under build/llama-src/."""
    if (LLAMA / "convert_hf_to_gguf.py").is_file():
        return
    SRC.mkdir(parents=True, exist_ok=True)
    tgz = SRC / f"llama_cpp_python-{VERSION}.tar.gz"
    if not tgz.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", f"llama-cpp-python=={VERSION}", "-d", str(SRC)],
                       check=True)
    with tarfile.open(tgz) as t:
        t.extractall(SRC, filter="data")


def llama_commit():
    """The vendored llama.cpp commit, from the submodule's HEAD the sdist carries."""
    head = SDIST / ".git" / "modules" / "vendor" / "llama.cpp" / "HEAD"
    return head.read_text().strip() if head.is_file() else "unknown"


def convert_in_process(model_dir, outfile, outtype, pre):
    """Runs the converter's main() here, with get_vocab_base_pre answered by `pre`."""
    sys.path[:0] = [str(LLAMA / "gguf-py"), str(LLAMA)]
    import convert_hf_to_gguf
    from conversion import base
    if pre != "-":
        base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
    sys.argv = ["convert_hf_to_gguf.py", model_dir, "--outfile", outfile, "--outtype", outtype]
    convert_hf_to_gguf.main()


def versions(py):
    code = ("import torch, transformers, sys; sys.path.insert(0, %r); import gguf; "
            "from importlib.metadata import version as v; "
            "print('torch=%%s;transformers=%%s;tokenizers=%%s;sentencepiece=%%s' %% ("
            "torch.__version__.split('+')[0], transformers.__version__, v('tokenizers'), "
            "v('sentencepiece')))" % str(LLAMA / "gguf-py"))
    return subprocess.run([py, "-c", code], check=True, capture_output=True,
                          text=True).stdout.strip()


def update_manifest(rows):
    path = ROOT / "fixtures" / "MANIFEST.tsv"
    lines = path.read_text().splitlines()
    kept = [ln for ln in lines if not ln.startswith("hf-ref/")]
    path.write_text("\n".join(kept + rows) + "\n")


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--convert":
        convert_in_process(*sys.argv[2:])
        return
    if sys.argv[1:] == ["--converter-path"]:
        fetch_sdist()
        print(LLAMA / "convert_hf_to_gguf.py")
        return
    py = os.environ.get("LC_REF_PY")
    if not py:
        sys.exit("make_llama_ref: set LC_REF_PY to the Python of build/ref-venv "
                 "(scripts/llama/make-ref-venv.sh)")
    py = os.path.abspath(shutil.which(py) or py)  # the converter runs in another cwd
    fetch_sdist()
    OUT.mkdir(parents=True, exist_ok=True)
    ver = "llama-cpp-python=%s;llama.cpp=%s;%s" % (VERSION, llama_commit()[:12], versions(py))
    rows = []
    for model in MODELS:
        for outtype in OUTTYPES:
            dst = OUT / f"{model}-{outtype}.gguf"
            tmp = dst.with_suffix(".gguf.tmp")
            # cwd outside the tree: the converter may leave caches behind.
            subprocess.run([py, str(Path(__file__).resolve()), "--convert",
                            str(ROOT / "fixtures" / "hf" / model), str(tmp), outtype,
                            PRE[model] or "-"], check=True, cwd=str(SRC))
            os.replace(tmp, dst)
            digest = hashlib.sha256(dst.read_bytes()).hexdigest()
            rows.append("\t".join([f"hf-ref/{dst.name}", PRODUCER, ver, digest]))
            print(f"make_llama_ref: {dst.relative_to(ROOT)} {dst.stat().st_size} bytes")
    update_manifest(rows)


if __name__ == "__main__":
    main()
