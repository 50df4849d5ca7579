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

    say(result.render_text())
    return result.exit_code
