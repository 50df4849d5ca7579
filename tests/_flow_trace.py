"""Which package modules a flow runs code in, traced with ``sys.setprofile`` in this process.

Run as ``python -m tests._flow_trace check|diagnose ARGS...``: prints one JSON object, ``modules``
(in first-entry order) and ``returns`` (direct calls back into a module the call stack already
left for another package module: ``A -> B -> A``).

Left out on purpose, because no data passes through them: the CLI (argument parsing, printing),
the argument parser's ``config.examples`` listing, and ``capture.threads`` (the CLI's process
set-up: how many cores torch may use). Code run while a module is being imported is left out too
(class creation, registry tables built at import), and so is the package root's lazy
re-export (``eagle3_contracts.__getattr__`` imports a module on first use). A hook that torch calls during a forward is
the registering module's own step (``capture.identify`` observes the states of the forward it
runs), so only a package-to-package call with no foreign frame between counts as a return.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from types import FrameType
from typing import Any

PACKAGE = "eagle3_contracts"
LEFT_OUT = (
    f"{PACKAGE}.cli",
    f"{PACKAGE}.config.examples",
    f"{PACKAGE}.__main__",
    f"{PACKAGE}.capture.threads",
)


def _module(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return "" if name else None  # "": a foreign frame (torch, stdlib)
    if any(name == s or name.startswith(s + ".") for s in LEFT_OUT):
        return ""
    return name.removeprefix(PACKAGE + ".") or "__init__"


def trace(argv: list[str]) -> dict[str, Any]:
    from eagle3_contracts.cli import main

    modules: dict[str, None] = {}
    returns: set[str] = set()
    stack: list[str | None] = []  # one entry per frame: module, "" (foreign) or None (import)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            importing = (
                frame.f_code.co_name == "<module>"
                or None in stack
                or (
                    frame.f_globals.get("__name__") == PACKAGE
                    and frame.f_code.co_name == "__getattr__"
                )
            )
            module = None if importing else _module(frame)
            if module:
                modules.setdefault(module)
                left = [m for m in stack if m is not None]
                if left and left[-1] != module and module in left:
                    back = left[len(left) - 1 - left[::-1].index(module) :]
                    if "" not in back:  # a direct call back, not a hook torch invoked
                        returns.add(" -> ".join([*dict.fromkeys(back), module]))
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        sys.setprofile(profile)
        try:
            code = main(argv)
        finally:
            sys.setprofile(None)
    return {"exit": code, "modules": list(modules), "returns": sorted(returns)}


if __name__ == "__main__":
    print(json.dumps(trace(sys.argv[1:])))
