"""Inside an SGLang scheduler process: the ``--forward-hooks`` factory, dump and guard.

SGLang facts this relies on (checked in the wheels 0.5.12, 0.5.13, 0.5.14, 0.5.17, 0.5.23):

* ``model_executor/hook_manager.py`` ``register_forward_hooks``: ``hook_factory(config)`` per
  spec, the hook registered with ``register_forward_hook`` on every matching module; a factory
  returning ``None`` registers nothing (so the hooks cost nothing unless asked for).
* The model runner calls ``model.forward(...)`` directly (0.5.12 ``model_runner.py:2858``), so a
  hook on the root never fires; the embedding, each decoder layer and the ``logits_processor``
  are called as modules (their hooks fire).
* ``LogitsProcessor.forward(input_ids, hidden_states, lm_head, forward_batch,
  aux_hidden_states)``: ``aux_hidden_states`` (a list of ``[T, H]`` or one packed ``[T, k*H]``)
  is what the target hands the drafter. The drafter's own logits processor gets none.
* A decoder layer returns the residual stream, or ``(hidden, residual)`` whose sum is the
  stream (fused residual). The per-release model-level suite (``tests/engines/sglang``)
  checks, per model file, that the recorded stream equals HF's ``hidden_states``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from eagle3_contracts.conventions.names import engine_name
from eagle3_contracts.errors import ConfigError, ContractError, ContractViolation
from eagle3_contracts.integrations.vllm.settings import Settings, read_settings
from eagle3_contracts.integrations.vllm.verdict import (
    GuardVerdict,
    Recorded,
    WiringMismatch,
    identify_recorded,
    judge,
)
from eagle3_contracts.layer_ids import EMBEDDING

PREFIX = "eagle3-contracts"
Hook = Callable[[nn.Module, tuple[Any, ...], Any], None]


def _logger() -> logging.Logger:
    return logging.getLogger("sglang.eagle3_contracts")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def stream_of(output: Any, args: tuple[Any, ...] = ()) -> torch.Tensor | None:
    """The residual stream after a decoder layer, or ``None`` where it cannot be read.

    * 0.5.2x layer-boundary stages keep the residual on the batch
      (``forward_batch.residual_stream``, 0.5.23 ``layers/layer_boundary/residual/stream.py``):
      the stream is its ``residual`` plus the pending contribution's ``value`` when that
      update is a plain add with nothing owed;
    * otherwise the layer's output, or ``hidden + residual`` (fused residual).
    """
    batch = next((a for a in args if hasattr(a, "residual_stream")), None)
    holder = getattr(batch, "residual_stream", None)
    if holder is not None and hasattr(holder, "pending"):
        residual, pending = getattr(holder, "residual", None), holder.pending
        if not isinstance(residual, torch.Tensor):
            return None
        if pending is None:
            return residual
        value = getattr(pending, "value", None)
        plain = type(getattr(pending, "update", None)).__name__ == "PlainAdd"
        if isinstance(value, torch.Tensor) and plain and getattr(pending, "owed", None) is None:
            return residual + value
        return None
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        hidden = output[0]
        residual = output[1] if len(output) > 1 else None
        if residual is None:
            return hidden
        if isinstance(residual, torch.Tensor) and residual.shape == hidden.shape:
            return hidden + residual
    return None


def _target_depth(target: Mapping[str, Any]) -> int | None:
    """The target's depth as ``check`` reads it (``config.readers``: top level or a nested
    language-model section); None when its config does not say."""
    from eagle3_contracts.config.readers import read_target_config

    try:
        return read_target_config(target).num_layers
    except ConfigError:
        return None


def sglang_release() -> str:
    from importlib.metadata import version

    return version("sglang")


def sglang_fix(release: str, target: Mapping[str, Any]) -> Callable[[Sequence[int], int], str]:
    """The drafter setting that makes ``sglang==release`` feed the trained ids (per registry)."""

    def fix(expected: Sequence[int], num_layers: int) -> str:
        from eagle3_contracts.conventions.predict import predict_feed

        want = tuple(expected)
        for shift in (1, 0, -1, 2):
            ids = [e + shift for e in want]
            draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids}}
            feed = predict_feed(engine_name("sglang", release), draft, target)
            if feed.kind == "segments" and feed.canonical == want:
                return f"eagle_config.eagle_aux_hidden_state_layer_ids = {ids}"
        return (
            f"none of the usual id lists makes sglang=={release} feed {list(want)} for this "
            f"model file; see `eagle3-contracts check DRAFT --target T --serve-with "
            f"sglang=={release}`"
        )

    return fix


@dataclass
class Session:
    """One scheduler process: what the hooks recorded in the current forward."""

    settings: Settings
    draft_path: str | None
    log: logging.Logger = field(default_factory=_logger)
    done: bool = False
    embedding: torch.Tensor | None = None
    layers: list[torch.Tensor | None] = field(default_factory=list)
    model_file: str = ""
    verdict: GuardVerdict | None = None
    dump_path: Path | None = None

    # -- the hooks ------------------------------------------------------------------------
    def on_embedding(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.done or not isinstance(output, torch.Tensor):
            return
        self.embedding = output[: self.settings.guard_tokens].detach().float().clone()
        self.layers = []  # a new forward starts (target or drafter)

    def on_layer(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.done or self.embedding is None:
            return
        stream = stream_of(output, args)
        tokens = self.settings.guard_tokens
        self.layers.append(None if stream is None else stream[:tokens].detach().float().clone())
        self.model_file = type(module).__module__.rsplit(".", 1)[-1] + ".py"

    def on_logits(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.done or len(args) < 5 or args[4] is None or len(args[4]) == 0:
            return
        batch = args[3]
        mode = getattr(batch, "forward_mode", None)
        if mode is None or not mode.is_extend():
            return
        self.done = True
        try:
            self._observe(module, args[0], args[4])
        except ContractViolation:
            raise
        except Exception as exc:
            problem = _one_line(exc)
            if self.settings.strict:
                raise ContractViolation(
                    f"{PREFIX} guard (strict): cannot observe this engine: {problem}"
                ) from exc
            self.log.warning(
                "%s: cannot observe this engine (%s); serving continues", PREFIX, problem
            )

    # -- the work -------------------------------------------------------------------------
    def _observe(self, module: nn.Module, input_ids: torch.Tensor, aux: Any) -> None:
        captured = aux if isinstance(aux, torch.Tensor) else torch.cat(list(aux), dim=-1)
        if self.embedding is None:
            raise ContractError("the embedding hook never fired", field="forward_hooks")
        hidden = int(self.embedding.shape[-1])
        release = sglang_release()
        where = f"{engine_name('sglang', release)}, {self.model_file or 'unknown model file'}"
        config: Any = getattr(module, "config", None)
        target: dict[str, Any] = config.to_dict() if config is not None else {}
        found = None
        if self.settings.guard is not None or self.settings.dump_dir is not None:
            found = self._identify(captured, hidden, target)
        if self.settings.dump_dir is not None:
            self._dump(captured, input_ids, found, hidden, release, where)
        if self.settings.guard is not None and found is not None:
            self._guard(found, release, target, where)

    def _identify(self, captured: torch.Tensor, hidden: int, target: Mapping[str, Any]) -> Any:
        if any(s is None for s in self.layers):
            raise ContractError(
                "a decoder layer returned neither the stream nor (hidden, residual)",
                field="forward_hooks",
            )
        depth = _target_depth(target)
        if depth is not None and depth != len(self.layers):
            raise ContractError(
                f"recorded {len(self.layers)} decoder layers of {depth} (pipeline parallel "
                "stages are not observed)",
                field="forward_hooks",
            )
        assert self.embedding is not None
        states = {EMBEDDING: self.embedding, **{i: s for i, s in enumerate(self.layers)}}
        recorded = Recorded(states, len(self.layers))  # type: ignore[arg-type]
        return identify_recorded(captured.float(), recorded, hidden)

    def _dump(
        self,
        captured: torch.Tensor,
        input_ids: torch.Tensor,
        found: Any,
        hidden: int,
        release: str,
        where: str,
    ) -> None:
        from eagle3_contracts.dumps.format import write_dump

        ids = list(found.layer_ids) if found is not None else []
        if not ids or any(i is None for i in ids):
            self.log.warning(
                "%s dump: not written: a segment is no layer of the target (%s)",
                PREFIX,
                found.render_text() if found is not None else "no identification",
            )
            return
        directory = Path(self.settings.dump_dir or ".")
        directory.mkdir(parents=True, exist_ok=True)
        tokens = int(self.embedding.shape[0]) if self.embedding is not None else captured.shape[0]
        path = directory / f"sglang-{release}-pid{os.getpid()}-first-prefill.safetensors"
        self.dump_path = write_dump(
            path,
            captured[:tokens].detach().float(),
            input_ids[:tokens].detach(),
            layer_ids=ids,
            convention="canonical",
            system=f"sglang=={release} target aux states for the drafter (eagle3-contracts "
            "--forward-hooks; ids identified against the recorded residual stream)",
            hidden_size=hidden,
            extra_metadata={
                "serve": engine_name("sglang", release),
                "model_file": self.model_file,
            },
        )
        self.log.info("%s dump: wrote %s [%s]", PREFIX, self.dump_path, where)

    def _guard(self, found: Any, release: str, target: Mapping[str, Any], where: str) -> None:
        expected, claim = self._claim(target)
        verdict = judge(
            found,
            expected=expected,
            claim=claim,
            fc_states=None,
            where=where,
            fix=sglang_fix(release, target),
        )
        self.verdict = verdict
        if verdict.ok:
            self.log.info("%s", verdict.line)
            return
        self.log.warning("%s", verdict.line)
        if self.settings.strict:
            raise WiringMismatch(verdict.line)

    def _claim(self, target: Mapping[str, Any]) -> tuple[tuple[int, ...] | None, str]:
        from eagle3_contracts.stamp import claim_source

        source = claim_source(self.draft_path, None)
        if source.kind == "stamp" and source.stamp is not None:
            return source.stamp.layer_ids, source.describe()
        if source.trained_with and self.draft_path:
            import json

            from eagle3_contracts.config.plan import resolve

            draft = json.loads((Path(self.draft_path) / "config.json").read_text())
            plan = resolve(draft, dict(target), source.trained_with)
            return tuple(plan.layer_ids), source.describe()
        return None, source.describe()


_SESSION: Session | None = None


def session() -> Session | None:
    """This process's session (``None`` until a factory ran with dump or guard asked for)."""
    return _SESSION


def hook_factory(config: Mapping[str, Any]) -> Hook | None:
    """``--forward-hooks`` factory: ``None`` (no hook) unless dump or guard is asked for."""
    global _SESSION
    settings = read_settings()
    if settings is None or (settings.dump_dir is None and settings.guard is None):
        return None
    if _SESSION is None:
        for problem in settings.problems:
            _logger().warning("%s: %s", PREFIX, problem)
        _SESSION = Session(settings, config.get("draft_path"))
    role = config.get("role")
    hooks: dict[str, Hook] = {
        "embedding": _SESSION.on_embedding,
        "layers": _SESSION.on_layer,
        "logits": _SESSION.on_logits,
    }
    if role not in hooks:
        raise ContractError(
            f"forward_hooks config role must be one of {', '.join(hooks)}, got {role!r}",
            field="forward_hooks",
        )
    return hooks[role]


def reset() -> None:
    """Forget this process's session (tests)."""
    global _SESSION
    _SESSION = None
