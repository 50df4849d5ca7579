"""Which pipeline stage owns each captured id, and what the known PP bugs would lose (torch-free).

``stages_report`` backs ``eagle3-contracts stages``: it resolves the partition (explicit, or
the engine's default split, reported as such), converts native ids with a convention, and
predicts what last-stage-only capture, stage-local indexing and aux states dropped at a stage
boundary would do (``pipeline_risks``). When the convention says the engine captures only on
the last stage, ids owned by earlier stages are lost for real: exit code 1. When no code read
says whether the engine carries states captured on earlier stages (``DEPENDS``), those ids are
unknown, never ok: exit code 1 too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eagle3_contracts.conventions import CANONICAL, Convention, parse_convention
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

    @property
    def exit_code(self) -> int:
        return 1 if self.lost or self.unread else 0

    def rows(self) -> list[dict[str, Any]]:
        p = self.partition
        out = []
        for native, n in zip(self.native_ids, self.layer_ids, strict=True):
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
        if self.behaviour is not None:
            lines.append("")
            lines.append(f"{self.convention}: {self.behaviour}")
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
            elif r.last_stage_only_lost and self.behaviour == _last_stage_only():
                # captured entering the next layer, which runs on the last stage
                lines.append(
                    f"OK: {self.convention} takes layer N as layer N + 1 starts, so these are "
                    f"still captured on the last stage: {ids(r.last_stage_only_lost)}"
                )
        return "\n".join(lines)

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


def _last_stage_only() -> str:
    from eagle3_contracts.conventions import PipelineParallel

    return PipelineParallel.LAST_STAGE_ONLY.value


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
) -> StagesReport:
    """Resolve the partition and convention, and report ownership and risks for ``ids``.

    ``model_type``/``architectures`` (the target's) pick the model file whose rule an engine or
    trainer name (``sglang==0.5.23``, ``specforge``) means; such a name is refused without them.
    """
    num_layers = check_num_layers(num_layers)
    conv = None
    if convention is not None and parse_convention(convention, field="convention") is not None:
        from eagle3_contracts import conventions

        conv = conventions.get(
            convention, model_type=model_type, architectures=tuple(architectures)
        )
        layer_ids = tuple(conventions.to_canonical(list(ids), conv, num_layers))
    else:
        layer_ids = tuple(ids)
    if not layer_ids:
        raise ContractError("ids is empty: give the drafter's layer ids, e.g. 2,30,58", field="ids")
    if pp_partition is not None:
        if pp_rule is not None:
            raise ContractError(
                "--pp-rule chooses a default split; an explicit --pp-partition replaces it, "
                "give one or the other",
                field="pp_rule",
            )
        partition = LayerPartition.parse(pp_partition, num_layers=num_layers, pp_size=pp_size)
        split_note = "explicit --pp-partition"
    else:
        if pp_size is None:
            raise ContractError(
                "give --pp-size (the engine's default split) or --pp-partition a,b,c",
                field="pp_size",
            )
        if pp_rule is not None:
            rule, why = pp_rule, "--pp-rule"
        elif conv is not None:
            rule, why = conv.pp_split_rule, f"{conv.name}'s default split"
        else:
            rule, why = "vllm", "default; --pp-rule or --pp-partition to change"
        if rule not in SPLIT_RULES:
            raise ContractError(
                f"--pp-rule {rule!r} is not a known split rule; use one of {', '.join(SPLIT_RULES)}",
                field="pp_rule",
            )
        partition = LayerPartition.even(num_layers, pp_size, rule=rule)
        split_note = f"{rule} rule, {why}"
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


def _pipeline_notes(conv: Convention | None) -> tuple[str, ...]:
    """The notes a "(see notes)" behaviour points at: the convention's notes on pipeline
    parallelism (every note when none names it)."""
    from eagle3_contracts.conventions import PipelineParallel

    if conv is None or conv.pipeline_parallel is not PipelineParallel.DEPENDS:
        return ()
    about = tuple(n for n in conv.notes if "pipeline" in n.lower())
    return about or tuple(conv.notes)
