"""Which pipeline stage owns each captured id, and what the known PP bugs would lose (torch-free).

``stages_report`` backs ``eagle3-contracts stages``: it resolves the partition (explicit, or
the engine's default split, reported as such), converts native ids with a convention, and
predicts what last-stage-only capture, stage-local indexing and aux states dropped at a stage
boundary would do (``pipeline_risks``). An engine or trainer name is answered as ``check``
answers it (``config.plan.resolve`` on the partition, ``conventions.predict`` underneath) and
compared with the training (the drafter's claim, else what the ids feed without pipeline
parallelism): its findings, and the one proven fix or why no id list fixes it, with the remedy. When the convention says the engine captures only on
the last stage, ids owned by earlier stages are lost for real: exit code 1. When no code read
says whether the engine carries states captured on earlier stages (``DEPENDS``), those ids are
unknown, never ok: exit code 1 too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eagle3_contracts.config.plan import CapturePlan, Finding, compare, resolve
from eagle3_contracts.config.readers import DraftConfig, TargetConfig, read_target_config
from eagle3_contracts.conventions import (
    CANONICAL,
    Convention,
    EngineSpec,
    PipelineParallel,
    TrainerSpec,
    parse_convention,
    releases,
)
from eagle3_contracts.conventions.predict import fixed_feed
from eagle3_contracts.conventions.release_ids import engine_of, probe_drafter
from eagle3_contracts.differences import text_table
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import EMBEDDING, check_num_layers, describe
from eagle3_contracts.parallel.partition import (
    SPLIT_RULES,
    LayerPartition,
    PipelineRisks,
    pipeline_risks,
)


@dataclass(frozen=True)
class StagesReport:
    """Ownership of each id on a partition, and the risks; ``exit_code`` 0 or 1."""

    partition: LayerPartition
    split_note: str  # how the partition was chosen ("vllm rule (default)", "explicit", ...)
    convention: str  # "canonical" or the registry name the ids were given in
    native_ids: tuple[int, ...]  # as given
    layer_ids: tuple[int, ...]  # canonical, same order
    risks: PipelineRisks
    behaviour: str | None  # the convention's pipeline-parallel behaviour, if any
    lost: tuple[int, ...]  # canonical ids this convention's engine really loses
    # canonical ids captured on earlier stages by an engine whose pipeline code was not read:
    # whether they reach the drafter is unknown, never ok (exit 1)
    unread: tuple[int, ...] = ()
    behaviour_notes: tuple[str, ...] = ()  # the convention's notes on pipeline parallelism
    conv: Convention | None = field(default=None, repr=False, compare=False)  # as resolved
    # an engine or trainer name: check's findings against the training (empty: it feeds them)
    findings: tuple[Finding, ...] = ()
    trained: str = ""  # what the findings compare with ("" for a fixed convention)

    @property
    def exit_code(self) -> int:
        return 1 if self.lost or self.unread or self.findings else 0

    def rows(self) -> list[dict[str, Any]]:
        p = self.partition
        out = []
        # a release that drops or repeats ids feeds fewer layers than the ids: no id is paired
        paired = len(self.native_ids) == len(self.layer_ids)
        natives = self.native_ids if paired else (None,) * len(self.layer_ids)
        for native, n in zip(natives, self.layer_ids, strict=True):
            stage = p.stage_of(n)
            span = p.stage_range(stage)
            out.append(
                {
                    "id": n,
                    "native_id": native,
                    "stage": stage,
                    "stage_layers": [span.start, span.stop - 1],
                    "local_index": p.local_index(n),
                    "stage_boundary": p.is_stage_boundary(n),
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "num_layers": self.partition.num_layers,
            "pp_size": self.partition.pp_size,
            "partition": self.partition.to_dict(),
            "split": self.split_note,
            "convention": self.convention,
            "ownership": self.rows(),
            "risks": self.risks.to_dict(),
            "pipeline_behaviour": self.behaviour,
            "pipeline_notes": list(self.behaviour_notes),
            "lost": list(self.lost),
            "unknown": list(self.unread),
            "trained": self.trained or None,
            "findings": [f.to_dict() for f in self.findings],
            "exit_code": self.exit_code,
        }

    def render_text(self) -> str:
        p, L = self.partition, self.partition.num_layers
        name = lambda n: describe(n, L)  # noqa: E731
        lines = [
            f"{L} layers over {p.pp_size} pipeline stage{'s' if p.pp_size > 1 else ''}: "
            f"{p.describe().split(': ', 1)[1].rsplit(' (', 1)[0]} ({self.split_note})"
        ]
        given = ", ".join(map(str, self.native_ids))
        if self.convention == CANONICAL:
            lines.append(f"ids (canonical): {given}")
        else:
            canon = ", ".join(map(str, self.layer_ids))
            lines.append(f"ids ({self.convention}): {given} = canonical {canon}")
        lines.append("")
        header = ("id", "stage", "stage layers", "local index", "note")
        table = [header]
        for row in self.rows():
            n = row["id"]
            note = []
            if n == EMBEDDING:
                note.append("embedding: captured on stage 0 before layer 0")
            if row["stage_boundary"]:
                note.append(f"last layer of its stage: crosses to stage {row['stage'] + 1}")
            a, b = row["stage_layers"]
            table.append(
                (name(n), str(row["stage"]), f"{a}-{b}", str(row["local_index"]), "; ".join(note))
            )
        lines += text_table(table, indent="  ")
        lines.append("")
        r = self.risks

        def ids(seq: Sequence[int]) -> str:
            return ", ".join(name(n) for n in seq) if seq else "nothing"

        lines.append(
            f"last-stage-only capture (sglang#39644) would lose: {ids(r.last_stage_only_lost)}"
        )
        lines.append(
            f"aux states dropped at stage boundaries (vllm#45985) would lose: "
            f"{ids(r.dropped_at_boundary)}"
        )
        wrong = "; ".join(
            f"stage {s} would capture layer {layer} as {claimed}"
            for s, claimed, layer in r.stage_local_wrong
        )
        lines.append(
            f"stage-local indexing (vllm#36151) would lose: {ids(r.stage_local_lost)}"
            + (f"; and {wrong}" if wrong else "")
        )
        if self.trained:
            lines += ["", *self._verdict()]
        elif self.behaviour is not None:
            lines += ["", *self._fixed_verdict(ids)]
        return "\n".join(lines)

    def _verdict(self) -> list[str]:
        """An engine or trainer name: check's findings and the one proven fix (or why no id
        list fixes it, and the remedy); never the ids already there."""
        lines = [f"{self.convention}: {self.behaviour}"]
        lines += [f"  note: {note}" for note in self.behaviour_notes]
        lines.append(f"trained: {self.trained}")
        if not self.findings:
            return [*lines, f"OK: {self.convention} feeds the drafter what it was trained on"]
        for f in self.findings:  # "unknown: ...", "width differs: ..." name their kind
            kind = f.kind.value
            said = f.message.removeprefix(f"{kind}: ").removeprefix(f"{kind.replace('-', ' ')}: ")
            lines.append(f"{kind.upper()}: {said}")
        return [*lines, f"fix: {self.findings[0].fix} (exit 1)"]

    def _fixed_verdict(self, ids: Callable[[Sequence[int]], str]) -> list[str]:
        """A registry entry's pipeline behaviour on this partition."""
        r = self.risks
        lines = [f"{self.convention}: {self.behaviour}"]
        lines += [f"  note: {note}" for note in self.behaviour_notes]
        if self.lost:
            lines.append(
                f"MISMATCH: {self.convention} never feeds {ids(self.lost)} to the drafter on this "
                f"partition (exit 1); what you can change: {self._remedies()}"
            )
        elif self.unread:
            lines.append(
                f"UNKNOWN: no code read says whether {self.convention} carries "
                f"{ids(self.unread)} (captured on earlier stages) to the drafter's stage "
                f"(exit 1); what you can change: serve without pipeline parallelism, or a "
                f"release whose pipeline behaviour is read"
            )
        elif r.last_stage_only_lost and self.behaviour == PipelineParallel.LAST_STAGE_ONLY.value:
            # captured entering the next layer, which runs on the last stage
            lines.append(
                f"OK: {self.convention} takes layer N as layer N + 1 starts, so these are "
                f"still captured on the last stage: {ids(r.last_stage_only_lost)}"
            )
        return lines

    def _remedies(self) -> str:
        """What a user can do about ids lost to last-stage-only capture: another split (when
        one exists), another engine release, or no pipeline parallelism."""
        assert self.conv is not None  # lost ids come from a convention
        shift = 1 if self.conv.captures_before_layer else 0
        first = max(0, min(n + shift for n in self.lost))  # the last stage must start here
        partition, pp = self.partition, self.partition.pp_size
        options = []
        if first >= pp - 1:
            head = [first // (pp - 1) + (i < first % (pp - 1)) for i in range(pp - 1)]
            sizes = ",".join(map(str, [*head, partition.num_layers - first]))
            options.append(
                f"a split whose last stage starts at layer {first} or earlier (e.g. "
                f"--pp-partition {sizes})"
            )
        options.append("a release that captures on every stage")
        options.append("serving without pipeline parallelism")
        return "; ".join(options)


def stages_report(
    ids: Sequence[int],
    num_layers: int,
    *,
    pp_size: int | None = None,
    pp_partition: str | Sequence[int] | None = None,
    pp_rule: str | None = None,
    convention: str | None = None,
    model_type: str | None = None,
    architectures: Sequence[str] = (),
    target: TargetConfig | None = None,
    draft: DraftConfig | None = None,
    trained: CapturePlan | None = None,
) -> StagesReport:
    """Resolve the partition and convention, and report ownership and risks for ``ids``.

    ``model_type``/``architectures`` (the target's, or ``target``'s config) pick the model file
    an engine or trainer name (``sglang==0.5.23``, ``specforge``) is answered for; such a name
    is refused without them. It is answered by ``config.plan.resolve`` for ``draft`` (else a
    plain EAGLE-3 drafter holding ``ids``) on the partition, and compared with ``trained``
    (the drafter's claim, ``config.claim.trained_claim``; else what the release feeds without
    pipeline parallelism).
    """
    num_layers = check_num_layers(num_layers)
    spec = None if convention is None else parse_convention(convention, field="convention")
    if isinstance(spec, EngineSpec | TrainerSpec):  # needs the target: answered per release
        return _release_report(
            ids,
            _Release(
                spec,
                target or _named_target(spec, num_layers, model_type, architectures),
                draft,
                trained,
            ),
            pp_size,
            pp_partition,
            pp_rule,
        )
    conv = None
    if spec is not None:
        from eagle3_contracts import conventions

        got = conventions.get(spec.key)
        assert isinstance(got, Convention)  # a fixed reading: the same for every target
        conv = got
        layer_ids = tuple(conventions.to_canonical(list(ids), conv, num_layers))
    else:
        layer_ids = tuple(ids)
    _nonempty(layer_ids)
    partition, split_note = _partition(
        num_layers,
        pp_size,
        pp_partition,
        pp_rule,
        (conv.pp_split_rule, f"{conv.name}'s default split") if conv is not None else None,
    )
    risks = pipeline_risks(layer_ids, partition)
    behaviour: str | None = None
    lost: tuple[int, ...] = ()
    unread: tuple[int, ...] = ()
    if conv is not None:
        behaviour = conv.pipeline_parallel.value
        # where the engine really captures (entering layer N + 1 for SGLang), as config.plan
        lost, unread = partition.pipeline_fate(
            layer_ids, conv.pipeline_parallel, before_layer=conv.captures_before_layer
        )
    return StagesReport(
        partition=partition,
        split_note=split_note,
        convention=conv.name if conv is not None else CANONICAL,
        native_ids=tuple(ids),
        layer_ids=layer_ids,
        risks=risks,
        behaviour=behaviour,
        lost=lost,
        unread=unread,
        behaviour_notes=_pipeline_notes(conv),
        conv=conv,
    )


@dataclass(frozen=True)
class _Release:
    """An engine or trainer name, the target it is answered for, and the drafter's side."""

    spec: EngineSpec | TrainerSpec  # parsed once, where stages_report took the name
    target: TargetConfig
    draft: DraftConfig | None
    trained: CapturePlan | None


def _named_target(
    name: EngineSpec | TrainerSpec,
    num_layers: int,
    model_type: str | None,
    architectures: Sequence[str],
) -> TargetConfig:
    """The target a name is answered for, from its model file alone; refused (field
    ``target``) without one, as ``conventions.get`` refuses it. Its width is never read: the
    probe drafter names none (``release_ids.probe_drafter``)."""
    from eagle3_contracts import conventions

    conventions.get(name, model_type=model_type, architectures=architectures)  # refusal
    return read_target_config(
        {
            "model_type": model_type,
            "architectures": list(architectures),
            "num_hidden_layers": num_layers,
            "hidden_size": 1,
        },
        source="--num-layers and the target's model file",
    )


def _release_report(
    ids: Sequence[int],
    release: _Release,
    pp_size: int | None,
    pp_partition: str | Sequence[int] | None,
    pp_rule: str | None,
) -> StagesReport:
    """``stages`` for an engine or trainer name: check's simulation and comparison."""
    from eagle3_contracts.config.readers import read_draft_config

    target, n = release.target, release.target.num_layers
    draft = release.draft or read_draft_config(probe_drafter(ids))
    spec = release.spec
    whole = resolve(draft, target, spec)  # what the ids feed without pipeline stages
    framework = engine_of(spec).framework.value
    partition, split_note = _partition(
        n, pp_size, pp_partition, pp_rule, (framework, f"{whole.key}'s default split")
    )
    served = resolve(draft, target, spec, partition=partition)
    trained = release.trained or CapturePlan(
        system=f"the ids as {whole.key} reads them without pipeline parallelism",
        num_layers=n,
        hidden_size=target.hidden_size,
        order="ascending",
        feed=fixed_feed(whole.feed.canonical, native_ids=whole.native_ids),
    )
    fed = whole.feed.canonical
    given = tuple(ids) or (whole.native_ids or ())
    by_id = dict(zip(sorted(set(given)), fed, strict=False))
    layer_ids = tuple(by_id[i] for i in given) if len(set(given)) == len(fed) else fed
    last_only = releases.last_stage_only(whole.feed.release, whole.feed.entry_class)
    behaviour = PipelineParallel.LAST_STAGE_ONLY if last_only else PipelineParallel.DEPENDS
    lost, unread = partition.pipeline_fate(fed, behaviour, before_layer=framework != "vllm")
    return StagesReport(
        partition=partition,
        split_note=split_note,
        convention=whole.key,
        native_ids=given,
        layer_ids=layer_ids,
        risks=pipeline_risks(layer_ids, partition),
        behaviour=behaviour.value,
        lost=lost,
        unread=unread,
        behaviour_notes=served.pp_notes,
        findings=compare(trained, served),
        trained=trained.describe(),
    )


def _nonempty(layer_ids: tuple[int, ...]) -> None:
    if not layer_ids:
        raise ContractError("ids is empty: give the drafter's layer ids, e.g. 2,30,58", field="ids")


def _partition(
    num_layers: int,
    pp_size: int | None,
    pp_partition: str | Sequence[int] | None,
    pp_rule: str | None,
    own: tuple[str, str] | None,
) -> tuple[LayerPartition, str]:
    """The partition (explicit, else a split rule's) and how it was chosen; ``own``: the
    system's default split rule and how to say it."""
    if pp_partition is not None:
        if pp_rule is not None:
            raise ContractError(
                "--pp-rule chooses a default split; an explicit --pp-partition replaces it, "
                "give one or the other",
                field="pp_rule",
            )
        partition = LayerPartition.parse(pp_partition, num_layers=num_layers, pp_size=pp_size)
        return partition, "explicit --pp-partition"
    if pp_size is None:
        raise ContractError(
            "give --pp-size (the engine's default split) or --pp-partition a,b,c",
            field="pp_size",
        )
    if pp_rule is not None:
        rule, why = pp_rule, "--pp-rule"
    elif own is not None:
        rule, why = own
    else:
        rule, why = "vllm", "default; --pp-rule or --pp-partition to change"
    if rule not in SPLIT_RULES:
        raise ContractError(
            f"--pp-rule {rule!r} is not a known split rule; use one of {', '.join(SPLIT_RULES)}",
            field="pp_rule",
        )
    return LayerPartition.even(num_layers, pp_size, rule=rule), f"{rule} rule, {why}"


def _pipeline_notes(conv: Convention | None) -> tuple[str, ...]:
    """The notes a "(see notes)" behaviour points at: the convention's notes on pipeline
    parallelism (every note when none names it)."""
    if conv is None or conv.pipeline_parallel is not PipelineParallel.DEPENDS:
        return ()
    about = tuple(n for n in conv.notes if "pipeline" in n.lower())
    return about or tuple(conv.notes)
