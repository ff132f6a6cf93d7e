#!/usr/bin/env bash
# Makes build/ref-venv, the Python that runs llama.cpp's convert_hf_to_gguf.py
# (scripts/make_llama_ref.py; export LC_REF_PY=build/ref-venv/bin/python). Not run in CI.
# LC_TORCH_SITE=/path/to/site-packages reuses an installed torch through a .pth line
# instead of downloading PyPI's multi-gigabyte wheel again.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=build/ref-venv
python3 -m venv "$VENV"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -n "${LC_TORCH_SITE:-}" ]; then
    # Appended after the venv's own site-packages, so the venv's pins win.
    echo "$LC_TORCH_SITE" > "$site/zz-lc-torch.pth"
else
    "$VENV/bin/pip" install -q --disable-pip-version-check torch==2.15.0
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -r scripts/llama/ref-requirements.txt
"$VENV/bin/python" -c 'import torch, transformers
print("ref-venv: torch", torch.__version__, "transformers", transformers.__version__)'
