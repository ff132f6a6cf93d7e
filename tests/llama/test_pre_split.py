"""Every pre-tokenizer split we implement against llama.cpp's own, piece for piece
(issue 19): the pinned tree's src/unicode.cpp (unicode_regex_split, with its custom
splitters, its collapsed-text \\p{..} trick and std::regex/std::wregex for the rest) is
compiled at test time with a small harness that runs each pre type's regex list as
src/llama-vocab.cpp writes it, and tests/tools/lc-pre-split runs ours; both answer
every string with the lengths of its pieces. The tokens a vocabulary gives hide most
splits (a merge rarely crosses a piece boundary), so the pieces are compared directly.

Strings: class edges written out (CJK and Hangul range ends, fullwidth forms, U+3000 and
the other non-ASCII whitespace, U+001C-001F, \\r\\n, digits of several scripts,
ASCII punctuation and symbols), random code points Unicode 14 assigns (our class
table's version; llama.cpp's is newer, and a code point assigned since is another
class there), and bad UTF-8."""
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_pre_names  # noqa: E402
import make_llama_ref  # noqa: E402

DRIVER = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin")) / "lc-pre-split"
TYPES = sorted(gen_pre_names.OURS)

HARNESS = r'''
#include "unicode.h"
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

// Each type's list, pasted from src/llama-vocab.cpp by tests/llama/test_pre_split.py.
static const std::map<std::string, std::vector<std::string>> LISTS = {
@LISTS@
};

// Lines of hex-encoded UTF-8 in, the code point count of each piece out.
int main(int argc, char **argv) {
    if (argc != 2 || !LISTS.count(argv[1]))
        return 2;
    const auto &exprs = LISTS.at(argv[1]);
    std::string line;
    while (std::getline(std::cin, line)) {
        std::string text;
        for (size_t i = 0; i + 1 < line.size(); i += 2)
            text += (char)std::stoi(line.substr(i, 2), nullptr, 16);
        std::string out;
        if (!text.empty())
            for (const auto &piece : unicode_regex_split(text, exprs, false))
                out += (out.empty() ? "" : ",") +
                       std::to_string(unicode_cpts_from_utf8(piece).size());
        std::printf("%s\n", out.c_str());
    }
}
'''


def regex_lists(src):
    """{pre type: the body of its regex_exprs list, as written} from llm_tokenizer_bpe's
    switch (the default: group under "DEFAULT")."""
    start = src.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    body = src[start:src.index("std::vector<std::string> regex_exprs;", start)]
    out, labels = {}, []
    for m in re.finditer(r'case LLAMA_VOCAB_PRE_TYPE_(\w+):|default:|regex_exprs = \{(.*?)\};',
                         body, re.S):
        if m.group(0).startswith("case"):
            labels.append(m.group(1))
        elif m.group(0) == "default:":
            labels.append("DEFAULT")
        else:
            for label in labels:
                out[label] = re.sub(r'^\s*//.*$', '', m.group(2), flags=re.M).strip()
            labels = []
    return out


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    cxx = os.environ.get("CXX", "c++")
    if not shutil.which(cxx):
        pytest.skip(f"no C++ compiler ({cxx}) to build llama.cpp's splitter with")
    make_llama_ref.fetch_sdist()
    src = make_llama_ref.LLAMA / "src"
    lists = regex_lists((src / "llama-vocab.cpp").read_text(encoding="utf-8"))
    d = tmp_path_factory.mktemp("pre-split")
    (d / "harness.cpp").write_text(HARNESS.replace("@LISTS@", ",\n".join(
        f'{{ "{t}", {{ {lists[t]} }} }}' for t in TYPES)), encoding="utf-8")
    exe = d / "llama-pre-split"
    subprocess.run([cxx, "-std=c++17", "-O1", "-I", str(src), str(d / "harness.cpp"),
                    str(src / "unicode.cpp"), str(src / "unicode-data.cpp"), "-o", str(exe)],
                   check=True)
    return exe


EDGES = (list("aZzA09 \n\r\t\x0b\x0c\x1c\x1f\x00\x7f.,;:!?'\"`$+<=>^~|_@#%&*/\\()[]{}-")
         + ["  ", "\r\n", " 's", "'ll", "'RE", "123456"]
         + [chr(c) for c in (
             0x4E00, 0x4E2D, 0x9FA5, 0x9FA6, 0x0800, 0x07FF, 0x3042, 0x30A2, 0xAC00, 0xD55C,
             0xD7A3, 0xD7FF, 0xF900, 0x3000, 0x3001, 0x3002, 0x3003, 0xFF01, 0xFF0C, 0xFF10,
             0xFF1A, 0xFF21, 0xFF41, 0xFF5E, 0xFF5F, 0x2018, 0x201C, 0x201F, 0x2020, 0x2014,
             0x2026, 0x00B7, 0x00BF, 0x00A1, 0x03B1, 0x03A9, 0x00B5, 0x00E9, 0x00D7, 0x0416,
             0x1E00, 0x2126, 0x01BB, 0x0294, 0x00AA, 0x02B0, 0x10400, 0x1E900, 0x0627, 0x05D0,
             0x0E01, 0x0301, 0x0308, 0x0663, 0x00BD, 0x00B2, 0x2160, 0xFF11, 0x00A0, 0x2000,
             0x1680, 0x205F, 0x2028, 0x0085, 0x200B, 0xFEFF, 0x1F600, 0xE000, 0x2581)])
BAD = [b"\x80", b"\xff", b"\xe6\x97", b"\xc3", b"\xf0\x9f\x98", b"\xc0\x80", b"\xed\xa0\x80"]


def assigned(rnd):
    """A random code point Unicode 14 assigns (Python 3.11's unicodedata), no surrogate."""
    import unicodedata
    while True:
        cp = rnd.choice([rnd.randrange(0x80, 0x800), rnd.randrange(0x800, 0x10000),
                         rnd.randrange(0x10000, 0x110000)])
        if unicodedata.category(chr(cp)) not in ("Cn", "Cs"):
            return chr(cp)


def strings(seed, n):
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rnd.randint(1, 16)):
            r = rnd.random()
            parts.append(rnd.choice(BAD) if r < 0.03 else assigned(rnd).encode() if r < 0.25
                         else rnd.choice(EDGES).encode())
        out.append(b"".join(parts))
    return out


# The edges the deepseek splits turn on, whatever the random strings reach: U+3000 after
# spaces (whitespace, not punctuation), trailing whitespace after a symbol (\s+$), U+001C
# before a letter (no \s), \r\n, Hangul and CJK after letters, fullwidth punctuation.
FIXED = [s.encode() for s in [
    "a  \u3000", "\u4e2d\u3000\u6587", "\U0001f600  \U0001f600  ", "\x1cab", "\tab", "\r\n",
    "Hello  world\n", "\uac00\ub098abc", "\u65e5\u672c\u8a9eabc", "\uff21\uff22\uff01",
    "\u201chi\u201d", "abc123\u0663\u00bd", "x $+ y", "a,b!! c", "\u03b1\u03b2 \u03b4"]]
TEXTS = FIXED + strings(20261127, 4000)


def pieces(cmd, texts):
    r = subprocess.run(cmd, input="".join(t.hex() + "\n" for t in texts), capture_output=True,
                       text=True, check=True)
    lines = r.stdout.split("\n")[:-1]
    assert len(lines) == len(texts)
    return lines


@pytest.mark.parametrize("pre", TYPES)
def test_pieces_like_llama_cpp(oracle, pre):
    want = pieces([str(oracle), pre], TEXTS)
    got = pieces([str(DRIVER), pre], TEXTS)
    wrong = [f"{t!r}: ours {g}, llama.cpp {w}" for t, g, w in zip(TEXTS, got, want) if g != w]
    assert not wrong, f"{len(wrong)}/{len(TEXTS)} differ:\n" + "\n".join(wrong[:10])
