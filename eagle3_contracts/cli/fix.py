"""``eagle3-contracts fix``: write the layer ids where each serving release reads them.

``fix DRAFT --target T --serve-with sglang==0.5.23 [--write]`` prints the drafter's config
with the proven ids at the field each named release reads (``config.fix``), every other byte
kept; ``--write`` replaces the file, keeps the original beside it (``config.json.bak``) and
checks the written file again. When the edits would move a training claim read from those ids
(``specforge-hf``), the stamp of the original training is written in the same write. Needs a
training claim: the drafter's stamp, ``--trained-with``
or ``EAGLE3_CONTRACTS_TRAINED_WITH``. Exit 0 when the config is (now) right for every release,
2 when no one config can be (the conflict is named) or on bad input. torch is never imported.
"""

from __future__ import annotations

import argparse
import sys

from eagle3_contracts.cli._args import (
    refuse_target_as_draft,
    require_draft,
    serving_names,
    system_names,
)

COMMAND = "fix"
HELP = "print (or --write) the drafter config each named serving release reads correctly"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "draft",
        nargs="?",  # required: serving_names takes it back from after --serve-with
        metavar="DRAFT",
        help="the drafter's directory or config.json (a Hub id prints the fixed config only)",
    )
    parser.add_argument(
        "--target", required=True, metavar="CONFIG", help="the target's config.json or Hub id"
    )
    parser.add_argument(
        "--serve-with",
        action="extend",
        nargs="+",
        required=True,
        metavar="SYSTEM",
        help="the serving releases (sglang==0.5.23, vllm==0.33.0:v1, ...), space- or "
        "comma-separated, repeatable: one config serving all of them, or a refusal naming the "
        "conflict",
    )
    parser.add_argument(
        "--trained-with",
        metavar="SYSTEM",
        help="the trainer (used when the drafter carries no stamp; else "
        "EAGLE3_CONTRACTS_TRAINED_WITH)",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="replace the config (the original is kept as config.json.bak) and check it again",
    )


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.config.check import check_drafter
    from eagle3_contracts.config.fix import fix_drafter, write_fix
    from eagle3_contracts.config.readers import parse_hub_id, resolve_model
    from eagle3_contracts.stamp import STAMP_KEY

    names = serving_names(args)
    refuse_target_as_draft(require_draft(args))
    hub = parse_hub_id(args.draft)
    if hub is not None and args.write:
        raise UsageError(
            f"{hub} is a Hub id: its files in the HF cache are shared and never written; "
            f"download it to a folder (hf download {hub.repo_id} --local-dir DIR) and fix DIR"
        )
    draft, _ = resolve_model(args.draft, what="draft")
    target, _ = resolve_model(args.target, what="target")
    serve_with, trained = system_names(names, args.trained_with)  # parsed once, here
    fix = fix_drafter(draft, target=target, serve_with=serve_with, trained_with=trained)
    claim = fix.claim  # resolved once, by the check the fix starts from
    lines = [f"ok as it is: {key}" for key in fix.already_ok]
    lines += [f"set {edit.describe()}" for edit in fix.edits]
    if fix.stamp is not None:  # the edits move a claim read from these ids: pinned with them
        lines.append(f"pin the training claim: {STAMP_KEY} = {fix.stamp.describe()}")
    if not args.write:
        print(f"training claim: {claim.describe()}", *lines, sep="\n", file=sys.stderr)
        sys.stdout.write(fix.text)
        return 0
    if not fix.edits:
        print(f"training claim: {claim.describe()}", file=sys.stderr)
        print(
            *lines,
            f"nothing to write: {fix.config_path} is read correctly by every release",
            sep="\n",
        )
        return 0
    backup = write_fix(fix)  # refused before any output: bad input is one stderr line
    again = check_drafter(  # the written file served, against the training of the original
        str(backup),
        target=target,
        trained_with=claim.name or claim.trained_with,  # typed: parsed by the first check
        serve_with=tuple(serve_with),
        served_configs=(str(fix.config_path),),
    )
    rows = [r for r in again.rows if r.config == fix.config_path.name]
    if not rows or not all(r.ok for r in rows):  # never leave a file the re-check refuses
        import os

        os.replace(backup, fix.config_path)
        said = next((f"{r.plan.key} {r.verdict}" for r in rows if not r.ok), "nothing")
        raise UsageError(
            f"re-check after writing says {said}; {fix.config_path} was restored from its backup"
        )
    print(f"training claim: {claim.describe()}", file=sys.stderr)
    print(*lines, sep="\n")
    print(f"wrote {fix.config_path} (original kept as {backup})")
    print(f"re-check: ok for {', '.join(dict.fromkeys(r.plan.key for r in rows))}")
    return 0
