"""``fix_drafter``: the drafter config every named serving release reads correctly.

For each release ``check`` finds a mismatch with, the fix is the id list ``plan.proven_fix``
proved (predicting again gives exactly the trained layers) at the field that release reads.
Fixes for several releases are combined when they write different fields, or the same field
with the same ids; two different lists for one field is a conflict, refused with both named.
A claim read from the drafter's own ids (``specforge-hf``, ``hf-hidden-states``, a trainer
reading the config) would move with those ids: when the edits move it, the fix also writes the
stamp of the original training (``config.claim.trained_stamp``) in the same text, so the claim
is pinned in the same atomic write. The fixed text is then checked exactly as ``check`` with the
same arguments will check it afterwards (the claim read from it, every release served it) and
must be ok for every release with the original trained layers. The new text is the original
with only those members edited (``_json_edit``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3_contracts._io import TextFile, read_text_file, write_text_file
from eagle3_contracts._json_edit import edit_ids, set_top_level_key
from eagle3_contracts.config.check import CheckReport, check_drafter
from eagle3_contracts.config.claim import Claim, trained_stamp
from eagle3_contracts.config.plan import Fix, apply_fix, resolve
from eagle3_contracts.conventions import SystemName
from eagle3_contracts.errors import ConfigError, ContractError
from eagle3_contracts.stamp import ENV_TRAINED_WITH, STAMP_KEY, Stamp


@dataclass(frozen=True)
class Edit:
    """One field to write and the releases that need it."""

    path: str  # "eagle_aux_hidden_state_layer_ids", "eagle_config.eagle_aux_hidden_state_layer_ids"
    ids: tuple[int, ...]  # native ids, as that field is read
    systems: tuple[str, ...]  # release keys that read this field ("vllm==0.33.0:v2 llama.py")

    def describe(self) -> str:
        return f"{self.path} = [{', '.join(map(str, self.ids))}] (for {', '.join(self.systems)})"


@dataclass(frozen=True)
class DrafterFix:
    """The fixed config text and what changed; ``edits`` is empty when nothing needed fixing."""

    config_path: Path
    original: str  # the file's text, line ends "\n"
    text: str  # the fixed text, line ends "\n" (written in the file's encoding and line ends)
    edits: tuple[Edit, ...]
    already_ok: tuple[str, ...]  # release keys that read the drafter correctly as it is
    report: CheckReport  # the check before the fix
    file: TextFile  # the file as read: its bytes (the backup), encoding and line ends
    stamp: Stamp | None = None  # the training claim pinned in ``text`` (the edits moved it)

    @property
    def claim(self) -> Claim:
        """The training claim the fix serves (the check's, resolved once)."""
        assert self.report.claim is not None  # fix_drafter refuses a report without one
        return self.report.claim


def config_path(draft: str | os.PathLike[str]) -> Path:
    """A drafter directory's ``config.json``, or the file itself."""
    path = Path(draft)
    return path / "config.json" if path.is_dir() else path


def fix_drafter(
    draft: str | os.PathLike[str],
    *,
    target: str | os.PathLike[str],
    serve_with: Sequence[str | SystemName],
    trained_with: str | SystemName | None,
) -> DrafterFix:
    """The fixed config for ``serve_with``; ``ContractError`` (field ``serve_with``) when no
    one config can serve them all, or a release has no proven fix. Each name is parsed once
    (by the first check) and re-used typed by the claim's pin and the re-check."""
    path = config_path(draft)
    report = check_drafter(
        str(path), target=str(target), trained_with=trained_with, serve_with=tuple(serve_with)
    )
    _check_fixable(report)
    serve_with = report.systems if serve_with else ()  # as the check parsed them
    trained_with = report.claim.trained_with if report.claim else None  # resolved once
    edits = _edits(report)
    file = read_text_file(path, what="draft config")
    original = file.text
    fixed: dict[str, Any] = dict(report.draft.raw)
    for edit in edits.values():
        fixed = apply_fix(fixed, Fix(edit.ids, edit.path, ""))
    text = edit_ids(original, [(e.path, e.ids) for e in edits.values()], fixed, str(path))
    stamp = _pin(report, fixed, trained_with) if edits else None
    if stamp is not None:
        text = set_top_level_key(text, STAMP_KEY, stamp.to_dict(), source=str(path))
    if edits:
        _recheck(path, text, report, trained_with, serve_with)
    ok = tuple(r.plan.key for r in report.rows if r.ok)
    return DrafterFix(path, original, text, tuple(edits.values()), ok, report, file, stamp)


def _pin(report: CheckReport, fixed: dict[str, Any], trained_with: str | None) -> Stamp | None:
    """The stamp of the original training when the claim, read again from the fixed config,
    would name other layers (``None``: the drafter is stamped, or the edits leave the claim
    where it was)."""
    claim = report.claim
    if claim is None or claim.source.stamp is not None or trained_with is None:
        return None
    trained = report.readings[0][1]
    again = resolve(fixed, report.target, claim.name or trained_with)
    if (again.kind, again.layer_ids, again.non_canonical) == (
        trained.kind,
        trained.layer_ids,
        trained.non_canonical,
    ):
        return None
    return trained_stamp(trained, trained_with, report.target)


def _check_fixable(report: CheckReport) -> None:
    """Refuse a drafter no id edit can fix: no training claim, or a drafter that is wrong
    itself. A block drafter (DFlash family) needs no claim: its ids mean layer outputs whoever
    trained it (``conventions.methods``)."""
    from eagle3_contracts.conventions import methods

    unclaimed = report.claim is None or report.claim.source.kind == "none"
    if unclaimed and not methods.detect(report.draft.raw).block:
        raise ContractError(
            "fix needs the training claim: stamp the drafter (eagle3-contracts stamp), pass "
            f"--trained-with SYSTEM or set {ENV_TRAINED_WITH}",
            field="trained_with",
        )
    if report.ambiguous:
        raise ContractError(
            "the training claim is missing: the ids mean different layers under each reading; "
            "stamp the drafter, pass --trained-with or set EAGLE3_CONTRACTS_TRAINED_WITH",
            field="trained_with",
        )
    errors = [c for c in report.drafter if c.status == "error"]
    if errors:
        raise ContractError(
            f"the drafter itself is wrong, which no layer ids fix: {errors[0].name}: "
            f"{errors[0].message}",
            field=errors[0].name,
        )


def _edits(report: CheckReport) -> dict[str, Edit]:
    """One edit per field some failing release reads, refused when two releases need
    different ids at one field (a field a release already reads correctly counts too)."""
    edits: dict[str, Edit] = {}
    kept: dict[str, Edit] = {}  # fields a release already reads correctly: never changed
    for row in report.rows:
        if row.ok and row.plan.read_path is not None and row.plan.native_ids is not None:
            known = kept.get(row.plan.read_path)
            systems = (*known.systems, row.plan.key) if known else (row.plan.key,)
            kept[row.plan.read_path] = Edit(row.plan.read_path, row.plan.native_ids, systems)
    for row in report.rows:
        if row.ok:
            continue
        if row.fix_native_ids is None or row.plan.read_path is None:
            raise ContractError(f"{row.plan.key}: {row.verdict}; {row.fix}", field="serve_with")
        ids, where = tuple(row.fix_native_ids), row.plan.read_path
        known = edits.get(where) or kept.get(where)
        if known is not None and known.ids != ids:
            raise ContractError(
                f"no one config serves both: {', '.join(known.systems)} needs {where} = "
                f"{list(known.ids)} and {row.plan.key} needs {where} = {list(ids)}; write one "
                "config per release (fix each with its own --serve-with)",
                field="serve_with",
            )
        systems = (*edits[where].systems, row.plan.key) if where in edits else (row.plan.key,)
        edits[where] = Edit(where, ids, systems)
    return edits


def _recheck(
    path: Path,
    text: str,
    report: CheckReport,
    trained_with: str | None,
    serve_with: Sequence[str | SystemName],
) -> None:
    """Check ``text`` as ``check`` with the same arguments will check the written file: the
    claim read from it must still be the original training, and every release must say ok."""
    import json

    claim = report.claim
    again = check_drafter(
        json.loads(text),
        target=report.target,
        trained_with=(claim.name if claim is not None else None) or trained_with,
        serve_with=tuple(serve_with),
        environ={},
    )
    trained = report.readings[0][1].layer_ids
    if again.readings[0][1].layer_ids != trained:
        raise ConfigError(
            f"the fix would move the training claim from canonical {list(trained)} to "
            f"{list(again.readings[0][1].layer_ids)}; stamp the drafter first "
            "(eagle3-contracts stamp) and fix it again",
            source=str(path),
            field="trained_with",
        )
    wrong = [r for r in again.rows if not r.ok]
    if wrong:
        raise ConfigError(
            f"the combined fix does not serve every release: {wrong[0].plan.key} then "
            f"{wrong[0].verdict}; fix each release with its own --serve-with",
            source=str(path),
            field="serve_with",
        )


def write_fix(fix: DrafterFix) -> Path:
    """Write ``fix.text`` over the config (``_io.write_text_file``: safely, in the file's
    encoding and line ends), keeping the original bytes beside it as ``config.json.bak``
    (``.bak1``, ``.bak2`` ... when taken); return the backup's path."""
    backup = write_text_file(fix.file, fix.text, what="draft config", backup=True)
    assert backup is not None
    return backup


__all__ = ["DrafterFix", "Edit", "config_path", "fix_drafter", "write_fix"]
