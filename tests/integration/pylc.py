"""The Python package under test, imported from the checkout: python/ on sys.path, and
the library make built ($LIBCONVERT_LIBRARY, set by `make test-py`; else
build/pic/libconvert.so, which `make shared` builds)."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))

sys.path.insert(0, str(ROOT / "python"))
import libconvert  # noqa: E402,F401
