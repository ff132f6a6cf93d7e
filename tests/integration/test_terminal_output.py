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
import pty
import re
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import save_file

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


# ---- every tool, every mode: the property ----

# A name carrying every kind of byte a terminal acts on, each beside a marker that says
# where it came from: OSC title + BEL, CR LF (a forged line), TAB, CSI as C1, RLO, LRI,
# LRM, ALM, DEL, and an HTML tag.
NAME = ("h\x1b]0;T\x07\r\nforged\tTAB\u009bC1\u202eRLO\u2066LRI\u200eLRM\u061cALM"
        "\x7fDEL<b>x")
# What must never appear raw, wherever it would come from: none of our tools writes these.
NEVER = re.compile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e"
                   "\u2066-\u2069]")


def assert_output_clean(data, what):
    text = data.decode("utf-8")
    m = NEVER.search(text)
    assert m is None, f"{what}: raw {m.group()!r}: {text[max(0, m.start() - 60):m.start() + 20]!r}"
    assert "\nforged" not in text and "\tTAB" not in text, f"{what}: a forged line or a raw TAB"


def run_all_ways(args, what, ok=(0, 1, 2)):
    """Runs BIN/args[0] with stdout and stderr piped, and again with stderr on a
    pseudo-terminal (the progress line is drawn only on a terminal); both outputs must
    be clean."""
    r = tool(*args)
    assert r.returncode in ok, (what, r.returncode, r.stderr)
    assert_output_clean(r.stdout, what + " stdout")
    assert_output_clean(r.stderr, what + " stderr")
    if "-q" in args or "--json" in args:
        return r
    master, slave = pty.openpty()
    p = subprocess.Popen([str(BIN / args[0]), *map(str, args[1:])], stdout=subprocess.DEVNULL,
                         stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    p.wait(timeout=120)
    os.close(master)
    # The terminal's own line discipline turns \n into \r\n; the progress line redraws
    # itself with \r and may clear with ESC [K: those are ours, so the check is on the
    # text between them.
    text = b"".join(chunks).replace(b"\r\n", b"\n").replace(b"\x1b[K", b"").replace(b"\r", b"\n")
    assert_output_clean(text, what + " on a terminal")
    return r


def gguf_model(path, extra_name=NAME, key=None, value=NAME):
    """A tiny llama GGUF (gguf-py) with a tensor and a string value named hostile."""
    rng = np.random.default_rng(3)
    w = gguf.GGUFWriter(str(path), "llama")
    for k, v in (("llama.context_length", 64), ("llama.embedding_length", 32),
                 ("llama.block_count", 1), ("llama.feed_forward_length", 64),
                 ("llama.attention.head_count", 2), ("llama.attention.head_count_kv", 2)):
        w.add_uint32(k, v)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_string("general.name", value)
    if key:
        w.add_string(key, value)
    names = [("token_embd.weight", (32, 32)), ("output_norm.weight", (32,)),
             ("output.weight", (32, 32)), ("blk.0.attn_norm.weight", (32,)),
             ("blk.0.ffn_norm.weight", (32,))]
    names += [(f"blk.0.{t}.weight", (32, 32)) for t in ("attn_q", "attn_k", "attn_v",
                                                         "attn_output")]
    names += [("blk.0.ffn_gate.weight", (64, 32)), ("blk.0.ffn_up.weight", (64, 32)),
              ("blk.0.ffn_down.weight", (32, 64)), ("blk.0." + extra_name, (32, 32))]
    for n, shape in names:
        w.add_tensor(n, rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def pth_with(path, name):
    """torch.save's layout by hand: {name: FloatTensor(4)}."""
    bstr = lambda s: b"X" + struct.pack("<I", len(s.encode())) + s.encode()
    dims = b"(J\x04\x00\x00\x00t(J\x01\x00\x00\x00t"
    p = b"\x80\x02ccollections\nOrderedDict\nq\x00)R(" + bstr(name)
    p += b"ctorch._utils\n_rebuild_tensor_v2\n((" + bstr("storage")
    p += b"ctorch\nFloatStorage\n" + bstr("0") + bstr("cpu") + b"J\x04\x00\x00\x00tQ"
    p += b"J\x00\x00\x00\x00" + dims + b"\x89ccollections\nOrderedDict\n)RtRu."
    with zipfile.ZipFile(path, "w") as z:
        for entry, data in (("archive/data.pkl", p), ("archive/data/0", bytes(16))):
            z.writestr(zipfile.ZipInfo(entry, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return path


def test_every_tool_every_mode(tmp_path):
    g = gguf_model(tmp_path / "m.gguf", key="llama.k\u009b\u202e")
    bare = tmp_path / "bare.safetensors"
    save_file({NAME: np.zeros(4, np.float32), "b": np.ones(2, np.float32)}, str(bare),
              metadata={NAME: NAME, "k": NAME})
    p = pth_with(tmp_path / "m.pth", NAME)
    scan = tmp_path / "g.pth"
    with zipfile.ZipFile(scan, "w") as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl", date_time=(2020, 1, 1, 0, 0, 0)),
                   b"\x80\x04X" + struct.pack("<I", len(NAME.encode())) + NAME.encode()
                   + b"X\x06\x00\x00\x00system\x93)R.")
    hf = tmp_path / NAME.replace("/", "_")
    shutil.copytree(HF / "llama-spm", hf)
    o = tmp_path / "o"
    o.mkdir()
    (o / NAME).mkdir()
    sp = o / NAME / "s"
    first = o / NAME / "s-00001-of-00004.gguf"
    cases = [
        ("model-inspect", g), ("model-inspect", "--json", g), ("model-inspect", bare),
        ("model-inspect", "--json", bare), ("model-inspect", p), ("model-inspect", "--json", p),
        ("gguf-quantize", "--dry-run", g, "q8_0"), ("gguf-quantize", "--dry-run", "--json", g,
                                                      "q8_0"),
        ("gguf-quantize", g, o / "q.gguf", "q8_0"),
        ("gguf-quantize", "--tensor-type", NAME + "=q8_0", g, o / "q2.gguf", "q8_0"),
        ("gguf2safetensors", g, o / "g.safetensors"),
        ("safetensors-rewrite", bare, o / "r.safetensors"),
        ("safetensors2gguf", bare, o / "b.gguf"),
        ("safetensors2gguf", "--dry-run", hf), ("safetensors2gguf", hf, o),
        ("pth2safetensors", "--list", p), ("pth2safetensors", "--scan", scan),
        ("pth2safetensors", p, o / "p.safetensors"), ("pth2safetensors", scan, o / "s.st"),
        ("model-verify", "--tokens", "1,2,3", g, g),
        ("model-verify", "--tokens", "1,2,3", "--json", g, g),
        ("model-verify", "--tokens", "1,2,3", "--report", o / "r.html", g, g),
        ("model-imatrix", "-c", "16", "--chunks", "2", hf, o / "i.gguf"),
        ("model-imatrix", "--json", "-c", "16", "--chunks", "2", hf, o / "i2.gguf"),
        ("model-imatrix", "--show-statistics", o / "i.gguf"),
        # gguf-split: the plan, the parts (OUT's prefix is a directory named hostile too),
        # a dry merge and the merge of them.
        ("gguf-split", "--dry-run", "--split-max-tensors", "4", g, sp),
        ("gguf-split", "--split-max-tensors", "4", g, sp),
        ("gguf-split", "--merge", "--dry-run", first, o / "j.gguf"),
        ("gguf-split", "--merge", first, o / "j.gguf"),
    ]
    for args in cases:
        run_all_ways(list(args), " ".join(map(str, args))[:120])
    html = (o / "r.html").read_text()
    assert_output_clean(html.replace("\n", " ").encode(), "the HTML page")
    assert "<b>x" not in html
    # Every error line: each input cut short.
    for src, name, extra in ((g, "model-inspect", []), (bare, "safetensors-rewrite", [o / "x"]),
                             (p, "pth2safetensors", [o / "y"]), (g, "gguf-quantize",
                                                                 [o / "z", "q8_0"]),
                             (g, "gguf-split", [o / NAME / "c"])):
        cut = tmp_path / ("cut-" + src.name)
        data = src.read_bytes()
        for n in (len(data) // 3, len(data) - 7):
            cut.write_bytes(data[:n])
            run_all_ways([name, cut, *extra], f"{name} on {src.name} cut at {n}")
