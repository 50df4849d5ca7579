"""``eagle3-contracts sglang-launch -- <sglang launch_server args>``: SGLang with dump and guard.

Adds the eagle3-contracts specs to SGLang's own ``--forward-hooks`` (merged with any the
command line already has) and replaces this process with ``python -m sglang.launch_server``.
SGLang registers the hooks in every scheduler process (each TP rank's model runner); they act
on ``EAGLE3_CONTRACTS_DUMP=DIR`` and ``EAGLE3_CONTRACTS_GUARD=warn|strict``, inherited from
this environment (see ``eagle3_contracts.integrations.sglang``). The drafter's stamp is read
from ``--speculative-draft-model-path`` (a local directory, or a Hub id read from the cache). ``--print-command`` prints the
command instead of running it. Exit 2 on bad input; otherwise SGLang's own exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import Any

COMMAND = "sglang-launch"
HELP = "run SGLang's launch_server with the eagle3-contracts dump/guard forward hooks"
DRAFT_FLAG = "--speculative-draft-model-path"
HOOKS_FLAG = "--forward-hooks"
HOOKS_LIMIT = 1 << 20  # characters of a --forward-hooks value (real ones are a few hundred)


EPILOG = (
    "environment: EAGLE3_CONTRACTS_GUARD=warn|strict checks, at the first prefill, that the "
    "drafter's fc receives the layers it was trained on (warn: one line; strict: the server "
    "stops); EAGLE3_CONTRACTS_DUMP=DIR writes what the drafter's fc receives at the first "
    "prefill as a safetensors dump in DIR (eagle3-contracts diagnose reads it); "
    "EAGLE3_CONTRACTS_TRAINED_WITH=SYSTEM is the training claim when the drafter has no stamp. "
    "With neither GUARD nor DUMP set the hooks stay inert."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.add_argument(
        "--print-command",
        action="store_true",
        help="print the SGLang command line (with the hooks) instead of running it",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the Python that has sglang installed (default: this one)",
    )
    parser.add_argument(
        "sglang_args",
        nargs=argparse.REMAINDER,
        help="after --: the arguments of `python -m sglang.launch_server`",
    )


def _take(args: list[str], flag: str) -> tuple[str | None, list[str]]:
    """``flag VALUE`` or ``flag=VALUE`` out of ``args``: (value, the rest)."""
    rest: list[str] = []
    value: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == flag:
            if i + 1 >= len(args):
                from eagle3_contracts.cli import UsageError

                raise UsageError(f"{flag} needs a value")
            value = args[i + 1]
            i += 2
            continue
        if arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return value, rest


def sglang_command(python: str, sglang_args: list[str]) -> list[str]:
    """The launch_server command with our hook specs merged into ``--forward-hooks``."""
    from eagle3_contracts._io import load_json
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.integrations.sglang import forward_hooks

    args = list(sglang_args)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        raise UsageError("give SGLang's launch_server arguments after --, e.g. -- --model-path M")
    draft, _ = _take(args, DRAFT_FLAG)
    given, args = _take(args, HOOKS_FLAG)
    specs: list[Any] = []
    if given is not None:
        if len(given) > HOOKS_LIMIT:
            raise UsageError(
                f"{HOOKS_FLAG} is {len(given)} characters, over the {HOOKS_LIMIT} limit; give "
                "SGLang a short JSON list of hook specs"
            )
        # bounded depth: a deeply nested value is refused, never a RecursionError
        specs = load_json(given, what=f"{HOOKS_FLAG} value", source=None)
        if not isinstance(specs, list):
            raise UsageError(f"{HOOKS_FLAG} must be a JSON list of hook specs")
    specs += forward_hooks(draft_dir(draft))
    return [python, "-m", "sglang.launch_server", *args, HOOKS_FLAG, json.dumps(specs)]


def draft_dir(draft: str | None) -> str | None:
    """The drafter's local folder, whose ``config.json`` carries the stamp the hooks read: a
    folder as given; a Hub id (``org/name[@revision]``) as the cached snapshot holding its
    ``config.json``, resolved as ``check`` resolves it (cache first, else only that file is
    downloaded; SGLang fetches the weights itself). Anything else: ``None`` (no stamp read)."""
    if draft is None:
        return None
    if os.path.isdir(draft):
        return draft
    from eagle3_contracts.config import readers as hub

    if hub.parse_hub_id(draft) is None:
        return None
    folder, _ = hub.resolve_model(draft, what="draft")
    return folder


def _check_sglang(python: str) -> None:
    """A usage error naming ``python`` when it cannot be run or has no SGLang installed."""
    import subprocess

    from eagle3_contracts.cli import UsageError

    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('sglang') is None)"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise UsageError(
            f"--python {python}: cannot run it ({reason}); name a Python that has sglang"
        ) from None
    if done.returncode == 1:
        raise UsageError(
            f"SGLang is not installed for {python}: install it there (pip install sglang) or "
            "pass --python PATH of a Python that has it"
        )
    if done.returncode != 0:
        raise UsageError(
            f"--python {python}: it exited {done.returncode} on a one-line import check; name "
            "a Python that has sglang"
        )


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.integrations._guard.settings import ENV_DUMP, ENV_GUARD, parse_mode

    try:
        mode = parse_mode(os.environ.get(ENV_GUARD))
    except Exception as exc:
        raise UsageError(str(exc)) from None
    command = sglang_command(args.python, list(args.sglang_args))
    if args.print_command:
        print(shlex.join(command))
        return 0
    _check_sglang(args.python)
    if mode is None and not os.environ.get(ENV_DUMP, "").strip():
        print(
            f"eagle3-contracts sglang-launch: neither {ENV_DUMP} nor {ENV_GUARD} is set: the "
            "hooks stay inert",
            file=sys.stderr,
        )
    else:
        from eagle3_contracts.integrations.sglang import draft_problem

        draft, _ = _take(list(args.sglang_args), DRAFT_FLAG)
        problem = draft_problem(draft_dir(draft), refuse_unreadable=True)
        if problem is not None:
            print(
                f"eagle3-contracts sglang-launch: {problem}: the hooks stay off, SGLang runs "
                "as without them",
                file=sys.stderr,
            )
    os.execv(command[0], command)  # replaces this process: SGLang's exit code is ours
    return 0  # pragma: no cover - execv does not return
