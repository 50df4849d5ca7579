"""``eagle3-contracts demo``: replay the Kimi-K2.5 story on a tiny DeepSeek-V3-shaped model.

A drafter was trained on the outputs of layers 2, 30, 58 of a 61-layer target (training files
``layer3``, ``layer31``, ``layer59``: Hugging Face ``hidden_states`` indices). Serving fed it
something else, its accept rate fell to 0.19, and comparing shapes found nothing. The demo:

1. writes the training dump (outputs 2, 30, 58, as per-layer ``layerN`` tensors);
2. writes a serving capture with the embedding inserted: ``[-1, 2, 30]``;
3. runs the shapes-only check the user ran: it passes;
4. diagnoses training vs serving: the embedding inserted, layer 58 dropped, and where the fault is;
5. writes the correct serving capture ``[2, 30, 58]``: it passes;
6. serves ids ``[2, 30, 58]`` with SGLang's rule after sglang#25454 (ids used as loop indices
   unless the first is 1): canonical ``[1, 29, 57]``, one layer early: caught, with the ids that
   fix it.

The target is random-init (seed stated); every dump goes through the safetensors format and
``read_dump``, exactly as a user's would.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.dumps.diagnose import DiagnoseReport, diagnose
from eagle3_contracts.dumps.format import read_dump, write_dump
from eagle3_contracts.errors import ContractError

ARCH = "deepseek_v3"
NUM_LAYERS = 61  # DeepSeek-V3 / Kimi-K2 / Kimi-K2.5 depth
TRAINED = (2, 30, 58)  # SpecForge configs/kimi-k2: outputs of layers 2, 30, 58
BUGGY = (-1, 2, 30)  # the serving capture with the embedding inserted
LEGACY = "sglang-legacy"  # sglang==0.5.12 deepseek_v2.py: +1 always, [2, 30, 58] = outputs
AFTER_25454 = "sglang"  # the newest probed SGLang, deepseek_v2.py: +1 only if ids[0] == 1


@dataclass(frozen=True)
class DemoStep:
    """One scripted step: what should happen, what did, and the output."""

    title: str
    scripted: str  # "pass" or "mismatch"
    outcome: str  # "pass" or "mismatch"
    text: str
    report: DiagnoseReport | None = None

    @property
    def as_scripted(self) -> bool:
        return self.scripted == self.outcome


@dataclass(frozen=True)
class DemoResult:
    steps: tuple[DemoStep, ...]
    seconds: float
    out_dir: str | None  # where the dumps were kept (None: a deleted temp dir)
    header: tuple[str, ...] = field(default=())

    @property
    def as_scripted(self) -> bool:
        return all(s.as_scripted for s in self.steps)

    @property
    def exit_code(self) -> int:
        return 0 if self.as_scripted else 1

    def step(self, prefix: str) -> DemoStep:
        return next(s for s in self.steps if s.title.startswith(prefix))

    def render_text(self) -> str:
        lines = list(self.header)
        for s in self.steps:
            mark = "as scripted" if s.as_scripted else f"NOT AS SCRIPTED (expected {s.scripted})"
            lines += ["", "=" * 78, f"{s.title}  [{s.outcome.upper()}, {mark}]", "=" * 78, s.text]
        lines += [
            "",
            f"demo {'behaved as scripted' if self.as_scripted else 'DID NOT behave as scripted'}"
            f" in {self.seconds:.1f} s (exit {self.exit_code})",
        ]
        return "\n".join(lines)


def run_demo(
    *,
    out_dir: str | Path | None = None,
    hidden_size: int = 32,
    num_tokens: int = 6,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run the story; keep the dumps and config in ``out_dir`` if given. ``progress`` is
    told each step as it starts (the CLI shows it on a terminal)."""
    start = time.perf_counter()
    step = progress or _quiet
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        return _run(Path(out_dir), hidden_size, num_tokens, seed, start, step, keep=True)
    with tempfile.TemporaryDirectory(prefix="eagle3-demo-") as tmp:
        return _run(Path(tmp), hidden_size, num_tokens, seed, start, step, keep=False)


def _quiet(text: str) -> None:
    """The default progress reporter: says nothing."""


def _run(
    out: Path,
    hidden_size: int,
    num_tokens: int,
    seed: int,
    start: float,
    step: Callable[[str], None],
    *,
    keep: bool,
) -> DemoResult:
    from eagle3_contracts.capture.hooks import capture_hidden_states, reference_states
    from eagle3_contracts.capture.targets import target_from_model
    from eagle3_contracts.conventions import get, to_canonical
    from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config

    step(f"building a random-init {NUM_LAYERS}-layer {ARCH} target (seed {seed})")
    config = tiny_hf_config(ARCH, num_layers=NUM_LAYERS, hidden_size=hidden_size)
    model = build_tiny_hf(config, seed=seed)
    (out / "config.json").write_text(config.to_json_string())
    target = target_from_model(model, source=str(out / "config.json"), random_init=True, seed=seed)
    drafter = CaptureContract(TRAINED, NUM_LAYERS, hidden_size, "as_listed")
    (out / "contract.json").write_text(drafter.to_json(indent=2))
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, config.vocab_size, (1, num_tokens), generator=g)

    def named(name: str) -> str:  # what the name means for this target's model file
        return get(name, model_type=target.model_type, architectures=target.architectures).system

    def serving(name: str, canonical: tuple[int, ...], ids: tuple[int, ...], conv: str) -> Path:
        captured = capture_hidden_states(model, input_ids, canonical).to(torch.bfloat16)
        return write_dump(
            out / name,
            captured,
            input_ids,
            layer_ids=ids,
            convention=conv,
            system=f"serving: {named(conv)}",
        )

    def diag(*paths: Path) -> DiagnoseReport:
        return diagnose(
            [read_dump(p) for p in paths],
            target,
            contract=drafter,
            contract_source="the drafter's contract",
        )

    steps: list[DemoStep] = []

    # 1. training dump: HF hidden_states[3], [31], [59] = outputs of layers 2, 30, 58
    step("1/6 writing the training dump")
    states = reference_states(model, input_ids, TRAINED)
    hf_index = tuple(n + 1 for n in TRAINED)
    train = write_dump(
        out / "training.safetensors",
        {f"layer{i}": states[n][0] for n, i in zip(TRAINED, hf_index, strict=True)},
        input_ids[0],
        layer_ids=hf_index,
        convention="hf-hidden-states",
        system="training: hidden_states[3], [31], [59] saved as layer3, layer31, layer59",
    )
    training = read_dump(train)
    steps.append(
        DemoStep(
            "1. training dump",
            "pass",
            "pass",
            f"{train.name}: {training.describe()}\n"
            f"the drafter ({drafter.describe()}) was trained on these",
        )
    )

    # 2. the serving capture as deployed: embedding inserted
    step("2/6 writing the serving capture as deployed")
    buggy = serving("serving_embedding.safetensors", BUGGY, TRAINED, LEGACY)
    steps.append(
        DemoStep(
            "2. serving capture (as deployed)",
            "pass",
            "pass",
            f"{buggy.name}: {read_dump(buggy).describe()}\n"
            f"(secretly: canonical {list(BUGGY)}, the embedding inserted by a capture patch)",
        )
    )

    # 3. the shapes-only check the user ran
    step("3/6 the shapes-only check")
    served = read_dump(buggy)
    try:
        drafter.validate(served.captured)
        width_ok = True
    except ContractError:
        width_ok = False
    same = (
        training.captured.shape == served.captured.shape
        and training.num_tokens == served.num_tokens
        and width_ok
    )
    steps.append(
        DemoStep(
            "3. shapes-only check (what was compared)",
            "pass",
            "pass" if same else "mismatch",
            f"training {list(training.captured.shape)} vs serving {list(served.captured.shape)}; "
            f"fc width {drafter.width} = {len(TRAINED)} x {hidden_size}: "
            f"{'PASS' if same else 'FAIL'} -- and blind to which layers fill the segments",
        )
    )

    # 4. the diagnosis
    step("4/6 diagnosing training vs serving")
    report = diag(train, buggy)
    steps.append(
        DemoStep(
            "4. eagle3-contracts diagnose: training vs serving",
            "mismatch",
            "pass" if report.ok else "mismatch",
            report.render_text(),
            report,
        )
    )

    # 5. the correct capture
    step("5/6 diagnosing the correct serving capture")
    fixed = serving("serving_fixed.safetensors", TRAINED, TRAINED, LEGACY)
    report = diag(train, fixed)
    steps.append(
        DemoStep(
            "5. correct serving capture [2, 30, 58]",
            "pass",
            "pass" if report.ok else "mismatch",
            report.render_text(brief=True),
            report,
        )
    )

    # 6. sglang#25454: ids [2, 30, 58] read as loop indices
    step("6/6 diagnosing sglang#25454's serving capture")
    early = to_canonical(
        TRAINED,
        AFTER_25454,
        NUM_LAYERS,
        model_type=target.model_type,
        architectures=target.architectures,
    )
    late = serving("serving_sglang25454.safetensors", tuple(early), TRAINED, AFTER_25454)
    report = diag(train, late)
    steps.append(
        DemoStep(
            f"6. sglang#25454: ids {list(TRAINED)} served as canonical {list(early)}",
            "mismatch",
            "pass" if report.ok else "mismatch",
            report.render_text(brief=True),
            report,
        )
    )

    seconds = time.perf_counter() - start
    header: tuple[str, ...] = (
        "eagle3-contracts demo: the Kimi-K2.5 story on a tiny DeepSeek-V3-shaped model",
        f"target: {target.describe()}",
        f"tokens: {input_ids.tolist()[0]}",
    )
    if keep:
        header += (
            f"files kept in {out}; rerun any diagnosis, e.g.:",
            f"  eagle3-contracts diagnose --dump {train} --dump {late} "
            f"--target {out / 'config.json'} --seed {seed} --contract {out / 'contract.json'}",
        )
    return DemoResult(tuple(steps), seconds, str(out) if keep else None, header)


__all__ = ["DemoResult", "DemoStep", "run_demo"]
