"""``eagle3-contracts stamp``: record the canonical contract a drafter was trained on.

``stamp DRAFT --trained-with X --target T`` resolves the drafter's ids with the trainer's
convention ``X`` on the target ``T`` and writes the result (canonical ids in the trained
order, depth, width, trainer) as the ``eagle3_contract`` block of ``DRAFT/config.json`` (a minimal edit: every other byte of the
file is kept; see ``eagle3_contracts.stamp`` for the format and why it lives there). A
re-stamp that changes the ids, the trainer or where the ids came from needs ``--force``.
``--show`` prints the current stamp without writing (exit 1 when there is none). ``check``,
``diagnose`` and the vLLM guard read the stamp first. Exit 0 on success, 2 on bad input.
torch is never imported.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from eagle3_contracts.cli._args import refuse_target_as_draft

if TYPE_CHECKING:
    from eagle3_contracts.conventions import SystemName
    from eagle3_contracts.stamp import Stamp

COMMAND = "stamp"
HELP = "record the canonical contract a drafter was trained on in its config.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "draft",
        metavar="DRAFT",
        help="the drafter directory (or its config.json); a Hub id org/name[@revision] with "
        "--show (the HF cache's files are never written)",
    )
    parser.add_argument(
        "--trained-with",
        metavar="SYSTEM",
        help="the trainer's convention or release (e.g. specforge); required unless --show",
    )
    parser.add_argument(
        "--target", metavar="CONFIG", help="the target's HF config.json, directory or Hub id"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing stamp whose ids, trainer or ids source differ",
    )
    parser.add_argument(
        "--show", action="store_true", help="print the stamp, write nothing (exit 1: no stamp)"
    )
    parser.add_argument("--json", action="store_true", help="print the stamp block as JSON")


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.config.readers import resolve_model

    _refuse_unwritable(args)
    args.draft, _ = resolve_model(args.draft, what="draft")
    args.target = args.target and resolve_model(args.target, what="target")[0]
    current = _current(args)
    if args.show:
        if current is None:
            print(f"{args.draft}: not stamped")
            return 1
        print(json.dumps(current.to_dict(), indent=2) if args.json else current.describe())
        return 0
    if not args.trained_with or not args.target:
        raise UsageError("stamp needs --trained-with SYSTEM and --target CONFIG (or --show)")
    from eagle3_contracts.conventions import parse_system

    # parsed once, before any file is read; the typed name is what resolves the drafter
    trained = parse_system(args.trained_with, field="trained_with")
    return _stamp(args, trained, current)


def _refuse_unwritable(args: argparse.Namespace) -> None:
    """A Hub id is only shown (the HF cache is shared), and a target's config never stamped."""
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.config.readers import parse_hub_id

    hub = parse_hub_id(args.draft)
    if hub is not None and not args.show:
        raise UsageError(
            f"{hub} is a Hub id: its files in the HF cache are shared and never written; "
            f"download it to a folder (hf download {hub.repo_id} --local-dir DIR) and stamp DIR"
        )
    if not args.show:
        refuse_target_as_draft(args.draft)  # a stamp never goes into a target's config


def _current(args: argparse.Namespace) -> Stamp | None:
    """The drafter's stamp; a malformed one is ``None`` under ``--force`` (which replaces it,
    as its message says), else its error."""
    from eagle3_contracts.errors import ConfigError
    from eagle3_contracts.stamp import STAMP_KEY, read_stamp

    try:
        return read_stamp(args.draft)
    except ConfigError as exc:
        if args.show or not args.force or exc.field is None or not exc.field.startswith(STAMP_KEY):
            raise
        return None


def _stamp(args: argparse.Namespace, trained: SystemName, current: Stamp | None) -> int:
    """Resolve the drafter with ``trained`` on the target and write the stamp."""
    from pathlib import Path

    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.config.claim import trained_stamp
    from eagle3_contracts.config.plan import resolve
    from eagle3_contracts.config.readers import read_draft_config, read_target_config
    from eagle3_contracts.stamp import write_stamp

    draft_path = Path(args.draft)
    config_path = draft_path / "config.json" if draft_path.is_dir() else draft_path
    draft = read_draft_config(config_path)
    target = read_target_config(args.target)
    plan = resolve(draft, target, trained)
    stamp = trained_stamp(plan, args.trained_with, target)
    changed = [] if current is None else _changes(current, stamp)
    if current is not None and changed and not args.force:
        raise UsageError(
            f"{config_path} is already stamped {current.describe()}; the new stamp changes "
            f"{'; '.join(changed)}: pass --force to replace it"
        )
    written = write_stamp(config_path, stamp)
    if args.json:
        print(json.dumps(stamp.to_dict(), indent=2))
    else:
        print(f"stamped {written}: {stamp.describe()} (from {plan.ids_source})")
    return 0


def _changes(current: Stamp, new: Stamp) -> list[str]:
    """What a re-stamp would change in the claim: the ids, the trainer, the ids' source."""
    pairs = (
        ("layer_ids", list(current.contract.layer_ids), list(new.contract.layer_ids)),
        ("trained_with", current.trained_with, new.trained_with),
        ("ids_source", current.ids_source, new.ids_source),
    )
    return [f"{name} {old!r} -> {now!r}" for name, old, now in pairs if old != now]
