"""The registry as a markdown table (the README's copy is generated from it, never by hand)."""

from __future__ import annotations

from eagle3_contracts.conventions._entry import Convention, PipelineParallel

HEADER = (
    "| name | system | native id means | rule for explicit ids | ids read from | "
    "no ids (value for L = {n}) | concat | embedding / last output | pipeline parallel |\n"
    "|---|---|---|---|---|---|---|---|---|\n"
)

_PP = {
    PipelineParallel.CARRIED: "carried",
    PipelineParallel.LAST_STAGE_ONLY: "last-stage-only",
    PipelineParallel.DEPENDS: "depends",
    PipelineParallel.NOT_APPLICABLE: "not-applicable",
}


def _row(c: Convention, n: int) -> str:
    paths = " then ".join(f"`{p}`" for p in c.id_paths) or "none (hard-coded)"
    if c.id_setting:
        paths += f" (set via `{c.id_setting}`)"
    reach = (
        f"{'yes' if c.embedding_reachable else 'no'} / {'yes' if c.last_output_reachable else 'no'}"
    )
    cells = (
        f"`{c.name}`",
        c.system,
        c.meaning.value,
        c.offset_rule.value,
        paths,
        c.describe_default(n),
        c.concat_order,
        reach,
        _PP[c.pipeline_parallel],
    )
    return "| " + " | ".join(cells) + " |"


def markdown_table(num_layers: int = 61) -> str:
    """One row per registry entry, defaults evaluated for ``num_layers``."""
    from eagle3_contracts.conventions import REGISTRY

    rows = "\n".join(_row(entry, num_layers) for entry in REGISTRY.values())
    return HEADER.format(n=num_layers) + rows + "\n"
