"""--device cuda against the CPU, file for file, in a CUDA=1 build without a GPU: the
CUDA back end's own code (chunking through pinned buffers, two lanes a slot, streams
that run only when synchronised, slots shared by writer threads) on the emulated device
(LC_CUDA_EMULATE=1), whose kernels are block_ops.h built as the device builds it. Every
reference GGUF (f32, f16, bf16 and q8_0 sources, the last requantized) and the HF
folders, into every TYPE gguf-quantize writes and every safetensors2gguf --outtype,
with narrow lanes and several threads so that every read walks many pieces.
Skipped in a build without the CUDA back end. LC_TEST_DEVICE_REAL=1 (make check-cuda)
runs the same on the GPU instead of the emulation, and fails where none opens."""
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
# Every reference of the first four families, and the bf16 one of each later family
# (stacks of experts, fused QKV, gemma's norms): the device path is per tensor, so more
# outtypes of the same models would add time, not cases.
REF = sorted(p for p in (ROOT / "fixtures" / "hf-ref").glob("*.gguf")
             if p.name.rsplit("-", 1)[0] in ("llama-spm", "llama-bpe", "qwen2", "llama-tf")
             or p.name.endswith("-bf16.gguf"))
HF = [ROOT / "fixtures" / "hf" / d for d in ("llama-q9", "qwen2-k", "llama-bpe", "qwen2")]
REAL = os.environ.get("LC_TEST_DEVICE_REAL") == "1"
EMU = {k: v for k, v in os.environ.items() if k != "LC_CUDA_EMULATE"}
if not REAL:
    EMU.update(LC_CUDA_EMULATE="1", LC_CUDA_LANE_ELEMS="1024")


def why_no_device():
    """None when --device cuda opens, else the tool's message."""
    r = subprocess.run([str(BIN / "gguf-quantize"), "--dry-run", "--device", "cuda",
                        str(HF[0]), "x.gguf", "Q8_0"], capture_output=True, text=True, env=EMU)
    return None if r.returncode == 0 else r.stderr.strip()


WHY = why_no_device()
if REAL and WHY:
    raise RuntimeError(f"LC_TEST_DEVICE_REAL=1 but {WHY}")
pytestmark = pytest.mark.skipif(WHY is not None and "has no CUDA back end" in WHY,
                                reason="this build has no CUDA back end (make CUDA=1)")


def types():
    text = subprocess.run([str(BIN / "gguf-quantize"), "--help"], capture_output=True,
                          text=True).stdout
    listed = re.search(r"numeric id\): (.*?);", text, re.S).group(1)
    return listed.split()


def run(tool, args, env=None):
    r = subprocess.run([str(BIN / tool), "-q", "--no-fsync", "-t", "4"] + [str(a) for a in args],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.parametrize("src", REF + HF[:2], ids=lambda p: p.name)
def test_gguf_quantize_every_type(src, tmp_path):
    for t in types():
        cpu, dev = tmp_path / f"cpu-{t}.gguf", tmp_path / f"dev-{t}.gguf"
        run("gguf-quantize", ["--allow-requantize", src, cpu, t])
        run("gguf-quantize", ["--allow-requantize", "--device", "cuda", src, dev, t], EMU)
        assert cpu.read_bytes() == dev.read_bytes(), f"{src.name} {t}"


@pytest.mark.parametrize("src", HF, ids=lambda p: p.name)
def test_safetensors2gguf_every_outtype(src, tmp_path):
    for o in ("f32", "f16", "bf16", "q8_0", "q4_0", "q5_k_m", "q6_k"):
        cpu, dev = tmp_path / f"cpu-{o}.gguf", tmp_path / f"dev-{o}.gguf"
        run("safetensors2gguf", ["--outtype", o, src, cpu])
        run("safetensors2gguf", ["--device", "cuda", "--outtype", o, src, dev], EMU)
        assert cpu.read_bytes() == dev.read_bytes(), f"{src.name} {o}"
