#!/usr/bin/env bash
# Record the GPU goldens on a bare CUDA runner with no network.
#
#   bash gpu-goldens.sh OUT_DIR          # beside wheels/ and src/ made by gpu-goldens-pack.sh
#   bash gpu-goldens.sh --cpu-dry-run OUT_DIR   # the same steps on a CPU host: installs, then
#                                               # runs the CPU half of the GPU golden module
#
# The runner brings Python with a CUDA torch, transformers, pytest, hypothesis and safetensors;
# syrupy and this project are installed from the wheels shipped beside this script
# (`pip install --no-index --no-deps --target`, nothing touches the runner's site-packages).
# Run 1 records every `-m gpu` golden serially with --snapshot-update into OUT_DIR; run 2 runs
# them again without updating, which fails unless the capture is deterministic. OUT_DIR/goldens/
# then holds goldens/capture/test_golden_models_gpu/ to commit. Users with their own networked
# GPU runner use `tox -e gpu` instead (README).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dry=0
if [ "${1:-}" = "--cpu-dry-run" ]; then dry=1; shift; fi
out=${1:?usage: gpu-goldens.sh [--cpu-dry-run] OUT_DIR}
python=${PYTHON:-python3}
step() { echo "[gpu-goldens $(date +%H:%M:%S)] $*"; }
fail() { echo "gpu-goldens: $*" >&2; exit 2; }
start=$(date +%s)

[ -d "$here/wheels" ] && [ -d "$here/src/tests" ] || fail "no wheels/ or src/ beside $0: run scripts/gpu-goldens-pack.sh first"
if [ $dry = 0 ]; then
  "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    || fail "no CUDA device visible to $python (torch.cuda.is_available() is False)"
fi

step "install syrupy and eagle3-contracts from $here/wheels (no index, no deps)"
site=$(mktemp -d)
"$python" -m pip install -q --no-index --no-deps --no-compile --target "$site" "$here"/wheels/*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
"$python" -c 'import eagle3_contracts, syrupy, transformers, hypothesis' \
  || fail "the runner lacks a package the tests need (see the import error above)"

tree="$out/tree"
rm -rf "$tree" && mkdir -p "$tree/goldens"
cp -r "$here/src/." "$tree/"
cd "$tree"
export EAGLE3_HYPOTHESIS_PROFILE=eagle3-gpu CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
if [ $dry = 1 ]; then
  select=(-m "not gpu" tests/goldens/capture/test_golden_models_gpu.py)
else
  select=(-m gpu tests)
fi
pytest=("$python" -m pytest -p no:xdist -p no:cacheprovider -rs -q "${select[@]}")

step "run 1: record (--snapshot-update), serially"
"${pytest[@]}" --snapshot-update
step "run 2: the same tests without updating (determinism)"
"${pytest[@]}"

mkdir -p "$out/goldens"
cp -r "$tree/goldens/." "$out/goldens/"
step "done in $(( $(date +%s) - start )) s; goldens in $out/goldens:"
find "$out/goldens" -type f | sort | sed 's/^/  /'
step "torch $("$python" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")')"
