"""``eagle3-contracts`` command line.

Each subcommand is a module in this package defining ``COMMAND`` (its name), ``HELP`` (one
line), ``add_arguments(parser)`` and ``run(args) -> int``. Modules are discovered, so adding a
subcommand touches no shared file. Subcommand modules import torch lazily, inside ``run``.

Exit codes: 0 all good, 1 a mismatch/violation found, 2 bad input (one line on stderr),
3 an internal error: a bug in eagle3-contracts (one line asking for a report; ``--debug``
prints the traceback). 130 on Ctrl-C. A closed stdout (``| head -1``) never turns a verdict
into 0: the verdict's own code when it was known, else 141 (128 + SIGPIPE, as a shell reports a
writer killed by a closed pipe).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from eagle3_contracts.errors import Eagle3ContractsError

PROG = "eagle3-contracts"
EXIT_INTERNAL = 3
"""Exit code of a crash: an exception no input check anticipated (a bug to report)."""
EXIT_BROKEN_PIPE = 141
"""Exit code when the reader closed stdout before the verdict was known (128 + SIGPIPE)."""


class UsageError(Eagle3ContractsError, ValueError):
    """Bad command-line usage."""


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors raise instead of printing a multi-line usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def parse_ids(text: str, option: str = "--ids") -> tuple[int, ...]:
    """Comma-separated layer ids given on the command line (``"2, 30,58"``); a ``UsageError``
    naming the option and the item that is not an integer."""
    from eagle3_contracts.layer_ids import check_id_count

    check_id_count(text.count(",") + 1, field=option)
    parts = [part.strip() for part in text.split(",")]
    if parts == [""]:
        raise UsageError(f"{option} is empty; give comma-separated layer ids like 2,30,58")
    ids = []
    for i, part in enumerate(parts):
        try:
            ids.append(int(part))
        except ValueError:
            raise UsageError(
                f"{option} item {i} ({part!r}) is not an integer; give comma-separated integers "
                f"like 2,30,58"
            ) from None
    return tuple(ids)


def _subcommands() -> list[ModuleType]:
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "COMMAND") and hasattr(module, "run"):
            modules.append(module)
    return modules


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Check that an EAGLE-3 drafter is fed the target layers it was trained on.",
    )
    debug_help = "on an internal error (exit 3), print the traceback"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    import eagle3_contracts

    version = f"{PROG} {eagle3_contracts.__version__}"
    parser.add_argument("--version", action="version", version=version)
    common = _Parser(add_help=False)  # --debug after the subcommand, too
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in _subcommands():
        p = sub.add_parser(
            module.COMMAND, help=module.HELP, description=module.HELP, parents=[common]
        )
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used by the console script)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv[: argv.index("--")] if "--" in argv else "--debug" in argv
    code: int | None = None
    try:
        args = build_parser().parse_args(argv)
        code = int(args._run(args))
        sys.stdout.flush()  # here, not at interpreter exit, where a closed pipe is unreported
        return code
    except BrokenPipeError:
        # The reader (``| head``) went away: not an input error, and not a pass either.
        from eagle3_contracts.cli._output import drop_stdout

        drop_stdout()
        return EXIT_BROKEN_PIPE if code is None else code
    except (Eagle3ContractsError, OSError) as exc:  # bad input: ours to name, or the OS's
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a crash, not a finding: its own code, a report request
        if debug:
            traceback.print_exc()
        message = " ".join(str(exc).split())[:300]
        detail = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        hint = "" if debug else "; rerun with --debug for the traceback"
        print(
            f"{PROG}: internal error (a bug in eagle3-contracts; please report it with the "
            f"command line): {detail}{hint}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def entry() -> None:  # pragma: no cover - thin wrapper
    sys.exit(main())
