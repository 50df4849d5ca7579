"""``eagle3-contracts accept``: what each release's wiring does to a drafter's acceptance.

Runs the drafter on its target offline (``eagle3_contracts.acceptance``) with the layers it was
trained on and with the layers each ``--serve-with`` release feeds it (from the registry), and
prints the acceptance of each and the cost of each row's wiring. Exit 0 when no row costs
acceptance, 1 when one does (or cannot run), 2 on bad input.
"""

from __future__ import annotations

import argparse

from eagle3_contracts.cli._args import (
    positive_int,
    refuse_target_as_draft,
    require_draft,
    serving_names,
)
from eagle3_contracts.cli._output import emit

COMMAND = "accept"
HELP = "measure a drafter's acceptance offline on the layers each release feeds it, vs trained"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "draft",
        nargs="?",  # required: serving_names takes it back from after --serve-with
        metavar="DRAFT",
        help="the drafter's directory (config.json, *.safetensors)",
    )
    parser.add_argument(
        "--target",
        required=True,
        metavar="MODEL",
        help="the target's HF directory (config.json, *.safetensors)",
    )
    parser.add_argument(
        "--serve-with",
        action="extend",
        nargs="+",
        default=[],
        metavar="SYSTEM",
        help="serving releases, space- or comma-separated (sglang==0.5.23, vllm==0.32.0:v1, vllm)",
    )
    parser.add_argument(
        "--wiring",
        action="append",
        default=[],
        metavar="IDS",
        help="also measure these canonical ids, e.g. -1,1,5 ('final' = the post-norm state)",
    )
    parser.add_argument(
        "--trained-with",
        metavar="SYSTEM",
        help="the trainer, when the drafter has no eagle3_contract stamp",
    )
    parser.add_argument(
        "--prompts",
        metavar="FILE",
        help="prompts: UTF-8 text (one per line) or .jsonl (text or token ids); "
        "default: seeded starts the target continues",
    )
    parser.add_argument(
        "--num-prompts",
        type=positive_int,
        default=16,
        metavar="N",
        help="seeded starts without --prompts (default 16)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the starts (default 0)")
    parser.add_argument(
        "--num-drafts",
        type=positive_int,
        default=4,
        metavar="K",
        help="draft tokens per step (default 4)",
    )
    parser.add_argument(
        "--new-tokens",
        type=positive_int,
        default=64,
        metavar="N",
        help="greedy tokens the target writes per prompt (default 64)",
    )
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--json", action="store_true", help="print the JSON report")


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.acceptance.oracle import accept
    from eagle3_contracts.acceptance.wiring import parse_wiring

    serve = serving_names(args)
    draft = require_draft(args)
    refuse_target_as_draft(draft)
    report = accept(
        draft,
        args.target,
        serve_with=serve,
        wirings=[parse_wiring(w) for w in args.wiring],
        trained_with=args.trained_with,
        prompts=args.prompts,
        num_prompts=args.num_prompts,
        seed=args.seed,
        k=args.num_drafts,
        new_tokens=args.new_tokens,
        device=args.device,
    )
    return emit(report, args.json)
