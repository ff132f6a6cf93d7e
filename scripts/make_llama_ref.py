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

Outputs are deterministic (no timestamps in convert_hf_to_gguf's output); the MANIFEST
rows of the files written are replaced with fresh ones. With NAMEs, only those folders
are converted:  $LC_REF_PY scripts/make_llama_ref.py qwen3 gemma3

The converter runs with the pinned transformers 4.57.6 (it reads config.json through
AutoConfig) also on the folders transformers 5 wrote (make_hf_tf5_fixtures.py): their
"rope_parameters", "num_local_experts" and "_sliding_window_pattern" pass through
to_dict() unchanged, and the converter reads rope_parameters first.

SAME_AS: qwen3moe-fused holds qwen3moe's weights in transformers 5's fused expert
layout; every outtype of it must convert to exactly qwen3moe's reference (checked here,
nothing written), so our converter is held to the same bytes from either layout. Only
general.name would differ (the converter takes it from the folder's name), so it is
converted from a copy named qwen3moe.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.3.36"
SRC = ROOT / "build" / "llama-src"
SDIST = SRC / f"llama_cpp_python-{VERSION}"
LLAMA = SDIST / "vendor" / "llama.cpp"
OUT = ROOT / "fixtures" / "hf-ref"
MODELS = ["llama-spm", "llama-bpe", "qwen2", "llama-tf",
          "qwen3", "mixtral", "qwen3moe", "gemma3", "phi3", "qwen35", "qwen35moe", "gemma4", "gemma4moe"]
OUTTYPES = ["f32", "f16", "bf16", "q8_0"]
# The llama.cpp pre-tokenizer name of the regex each BPE fixture copies (None: SentencePiece).
# qwen3 and qwen3moe use Qwen2Tokenizer's own regex, which llama.cpp names "qwen2".
PRE = {"llama-spm": None, "llama-bpe": "llama-bpe", "qwen2": "qwen2", "llama-tf": None,
       "qwen3": "qwen2", "mixtral": None, "qwen3moe": "qwen2", "gemma3": None, "phi3": None,
       "qwen35": "qwen35", "qwen35moe": "qwen35", "gemma4": None, "gemma4moe": None}
# Folders whose every conversion must equal another folder's reference byte for byte
# (so no reference of their own is kept): the same weights in another layout.
SAME_AS = {"qwen3moe-fused": "qwen3moe"}
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
    """Replaces the rows of the files in `rows`, keeps every other."""
    path = ROOT / "fixtures" / "MANIFEST.tsv"
    lines = path.read_text().splitlines()
    made = {r.split("\t", 1)[0] for r in rows}
    kept = [ln for ln in lines if ln.split("\t", 1)[0] not in made]
    path.write_text("\n".join(kept + rows) + "\n")


def convert(py, model, outfile, outtype, folder=None):
    # cwd outside the tree: the converter may leave caches behind.
    subprocess.run([py, str(Path(__file__).resolve()), "--convert",
                    str(folder or ROOT / "fixtures" / "hf" / model), str(outfile), outtype,
                    PRE[SAME_AS.get(model, model)] or "-"], check=True, cwd=str(SRC))


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
    names = sys.argv[1:] or MODELS + list(SAME_AS)
    bad = [n for n in names if n not in MODELS and n not in SAME_AS]
    if bad:
        sys.exit(f"make_llama_ref: unknown {bad}; known: {MODELS + list(SAME_AS)}")
    rows = []
    for model in [n for n in MODELS if n in names]:
        for outtype in OUTTYPES:
            dst = OUT / f"{model}-{outtype}.gguf"
            tmp = dst.with_suffix(".gguf.tmp")
            convert(py, model, tmp, outtype)
            os.replace(tmp, dst)
            digest = hashlib.sha256(dst.read_bytes()).hexdigest()
            rows.append("\t".join([f"hf-ref/{dst.name}", PRODUCER, ver, digest]))
            print(f"make_llama_ref: {dst.relative_to(ROOT)} {dst.stat().st_size} bytes")
    update_manifest(rows)
    for model in [n for n in SAME_AS if n in names]:
        # Converted from a copy named like its twin: general.name comes from the
        # folder's name ("qwen3moe-fused" would be "Qwen3Moe Fused").
        with tempfile.TemporaryDirectory() as d:
            twin = Path(d) / SAME_AS[model]
            shutil.copytree(ROOT / "fixtures" / "hf" / model, twin)
            for outtype in OUTTYPES:
                tmp = Path(d) / f"{model}-{outtype}.gguf"
                convert(py, model, tmp, outtype, twin)
                ref = OUT / f"{SAME_AS[model]}-{outtype}.gguf"
                same = tmp.read_bytes() == ref.read_bytes()
                if not same:
                    sys.exit(f"make_llama_ref: {model} --outtype {outtype} differs from "
                             f"{ref.name}")
                print(f"make_llama_ref: {model} --outtype {outtype} = {ref.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
