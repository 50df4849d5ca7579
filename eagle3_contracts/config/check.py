"""``check_drafter``: the matrix behind ``eagle3-contracts check`` and the pytest plugin.

For a drafter config and its target, resolve what the trainer fed it (or, when nobody says
which trainer, each reading of its ids), what every serving system will feed it, compare them,
and check the drafter's own coherence (fc width, vocab mapping, norm flags).
``CheckReport.to_dict()`` is the stable JSON of ``check --json`` (``SCHEMA_VERSION``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3_contracts import conventions
from eagle3_contracts.config.claim import Claim, trained_claim
from eagle3_contracts.config.drafter import (
    ERROR,
    DrafterCheck,
    TensorInfo,
    check_drafter_coherence,
)
from eagle3_contracts.config.plan import CapturePlan, Finding, FindingKind, compare, resolve
from eagle3_contracts.config.readers import (
    DraftConfig,
    TargetConfig,
    read_draft_config,
    read_target_config,
    resolve_model,
    resolve_weights,
)
from eagle3_contracts.conventions import (
    EngineSpec,
    SystemName,
    TrainerSpec,
    methods,
    system_name,
)
from eagle3_contracts.differences import label as finding_label
from eagle3_contracts.differences import terminal_width, text_table
from eagle3_contracts.errors import ConfigError, ContractError
from eagle3_contracts.layer_ids import check_num_layers

SCHEMA_VERSION = 2
"""Version of ``CheckReport.to_dict()``; bumped only on incompatible changes (2: rows carry
``key``/``kind`` and plans the release, runner, model file and source they answer for)."""

PathOrDict = str | os.PathLike[str] | Mapping[str, Any]


@dataclass(frozen=True)
class CheckRow:
    """One cell of the matrix: one served config, read by one system, against one reading."""

    config: str  # label of the served draft config
    reading: str  # trained_with name, or "output"/"boundary" when ambiguous
    system: str  # serving convention name
    plan: CapturePlan
    findings: tuple[Finding, ...]
    stages: tuple[tuple[int, int], ...] | None = None  # (canonical id, owning stage) under PP

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def verdict(self) -> str:
        if not self.findings:
            return "ok"
        parts = []
        for f in self.findings:
            label = finding_label(f.kind, shift=f.shift, crash=self.plan.crash or "weight-load")
            if label not in parts:
                parts.append(label)
        return ", ".join(parts)

    @property
    def unknown(self) -> bool:
        """The release's code needs reading for this row: neither ok nor a proven mismatch."""
        return any(f.kind is FindingKind.UNKNOWN for f in self.findings)

    @property
    def fix_native_ids(self) -> tuple[int, ...] | None:
        return self.findings[0].fix_native_ids if self.findings else None

    @property
    def fix(self) -> str:
        return self.findings[0].fix if self.findings else ""

    def fix_label(self) -> str:
        """The matrix's fix cell: ``setting = [ids]``, the reason none exist, or ``-``."""
        if not self.findings:
            return "-"
        kinds = {f.kind for f in self.findings}
        if kinds & {FindingKind.UNKNOWN, FindingKind.UNSUPPORTED}:
            return "none (see details)"
        if self.fix_native_ids is None and self.plan.pp_dropped:
            return "no ids fix it: the pipeline partition (see details)"
        if self.fix_native_ids is None:
            return "no native ids can fix it (see details)"
        if self.fix_field is None:
            return self.fix
        return f"{self.fix_field} = [{_ids(self.fix_native_ids)}]"

    @property
    def fix_field(self) -> str | None:
        """Where the fix's ids go: the field this system reads (``None`` without a fix)."""
        if self.fix_native_ids is None:
            return None
        if self.plan.read_path is not None:
            return self.plan.read_path
        if self.plan.convention is None:
            return None
        return self.plan.convention.setting

    def fix_setting(self) -> dict[str, Any] | None:
        """The fix as data: ``{"system", "field", "ids"}`` (``None`` when no ids fix it or no
        field is known to hold them)."""
        if self.fix_native_ids is None or not self.findings or self.fix_field is None:
            return None
        return {"system": self.system, "field": self.fix_field, "ids": list(self.fix_native_ids)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "reading": self.reading,
            "system": self.system,
            "key": self.plan.key,
            "kind": self.plan.kind,
            "ok": self.ok,
            "unknown": self.unknown,
            "verdict": self.verdict,
            "layer_ids": list(self.plan.layer_ids),
            "findings": [f.to_dict() for f in self.findings],
            "fix_native_ids": None if self.fix_native_ids is None else list(self.fix_native_ids),
            "fix": self.fix,
            "fix_setting": self.fix_setting(),
            "stages": None
            if self.stages is None
            else [{"layer_id": n, "stage": s} for n, s in self.stages],
            "plan": self.plan.to_dict(),
        }


@dataclass(frozen=True)
class CheckReport:
    """Everything ``check`` found; ``.ok`` is the exit-0 condition."""

    draft: DraftConfig
    target: TargetConfig
    trained_with: str | None
    readings: tuple[tuple[str, CapturePlan], ...]  # (reading name, trained plan)
    ambiguous: bool  # no trainer given and the readings disagree
    rows: tuple[CheckRow, ...]
    drafter: tuple[DrafterCheck, ...]
    notes: tuple[str, ...] = ()
    pipeline: Mapping[str, Any] | None = None
    title: str | None = None  # e.g. "example kimi-k2.5": paths are then shown by file name
    claim: Claim | None = field(default=None, compare=False)  # what the training side came from
    # the serving systems checked, typed as parsed where their names entered (``fix`` re-checks
    # with them)
    systems: tuple[SystemName, ...] = field(default=(), compare=False)

    @property
    def ok(self) -> bool:
        return (
            not self.ambiguous
            and all(r.ok for r in self.rows)
            and all(c.status != ERROR for c in self.drafter)
        )

    @property
    def unknown_rows(self) -> int:
        """Rows whose release code needs reading (a run with any of them exits 1, never 0)."""
        return sum(r.unknown for r in self.rows)

    @property
    def exit_code(self) -> int:
        """0: every row ok; 1: a mismatch, crash, unsupported or unknown row (an unknown row
        cannot be shown to be ok); bad input never gets here (the CLI exits 2)."""
        return 0 if self.ok else 1

    # -- output -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The documented, stable JSON form (see ``docs/readme/core.md``)."""
        t = self.target
        return {
            "schema_version": SCHEMA_VERSION,
            "title": self.title,
            "ok": self.ok,
            "exit_code": self.exit_code,
            "verdict": self.verdict.split(" ", 1)[0],
            "unknown_rows": self.unknown_rows,
            "draft": {
                "source": self.draft.source,
                "schema": self.draft.schema,
                "nested_ids": _list(self.draft.nested_ids),
                "top_level_ids": _list(self.draft.top_level_ids),
            },
            "target": {
                "source": t.source,
                "num_layers": t.num_layers,
                "hidden_size": t.hidden_size,
                "vocab_size": t.vocab_size,
                "model_type": t.model_type,
            },
            "trained_with": self.trained_with,
            "ambiguous": self.ambiguous,
            "readings": [{"reading": name, "plan": p.to_dict()} for name, p in self.readings],
            "rows": [r.to_dict() for r in self.rows],
            "drafter": [c.to_dict() for c in self.drafter],
            "pipeline": None if self.pipeline is None else dict(self.pipeline),
            "notes": list(self.notes),
        }

    def render_text(self) -> str:
        """The human matrix: system, canonical layers fed, verdict, fix."""
        show_config = len({r.config for r in self.rows}) > 1
        show_reading = len(self.readings) > 1
        lines = self._head_lines()
        lines.append("")
        lines += self._table_lines(show_config, show_reading)
        lines += self._detail_lines(show_config, show_reading)
        lines += self._tail_lines()
        return "\n".join(lines)

    def _head_lines(self) -> list[str]:
        """Title, draft and target, and what the drafter was trained on (each reading)."""
        t = self.target
        show = (lambda p: Path(p).name) if self.title else (lambda p: p)
        lines = [f"{self.title}"] if self.title else []
        lines += [
            f"draft:  {show(self.draft.source)} ({self.draft.schema} schema)",
            f"target: {show(t.source)}: {t.num_layers} layers x {t.hidden_size}"
            + (f" ({t.model_type})" if t.model_type else ""),
        ]
        for name, plan in self.readings:
            label = f"trained with {name}" if self.trained_with else f"reading '{name}'"
            lines.append(
                f"{label}: canonical [{_ids(plan.layer_ids)}] ({plan.order}, width {plan.width})"
                + (f"; refused: {plan.refused}" if plan.refused else "")
                + (f" [{plan.key}]" if plan.release else "")
            )
            lines += [f"  assumed: {a}" for a in plan.assumptions]
        if self.ambiguous:
            lines.append(
                "AMBIGUOUS: no --trained-with, and the ids mean different layers under each "
                "reading; pass --trained-with SYSTEM"
            )
        return lines

    def _table_lines(self, show_config: bool, show_reading: bool) -> list[str]:
        """The matrix: one row per (config, reading, system)."""
        header = (["config"] if show_config else []) + (["reading"] if show_reading else [])
        header += ["system", "answered for", "layers fed (canonical)", "verdict", "fix"]
        table = [tuple(header)]
        for r in self.rows:
            fed = _ids(r.plan.layer_ids) or "-"
            if r.plan.non_canonical:
                fed += "".join(f", {s}" for s in r.plan.non_canonical)
            if r.plan.refused:
                fed = "(refused)"
            if r.plan.kind in ("unsupported", "unknown"):
                fed = f"({r.plan.kind})"
            fix = r.fix_label()
            cells = ([r.config] if show_config else []) + ([r.reading] if show_reading else [])
            table.append((*cells, r.system, _answered_for(r.plan), fed, r.verdict, fix))
        if max(map(len, text_table(table, width=sys.maxsize))) <= terminal_width():
            return text_table(table)
        # too wide for the terminal: the fix column goes, each failing row's details say it
        lines = text_table([row[:-1] for row in table])
        return [*lines, "(fix per row: in the details below)"]

    def _detail_lines(self, show_config: bool, show_reading: bool) -> list[str]:
        """Per row with something to say: findings, assumptions, notes, stages, the fix."""
        detail = [r for r in self.rows if r.findings or r.plan.notes or r.plan.assumptions]
        lines = ["", "details:"] if detail else []
        for r in detail:
            where = " / ".join(x for x in (r.config if show_config else "", r.system) if x)
            if show_reading:
                where = f"{r.reading}: {where}"
            lines.append(f"  {where}: {r.verdict}")
            said = [f.message for f in r.findings]
            lines += [f"    - {message}" for message in said]
            # the assumption that decides the row (vLLM's runner) first, next to the verdict
            assumed = sorted(r.plan.assumptions, key=lambda a: not a.startswith("runner "))
            lines += [f"    * assumed: {a}" for a in assumed]
            lines += [f"    * {note}" for note in r.plan.notes if not any(note in m for m in said)]
            if r.stages:
                owned = ", ".join(f"{n}@stage{s}" for n, s in r.stages)
                lines.append(f"    * pipeline stages owning each id: {owned}")
            if r.findings:
                lines.append(f"    fix: {r.fix}")
        return lines

    def _tail_lines(self) -> list[str]:
        """The drafter's own checks, notes, and the result line."""
        lines = []
        if self.drafter:
            lines += ["", "drafter:"]
            lines += [f"  {c.status:<8} {c.name}: {c.message}" for c in self.drafter]
        lines += [f"note: {note}" for note in self.notes]
        lines.append("")
        lines.append(f"result: {self.verdict} (exit {self.exit_code})")
        return lines

    def failure_lines(self, *, with_system: bool = True) -> list[str]:
        """One line per problem, the verdict first and then the fix (what a CI summary
        shows): ``vllm: shifted -1; fix eagle_aux_hidden_state_layer_ids = [3, 31, 59]``."""
        if self.ambiguous:
            return [self.verdict]
        lines = [
            (f"{r.system}: " if with_system else "") + f"{r.verdict}; fix {r.fix_label()}"
            for r in self.rows
            if not r.ok
        ]
        lines += [f"drafter {c.name}: {c.message}" for c in self.drafter if c.status == ERROR]
        return lines

    @property
    def verdict(self) -> str:
        """The last line's word: OK, AMBIGUOUS (no training claim and the readings disagree:
        nothing is proven wrong), UNKNOWN (only unread rows) or MISMATCH."""
        if self.ok:
            return "OK"
        if self.ambiguous:
            return (
                "AMBIGUOUS (no training claim: the ids name different layers under each "
                "reading; stamp the drafter, pass --trained-with or set "
                "EAGLE3_CONTRACTS_TRAINED_WITH)"
            )
        if self.unknown_rows and all(r.ok or r.unknown for r in self.rows):
            return f"UNKNOWN ({self.unknown_rows} row(s) need reading; nothing proven wrong)"
        return "MISMATCH"


def _answered_for(plan: CapturePlan) -> str:
    """``0.5.23 deepseek_v2.py``, ``0.33.0:v2 llama.py``: the release key without the engine
    name the system column already shows; ``-`` for registry conventions."""
    if plan.release is None:
        return "-"
    spec = plan.feed.spec  # the release answered, typed: never parsed again
    version = spec.version if isinstance(spec, (EngineSpec, TrainerSpec)) else None
    runner = f":{plan.runner}" if plan.runner else ""
    return f"{version}{runner} {plan.model_file or '(no model file)'}"


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids))


def _list(ids: Sequence[int] | None) -> list[int] | None:
    return None if ids is None else list(ids)


def _label(source: str, taken: set[str]) -> str:
    name = Path(source).name if source not in ("<dict>",) else source
    if name in taken:
        name = source
    taken.add(name)
    return name


# -- the entry point ----------------------------------------------------------------------
def check_drafter(
    draft: PathOrDict | DraftConfig,
    *,
    target: PathOrDict | TargetConfig | None = None,
    num_layers: int | None = None,
    hidden_size: int | None = None,
    trained_with: str | SystemName | None = None,
    serve_with: Sequence[str | SystemName] = (),
    weights: str | os.PathLike[str] | Mapping[str, TensorInfo] | None = None,
    served_configs: Sequence[PathOrDict | DraftConfig] = (),
    pp_size: int | None = None,
    pp_partition: str | Sequence[int] | None = None,
    title: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> CheckReport:
    """Resolve, compare and check one drafter; see the module docstring.

    ``draft``, ``target`` and ``weights`` may be Hub ids (``org/name[@revision]``, resolved
    by ``eagle3_contracts.config.readers``: the HF cache first). A drafter directory holding
    ``*.safetensors`` is read whole: its weights are checked without ``weights``.
    ``served_configs``: other draft configs served in place of ``draft`` (the trained one);
    each is checked against the training of ``draft``. ``pp_size``/``pp_partition``: the
    serving pipeline split (``"15,15,16,15"``). The training claim is the drafter's stamp,
    else ``trained_with``, else ``EAGLE3_CONTRACTS_TRAINED_WITH`` in ``environ`` (default
    ``os.environ``), as in every tool; the report's notes say which. Each system name is parsed
    once, here (or given typed, as ``conventions.parse_system`` returns it), and flows on typed.
    """
    from eagle3_contracts.stamp import ENV_TRAINED_WITH, trained_with_env

    notes: list[str] = []
    env_claim = trained_with_env(environ)
    env_name = None
    if env_claim is not None and not trained_with:  # a name is refused before any file is read
        env_name = system_name(env_claim, field=ENV_TRAINED_WITH)
    systems, trained_name = _systems(serve_with, trained_with, notes)
    draft, target, weights = _resolve_sources(draft, target, weights, notes)
    draft_cfg = draft if isinstance(draft, DraftConfig) else read_draft_config(draft)
    target_cfg = _target(target, num_layers, hidden_size)
    _note_dropped_ids(draft_cfg, target_cfg, notes)
    claim = trained_claim(draft_cfg, target_cfg, trained_name, environ, env_name=env_name)
    if claim.source.kind == "stamp":
        notes.append(claim.describe())
    elif claim.source.kind == "env" or claim.source.overridden:
        notes.append(f"training claim: {claim.describe()}")
    claimed = claim.plan.system if claim.source.stamp and claim.plan else claim.trained_with
    readings, ambiguous = _readings(claim.plan, draft_cfg, target_cfg, claimed, notes)

    served = [draft_cfg] + [
        c if isinstance(c, DraftConfig) else read_draft_config(c) for c in served_configs
    ]
    taken: set[str] = set()
    labels = [_label(c.source, taken) for c in served]
    partitions = _partitions(systems, target_cfg, pp_size, pp_partition)

    rows = [
        _row(label, reading, trained, name, cfg, target_cfg, partitions)
        for reading, trained in readings
        for label, cfg in zip(labels, served, strict=True)
        for name in systems
    ]

    trained0 = readings[0][1]
    num_ids = len(trained0.layer_ids) + len(trained0.non_canonical)
    if trained0.refused:  # the drafter's files are still read and checked: its fc has one
        num_ids = len(trained0.native_ids or ())  # input per listed id
    drafter = check_drafter_coherence(draft_cfg, target_cfg, num_ids, weights=weights)
    pipeline = None
    if partitions:
        pipeline = {
            "pp_size": next(iter(partitions.values())).pp_size,
            "partitions": {name.given: p.to_dict() for name, p in partitions.items()},
        }
    return CheckReport(
        draft=draft_cfg,
        target=target_cfg,
        trained_with=claimed,
        readings=readings,
        ambiguous=ambiguous,
        rows=tuple(rows),
        drafter=drafter,
        notes=tuple(notes),
        pipeline=pipeline,
        title=title,
        claim=claim,
        systems=systems,
    )


def _systems(
    serve_with: str | SystemName | Sequence[str | SystemName],
    trained_with: str | SystemName | None,
    notes: list[str],
) -> tuple[tuple[SystemName, ...], SystemName | None]:
    """The serving systems to check (every engine when none is named) and the trainer named,
    each parsed once, here, before anything is read (one typed error naming the option)."""
    if isinstance(serve_with, (str, *conventions.SYSTEM_TYPES)):
        serve_with = (serve_with,)
    given = tuple(serve_with) or conventions.SERVING
    if not serve_with:
        notes.append(f"no --serve-with: checked every engine ({', '.join(conventions.SERVING)})")
    for name in given:
        if isinstance(name, str) and name.replace(" ", "").lower().split(":")[0].endswith(
            "==installed"
        ):
            raise ContractError(  # probe.installed reads the installed files; config may not
                f"{name!r} names the engine installed here: pass it to "
                "eagle3_contracts.check_drafter (or check --serve-with), which reads its files",
                field="serve_with",
            )
    systems = tuple(system_name(name, field="serve_with") for name in given)
    trained = system_name(trained_with, field="trained_with") if trained_with else None
    for spec in systems:
        _check_serving(spec)
    return systems, trained


def _note_dropped_ids(draft: DraftConfig, target: TargetConfig, notes: list[str]) -> None:
    """A speculators config without top-level ids: its converter may have dropped them."""
    if draft.schema != "speculators" or draft.top_level_ids is not None:
        return
    from eagle3_contracts.conventions.speculators import CONVERTER

    n = target.num_layers
    notes.append(
        "a speculators config without eagle_aux_hidden_state_layer_ids: if speculators' "
        f"converter wrote it, the source checkpoint's ids were dropped ({CONVERTER}); it is "
        f"served with the default boundaries [2, L//2, L-3] = {[2, n // 2, n - 3]} whatever "
        "the drafter was trained on (give --trained-with and the source's ids to check that)"
    )


def _resolve_sources(
    draft: PathOrDict | DraftConfig,
    target: PathOrDict | TargetConfig | None,
    weights: str | os.PathLike[str] | Mapping[str, TensorInfo] | None,
    notes: list[str],
) -> tuple[
    PathOrDict | DraftConfig,
    PathOrDict | TargetConfig | None,
    str | os.PathLike[str] | Mapping[str, TensorInfo] | None,
]:
    """Hub ids as local paths (or fetched headers), each resolution noted; a drafter directory
    with ``*.safetensors`` files gives the weights when ``weights`` is not given."""
    if isinstance(draft, str):
        draft, how = resolve_model(draft, what="draft")
        notes += [how] if how else []
    if isinstance(target, str):
        target, how = resolve_model(target, what="target")
        notes += [how] if how else []
    if isinstance(weights, str):
        found, how = resolve_weights(weights)
        notes += [how] if how else []
        weights = (
            found
            if isinstance(found, str)
            else {n: TensorInfo(t.file, t.dtype, t.shape) for n, t in found.items()}
        )
    elif weights is None and isinstance(draft, (str, os.PathLike)):
        folder = Path(draft)
        if folder.is_dir() and any(folder.glob("*.safetensors")):
            weights = str(folder)
            notes.append(f"weights read from the drafter directory {folder}")
    return draft, target, weights


def _readings(
    claimed: CapturePlan | None,
    draft: DraftConfig,
    target: TargetConfig,
    trained_with: str | None,
    notes: list[str],
) -> tuple[tuple[tuple[str, CapturePlan], ...], bool]:
    """What the drafter was trained on: the claim's (``config.claim``), or, without one, the
    block drafter's taps (layer outputs whoever trained it) or both readings of its ids (and
    whether they differ)."""
    if claimed is not None and trained_with is not None:
        return ((trained_with, claimed),), False
    method = methods.detect(draft.raw)
    if method.block:  # its ids mean layer outputs whoever trained it (trainers.method_claim)
        notes.append(f"no --trained-with: the {method.label} drafter's ids are layer outputs")
        return ((f"{method.name} taps", resolve(draft, target, "output")),), False
    both = tuple((name, resolve(draft, target, name)) for name in conventions.READINGS)
    if len({p.layer_ids for _, p in both}) > 1:
        notes.append(
            "the ids' meaning is ambiguous without --trained-with: under 'output' (SpecForge, "
            "ModelOpt, TensorRT-LLM) and 'boundary' (vLLM, speculators, original EAGLE) they "
            "name different layers"
        )
        return both, True
    notes.append(
        "no --trained-with: both readings of the config give the same layers "
        f"[{_ids(both[0][1].layer_ids)}]"
    )
    return (("output = boundary", both[0][1]),), False


def _row(
    label: str,
    reading: str,
    trained: CapturePlan,
    name: SystemName,
    draft: DraftConfig,
    target: TargetConfig,
    partitions: Mapping[SystemName, Any],
) -> CheckRow:
    """One row: what ``name`` feeds the served config, against the training."""
    part = partitions.get(name) if partitions else None
    plan = resolve(draft, target, name, partition=part)
    stages = None
    if part is not None:
        from eagle3_contracts.parallel.partition import stage_ownership

        stages = stage_ownership(plan.layer_ids + plan.pp_dropped, part)
    return CheckRow(label, reading, name.given, plan, compare(trained, plan), stages)


def check_system_name(name: str | SystemName, *, serving: bool) -> SystemName:
    """The typed name, or a typed error for a system name no one answers (or a trainer named
    to serve), checked before any config is read: what the pytest plugin validates once per
    session (and may pass on typed)."""
    spec = system_name(name, field="serve_with" if serving else "trained_with")
    if serving:
        _check_serving(spec)
    return spec


def _check_serving(spec: SystemName) -> None:
    """A trainer release (``specforge==0.2.0``) trains drafters; it serves none."""
    if isinstance(spec, TrainerSpec):
        raise ContractError(
            f"{spec.given!r} is a trainer release: it trains drafters and serves none; give it as "
            f"--trained-with and name a serving engine release (e.g. 'sglang==0.5.23', "
            f"'vllm==0.33.0:v1') as --serve-with",
            field="serve_with",
        )


def _target(
    target: PathOrDict | TargetConfig | None, num_layers: int | None, hidden_size: int | None
) -> TargetConfig:
    if target is not None:
        if num_layers is not None or hidden_size is not None:
            raise ConfigError(
                "give the target either as a config (--target) or as --num-layers and "
                "--hidden-size, not both",
                field="target",
            )
        return target if isinstance(target, TargetConfig) else read_target_config(target)
    if num_layers is None or hidden_size is None:
        raise ConfigError(
            "the target is needed: pass --target CONFIG, or both --num-layers and --hidden-size",
            field="target",
        )
    return TargetConfig.from_sizes(num_layers, hidden_size)


def _partitions(
    systems: Sequence[SystemName],
    target: TargetConfig,
    pp_size: int | None,
    pp_partition: str | Sequence[int] | None,
) -> dict[SystemName, Any]:
    if pp_size is None and pp_partition is None:
        return {}
    from eagle3_contracts.parallel.partition import LayerPartition

    n = check_num_layers(target.num_layers)
    if pp_partition is not None:
        part = LayerPartition.parse(pp_partition, num_layers=n, pp_size=pp_size)
        return dict.fromkeys(systems, part)
    assert pp_size is not None
    out = {}
    for spec in systems:
        if isinstance(spec, EngineSpec):
            rule: str = spec.framework.value  # the engine's own split rule
        else:
            rule = conventions.get(
                spec, model_type=target.model_type, architectures=target.architectures
            ).pp_split_rule
        try:
            out[spec] = LayerPartition.even(n, pp_size, rule=rule)
        except ContractError as exc:
            raise ContractError(f"--pp-size: {exc}", field="pp_size") from None
    return out
