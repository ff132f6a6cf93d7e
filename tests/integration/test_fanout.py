"""The fan-out recipes of scripts/fanout/, run for real where this machine can run them:

- GNU parallel (Debian's, from scripts/bootstrap.sh): every part of a split run as its own
  job under `parallel -j N` equals the single run's part, byte for byte; a job killed
  (SIGKILL) while it writes leaves no part, and running the recipe again completes the
  set, writing only the missing part; one model into several types, a job each.
- Slurm's job array and Kubernetes' indexed Job (no cluster here): their command lines run
  as the scheduler would run them, with the index set by hand (SLURM_ARRAY_TASK_ID,
  JOB_COMPLETION_INDEX), one process per index."""
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from test_gguf_quantize import tiny_llama

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
FANOUT = ROOT / "scripts" / "fanout"
SPLIT = ["--split-max-tensors", "20"]       # 75 tensors: 4 parts
TYPE = "Q4_K_M"
N = 4
ENV = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")

pytestmark = pytest.mark.skipif(shutil.which("parallel") is None,
                                reason="GNU parallel is missing: scripts/bootstrap.sh installs it")


def run(cmd, ok=True, env=ENV):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if ok:
        assert r.returncode == 0, f"{cmd}: {r.stderr[-2000:]}"
    return r


def part_names(stem):
    return [f"{stem}-{k:05d}-of-{N:05d}.gguf" for k in range(1, N + 1)]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("fanout")
    m = tiny_llama(d / "m.gguf", h=512, layers=8)          # 80 MB of f32
    run([BIN / "gguf-quantize", "-q", *SPLIT, m, d / "whole.gguf", TYPE])
    whole = [(d / n).read_bytes() for n in part_names("whole")]
    return m, whole


def same_set(d, stem, whole):
    got = sorted(p.name for p in Path(d).iterdir() if p.name.startswith(stem + "-"))
    assert got == part_names(stem), got
    for name, want in zip(part_names(stem), whole):
        assert (Path(d) / name).read_bytes() == want, f"{name} differs from the single run's"


def test_plan_parts(model):
    r = run([FANOUT / "plan-parts.sh", "gguf-quantize", *SPLIT, model[0], "x.gguf", TYPE])
    assert r.stdout == f"{N}\n"
    r = run([FANOUT / "plan-parts.sh", "gguf-quantize", model[0], "x.gguf", TYPE], ok=False)
    assert r.returncode == 1 and "no parts" in r.stderr


def test_parallel_parts_equal_the_single_run(model, tmp_path):
    m, whole = model
    r = run([FANOUT / "parallel.sh", "parts", "gguf-quantize", *SPLIT, m, tmp_path / "p.gguf",
             TYPE], env=dict(ENV, JOBS=str(N)))
    same_set(tmp_path, "p", whole)
    assert r.stderr == ""


def holder_of(path_glob_dir, prefix):
    """(pid, temporary) of a process of ours holding a temporary whose name starts with
    prefix in the folder, or None."""
    for t in Path(path_glob_dir).glob(prefix + "*"):
        for fd_dir in Path("/proc").glob("[0-9]*/fd"):
            try:
                for fd in fd_dir.iterdir():
                    if os.readlink(fd) == str(t):
                        return int(fd_dir.parent.name), t
            except OSError:
                continue
    return None


def test_parallel_killed_job_then_skip_existing_completes(model, tmp_path):
    m, whole = model
    # The reference kernels make each job last long enough to be caught writing.
    cmd = [str(FANOUT / "parallel.sh"), "parts", "gguf-quantize", *SPLIT, str(m),
           str(tmp_path / "p.gguf"), TYPE]
    p = subprocess.Popen(cmd, env=dict(ENV, JOBS=str(N), LC_QUANT="ref"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim, deadline = None, time.monotonic() + 60
    while victim is None and p.poll() is None and time.monotonic() < deadline:
        victim = holder_of(tmp_path, ".p-00003-of-00004.gguf.lc-")
        time.sleep(0.002)
    assert victim, "part 3's job was never seen writing"
    os.kill(victim[0], signal.SIGKILL)      # a job of this test's own parallel
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1, f"parallel counts the one failed job: {p.returncode} {err}"
    names = sorted(x.name for x in tmp_path.iterdir())
    assert "p-00003-of-00004.gguf" not in names, "the killed job left a part"
    assert victim[1].name in names, "SIGKILL leaves its temporary (nothing else can)"
    kept = {n: os.stat(tmp_path / n).st_ino for n in part_names("p") if n in names}
    assert len(kept) == N - 1
    victim[1].unlink()

    r = run(cmd, env=dict(ENV, JOBS=str(N)))
    same_set(tmp_path, "p", whole)
    for n, ino in kept.items():
        assert os.stat(tmp_path / n).st_ino == ino, f"{n} was written again"


def test_parallel_types(model, tmp_path):
    m, _ = model
    run([FANOUT / "parallel.sh", "types", m, tmp_path / "out", "Q8_0", "Q4_0"],
        env=dict(ENV, JOBS="2"))
    for t in ["Q8_0", "Q4_0"]:
        run([BIN / "gguf-quantize", "-q", m, tmp_path / f"{t}.gguf", t])
        assert (tmp_path / "out" / f"m-{t}.gguf").read_bytes() == \
            (tmp_path / f"{t}.gguf").read_bytes()


def test_slurm_array_by_hand(model, tmp_path):
    m, whole = model
    script = FANOUT / "slurm-array.sh"
    directives = [l for l in script.read_text().splitlines() if l.startswith("#SBATCH")]
    assert directives and all(l.startswith("#SBATCH --") for l in directives)
    for k in range(N, 0, -1):               # any order: each task alone
        run(["bash", script, "parts", N, "gguf-quantize", *SPLIT, m, tmp_path / "p.gguf",
             TYPE], env=dict(ENV, SLURM_ARRAY_TASK_ID=str(k), SLURM_CPUS_PER_TASK="1"))
    same_set(tmp_path, "p", whole)
    run(["bash", script, "types", m, tmp_path / "t", "Q8_0", "Q4_0"],
        env=dict(ENV, SLURM_ARRAY_TASK_ID="2"))
    run([BIN / "gguf-quantize", "-q", m, tmp_path / "q4.gguf", "Q4_0"])
    assert (tmp_path / "t" / "m-Q4_0.gguf").read_bytes() == (tmp_path / "q4.gguf").read_bytes()
    assert not (tmp_path / "t" / "m-Q8_0.gguf").exists()
    r = run(["bash", script, "parts", N, "gguf-quantize", m, "x", TYPE], ok=False, env=ENV)
    assert r.returncode != 0 and "SLURM_ARRAY_TASK_ID" in r.stderr


def test_kubernetes_indexed_job_by_hand(model, tmp_path):
    m, whole = model
    job = yaml.safe_load((FANOUT / "k8s-indexed-job.yaml").read_text())
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    c = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert int(env["PARTS"]) == spec["completions"]
    assert c["command"] == ["/bin/sh", "-c"]
    env.update(PARTS=str(N), SPLIT=" ".join(SPLIT), MODEL=str(m),
               OUT=str(tmp_path / "p.gguf"), TYPE=TYPE)
    for index in range(N):
        run(c["command"] + c["args"], env=dict(ENV, **env, JOB_COMPLETION_INDEX=str(index)))
    same_set(tmp_path, "p", whole)
