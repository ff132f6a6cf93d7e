"""A report on stdout whose reader went away (`model-inspect x | head`): the tools end
quietly with 141 (128 + SIGPIPE, what cat or grep give their shell), not a "Broken pipe"
error line. SIGPIPE is ignored by the tools (so a file's EPIPE is an error naming it), so
this is the tools' own rule; the pipe's read end is closed before the tool starts, so no
timing decides the outcome."""
import os
import subprocess
from pathlib import Path

import pytest

BIN = Path(os.environ.get("LC_BIN", "build/bin"))
ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "fixtures" / "hf-ref" / "llama-spm-f16.gguf"   # llama.cpp's converter wrote it


def run_into_closed_pipe(args):
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(args, stdout=w, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(w)
    return p.returncode, p.stderr.decode()


def a_gguf():
    assert MODEL.is_file(), MODEL
    return str(MODEL)


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_model_inspect_reader_gone(extra):
    rc, err = run_into_closed_pipe([str(BIN / "model-inspect"), *extra, a_gguf()])
    assert (rc, err) == (141, "")


def test_gguf_quantize_dry_run_reader_gone(tmp_path):
    rc, err = run_into_closed_pipe([str(BIN / "gguf-quantize"), "--dry-run", a_gguf(),
                                    str(tmp_path / "o.gguf"), "Q8_0"])
    assert (rc, err) == (141, "")
    assert list(tmp_path.iterdir()) == []


def test_other_errors_still_reported_when_reader_gone(tmp_path):
    """The rule needs a failed write to stdout: an input error is still one line, exit 1."""
    missing = tmp_path / "missing.gguf"
    rc, err = run_into_closed_pipe([str(BIN / "model-inspect"), str(missing)])
    assert rc == 1 and "missing.gguf" in err and err.count("\n") == 1


def run_into_full_disk(args):
    with open("/dev/full", "w") as full:      # every write: ENOSPC
        p = subprocess.run(args, stdout=full, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stderr.decode()


@pytest.mark.parametrize("args", [
    ["model-inspect", "MODEL"],
    ["model-inspect", "--json", "MODEL"],
    ["gguf-quantize", "--dry-run", "MODEL", "OUT", "Q8_0"],
    ["gguf-quantize", "--dry-run", "--json", "MODEL", "OUT", "Q4_K_M"],
    ["safetensors2gguf", "--help"],
    ["gguf-quantize", "--version"],
])
def test_report_lost_on_a_full_disk_is_an_error(tmp_path, args):
    """`tool ... > plan.txt` on a full disk: exit 1 and one line naming standard output,
    never exit 0 with the report lost."""
    argv = [str(BIN / args[0])] + [a_gguf() if a == "MODEL" else str(tmp_path / "o.gguf")
                                   if a == "OUT" else a for a in args[1:]]
    rc, err = run_into_full_disk(argv)
    assert rc == 1, err
    assert err.count("\n") == 1 and "standard output" in err and "No space left" in err, err
    assert list(tmp_path.iterdir()) == []
