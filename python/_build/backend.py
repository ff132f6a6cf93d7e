"""A PEP 517 build backend for python/: `make shared` in the repository builds
libconvert.so, and this packs it with the modules of python/libconvert/ into a wheel.

Standard library only, so that pip needs nothing from an index to build. The wheel is
tagged py3-none-<platform>: the modules are pure Python (ctypes), the library is
native. LIBCONVERT_LIBRARY names a .so built elsewhere instead of running make;
LC_MAKE_ARGS adds arguments to make's command line (BUILD=..., CC=...)."""
import base64
import hashlib
import os
import shlex
import subprocess
import sysconfig
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent      # python/
ROOT = HERE.parent                                  # the repository
NAME = "libconvert"


def _version() -> str:
    for line in (HERE / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    raise RuntimeError("no version in pyproject.toml")


def _library() -> Path:
    given = os.environ.get("LIBCONVERT_LIBRARY")
    if given:
        return Path(given)
    args = shlex.split(os.environ.get("LC_MAKE_ARGS", ""))
    subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", *args, "shared"],
                   check=True)
    build = next((a.split("=", 1)[1] for a in args if a.startswith("BUILD=")), "build")
    return ROOT / build / "pic" / "libconvert.so"


def _tag() -> str:
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _metadata(version: str) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version}",
        "Summary: Open, convert, quantize and verify safetensors, GGUF and PyTorch model "
        "files: Python over the libconvert C library",
        "Requires-Python: >=3.9",
        "Requires-Dist: numpy>=1.22",
        "Provides-Extra: bf16",
        "Requires-Dist: ml-dtypes>=0.3; extra == \"bf16\"",
    ]
    return "\n".join(lines) + "\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: dict, version: str) -> str:
    tag = _tag()
    dist = f"{NAME}-{version}.dist-info"
    files = dict(files)
    files[f"{dist}/METADATA"] = _metadata(version).encode()
    files[f"{dist}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: libconvert-backend\n"
                              f"Root-Is-Purelib: false\nTag: {tag}\n").encode()
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{NAME}-{version}-{tag}.whl"
    with zipfile.ZipFile(Path(directory) / wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if n.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)
    return wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    files = {}
    for p in sorted((HERE / NAME).iterdir()):
        if p.suffix in (".py", ".typed"):
            files[f"{NAME}/{p.name}"] = p.read_bytes()
    files[f"{NAME}/libconvert.so"] = _library().read_bytes()
    return _write_wheel(wheel_directory, files, version)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """pip install -e: a .pth naming python/, and the library built where the checkout
    looks for it (build/pic/libconvert.so, or LIBCONVERT_LIBRARY at run time)."""
    if not os.environ.get("LIBCONVERT_LIBRARY"):
        _library()
    files = {f"__editable__.{NAME}.pth": (str(HERE) + "\n").encode()}
    return _write_wheel(wheel_directory, files, _version())


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = Path(metadata_directory) / f"{NAME}-{_version()}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(_metadata(_version()))
    return dist.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel
