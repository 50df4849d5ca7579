"""``eagle3-contracts stages``: which pipeline stage owns each captured id, and what PP bugs lose.

An engine or trainer ``--convention`` is answered as ``check`` answers it (for ``--draft``, or
a drafter holding ``--ids``), with check's findings and the one proven fix. Exit 0: report only
(or the named engine feeds the drafter what it was trained on); 1: a finding (ids lost on this
partition, a crash, an unknown answer); 2: bad input. torch is never imported.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from eagle3_contracts.cli._args import layer_count, positive_int
from eagle3_contracts.cli._output import emit

COMMAND = "stages"
HELP = (
    "show which pipeline stage owns each layer id on a partition, and which ids "
    "last-stage-only capture, stage-local indexing or dropped aux states would lose"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--num-layers", type=layer_count, metavar="N", help="target depth")
    target.add_argument("--target", metavar="CONFIG", help="the target's HF config.json")
    parser.add_argument(
        "--ids",
        metavar="2,30,58",
        help="the drafter's layer ids, comma-separated (a list starting with -1: --ids=-1,14,60)",
    )
    parser.add_argument(
        "--draft",
        metavar="DRAFT",
        help="the drafter's directory or config.json (instead of --ids; with an engine or trainer "
        "--convention and --target): answered as check answers it, against its training claim",
    )
    parser.add_argument(
        "--trained-with",
        metavar="NAME",
        help="with --draft: what trained it, when its config carries no stamp (as check)",
    )
    parser.add_argument("--pp-size", type=positive_int, metavar="S", help="pipeline stages")
    parser.add_argument(
        "--pp-partition",
        metavar="a,b,c",
        help="explicit layers per stage (as VLLM_PP_LAYER_PARTITION / SGLANG_PP_LAYER_PARTITION)",
    )
    parser.add_argument(
        "--pp-rule",
        metavar="RULE",
        help="default split rule without --pp-partition: vllm, sglang, sglang-before-13282 "
        "(default: the convention's, else vllm; always reported)",
    )
    parser.add_argument(
        "--convention",
        metavar="NAME",
        help="the ids are in this system's numbering (e.g. sglang==0.5.23, vllm, specforge-hf; "
        "an engine or trainer name needs --target, whose model file picks the rule); default "
        "canonical (-1 = embedding, N = output of layer N)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.cli import UsageError, parse_ids
    from eagle3_contracts.conventions import needs_target, parse_convention

    if args.num_layers is None and args.target is None:
        raise UsageError("give the target depth: --num-layers N or --target CONFIG")
    if (args.ids is None) == (args.draft is None):
        raise UsageError("give the drafter's ids (--ids 2,30,58) or its config (--draft DRAFT)")
    spec = None
    if args.convention is not None:
        spec = parse_convention(args.convention, field="convention")  # before any file is read
    if args.draft is not None and (spec is None or not needs_target(spec) or args.target is None):
        raise UsageError("--draft is answered for an engine or trainer --convention and --target")
    if args.trained_with is not None and args.draft is None:
        raise UsageError("--trained-with names the training of --draft")
    if args.target is None:
        return emit(_report(args, parse_ids(args.ids), args.num_layers), args.json)
    from eagle3_contracts.config.readers import read_draft_config, read_target_config

    target = read_target_config(args.target)
    draft = trained = None
    if args.draft is not None:
        import os

        from eagle3_contracts.config.claim import trained_claim

        draft = read_draft_config(args.draft)
        trained = trained_claim(draft, target, args.trained_with, os.environ).plan
    ids = parse_ids(args.ids) if args.ids is not None else ()
    report = _report(args, ids, target.num_layers, target=target, draft=draft, trained=trained)
    return emit(report, args.json)


def _report(args: argparse.Namespace, ids: Sequence[int], num_layers: int, **given: Any) -> Any:
    from eagle3_contracts.parallel.report import stages_report

    target = given.get("target")
    return stages_report(
        ids,
        num_layers,
        pp_size=args.pp_size,
        pp_partition=args.pp_partition,
        pp_rule=args.pp_rule,
        convention=args.convention,
        model_type=target.model_type if target is not None else None,
        architectures=target.architectures if target is not None else (),
        **given,
    )
