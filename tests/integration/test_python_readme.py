"""README's Python examples, run as they stand: in the checkout (python/ on the path), and
in a fresh venv that installs the wheel the package's build backend makes (what `make
wheel` runs), so that the wheel holds everything it needs. Each run happens in an empty
folder holding a link to fixtures/, as a user's working folder would."""
import os
import re
import subprocess
import sys
import venv

from pylc import ROOT


def readme_examples():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Python (`import libconvert`)", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 3
    return "\n".join(blocks)


def run_examples(python, cwd, env):
    (cwd / "fixtures").symlink_to(ROOT / "fixtures")
    script = "import libconvert\nprint('LIBCONVERT', libconvert.__file__)\n" + readme_examples()
    r = subprocess.run([str(python), "-c", script], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def check_output(out, cwd):
    assert "qwen2 u32" in out and "float32 (384, 64) False" in out
    for name in ("tiny.gguf", "tiny.safetensors", "qwen2-f16.gguf", "qwen2-Q4_K_M.gguf",
                 "qwen2.safetensors", "mlp.safetensors"):
        assert (cwd / name).is_file(), name
    assert "global os.system is not on the allowlist" in out


def test_readme_examples_in_the_checkout(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = run_examples(sys.executable, tmp_path, env)
    assert f"LIBCONVERT {ROOT / 'python' / 'libconvert' / '__init__.py'}" in out
    check_output(out, tmp_path)


def test_wheel_installs_in_a_fresh_venv_and_runs_the_examples(tmp_path):
    so = os.environ.get("LIBCONVERT_LIBRARY", str(ROOT / "build" / "pic" / "libconvert.so"))
    wheels = tmp_path / "wheels"
    # The backend (python/_build/backend.py), given the library make built, as `make
    # wheel` runs it (there without LIBCONVERT_LIBRARY: the backend runs make itself).
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--disable-pip-version-check", "-w", str(wheels),
                        str(ROOT / "python")],
                       env=dict(os.environ, LIBCONVERT_LIBRARY=so), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (whl,) = wheels.glob("libconvert-*-py3-none-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LIBCONVERT_LIBRARY", "VIRTUAL_ENV")}
    # numpy, the one dependency, comes from the index (or pip's cache).
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        str(whl)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    work = tmp_path / "work"
    work.mkdir()
    out = run_examples(py, work, env)
    installed = re.search(r"LIBCONVERT (\S+)", out).group(1)
    assert installed.startswith(str(env_dir)), installed
    assert any((env_dir / "lib").glob("python*/site-packages/libconvert/libconvert.so"))
    check_output(out, work)
