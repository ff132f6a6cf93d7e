#!/usr/bin/env python3
"""scripts/check-layers.py: DESIGN.md's layer rule, checked over the source tree.

    python3 scripts/check-layers.py [--root DIR]

Reads every .c/.h under the layer folders below (a folder that does not exist is
empty) and prints one line per violation, `FILE:LINE: what: rule broken`, then exits
1; exits 0 when the tree keeps the rule. tests/ and scripts/ are not checked.

What it checks, in the order the lines name them:
  a. an include (`#include "dir/x.h"`) from one folder into one it may not use;
  b. inside formats/, one container module including another;
  c. a private header (`*_impl.h`, or one named in PRIVATE_HEADERS) included from
     outside the module that owns it;
  d. a system header (cJSON, zlib, CUDA) used in a folder that may not use it;
  e. a cycle among files, where A -> B when A includes B, or when A.c uses a
     function or global defined in B.c (and declared in some header); and a use of
     a name defined in a folder (or formats module) A may not use.

The tables in the first section are the only place the rule lives: edit them, not
the code below them. Python 3 standard library only.
"""

# ---------------------------------------------------------------------------
# The rule. Arrows point down only:
#   cmd -> jobs -> infer, hf -> formats, quant -> arch -> libconvert
# ---------------------------------------------------------------------------

# Folder -> the folders (besides itself) its files may include and call.
LAYERS = {
    "libconvert": (),
    "arch": ("libconvert",),
    "formats": ("libconvert",),
    "quant": ("arch", "libconvert"),
    "hf": ("formats", "quant", "arch", "libconvert"),
    "infer": ("quant", "arch", "libconvert"),
    "jobs": ("hf", "infer", "formats", "quant", "arch", "libconvert"),
    "cmd": ("jobs", "hf", "infer", "formats", "quant", "arch", "libconvert"),
}

# Inside formats/ a file's module is its name up to the first '_' (pth_walk.c -> pth,
# gguf_bare.c -> gguf). Containers do not include each other, except these.
FORMATS_FOLDER = "formats"
FORMATS_MODULES = ("zip", "pickle", "pth", "safetensors", "gguf", "any")
FORMATS_ALLOWED = {
    "pth": ("zip", "pickle"),       # a PyTorch checkpoint is a zip of pickles
    "any": FORMATS_MODULES,         # format detection knows every reader
}

# Private headers: every *_impl.h belongs to the files of its own folder whose module
# (name up to the first '_') is the header's (formats/pth_impl.h: formats/pth*.c).
# A header listed here is private too, owned by the folder given: every file under
# that folder, subfolders included, may include it.
PRIVATE_SUFFIX = "_impl.h"
PRIVATE_HEADERS = {
    "quant/quant_impl.h": "quant",  # the kernel table's private half; ISA subfolders share it
    "quant/iq_tables.h": "quant",   # generated IQ grids and FP4 levels, for every variant
    "quant/iq_grid_impl.h": "quant",     # the IQ quantizers' maps and neighbour lists
    "quant/avx2/kernels.h": "quant",     # the AVX2 table and kernels, for dispatch.c
    "quant/avx2/simd.h": "quant/avx2",   # vector steps the AVX2 kernels share
    "quant/lanes.h": "quant",            # the lane kernels every ISA folder compiles
    "quant/device_impl.h": "quant",      # the device back-end table; quant/cuda/ fills one
    "quant/cuda/gpu.h": "quant/cuda",    # the GPU primitives of the CUDA back end
    "quant/avx2/lanes.h": "quant/avx2",  # the AVX2 lane vocabulary
    "quant/avx2/transpose.h": "quant",   # transposes the x86 lane vocabularies share
    "quant/avx512/kernels.h": "quant",   # the AVX-512 table and kernels, for dispatch.c
    "quant/avx512/lanes.h": "quant/avx512",  # the AVX-512 lane vocabulary
    "quant/neon/kernels.h": "quant",     # the NEON table and kernels, for dispatch.c
    "quant/neon/simd.h": "quant/neon",   # vector steps the NEON kernels share
    "quant/neon/lanes.h": "quant/neon",  # the NEON lane vocabulary
    "arch/families.h": "arch",      # what the family tables share
    "hf/json.h": "hf",              # the folder's small JSON files
    "hf/vocab.h": "hf",             # the vocabulary being built (tokenizer, bpe, special)
    "hf/bpe.h": "hf",
    "hf/special.h": "hf",
    "hf/naming.h": "hf",
    "hf/weights.h": "hf",
    "infer/matmul.h": "infer",      # weight rows and the threaded matmul of the forward pass
}

# System headers, by a regex on the name inside <...> or "...", and the folders
# (or subfolders, "quant/cuda") that may use them.
SYSTEM_HEADERS = (
    ("cJSON", r"(^|/)cJSON\.h$", ("formats", "hf", "jobs", "cmd")),
    ("zlib", r"^(zlib|zconf)\.h$", ("formats",)),
    ("CUDA", r"^(cuda|cublas|curand|cufft|cusparse|cusolver|nvrtc|nvtx|nvToolsExt)\w*\.h$"
             r"|^(cuda|nv)/|^device_launch_parameters\.h$", ("quant/cuda",)),
)

SOURCE_EXTS = (".c", ".h", ".cu", ".cuh")

# ---------------------------------------------------------------------------

import argparse
import bisect
import os
import re
import sys
from collections import defaultdict

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)
WORD_RE = re.compile(r"\b[A-Za-z_]\w*\b")
# A top-level definition starts at column 0: a type, then the name and '(' (a
# function, when the matching ')' is followed by '{') or the name and '=' / ';' / '['
# (a global). Prototypes end in ';' after ')', so they are not definitions.
FUNC_RE = re.compile(r"^([A-Za-z_][\w \t\n*]*?[\s*])([A-Za-z_]\w*)[ \t]*\(", re.M)
GLOBAL_RE = re.compile(r"^([A-Za-z_][\w \t*]*?[\s*])([A-Za-z_]\w*)[ \t]*(\[[^\]\n]*\][ \t]*)*(=|;)",
                       re.M)
ATTRIBUTE_RE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
NOT_DEFINITION = {"static", "typedef", "extern", "return", "goto", "case", "else", "do"}


def strip_code(text, keep_strings):
    """text with comments (and, unless keep_strings, string and character literals)
    blanked out; newlines stay, so offsets keep their line numbers."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j] if keep_strings else c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Source:
    def __init__(self, root, path):
        self.path = path                       # relative to root, '/' separated
        self.folder = path.split("/", 1)[0]
        self.dir = os.path.dirname(path)
        self.is_c = not path.endswith((".h", ".cuh"))
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            raw = f.read()
        self.with_strings = strip_code(raw, keep_strings=True)
        self.code = strip_code(raw, keep_strings=False)
        self.newlines = [m.start() for m in re.finditer("\n", self.code)]

    def line(self, offset):
        return bisect.bisect_right(self.newlines, offset - 1) + 1

    def top_level_lines(self):
        """Line numbers (1-based) that begin outside every brace."""
        depth, top, line = 0, {1}, 1
        for c in self.code:
            if c == "{":
                depth += 1
            elif c == "}":
                depth = max(depth - 1, 0)
            elif c == "\n":
                line += 1
                if depth == 0:
                    top.add(line)
        return top


def module_of(path):
    """formats/pth_walk.c -> pth: the file's name up to the first '_'."""
    stem = os.path.basename(path).split(".", 1)[0]
    return stem.split("_", 1)[0]


def under(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def layer_rule(folder):
    allowed = LAYERS.get(folder, ())
    return "%s/ may use only %s" % (folder, ", ".join(a + "/" for a in allowed) if allowed else "itself")


def formats_rule(module):
    allowed = [a for a in FORMATS_ALLOWED.get(module, ()) if a != module]
    return "formats module %s may use only %s" % (module, ", ".join(allowed) if allowed else "itself")


def private_owner(header):
    """(description, test) for a private header, or None for a public one."""
    if header in PRIVATE_HEADERS:
        folder = PRIVATE_HEADERS[header]
        return ("files under %s/" % folder, lambda p: under(p, folder))
    if header.endswith(PRIVATE_SUFFIX):
        d, mod = os.path.dirname(header), module_of(header)
        return ("%s/%s*" % (d, mod), lambda p: os.path.dirname(p) == d and module_of(p) == mod)
    return None


def resolve(src, name, files):
    """The tree-relative path a quoted include names: next to the file, then from
    the root (the build's -I.)."""
    for base in (src.dir, ""):
        p = os.path.normpath(os.path.join(base, name)).replace(os.sep, "/")
        if p in files:
            return p
    return os.path.normpath(name).replace(os.sep, "/")


def scan(root):
    files = {}
    for folder in LAYERS:
        top = os.path.join(root, folder)
        for d, subdirs, names in os.walk(top):
            subdirs.sort()
            for nm in sorted(names):
                if nm.endswith(SOURCE_EXTS):
                    rel = os.path.relpath(os.path.join(d, nm), root).replace(os.sep, "/")
                    files[rel] = Source(root, rel)
    return files


def check_includes(files, out, edges):
    """Rules a-d, one include at a time; adds each include to edges. Returns, per
    file, the folders and formats modules it includes against the rule."""
    bad = defaultdict(set)
    for src in files.values():
        for m in INCLUDE_RE.finditer(src.with_strings):
            quote, name = m.group(1), m.group(2).strip()
            line = src.line(m.start(2))
            ours = quote == '"' or name.split("/", 1)[0] in LAYERS
            target = resolve(src, name, files) if ours else None
            if target is None or (target not in files and target.split("/", 1)[0] not in LAYERS):
                for label, regex, allowed in SYSTEM_HEADERS:
                    if re.search(regex, name) and not any(under(src.path, a) for a in allowed):
                        out.append((src.path, line, "includes <%s>: %s only in %s" %
                                    (name, label, ", ".join(a + "/" for a in allowed))))
                continue
            if target in files:
                edges[src.path].setdefault(target, (line, "includes"))
            tfolder = target.split("/", 1)[0]
            if tfolder != src.folder and tfolder not in LAYERS.get(src.folder, ()):
                out.append((src.path, line, "includes %s: %s" % (target, layer_rule(src.folder))))
                bad[src.path].add(tfolder)
            if src.folder == tfolder == FORMATS_FOLDER:
                a, b = module_of(src.path), module_of(target)
                if a != b and b not in FORMATS_ALLOWED.get(a, ()):
                    out.append((src.path, line, "includes %s: %s" % (target, formats_rule(a))))
                    bad[src.path].add(FORMATS_FOLDER + "/" + b)
            owner = private_owner(target)
            if owner and not owner[1](src.path):
                out.append((src.path, line, "includes %s: private header of %s" % (target, owner[0])))
    return bad


def definitions(files):
    """name -> the .c files that define it (non-static functions and globals at
    column 0, outside every brace) when some header declares it."""
    declared = set()
    for src in files.values():
        if not src.is_c:
            declared.update(WORD_RE.findall(src.code))
    definers = defaultdict(set)
    for src in files.values():
        if not src.is_c:
            continue
        top = src.top_level_lines()
        # Attributes go (same length, so offsets keep their lines): they hold '('.
        code = ATTRIBUTE_RE.sub(lambda a: " " * len(a.group(0)), src.code)
        for m in FUNC_RE.finditer(code):
            if src.line(m.start()) not in top or NOT_DEFINITION & set(m.group(1).split()):
                continue
            depth, j = 0, m.end() - 1
            while j < len(code):
                depth += {"(": 1, ")": -1}.get(code[j], 0)
                if depth == 0:
                    break
                j += 1
            if code[j + 1:].lstrip().startswith("{"):
                definers[m.group(2)].add(src.path)
        for m in GLOBAL_RE.finditer(code):
            if src.line(m.start()) in top and not NOT_DEFINITION & set(m.group(1).split()):
                definers[m.group(2)].add(src.path)
    return {n: d for n, d in definers.items() if n in declared}


def uses(files, definers):
    """a -> b -> name -> the first line where a.c uses a name b.c defines."""
    calls = defaultdict(lambda: defaultdict(dict))
    for src in files.values():
        if not src.is_c:
            continue
        for m in WORD_RE.finditer(src.code):
            for d in definers.get(m.group(0), ()):
                if d != src.path:
                    calls[src.path][d].setdefault(m.group(0), src.line(m.start()))
    return calls


def names_of(names):
    return ", ".join(sorted(names, key=lambda n: (names[n], n)))


def check_uses(calls, bad, out, edges):
    """Rule e's second half: a use of a name defined where the file may not reach.
    Not reported where the file's include of that folder (or module) already is:
    the include line names the problem."""
    for a, targets in calls.items():
        for b, names in targets.items():
            line = min(names.values())
            edges[a][b] = (min(line, edges[a].get(b, (line,))[0]), "uses")
            fa, fb = a.split("/", 1)[0], b.split("/", 1)[0]
            if fa != fb and fb not in LAYERS.get(fa, ()) and fb not in bad[a]:
                out.append((a, line, "uses %s (defined in %s): %s" % (names_of(names), b, layer_rule(fa))))
            if fa == fb == FORMATS_FOLDER:
                ma, mb = module_of(a), module_of(b)
                if ma != mb and mb not in FORMATS_ALLOWED.get(ma, ()) and \
                        FORMATS_FOLDER + "/" + mb not in bad[a]:
                    out.append((a, line, "uses %s (defined in %s): %s" %
                                (names_of(names), b, formats_rule(ma))))


def check_cycles(files, calls, out, edges):
    """Rule e: each strongly connected set of files once, with what ties them."""
    for comp in strongly_connected(sorted(files), edges):
        if len(comp) < 2:
            continue
        members = set(comp)
        ties = []
        for a in comp:
            for b in sorted(edges[a]):
                if b in members:
                    ties.append("%s uses %s" % (a, names_of(calls[a][b])) if edges[a][b][1] == "uses"
                                else "%s includes %s" % (a, b))
        line = min(edges[comp[0]][b][0] for b in edges[comp[0]] if b in members)
        head = ("cycle: %s <-> %s" % tuple(comp) if len(comp) == 2
                else "cycle among %s" % ", ".join(comp))
        out.append((comp[0], line, "%s (%s)" % (head, "; ".join(ties))))


def check(root):
    """(files scanned, [(path, line, message)] sorted)."""
    files = scan(root)
    out = []
    edges = defaultdict(dict)                   # a -> b -> (first line, "includes" | "uses")
    bad = check_includes(files, out, edges)
    calls = uses(files, definitions(files))
    check_uses(calls, bad, out, edges)
    check_cycles(files, calls, out, edges)
    out.sort()
    return files, out


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative; each component's members sorted."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(sorted(comp))
    return comps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the tree to check (default: this script's repository)")
    args = ap.parse_args()
    if not os.path.isdir(args.root):
        print("check-layers: %s: not a directory" % args.root, file=sys.stderr)
        return 2
    files, out = check(args.root)
    for path, line, msg in out:
        print("%s:%d: %s" % (path, line, msg))
    if out:
        print("check-layers: %d violation(s) in %d files" % (len(out), len(files)), file=sys.stderr)
        return 1
    print("check-layers: %d files keep the layer rule" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
