#!/usr/bin/env bash
# Pack what scripts/gpu-goldens.sh needs on a GPU runner without network (run this where the
# package index is reachable): the project's wheel, syrupy's wheel, the test tree and the script.
#   bash scripts/gpu-goldens-pack.sh BUNDLE_DIR      then, on the runner:
#   bash BUNDLE_DIR/gpu-goldens.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:?usage: gpu-goldens-pack.sh BUNDLE_DIR}
python=${PYTHON:-python3}
rm -rf "$bundle" && mkdir -p "$bundle/wheels" "$bundle/src"
"$python" -m pip wheel -q --no-deps --no-build-isolation -w "$bundle/wheels" . \
  || "$python" -m pip wheel -q --no-deps -w "$bundle/wheels" .
# syrupy is pure Python (py3-none-any): one wheel serves any runner's Python.
"$python" -m pip download -q --no-deps --only-binary=:all: -d "$bundle/wheels" 'syrupy>=4.6,<6'
cp -r tests conftest.py pyproject.toml "$bundle/src/"
find "$bundle/src" -name __pycache__ -prune -exec rm -rf {} +
cp scripts/gpu-goldens.sh "$bundle/"
echo "packed $(ls "$bundle/wheels" | tr '\n' ' ')into $bundle"
