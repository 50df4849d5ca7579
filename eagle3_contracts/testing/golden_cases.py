"""Golden cases: the records ``tests/goldens`` locks, built by capturing and identifying.

``MODEL_CASES`` is a declarative table (one frozen ``ModelCase`` per target variant);
``capture_record(case, device=, dtype=)`` runs ``capture_hidden_states`` on the case's tiny
model and ``identify_segments`` on the result and returns a JSON-ready record: model family and
config fingerprint, contract, concatenation order, per segment the canonical layer it was
identified as (or the near miss it is), shape, dtype and statistics (norm, mean, max-abs).
``GoldenExtension`` (``eagle3_contracts.testing.goldens``) compares identity and order exactly and the
statistics within a dtype tolerance. ``plan_record`` does the same for a resolved capture plan.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_contracts.contract import CaptureContract, Order

if TYPE_CHECKING:
    import torch
    from torch import Tensor, nn
    from transformers import PretrainedConfig

    from eagle3_contracts.testing.synthetic import SyntheticConfig

CaptureFn = Callable[..., "Tensor"]
"""``capture(model, input_ids, layer_ids, *, order=, attention_mask=) -> [B, T, k*H]``."""

# Config keys that say nothing about the computation (or change with the library version).
_VOLATILE_CONFIG_KEYS = frozenset(
    {
        "transformers_version",
        "_name_or_path",
        "architectures",
        "torch_dtype",
        "dtype",
        "_attn_implementation",
        "_attn_implementation_autoset",
        "_attn_implementation_internal",
        "_commit_hash",
    }
)


@dataclass(frozen=True)
class ModelCase:
    """One golden target: a tiny model, the layers captured from it, and its input."""

    # -- identity -------------------------------------------------------------------------
    name: str  # part of the golden's file name; stable
    # -- the target (exactly one of synthetic / hf_arch) ------------------------------------
    synthetic: SyntheticConfig | None = None
    hf_arch: str | None = None  # an ``eagle3_contracts.testing.hf_models.HF_ARCHITECTURES`` entry
    hf_num_layers: int = 4
    hf_hidden_size: int = 32
    seed: int = 0  # weight seed of HF cases (synthetic cases carry theirs in the config)
    # -- the capture ------------------------------------------------------------------------
    layer_ids: tuple[int, ...] = (-1, 1, 3)  # canonical; embedding, a middle and the last layer
    order: Order = "ascending"
    # -- the input --------------------------------------------------------------------------
    batch: int = 2
    seq_len: int = 6
    input_seed: int = 0
    left_pad: int = 0  # pad the last sequence on the left by this many tokens (mask 0)
    why: str = field(default="", compare=False)  # what this case locks, for reviewers

    def __post_init__(self) -> None:
        if (self.synthetic is None) == (self.hf_arch is None):
            raise ValueError(f"case {self.name}: give exactly one of synthetic= or hf_arch=")

    # -- the target -------------------------------------------------------------------------
    @property
    def family(self) -> str:
        if self.synthetic is not None:
            variant: list[str] = [self.synthetic.style]
            if self.synthetic.position_embeddings:
                variant.append("positions")
            if self.synthetic.embed_scale is not None:
                variant.append("scaled")
            return f"synthetic ({', '.join(variant)})"
        return str(self.hf_arch)

    def config(self) -> dict[str, Any]:
        """The model config as plain data (what the fingerprint hashes)."""
        if self.synthetic is not None:
            return asdict(self.synthetic)
        cfg = self._hf_config().to_diff_dict()
        return {k: v for k, v in cfg.items() if k not in _VOLATILE_CONFIG_KEYS}

    def _hf_config(self) -> PretrainedConfig:
        """The tiny ``PretrainedConfig`` of an HF case."""
        from eagle3_contracts.testing.hf_models import tiny_hf_config

        assert self.hf_arch is not None, "an HF case names its architecture"
        return tiny_hf_config(
            self.hf_arch, num_layers=self.hf_num_layers, hidden_size=self.hf_hidden_size
        )

    @property
    def num_layers(self) -> int:
        return self.synthetic.num_layers if self.synthetic is not None else self.hf_num_layers

    @property
    def hidden_size(self) -> int:
        return self.synthetic.hidden_size if self.synthetic is not None else self.hf_hidden_size

    @property
    def vocab_size(self) -> int:
        if self.synthetic is not None:
            return self.synthetic.vocab_size
        from eagle3_contracts.testing.hf_models import hf_spec

        assert self.hf_arch is not None, "an HF case names its architecture"
        return int(hf_spec(self.hf_arch).small["vocab_size"])

    def contract(self) -> CaptureContract:
        return CaptureContract(self.layer_ids, self.num_layers, self.hidden_size, self.order)

    def build(self, *, device: str = "cpu", dtype: torch.dtype | None = None) -> nn.Module:
        """The model, eval mode, weights from the case's seed (drawn in float32, then cast)."""
        import torch

        dtype = dtype or torch.float32
        if self.synthetic is not None:
            from eagle3_contracts.testing.synthetic import build_synthetic

            return build_synthetic(self.synthetic, dtype=dtype, device=device)
        from eagle3_contracts.testing.hf_models import build_tiny_hf

        model: nn.Module = build_tiny_hf(self._hf_config(), seed=self.seed)
        return model.to(device=device, dtype=dtype)

    def inputs(self, device: str = "cpu") -> tuple[Tensor, Tensor | None]:
        """``(input_ids [B, T], attention_mask or None)`` drawn from ``input_seed`` on the CPU."""
        import torch

        g = torch.Generator().manual_seed(self.input_seed)
        ids = torch.randint(2, self.vocab_size, (self.batch, self.seq_len), generator=g)
        mask = None
        if self.left_pad:
            mask = torch.ones_like(ids)
            mask[-1, : self.left_pad] = 0
            ids[-1, : self.left_pad] = 0
            mask = mask.to(device)
        return ids.to(device), mask


def fingerprint(config: Mapping[str, Any]) -> str:
    """``sha256:<16 hex>`` of the config's canonical JSON (sorted keys)."""
    text = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def dtype_name(dtype: Any) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"`` (the key of ``snapshot.DTYPE_RTOL``)."""
    return str(dtype).removeprefix("torch.")


def segment_stats(segment: Tensor, mask: Tensor | None = None) -> dict[str, float]:
    """Norm, mean and max-abs of a ``[B, T, H]`` segment over real tokens, in float64."""
    import torch

    values = segment.detach().to(torch.float64)
    if mask is not None:
        values = values[mask.to(values.device).bool()]
    return {
        "norm": float(torch.linalg.vector_norm(values)),
        "mean": float(values.mean()),
        "max_abs": float(values.abs().max()),
    }


def capture_record(
    case: ModelCase,
    *,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    capture: CaptureFn | None = None,
) -> dict[str, Any]:
    """Build, capture, identify: the golden record of ``case`` on ``device`` in ``dtype``.

    ``capture`` replaces ``capture_hidden_states`` (same signature) — to lock another
    implementation's capture against the same golden, or to show a broken one drifting.
    """
    import torch

    from eagle3_contracts.capture.hooks import capture_hidden_states

    dtype = dtype or torch.float32
    model = case.build(device=device, dtype=dtype)
    ids, mask = case.inputs(device)
    contract = case.contract()
    capture = capture or capture_hidden_states
    with torch.no_grad():
        captured = capture(model, ids, case.layer_ids, order=case.order, attention_mask=mask)
    record = {
        "case": case.name,
        "model": {
            "family": case.family,
            "num_layers": case.num_layers,
            "hidden_size": case.hidden_size,
            "vocab_size": case.vocab_size,
            "weight_seed": case.synthetic.seed if case.synthetic is not None else case.seed,
            "config_fingerprint": fingerprint(case.config()),
        },
        "device": torch.device(device).type,
        "dtype": dtype_name(dtype),
        "input": {
            "shape": list(ids.shape),
            "seed": case.input_seed,
            "left_pad": case.left_pad,
        },
    }
    return {**record, **tensor_record(captured, model, ids, contract, mask)}


def tensor_record(
    captured: Tensor,
    model: nn.Module,
    input_ids: Tensor,
    contract: CaptureContract,
    attention_mask: Tensor | None = None,
) -> dict[str, Any]:
    """The contract / order / per-segment part of a record for any captured tensor."""
    from eagle3_contracts.capture.identify import identify_segments

    contract.validate(captured)
    found = identify_segments(
        captured,
        model,
        input_ids,
        hidden_size=contract.hidden_size,
        attention_mask=attention_mask,
    )
    dtype = dtype_name(captured.dtype)
    segments = []
    for seg, match in zip(contract.segments, found, strict=True):
        part = captured[..., seg.slice]
        segments.append(
            {
                "position": seg.position,
                "layer_id": seg.layer_id,  # what the contract says this segment holds
                "identified": match.layer_id,  # what it holds (None: no layer)
                "near_miss": None if match.near_miss is None else match.near_miss.value,
                "columns": [seg.start, seg.stop],
                "shape": list(part.shape),
                "dtype": dtype,
                "stats": segment_stats(part, attention_mask),
            }
        )
    return {
        "contract": contract.to_dict(),
        "concat_order": list(contract.concat_ids),
        "captured": {"shape": list(captured.shape), "dtype": dtype},
        "segments": segments,
    }


def real_model_record(
    model_dir: str | os.PathLike[str],
    draft_config: str | os.PathLike[str],
    *,
    trained_with: str,
    device: str = "cuda",
    dtype: torch.dtype | None = None,
    batch: int = 2,
    seq_len: int = 16,
    input_seed: int = 0,
) -> dict[str, Any]:
    """The golden record of a real checkpoint's capture of a drafter's layers.

    ``model_dir``: a local Hugging Face directory (safetensors only, nothing downloaded);
    ``draft_config``: the drafter's config, its ids read as ``trained_with`` reads them.
    ``dtype``: as stored in the checkpoint unless given.
    """
    import torch

    from eagle3_contracts.capture.hooks import capture_hidden_states
    from eagle3_contracts.capture.targets import load_target
    from eagle3_contracts.config.plan import resolve

    model_dir, draft_path = Path(model_dir), Path(draft_config)
    target = load_target(model_dir, dtype=dtype)
    model = target.model.to(device)
    plan = resolve(draft_path, model_dir / "config.json", trained_with)
    contract = plan.contract
    g = torch.Generator().manual_seed(input_seed)
    ids = torch.randint(0, min(target.vocab_size, 32000), (batch, seq_len), generator=g).to(device)
    with torch.no_grad():
        captured = capture_hidden_states(model, ids, contract.layer_ids, order=contract.order)
    config = json.loads((model_dir / "config.json").read_text())
    draft = json.loads(draft_path.read_text())
    record = {
        "case": model_dir.name,
        "model": {
            "family": target.model_type,
            "num_layers": target.num_layers,
            "hidden_size": target.hidden_size,
            "vocab_size": target.vocab_size,
            "config_fingerprint": fingerprint(
                {k: v for k, v in config.items() if k not in _VOLATILE_CONFIG_KEYS}
            ),
        },
        "draft": {
            "trained_with": trained_with,
            "config_fingerprint": fingerprint(draft),
            "notes": list(plan.notes),
        },
        "device": torch.device(device).type,
        "dtype": dtype_name(captured.dtype),
        "input": {"shape": [batch, seq_len], "seed": input_seed, "left_pad": 0},
    }
    return {**record, **tensor_record(captured, model, ids, contract)}


def identity_errors(record: Mapping[str, Any]) -> list[str]:
    """Segments of a capture record that do not hold the layer their contract says."""
    return [
        f"segment {s['position']} should be layer {s['layer_id']} but is "
        f"{s['identified'] if s['identified'] is not None else s['near_miss'] or 'no layer'}"
        for s in record["segments"]
        if s["identified"] != s["layer_id"] or s["near_miss"] is not None
    ]


def assert_capture_golden(record: Mapping[str, Any], golden: Any) -> None:
    """``assert record == golden``, refusing to write a golden whose capture is wrong.

    Comparing first shows the golden diff naming the drifted segment; under
    ``--snapshot-update`` the identity check runs first, so a broken capture never
    becomes a golden.
    """
    __tracebackhide__ = True
    errors = identity_errors(record)
    if errors and (
        getattr(golden, "update_snapshots", False)
        or getattr(golden, "update_new_snapshots_only", False)
    ):
        # Compare without the right to write: syrupy then counts the golden as used (a refused
        # write must not make the existing, correct golden "unused" and deleted).
        flags = ("update_snapshots", "update_new_snapshots_only")
        saved = {flag: getattr(golden, flag) for flag in flags if hasattr(golden, flag)}
        for flag in saved:
            setattr(golden, flag, False)
        try:
            _ = record == golden
        finally:
            for flag, value in saved.items():
                setattr(golden, flag, value)
        raise AssertionError("not writing this golden: " + "; ".join(errors))
    if record != golden:  # this module is not assertion-rewritten: say the diff ourselves
        diff = [line for line in getattr(golden, "get_assert_diff", list)() if line.strip()]
        if any("does not exist" in line for line in diff):  # syrupy's word for a missing file
            from eagle3_contracts.testing.goldens import MISSING_GOLDEN

            raise AssertionError(MISSING_GOLDEN)
        raise AssertionError("\n".join(["golden differs from the stored one:", *diff]))
    assert not errors, "; ".join(errors)


def _synthetic(**kwargs: Any) -> SyntheticConfig:
    from eagle3_contracts.testing.synthetic import SyntheticConfig

    return SyntheticConfig(**kwargs)


def _cases() -> tuple[ModelCase, ...]:
    return (
        # -- synthetic variants ---------------------------------------------------------------
        ModelCase(
            "synthetic-residual",
            synthetic=_synthetic(num_layers=5, hidden_size=16),
            layer_ids=(-1, 1, 2, 4),
            why="HF-style blocks; embedding, adjacent middle layers and the last (pre-norm)",
        ),
        ModelCase(
            "synthetic-fused",
            synthetic=_synthetic(num_layers=5, hidden_size=16, style="fused"),
            layer_ids=(0, 2, 4),
            why="engine-style (hidden, residual) blocks: the stream is hidden + residual",
        ),
        ModelCase(
            "synthetic-as-listed",
            synthetic=_synthetic(num_layers=5, hidden_size=16, seed=1),
            layer_ids=(3, 0, 1),
            order="as_listed",
            why="trainer order (SpecForge HF backend): segments follow the config list",
        ),
        ModelCase(
            "synthetic-positions",
            synthetic=_synthetic(num_layers=4, hidden_size=16, position_embeddings=True),
            layer_ids=(-1, 3),
            left_pad=2,
            why="GPT-2-style entry (positions added) under left padding",
        ),
        ModelCase(
            "synthetic-scaled",
            synthetic=_synthetic(num_layers=4, hidden_size=16, embed_scale=4.0, style="fused"),
            layer_ids=(-1, 1),
            why="Gemma-style entry (embedding x sqrt(H)) in a fused model",
        ),
        # -- tiny random Hugging Face models ----------------------------------------------------
        *(
            ModelCase(f"hf-{arch}", hf_arch=arch, layer_ids=(-1, 1, 3), why=why)
            for arch, why in (
                ("llama", "dense HF decoder"),
                ("qwen3", "q/k-norm decoder"),
                ("qwen3_moe", "MoE decoder"),
                ("deepseek_v3", "MLA + MoE decoder (Kimi-K2.5 / DeepSeek-V3 family)"),
                ("gemma", "embedding scaled by sqrt(H) before layer 0"),
                ("gpt2", "position embeddings added before layer 0"),
            )
        ),
    )


MODEL_CASES: tuple[ModelCase, ...] = _cases()
"""Every CPU/GPU model golden case, in a stable order."""


def model_case(name: str) -> ModelCase:
    for case in MODEL_CASES:
        if case.name == name:
            return case
    raise KeyError(f"no golden case {name!r}; known: {', '.join(c.name for c in MODEL_CASES)}")


# -- plans ---------------------------------------------------------------------------------
def plan_record(example: str, systems: Sequence[str] | None = None) -> dict[str, Any]:
    """The resolved canonical plan of every system (default: every registry convention) for
    every draft config of a shipped example (``eagle3_contracts.config.examples``)."""
    from eagle3_contracts import conventions
    from eagle3_contracts.config import examples
    from eagle3_contracts.config.plan import resolve
    from eagle3_contracts.config.readers import read_draft_config, read_target_config
    from eagle3_contracts.errors import Eagle3ContractsError

    systems = tuple(conventions.names() if systems is None else systems)
    manifest = examples.manifest(example)
    target = read_target_config(manifest["target"])
    drafts = []
    for draft_path in manifest["drafts"]:
        draft = read_draft_config(draft_path)
        plans = []
        for system in systems:
            try:
                plan = resolve(draft, target, system)
            except Eagle3ContractsError as exc:  # the system cannot serve this draft at all
                plans.append({"system": system, "error": str(exc)})
                continue
            plans.append({**plan.to_dict(), "system": system})
        drafts.append(
            {
                "name": Path(draft_path).name,
                "ids": None if draft.ids is None else list(draft.ids),
                "plans": plans,
            }
        )
    return {
        "example": example,
        "trained_with": manifest.get("trained_with"),
        "target": {
            "model_type": target.model_type,
            "num_layers": target.num_layers,
            "hidden_size": target.hidden_size,
        },
        "drafts": drafts,
    }
