"""The output-file and input-file promises, tried as an attacker and a careless user
would (issue 11, items 1-4, 6, 7): planted links at temporary names, an output that is
an input, concurrent writers, signals mid-write, the file-size limit, a full disk, an
input truncated during a run, and FIFOs in every role an input can take.

Runs that must be interrupted mid-write are stopped (SIGSTOP) the moment their
temporary appears in an otherwise empty output folder (inotify), so no test depends on
how fast the machine is; every run has a timeout, so a tool that blocks fails instead
of hanging the suite."""
import ctypes
import hashlib
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import json

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "fixtures")
BIN = os.environ.get("LC_BIN", os.path.join(ROOT, "build", "bin"))
TIMEOUT = 120
# The documented pattern of a temporary (libconvert/outfile.h).
TEMP = re.compile(r"^\..+\.lc-[0-9A-Za-z]{10}\.tmp$")


def tool(name):
    return os.path.join(BIN, name)


def default_signals():
    """In the child: every signal at its default, whatever the test runner ignores."""
    for s in range(1, signal.NSIG):
        try:
            signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass


def run(*args, preexec=default_signals, timeout=TIMEOUT):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=preexec)


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_f32(path, n, value):
    """A safetensors file with one F32 tensor "w" of n elements, all `value`."""
    hdr = json.dumps({"w": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}})
    hdr = hdr.encode()
    hdr += b" " * (-len(hdr) % 8)
    chunk = struct.pack("<f", value) * (1 << 18)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr)
        for _ in range(n >> 18):
            f.write(chunk)
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """256 MB of f32 and its f16 rewrite (128 MB): long enough to stop mid-write."""
    d = tmp_path_factory.mktemp("big")
    src = make_f32(d / "big.safetensors", 64 << 20, 1.5)
    ref = d / "ref.safetensors"
    p = run(tool("safetensors-rewrite"), "-q", "--dtype", "f16", src, ref)
    assert p.returncode == 0, p.stderr
    return src, ref


# ---- stopping a run mid-write ----

IN_CREATE = 0x100


class CreateWatch:
    """inotify on one folder: wait() returns once something is created in it."""

    def __init__(self, folder):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_CLOEXEC)
        assert self.fd >= 0
        assert self.libc.inotify_add_watch(self.fd, str(folder).encode(), IN_CREATE) >= 0

    def wait(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        return bool(r)

    def close(self):
        os.close(self.fd)


def start_stopped(args, out_dir, preexec=default_signals):
    """Starts the tool and stops it as soon as it creates its temporary in out_dir."""
    out_dir.mkdir(exist_ok=True)
    assert os.listdir(out_dir) == []
    w = CreateWatch(out_dir)
    try:
        p = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
        created = w.wait(TIMEOUT)
        os.kill(p.pid, signal.SIGSTOP)
    finally:
        w.close()
    assert created, "the tool created no file in %s" % out_dir
    # Stopped before it finished: nothing has been renamed into place yet.
    assert p.poll() is None, "the run ended before it could be stopped"
    return p


def finish(p, *signals):
    """Sends the signals to a stopped run, lets it go on, and waits for it."""
    for s in signals:
        os.kill(p.pid, s)
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=TIMEOUT)
    return p.returncode, err


# ---- 1. temporaries: never an existing path ----

@pytest.mark.parametrize("plant", ["symlink", "hardlink", "fifo"])
def test_planted_old_temporary_is_left_alone(plant, tmp_path):
    """The old fixed name OUT.tmp, planted as a link to a victim file or as a FIFO, is
    neither written nor followed; the output is right."""
    src = os.path.join(FIX, "safetensors", "tiny_llama.safetensors")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    planted = tmp_path / "o.safetensors.tmp"
    if plant == "symlink":
        planted.symlink_to(victim)
    elif plant == "hardlink":
        os.link(victim, planted)
    else:
        os.mkfifo(planted)
    p = run(tool("safetensors-rewrite"), "-q", src, tmp_path / "o.safetensors")
    assert p.returncode == 0, p.stderr
    assert victim.read_bytes() == b"precious"
    assert sha(tmp_path / "o.safetensors") == sha(src)
    if plant == "symlink":
        assert planted.is_symlink() and os.readlink(planted) == str(victim)
    elif plant == "hardlink":
        assert os.stat(planted).st_ino == os.stat(victim).st_ino
    else:
        assert os.path.exists(planted) and not planted.is_file()
    assert sorted(os.listdir(tmp_path)) == ["o.safetensors", "o.safetensors.tmp", "victim"]


def test_symlink_at_out_is_replaced_not_written_through(tmp_path):
    src = os.path.join(FIX, "safetensors", "tiny_llama.safetensors")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    (tmp_path / "o.safetensors").symlink_to(victim)
    p = run(tool("safetensors-rewrite"), "-q", src, tmp_path / "o.safetensors")
    assert p.returncode == 0, p.stderr
    assert victim.read_bytes() == b"precious"
    assert not (tmp_path / "o.safetensors").is_symlink()
    assert sha(tmp_path / "o.safetensors") == sha(src)


def test_temporary_has_the_documented_name_and_mode(big, tmp_path):
    src, _ = big
    out = tmp_path / "out"
    umask = 0o027

    def child():
        default_signals()
        os.umask(umask)
    p = start_stopped([tool("safetensors-rewrite"), "-q", "--dtype", "f16", src,
                       out / "o.safetensors"], out, preexec=child)
    try:
        names = os.listdir(out)
        assert len(names) == 1 and TEMP.match(names[0]), names
        assert names[0].startswith(".o.safetensors.lc-")
        assert os.stat(out / names[0]).st_mode & 0o777 == 0o666 & ~umask
    finally:
        rc, err = finish(p)
    assert rc == 0, err
    assert os.listdir(out) == ["o.safetensors"]


# ---- 2. an output that is an input ----

def copy_tree(src, dst):
    shutil.copytree(src, dst)
    return dst


def cases_in_is_out(tmp):
    """(name, argv, the input file the output would replace)."""
    st = shutil.copy(os.path.join(FIX, "safetensors", "tiny_llama.safetensors"), tmp / "a.st")
    pth = shutil.copy(os.path.join(FIX, "pth", "2.15.0", "mlp.pth"), tmp / "m.pth")
    gguf = tmp / "t.gguf"
    assert run(tool("safetensors2gguf"), "-q", st, gguf).returncode == 0
    bare = shutil.copy(os.path.join(FIX, "gguf", "bare_all_dtypes.safetensors"), tmp / "b.st")
    hf = copy_tree(os.path.join(FIX, "hf", "llama-bpe"), tmp / "hf")
    spm = copy_tree(os.path.join(FIX, "hf", "llama-spm"), tmp / "spm")
    sh = copy_tree(os.path.join(FIX, "safetensors", "sharded"), tmp / "sh")
    os.link(st, tmp / "hardlink.st")
    os.symlink(st, tmp / "symlink.st")
    shard = sh / "model-00002-of-00002.safetensors"
    return [
        ("rewrite", ["safetensors-rewrite", st, st], st),
        ("rewrite-hardlink", ["safetensors-rewrite", st, tmp / "hardlink.st"], st),
        ("rewrite-symlink", ["safetensors-rewrite", st, tmp / "symlink.st"], st),
        ("rewrite-dtype", ["safetensors-rewrite", "--dtype", "f16", st, st], st),
        ("rewrite-shard", ["safetensors-rewrite", sh, shard], shard),
        ("rewrite-index", ["safetensors-rewrite", sh, sh / "model.safetensors.index.json"],
         sh / "model.safetensors.index.json"),
        ("pth2safetensors", ["pth2safetensors", pth, pth], pth),
        ("gguf2safetensors", ["gguf2safetensors", gguf, gguf], gguf),
        ("bare-gguf", ["safetensors2gguf", bare, bare], bare),
        ("hf-shard", ["safetensors2gguf", hf, hf / "model-00001-of-00002.safetensors"],
         hf / "model-00001-of-00002.safetensors"),
        ("hf-config", ["safetensors2gguf", hf, hf / "config.json"], hf / "config.json"),
        ("hf-tokenizer", ["safetensors2gguf", spm, spm / "tokenizer.model"],
         spm / "tokenizer.model"),
    ]


CASE_NAMES = ["rewrite", "rewrite-hardlink", "rewrite-symlink", "rewrite-dtype",
              "rewrite-shard", "rewrite-index", "pth2safetensors", "gguf2safetensors",
              "bare-gguf", "hf-shard", "hf-config", "hf-tokenizer"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_output_that_is_an_input_is_refused(case, tmp_path):
    cases = {c[0]: c for c in cases_in_is_out(tmp_path)}
    _, argv, victim = cases[case]
    before = sha(victim)
    listing = sorted(os.listdir(os.path.dirname(victim)))
    p = run(tool(argv[0]), "-q", *argv[1:])
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert "refusing" in lines[0] and os.path.basename(victim) in lines[0], lines[0]
    assert os.path.basename(str(argv[-1])) in lines[0]
    assert sha(victim) == before
    assert sorted(os.listdir(os.path.dirname(victim))) == listing


def test_output_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    src = os.path.join(FIX, "safetensors", "tiny_llama.safetensors")
    p = run(tool("safetensors-rewrite"), "-q", src, tmp_path / "d")
    assert p.returncode == 1 and "folder" in p.stderr, p.stderr
    assert os.listdir(tmp_path / "d") == [] and os.listdir(tmp_path) == ["d"]


# ---- 3. concurrent writers of one OUT ----

def test_concurrent_writers_last_rename_wins_whole(tmp_path):
    srcs, refs = [], {}
    for i in range(6):
        src = make_f32(tmp_path / ("in%d.safetensors" % i), 8 << 20, float(i + 1))
        ref = tmp_path / ("ref%d.safetensors" % i)
        p = run(tool("safetensors-rewrite"), "-q", "-t", "1", "--dtype", "f16", src, ref)
        assert p.returncode == 0, p.stderr
        srcs.append(src)
        refs[sha(ref)] = i
    out = tmp_path / "out"
    out.mkdir()
    for _ in range(3):
        procs = [subprocess.Popen([tool("safetensors-rewrite"), "-q", "-t", "1", "--dtype",
                                   "f16", str(s), str(out / "o.safetensors")],
                                  stderr=subprocess.PIPE, text=True) for s in srcs]
        for p in procs:
            _, err = p.communicate(timeout=TIMEOUT)
            assert p.returncode == 0, err
        assert os.listdir(out) == ["o.safetensors"]
        assert sha(out / "o.safetensors") in refs, "a mix of several runs was published"


# ---- 4. signals and limits ----

DYING = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2",
         "SIGVTALRM", "SIGPROF", "SIGPOLL", "SIGPWR"]


@pytest.mark.parametrize("name", DYING + ["SIGRTMIN"])
def test_signal_mid_write_leaves_nothing(name, big, tmp_path):
    src, _ = big
    sig = getattr(signal, name)
    out = tmp_path / "out"
    p = start_stopped([tool("safetensors-rewrite"), "-q", "--dtype", "f16", src,
                       out / "o.safetensors"], out)
    rc, err = finish(p, sig)
    assert rc == 128 + sig, (rc, err)
    assert os.listdir(out) == []


@pytest.mark.parametrize("name", ["SIGPIPE", "SIGXFSZ"])
def test_pipe_and_xfsz_signals_are_ignored(name, big, tmp_path):
    """Ignored, so that EPIPE and EFBIG come back from write(2) as errors; sent from
    outside, they change nothing."""
    src, ref = big
    out = tmp_path / "out"
    p = start_stopped([tool("safetensors-rewrite"), "-q", "--dtype", "f16", src,
                       out / "o.safetensors"], out)
    rc, err = finish(p, getattr(signal, name))
    assert rc == 0, (rc, err)
    assert os.listdir(out) == ["o.safetensors"]
    assert sha(out / "o.safetensors") == sha(ref)


def test_signal_ignored_by_the_caller_stays_ignored(big, tmp_path):
    """nohup: a SIGHUP the caller ignores does not end the run."""
    src, ref = big
    out = tmp_path / "out"

    def nohup():
        default_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    p = start_stopped([tool("safetensors-rewrite"), "-q", "--dtype", "f16", src,
                       out / "o.safetensors"], out, preexec=nohup)
    rc, err = finish(p, signal.SIGHUP)
    assert rc == 0, (rc, err)
    assert sha(out / "o.safetensors") == sha(ref)


def test_file_size_limit_is_an_error_naming_the_output(tmp_path):
    import resource
    src = make_f32(tmp_path / "in.safetensors", 4 << 20, 2.0)    # 16 MB in, 8 MB out
    out = tmp_path / "out"
    out.mkdir()

    def limited():
        default_signals()
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    for args in (["--dtype", "f16"], []):       # converted, and copied by the kernel
        p = run(tool("safetensors-rewrite"), "-q", *args, src, out / "o.safetensors",
                preexec=limited)
        assert p.returncode == 1, (p.returncode, p.stderr)
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and "o.safetensors" in lines[0], p.stderr
        assert "File too large" in lines[0], lines[0]
        assert os.listdir(out) == []


def test_full_disk_is_an_error_naming_the_output(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    full = tmp_path / "full"
    full.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full)],
                       capture_output=True, text=True)
    if m.returncode != 0:
        pytest.skip("mount is not permitted here: " + m.stderr.strip())
    try:
        src = make_f32(tmp_path / "in.safetensors", 1 << 20, 3.0)   # 4 MB
        for args in (["--dtype", "f16"], []):
            p = run(tool("safetensors-rewrite"), "-q", *args, src, full / "o.safetensors")
            assert p.returncode == 1, (p.returncode, p.stderr)
            lines = p.stderr.splitlines()
            assert len(lines) == 1 and "o.safetensors" in lines[0], p.stderr
            assert "No space left on device" in lines[0], lines[0]
            assert os.listdir(full) == []
    finally:
        subprocess.run(["umount", str(full)], check=True)


# ---- 6. an input that changes during the run ----

@pytest.mark.parametrize("how", ["mapped", "copied"])
def test_input_truncated_mid_run(how, big, tmp_path):
    """--dtype reads the input through its map (a truncation would be SIGBUS); a plain
    rewrite copies it with copy_file_range (the copy comes up short)."""
    src = shutil.copy(big[0], tmp_path / "in.safetensors")
    out = tmp_path / "out"
    args = ["--dtype", "f16"] if how == "mapped" else []
    p = start_stopped([tool("safetensors-rewrite"), "-q", *args, src, out / "o.safetensors"],
                      out)
    os.truncate(src, 1 << 20)
    rc, err = finish(p)
    assert rc == 1, (rc, err)
    lines = err.splitlines()
    assert len(lines) == 1 and "in.safetensors" in lines[0], err
    if how == "mapped":
        assert re.fullmatch(r"safetensors-rewrite: \S*in\.safetensors: changed on disk while "
                            r"being read \(at offset 0x[0-9a-f]+\)", lines[0]), lines[0]
    assert os.listdir(out) == []


# ---- 7. special files never block ----

def fifo_cases(tmp):
    """(name, argv, the FIFO, expected exit status)."""
    def fifo(path):
        if os.path.lexists(path):
            os.unlink(path)
        os.mkfifo(path)
        return path
    f = fifo(tmp / "in.bin")
    o = tmp / "o.out"
    sh = copy_tree(os.path.join(FIX, "safetensors", "sharded"), tmp / "sh")
    shi = copy_tree(os.path.join(FIX, "safetensors", "sharded"), tmp / "shi")
    ps = copy_tree(os.path.join(FIX, "pth", "2.15.0", "sharded"), tmp / "ps")
    bpe = copy_tree(os.path.join(FIX, "hf", "llama-bpe"), tmp / "bpe")
    spm = copy_tree(os.path.join(FIX, "hf", "llama-spm"), tmp / "spm")
    spm2 = copy_tree(os.path.join(FIX, "hf", "llama-spm"), tmp / "spm2")
    qwen = copy_tree(os.path.join(FIX, "hf", "qwen2"), tmp / "qwen")
    cfg = copy_tree(os.path.join(FIX, "hf", "qwen2"), tmp / "cfg")
    meta = copy_tree(os.path.join(FIX, "meta", "tiny"), tmp / "meta")
    return [
        ("rewrite", ["safetensors-rewrite", f, o], f, 1),
        ("inspect", ["model-inspect", f], f, 1),
        ("pth", ["pth2safetensors", f, o], f, 1),
        ("pth-list", ["pth2safetensors", "--list", f], f, 1),
        ("pth-scan", ["pth2safetensors", "--scan", f], f, 2),
        ("gguf2safetensors", ["gguf2safetensors", f, o], f, 1),
        ("bare-gguf", ["safetensors2gguf", f, o], f, 1),
        ("st-shard", ["safetensors-rewrite", sh, o],
         fifo(sh / "model-00002-of-00002.safetensors"), 1),
        ("st-index", ["safetensors-rewrite", shi, o],
         fifo(shi / "model.safetensors.index.json"), 1),
        ("pth-shard", ["pth2safetensors", ps, tmp / "pso"],
         fifo(ps / "pytorch_model-00002-of-00002.bin"), 1),
        ("hf-shard", ["safetensors2gguf", bpe, o], fifo(bpe / "model-00002-of-00002.safetensors"), 1),
        ("hf-weights", ["safetensors2gguf", spm, o], fifo(spm / "model.safetensors"), 1),
        ("hf-config", ["safetensors2gguf", cfg, o], fifo(cfg / "config.json"), 1),
        ("hf-tokenizer.model", ["safetensors2gguf", spm2, o], fifo(spm2 / "tokenizer.model"), 1),
        ("hf-tokenizer.json", ["safetensors2gguf", qwen, o], fifo(qwen / "tokenizer.json"), 1),
        ("meta-params", ["safetensors2gguf", meta, o], fifo(meta / "params.json"), 1),
        ("out-is-fifo", ["safetensors-rewrite",
                         os.path.join(FIX, "safetensors", "tiny_llama.safetensors"),
                         fifo(tmp / "fifo.out")], tmp / "fifo.out", 1),
    ]


FIFO_NAMES = ["rewrite", "inspect", "pth", "pth-list", "pth-scan", "gguf2safetensors",
              "bare-gguf", "st-shard", "st-index", "pth-shard", "hf-shard", "hf-weights",
              "hf-config", "hf-tokenizer.model", "hf-tokenizer.json", "meta-params",
              "out-is-fifo"]


@pytest.mark.parametrize("case", FIFO_NAMES)
def test_fifo_is_refused_by_name_without_blocking(case, tmp_path):
    cases = {c[0]: c for c in fifo_cases(tmp_path)}
    _, argv, fifo, status = cases[case]
    try:
        p = run(tool(argv[0]), "-q", *argv[1:], timeout=30)   # it takes milliseconds
    except subprocess.TimeoutExpired:
        pytest.fail("%s blocked on the FIFO %s" % (argv[0], fifo))
    assert p.returncode == status, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert os.path.basename(fifo) in lines[0] and "FIFO" in lines[0], lines[0]
    assert not os.path.exists(tmp_path / "o.out")
    assert os.path.exists(fifo) and not os.path.isfile(fifo)
