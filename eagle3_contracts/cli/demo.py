"""``eagle3-contracts demo``: the Kimi-K2.5 story, replayed on a tiny DeepSeek-V3-shaped model."""

from __future__ import annotations

import argparse
from pathlib import Path

from eagle3_contracts.cli import UsageError

COMMAND = "demo"
HELP = (
    "replay the Kimi-K2.5 story on a tiny DeepSeek-V3-shaped model: shapes pass, the diagnosis "
    "names the fault (exit 0 when it behaves as scripted)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="keep the dumps, config.json and contract.json here (default: a temp dir, deleted)",
    )
    parser.add_argument(
        "--no-acceptance",
        action="store_true",
        help="skip the last part: what the seed's wiring costs in acceptance on a tiny trained "
        "target (offline, and from vLLM where it is installed)",
    )


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.cli._output import progress, start_torch_work

    step = progress()
    start_torch_work(step)
    from eagle3_contracts.dumps.demo import run_demo

    if args.out is not None:
        try:
            Path(args.out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"--out {args.out}: cannot create the directory: {exc.strerror}"
            ) from None
    result = run_demo(out_dir=args.out, progress=step)
    from eagle3_contracts.cli._output import say
    from eagle3_contracts.differences import fit_text

    say(fit_text(result.render_text()))
    if args.no_acceptance:
        return result.exit_code
    from eagle3_contracts.acceptance.story import run_story

    step("acceptance: the drafter run on the layers each release feeds")
    story = run_story()
    say("\n" + "=" * 78 + "\nwhat the wiring costs: acceptance\n" + "=" * 78)
    say(fit_text(story.render_text()))
    return result.exit_code if story.as_scripted else 1
