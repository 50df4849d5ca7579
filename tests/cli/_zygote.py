"""A pre-loaded process that runs CLI cases in forked, resource-limited children.

``python tests/cli/_zygote.py`` imports the CLI, torch and transformers once, then reads one
JSON request per line on stdin: ``{"argv": [...], "out": path, "err": path, "timeout": s,
"memory": bytes}``. For each it forks a child that caps its address space (``RLIMIT_AS`` =
what the zygote already maps + ``memory``), sends stdout/stderr to the two files and runs
``eagle3_contracts.cli.main(argv)``; the zygote kills a child that outlives ``timeout`` and
answers one JSON line: ``{"code": int | null, "wall": s, "timed_out": bool, "maxrss_mib": n}``.

Forking a warm process costs milliseconds where a fresh interpreter costs seconds of imports,
so a corpus of a hundred hostile inputs runs in seconds, each in its own limited process.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time


def _mapped_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def _child(request: dict[str, object]) -> None:  # never returns
    code = 70
    try:
        limit = _mapped_bytes() + int(request["memory"])  # type: ignore[call-overload]
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        for fd, key in ((1, "out"), (2, "err")):
            target = os.open(str(request[key]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child's whole life
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        from eagle3_contracts.cli import main

        code = main([str(a) for a in request["argv"]])  # type: ignore[attr-defined]
    except BaseException as exc:  # the CLI must never get here; say so loudly
        print(f"ZYGOTE: uncaught {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 71
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _run(request: dict[str, object]) -> dict[str, object]:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request)
    deadline = start + float(request["timeout"])  # type: ignore[arg-type]
    timed_out = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            timed_out = True
            break
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    return {
        "code": None if timed_out else code,
        "wall": round(time.monotonic() - start, 3),
        "timed_out": timed_out,
        "maxrss_mib": round(usage.ru_maxrss / 1024, 1),
    }


def main() -> None:
    import torch
    import transformers  # noqa: F401 - warm the import the diagnose cases need

    import eagle3_contracts.capture.targets
    import eagle3_contracts.config.check
    import eagle3_contracts.dumps.diagnose
    import eagle3_contracts.parallel.report  # noqa: F401
    from eagle3_contracts.cli import build_parser

    build_parser()  # imports every subcommand
    from transformers import AutoModelForCausalLM, LlamaConfig

    tiny = LlamaConfig(  # warm transformers' lazy imports once, not in every child
        num_hidden_layers=1,
        hidden_size=8,
        intermediate_size=8,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=16,
    )
    AutoModelForCausalLM.from_config(tiny)
    torch.set_num_threads(1)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(_run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
