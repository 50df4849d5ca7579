"""``eagle3-contracts accept``: what each release's wiring does to a drafter's acceptance.

Runs the drafter on its target offline (``eagle3_contracts.acceptance``) with the layers it was
trained on and with the layers each ``--serve-with`` release feeds it (from the registry), and
prints the acceptance of each and the cost of each row's wiring. With ``--observed``,
``--observed-per-position`` or ``--engine-metrics`` it also ranks the candidate wirings by how
well each explains the figures the user sees. Exit codes: ``docs/readme/acceptance.md``.
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
    parser.add_argument(
        "--observed",
        metavar="RATE",
        help="the accept rate you see (accepted / drafted tokens): rank the wirings that "
        "explain it",
    )
    parser.add_argument(
        "--observed-per-position",
        metavar="R0,R1,..",
        help="the per-position acceptance you see, one rate per draft position",
    )
    parser.add_argument(
        "--engine-metrics",
        metavar="FILE|URL",
        help="vLLM's Prometheus metrics (spec-decode counters) or SGLang log lines "
        "('accept len:'), from a file or http(s) URL",
    )
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--json", action="store_true", help="print the JSON report")


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.acceptance.observed import observed_from_options, read_engine_metrics
    from eagle3_contracts.acceptance.oracle import accept
    from eagle3_contracts.acceptance.wiring import parse_wiring
    from eagle3_contracts.cli._output import progress, start_torch_work
    from eagle3_contracts.errors import ConfigError

    serve = serving_names(args)
    draft = require_draft(args)
    refuse_target_as_draft(draft)
    given = observed_from_options(args.observed, args.observed_per_position, args.num_drafts)
    if given is not None and args.engine_metrics:
        raise ConfigError(
            "--engine-metrics and --observed/--observed-per-position both give observed "
            "figures: pass one",
            field="--engine-metrics",
        )
    observed = given
    if args.engine_metrics:
        observed = read_engine_metrics(args.engine_metrics, args.num_drafts)
    step = progress(args.json)
    start_torch_work(step)
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
        observed=observed,
        progress=step,
    )
    return emit(report, args.json)
