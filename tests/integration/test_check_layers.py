"""scripts/check-layers.py holds DESIGN.md's layer rule: it passes tests/layers/good (a
tiny tree with every folder and every allowed arrow), and fails, naming the file, the
line and the rule, on a copy of it with one break planted. Each case asserts the whole
output, so a checker that misses the break, or reports it for the wrong reason, fails."""
import os
import shutil
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-layers.py")
GOOD = os.path.join(ROOT, "tests", "layers", "good")


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, "--root", str(root)], capture_output=True,
                       text=True)
    return p.returncode, p.stdout.splitlines()


def planted(tmp_path, files):
    """A copy of the good tree with FILES (path -> text) written over it."""
    root = tmp_path / "tree"
    shutil.copytree(GOOD, root)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def test_good_tree_passes():
    rc, out = run(GOOD)
    assert (rc, out) == (0, ["check-layers: 33 files keep the layer rule"])


def test_missing_folders_are_empty(tmp_path):
    (tmp_path / "libconvert").mkdir()
    (tmp_path / "libconvert" / "error.h").write_text("int lc_fail(int code);\n")
    assert run(tmp_path) == (0, ["check-layers: 1 files keep the layer rule"])


def test_upward_include(tmp_path):
    root = planted(tmp_path, {"arch/llama.c": """
        #include "arch/arch.h"

        #include "formats/gguf.h"

        int lc_arch_find(const char *name) { return lc_gguf_load(name); }
        """})
    assert run(root) == (1, [
        "arch/llama.c:3: includes formats/gguf.h: arch/ may use only libconvert/"])


def test_sideways_include_between_layers(tmp_path):
    # formats and quant are one level: neither includes the other.
    root = planted(tmp_path, {"formats/gguf.c": """
        #include "formats/gguf.h"
        #include "quant/quant.h"

        int lc_gguf_load(const char *path) { return path ? 0 : lc_fail(5); }
        """})
    assert run(root) == (1, [
        "formats/gguf.c:2: includes quant/quant.h: formats/ may use only libconvert/"])


def test_formats_container_includes_another(tmp_path):
    root = planted(tmp_path, {"formats/safetensors.c": """
        #include "formats/safetensors.h"
        #include "formats/gguf.h"

        int lc_st_load(const char *path) { return path != 0; }
        """})
    assert run(root) == (1, [
        "formats/safetensors.c:2: includes formats/gguf.h: "
        "formats module safetensors may use only itself"])


def test_private_header_from_another_module(tmp_path):
    # any -> pth is allowed, but pth_impl.h is pth's own; hf -> formats is allowed,
    # but pickle_impl.h is pickle's own.
    root = planted(tmp_path, {
        "formats/any.c": """
            #include "formats/any.h"
            #include "formats/gguf.h"
            #include "formats/pth_impl.h"
            #include "formats/safetensors.h"

            int lc_any_load(const char *path) { return lc_gguf_load(path) + lc_st_load(path); }
            """,
        "hf/hf_vocab.c": """
            #include "formats/pickle_impl.h"
            int lc_hf_vocab(void);
            int lc_hf_vocab(void) { return 0; }
            """})
    assert run(root) == (1, [
        "formats/any.c:3: includes formats/pth_impl.h: private header of formats/pth*",
        "hf/hf_vocab.c:1: includes formats/pickle_impl.h: private header of formats/pickle*"])


def test_cjson_in_arch(tmp_path):
    root = planted(tmp_path, {"arch/llama.c": """
        #include "arch/arch.h"
        #include <cjson/cJSON.h>

        int lc_arch_find(const char *name) { return name ? lc_model_new() : lc_fail(2); }
        """})
    assert run(root) == (1, [
        "arch/llama.c:2: includes <cjson/cJSON.h>: cJSON only in formats/, hf/, jobs/, cmd/"])


def test_zlib_and_cuda_outside_their_folders(tmp_path):
    root = planted(tmp_path, {
        "hf/hf_json.c": '#include <zlib.h>\nint lc_hf_json(void);\n',
        "quant/ref_cuda.c": '#include "quant/quant.h"\n#include <cuda_runtime.h>\n'})
    assert run(root) == (1, [
        "hf/hf_json.c:1: includes <zlib.h>: zlib only in formats/",
        "quant/ref_cuda.c:2: includes <cuda_runtime.h>: CUDA only in quant/cuda/"])


def test_call_cycle_between_two_files(tmp_path):
    # No include is wrong: gguf.h declares both, and each file calls the other.
    root = planted(tmp_path, {
        "formats/gguf.h": """
            #include "libconvert/error.h"
            int lc_gguf_load(const char *path);
            int lc_gguf_meta_read(const char *path);
            """,
        "formats/gguf.c": """
            #include "formats/gguf.h"

            int lc_gguf_load(const char *path) {
                return path ? lc_gguf_meta_read(path) : lc_fail(5);
            }
            """,
        "formats/gguf_meta.c": """
            #include "formats/gguf.h"

            static int depth;

            int lc_gguf_meta_read(const char *path) {
                return depth++ ? 0 : lc_gguf_load(path);
            }
            """})
    assert run(root) == (1, [
        "formats/gguf.c:4: cycle: formats/gguf.c <-> formats/gguf_meta.c "
        "(formats/gguf.c uses lc_gguf_meta_read; formats/gguf_meta.c uses lc_gguf_load)"])


def test_header_include_cycle(tmp_path):
    root = planted(tmp_path, {"libconvert/error.h": """
        #ifndef LC_ERROR_H
        #define LC_ERROR_H
        #include "libconvert/model.h"
        int lc_fail(int code);
        #endif
        """})
    assert run(root) == (1, [
        "libconvert/error.h:3: cycle: libconvert/error.h <-> libconvert/model.h "
        "(libconvert/error.h includes libconvert/model.h; "
        "libconvert/model.h includes libconvert/error.h)"])


def test_upward_call_through_a_lower_header(tmp_path):
    # model.h declares a function that formats/ defines: every include is allowed,
    # but libconvert/ now calls up into formats/.
    root = planted(tmp_path, {
        "libconvert/model.h": """
            #include "libconvert/error.h"
            extern const int lc_model_version;
            int lc_model_new(void);
            int lc_model_sniff(const char *path);
            """,
        "libconvert/model.c": """
            #include "libconvert/model.h"

            const int lc_model_version = 1;

            int lc_model_new(void) { return lc_model_sniff("x"); }
            """,
        "formats/gguf.c": """
            #include "formats/gguf.h"
            #include "libconvert/model.h"

            int lc_gguf_load(const char *path) { return path ? 0 : lc_fail(5); }
            int lc_model_sniff(const char *path) { return lc_gguf_load(path); }
            """})
    assert run(root) == (1, [
        "libconvert/model.c:5: uses lc_model_sniff (defined in formats/gguf.c): "
        "libconvert/ may use only itself"])
