#!/usr/bin/env bash
# Makes build/tf5-venv: transformers 5 with torch, the producer of the fixture folders of
# scripts/make_hf_tf5_fixtures.py and of their logits (scripts/make_infer_ref.py). Not run
# in CI. LC_TORCH_SITE=/path/to/site-packages reuses an installed torch through a .pth
# line instead of downloading PyPI's multi-gigabyte wheel again.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=build/tf5-venv
python3 -m venv "$VENV"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -n "${LC_TORCH_SITE:-}" ]; then
    # Appended after the venv's own site-packages, so the venv's pins win.
    echo "$LC_TORCH_SITE" > "$site/zz-lc-torch.pth"
else
    "$VENV/bin/pip" install -q --disable-pip-version-check torch==2.15.0
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -r scripts/hf/tf5-requirements.txt
"$VENV/bin/python" -c 'import torch, transformers
print("tf5-venv: torch", torch.__version__, "transformers", transformers.__version__)'
