"""``eagle3-contracts check``: which target layers each system feeds a drafter, vs training.

Exit 0 when every serving system feeds what the drafter was trained on (and the drafter is
coherent), 1 on any mismatch or an ambiguous reading, 2 on bad input. ``--json`` prints
``CheckReport.to_dict()`` (``schema_version`` 2). torch is never imported unless ``--weights``
needs d2t/t2d values.
"""

from __future__ import annotations

import argparse
from typing import Any

from eagle3_contracts.cli._args import (
    layer_count,
    positive_int,
    refuse_target_as_draft,
    serving_names,
    system_names,
)
from eagle3_contracts.cli._output import emit

COMMAND = "check"
HELP = "show which target layers each trainer/engine feeds a drafter, and what fixes a mismatch"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "draft",
        nargs="?",
        metavar="DRAFT",
        help="the drafter as trained: its config.json, its directory (config.json and "
        "*.safetensors weights, both checked) or a Hub id org/name[@revision] (HF cache first)",
    )
    parser.add_argument(
        "--target", metavar="CONFIG", help="the target's HF config.json, directory or Hub id"
    )
    parser.add_argument(
        "--num-layers", type=layer_count, metavar="N", help="target depth (no --target)"
    )
    parser.add_argument(
        "--hidden-size", type=positive_int, metavar="H", help="target width (no --target)"
    )
    parser.add_argument(
        "--trained-with",
        metavar="SYSTEM",
        help="the trainer: a release (specforge==0.2.0; 'specforge' = its newest release), an "
        "engine release whose captures were the training data (sglang==0.5.14), or a "
        "convention (specforge-hf, eagle-reference, speculators, hf-hidden-states); without it "
        "both readings are shown",
    )
    parser.add_argument(
        "--serve-with",
        action="extend",
        nargs="+",
        default=[],
        metavar="SYSTEM",
        help="serving systems, space- or comma-separated, repeatable (default: sglang vllm "
        "trtllm): sglang==0.5.23, vllm==0.33.0, vllm==0.33.0:v1 (the model runner); an "
        "unversioned sglang/vllm is the newest probed release and the output says which",
    )
    parser.add_argument(
        "--serve-config",
        action="append",
        default=[],
        metavar="CONFIG",
        help="a different draft config served in place of DRAFT (repeatable)",
    )
    parser.add_argument(
        "--weights",
        metavar="W",
        help="drafter .safetensors file or directory, or a Hub id (only the safetensors headers "
        "are fetched, never the weights)",
    )
    parser.add_argument("--pp-size", type=positive_int, metavar="S", help="serving pipeline stages")
    parser.add_argument(
        "--pp-partition", metavar="a,b,c", help="explicit layers per pipeline stage"
    )
    from eagle3_contracts.config import examples

    parser.add_argument(
        "--example",
        metavar="NAME",
        help=f"use an embedded example: {', '.join(examples.names())}",
    )
    parser.add_argument("--list", action="store_true", help="list conventions and examples")
    parser.add_argument("--json", action="store_true", help="print the stable JSON report")


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.config.check import check_drafter

    if args.list:
        return _list()
    serve_with = serving_names(args)  # may move a DRAFT typed after --serve-with back
    installed_notes: list[str] = []
    if any("==installed" in s.lower() for s in serve_with):  # the engine in this environment
        from eagle3_contracts.probe.installed import resolve_names

        serve_with, installed_notes = resolve_names(serve_with)
    draft, target, trained_with, served, title = _inputs(args)
    if not draft:
        raise UsageError("DRAFT is required (or --example NAME; --list shows the examples)")
    if not args.example:
        refuse_target_as_draft(draft)
    systems, trained = system_names(serve_with, trained_with)  # parsed once, here
    report = check_drafter(
        draft,
        target=target,
        num_layers=args.num_layers,
        hidden_size=args.hidden_size,
        trained_with=trained,
        serve_with=systems,
        weights=args.weights,
        served_configs=tuple(served),
        pp_size=args.pp_size,
        pp_partition=args.pp_partition,
        title=title,
    )
    if installed_notes:
        import dataclasses

        report = dataclasses.replace(report, notes=(*report.notes, *installed_notes))
    if report.claim is not None and not args.example:  # resolved once, by check_drafter
        import sys

        print(f"training claim: {report.claim.describe()}", file=sys.stderr)
    return emit(report, args.json)


def _inputs(args: argparse.Namespace) -> tuple[Any, Any, str | None, list[Any], str | None]:
    """DRAFT, --target, --trained-with, the served configs and the title: as given, or an
    embedded example's (``--example`` replaces DRAFT and --target)."""
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.config import examples

    served: list[Any] = list(args.serve_config)
    if not args.example:
        return args.draft, args.target, args.trained_with, served, None
    if args.draft or args.target:
        raise UsageError("--example replaces DRAFT and --target; give one or the other")
    manifest = examples.manifest(args.example)
    draft, *more = manifest["drafts"]
    trained_with = args.trained_with or manifest.get("trained_with")
    title = f"example {args.example}: {manifest['description']}"
    return draft, manifest["target"], trained_with, more + served, title


def _list() -> int:
    """``--list``: the registry, every probed release and its rule changes, aliases, trainer
    releases and examples."""
    from eagle3_contracts import conventions
    from eagle3_contracts.config import examples
    from eagle3_contracts.conventions import ALIASES, TRAINER_DEFAULTS
    from eagle3_contracts.conventions.releases import (
        known_releases,
        rule_changes,
        shipped_releases,
    )

    for name in conventions.REGISTRY:
        print(conventions.get(name).summary())
    shipped = shipped_releases()
    for framework, versions in known_releases().items():
        cached = [v for v in versions if v not in shipped.get(framework, ())]
        print(
            f"{framework} releases ({len(versions)} probed; unversioned '{framework}' = "
            f"{versions[-1]}, the rule of the target's model file): "
            + ", ".join(versions)
            + (f" (probed into the user cache: {', '.join(cached)})" if cached else "")
        )
    for framework, log in rule_changes().items():
        print(f"{framework} rule changes (first release with the new value):")
        for entry in log:
            for change in entry["changed"]:
                print(
                    f"  {entry['release']}: {change['path']} {change['old']!r} -> {change['new']!r}"
                )
    print("aliases: " + ", ".join(f"{a} = {r}" for a, r in ALIASES.items()))
    print(
        "trainer releases: "
        + ", ".join(f"{r} (unversioned '{t}')" for t, r in TRAINER_DEFAULTS.items())
    )
    print("examples: " + ", ".join(examples.names()))
    return 0
