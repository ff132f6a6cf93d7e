#!/usr/bin/env python3
"""Generates infer/tokenize_pre_names_impl.h: every tokenizer.ggml.pre name that llama.cpp's
llama_vocab::impl::load maps to a pre-tokenizer we implement, with the flags its branch
sets, read from the pinned tree's src/llama-vocab.cpp (the llama.cpp that
llama-cpp-python 0.3.36 vendors; scripts/make_llama_ref.py's fetch_sdist unpacks it).

The BPE branch of load() is one if/else-if chain over tokenizer_pre; each branch sets
pre_type and some of clean_spaces, ignore_merges, add_bos, add_sep, escape_whitespaces,
special_bos_id, normalizer options. A pre type picks the split in llm_tokenizer_bpe's
constructor, a switch whose case groups share one list of regexes (MPT's is GPT2's).
A name joins the table when its pre_type splits as DEFAULT, LLAMA3, QWEN2, GPT2,
STARCODER, FALCON, QWEN35, DEEPSEEK_CODER or DEEPSEEK_LLM do
(the splits infer/tokenize_pre.c implements), nothing else in the file tests that type,
and its branch sets nothing but pre_type, ignore_merges, add_bos and clean_spaces
(which only detokenizing reads). A name llama.cpp also compares elsewhere in the file (kimi-k2's
special case) is left out. tests/llama/test_pre_names.py runs this against the pinned
tree and fails when the committed header differs.

Usage: gen_pre_names.py [LLAMA_VOCAB_CPP] > infer/tokenize_pre_names_impl.h
"""
import re
import sys
from pathlib import Path

OURS = {"DEFAULT": "LC_PRE_DEFAULT", "LLAMA3": "LC_PRE_LLAMA3", "QWEN2": "LC_PRE_QWEN2",
        "GPT2": "LC_PRE_GPT2", "STARCODER": "LC_PRE_STARCODER", "FALCON": "LC_PRE_FALCON",
        "QWEN35": "LC_PRE_QWEN35", "DEEPSEEK_CODER": "LC_PRE_DEEPSEEK_CODER",
        "DEEPSEEK_LLM": "LC_PRE_DEEPSEEK_LLM"}


def splits(src):
    """{pre type: its split} from llm_tokenizer_bpe's constructor: the switch whose case
    groups share one regex_exprs list (text as written), `default:` for the types with
    no case; a group that does more than set the list (byte_encode) is left out."""
    start = src.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    body = src[start:src.index("std::vector<std::string> regex_exprs;", start)]
    out, labels = {}, []
    for m in re.finditer(r'case LLAMA_VOCAB_PRE_TYPE_(\w+):|default:|regex_exprs = \{(.*?)\};'
                         r'(.*?)break;', body, re.S):
        if m.group(0).startswith("case"):
            labels.append(m.group(1))
        elif m.group(0) == "default:":
            labels.append(None)
        else:
            exprs = re.sub(r'^\s*//.*$', '', m.group(2), flags=re.M)
            key = None if m.group(3).strip() else re.sub(r'\s+', ' ', exprs).strip()
            for label in labels:
                out[label] = key
            labels = []
    return out


def same_split(src):
    """{pre type: our LC_PRE_*} for every type whose split is one of ours, as text."""
    sp = splits(src)
    ours = {sp.get(t, sp[None]): lc for t, lc in OURS.items()}
    types = set(re.findall(r'LLAMA_VOCAB_PRE_TYPE_(\w+)', src))
    return {t: ours[sp.get(t, sp[None])] for t in types
            if sp.get(t, sp[None]) is not None and sp.get(t, sp[None]) in ours}
KNOWN_FLAGS = {"ignore_merges", "add_bos", "clean_spaces"}


def branches(src):
    """[(names, pre_type, {flag: value}, other assignments)] of the BPE chain, in order."""
    start = src.index('if (tokenizer_pre.empty())')
    end = src.index('unknown pre-tokenizer type', start)
    chain = src[start:end]
    out = []
    # Each branch: a condition of tokenizer_pre == "..." tests, then its body up to the
    # next "} else".
    for m in re.finditer(r'else if \(((?:\s|\|\||tokenizer_pre\s*==\s*"[^"]*")+)\)\s*\{(.*?)'
                         r'(?=\}\s*else)', chain + "} else", re.S):
        names = re.findall(r'tokenizer_pre\s*==\s*"([^"]*)"', m.group(1))
        body = m.group(2)
        pre = re.search(r'pre_type\s*=\s*LLAMA_VOCAB_PRE_TYPE_(\w+)\s*;', body)
        flags, other = {}, []
        for a in re.finditer(r'([\w.]+)\s*=\s*([^;]+);', body):
            lhs, rhs = a.group(1), a.group(2).strip()
            if lhs == "pre_type":
                continue
            if lhs in KNOWN_FLAGS:
                flags[lhs] = rhs
            else:
                other.append(lhs)
        out.append((names, pre.group(1) if pre else None, flags, other))
    return out, start, end


def table(src):
    rows, start, end = branches(src)
    elsewhere = set(re.findall(r'tokenizer_pre\s*==\s*"([^"]*)"', src[:start] + src[end:]))
    # A type compared anywhere but in the chain and the split switch does more than split.
    special = {t for t in re.findall(r'(?:==|!=)\s*LLAMA_VOCAB_PRE_TYPE_(\w+)', src)}
    ours = same_split(src)
    keep = []
    for names, pre, flags, other in rows:
        if pre not in ours or pre in special or other:
            continue
        for n in names:
            if n in elsewhere:
                continue
            keep.append((n, ours[pre], flags.get("ignore_merges") == "true",
                         flags.get("add_bos") == "true"))
    return keep


def header(src):
    lines = [
        "/* infer/tokenize_pre_names_impl.h: GENERATED by scripts/gen_pre_names.py from llama.cpp's",
        " * src/llama-vocab.cpp (llama-cpp-python 0.3.36's tree); do not edit. Every",
        " * tokenizer.ggml.pre name llama.cpp maps to a split we implement, in its order, with",
        " * what the name's branch sets: ignore_merges, add_bos. tests/llama/test_pre_names.py",
        " * checks it against the pinned tree. Included once, by infer/tokenize.c. */",
        "{ \"default\", LC_PRE_DEFAULT, false, false },",
    ]
    for n, pre, im, ab in table(src):
        if n == "default":
            continue
        lines.append('{ "%s", %s, %s, %s },' % (n, pre, "true" if im else "false",
                                              "true" if ab else "false"))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1:
        path = Path(sys.argv[1])
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import make_llama_ref
        make_llama_ref.fetch_sdist()
        path = make_llama_ref.LLAMA / "src" / "llama-vocab.cpp"
    sys.stdout.write(header(path.read_text()))


if __name__ == "__main__":
    main()
