"""One terminal-output rule (issue 19): every byte a tool prints about a file goes
through libconvert/escape.c's rule, in every tool and mode.

A name, key or value from a file is the author's bytes. None of these may reach stdout
or stderr raw: a byte below 0x20 (but the newline ending a line), DEL, a C1 control
(U+0080..U+009F: some terminals act on U+009B as on ESC [) or a bidirectional control
(U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069: they reorder what is shown); and an
HTML report holds no '<' from a file unescaped.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_verify import Gguf  # noqa: E402  (gguf-py rewrite of a GGUF)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
HF = ROOT / "fixtures" / "hf"

# ESC ] (OSC: set the title) ... BEL, CR LF (forge a line), CSI as C1, RLO, LRI, DEL.
HOSTILE = "x\x1b]0;t\x07\r\nforged\u009b2J\u202e\u2066\x7f<b>"
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def tool(name, *args):
    return subprocess.run([str(BIN / name), *map(str, args)], capture_output=True, timeout=120)


def assert_safe(data, what):
    """No unsafe code point in data (bytes; invalid UTF-8 is unsafe too)."""
    text = data.decode("utf-8")     # raises on a raw invalid byte
    m = UNSAFE.search(text)
    assert m is None, f"{what}: raw {m.group()!r} at {m.start()}: {text[max(0, m.start() - 80):m.start() + 20]!r}"


def assert_run_safe(r, what):
    assert_safe(r.stdout, f"{what} stdout")
    assert_safe(r.stderr, f"{what} stderr")


# ---- model-verify: text, verdict, JSON, HTML ----

def test_model_verify_escapes_c1_and_bidi(tmp_path):
    src = tmp_path / "src.gguf"
    r = tool("safetensors2gguf", "-q", "--outtype", "f32", HF / "llama-spm", src)
    assert r.returncode == 0, r.stderr
    g = Gguf(src)
    g.tensors.append(["blk.0." + HOSTILE, np.zeros((4, 32), np.float32), g.tensors[0][2]])
    g.field("tokenizer.ggml.tokens")[1][300] = HOSTILE      # a token's text differs
    dst = g.write(tmp_path / "dst.gguf")
    for opts in ([], ["--json"], ["--report", tmp_path / "r.html"]):
        r = tool("model-verify", *opts, src, dst)
        assert r.returncode == 1, r.stderr
        assert_run_safe(r, f"model-verify {opts}")
        if not opts:
            verdict = r.stdout.decode()
            assert "metadata: " in verdict and "1 difference" in verdict, verdict
            assert "DST has tensors SRC lacks (blk.0.x\\x1b]0;t\\x07\\r\\nforged\\u009b2J" \
                   "\\u202e\\u2066\\x7f<b>)" in verdict.splitlines()[-1]
    j = json.loads(tool("model-verify", "--json", src, dst).stdout)
    assert j["tensors"]["extra"] == "blk.0." + HOSTILE.replace("\x1b", "\\x1b") \
        .replace("\x07", "\\x07").replace("\r", "\\r").replace("\n", "\\n") \
        .replace("\u009b", "\\u009b").replace("\u202e", "\\u202e") \
        .replace("\u2066", "\\u2066").replace("\x7f", "\\x7f")
    html = (tmp_path / "r.html").read_bytes()
    assert_safe(html.replace(b"\n", b""), "model-verify --report")
    assert b"<b>" not in html and b"&lt;b&gt;" in html
