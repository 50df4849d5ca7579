"""Mutation testing of the torch-free core with mutmut.

    python mutation/run.py                 # every mutant of the modules in mutation/config.toml
    python mutation/run.py --sample        # the seeded CI sample (sample_size mutants)
    python mutation/run.py --module eagle3_contracts/layer_ids.py --workdir /tmp/m --keep

mutmut works on a scratch copy of the tree (``--workdir``, a fresh temporary directory unless
given), so a run never writes into the checkout and edits made while it runs do not leak into
it. Each mutant runs against the fast core tests that cover the mutated function.

The report prints killed / timeout / survived / no-tests / equivalent per module and the score:
(killed + timeout) / (mutants - documented equivalents). A survivor is accepted as equivalent
only when mutation/equivalent.toml lists its module, function and changed lines with a reason;
an entry that no longer matches a surviving mutant is reported as stale. Exit status: 0 when the
score reaches ``min_score``, 1 below it, 2 when the tool could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "mutation"
DETECTED = ("killed", "timeout")
SPINNER = "⠏⠋⠙⠹⠸⠼⠴⠦⠧⠇"
COLUMNS = ("mutants", "killed", "timeout", "survived", "no tests", "other", "equivalent", "score")


@dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's name, e.g. eagle3_contracts.layer_ids.x_describe__mutmut_3
    module: str  # eagle3_contracts/layer_ids.py
    function: str  # describe, or CaptureContract.from_dict
    status: str  # killed, timeout, survived, no tests, not checked, suspicious, ...


def load_config(path: Path) -> dict:
    with path.open("rb") as f:
        return tomllib.load(f)


def existing(paths: list[str], what: str) -> list[str]:
    present = [p for p in paths if (ROOT / p).exists()]
    for p in sorted(set(paths) - set(present)):
        print(f"note: {what} {p} does not exist (yet); skipped")
    return present


def mutmut_table(modules: list[str], tests: list[str], also_copy: list[str]) -> str:
    def toml_list(items: list[str]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    return "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["eagle3_contracts"]',
            f"only_mutate = {toml_list(modules)}",
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
            # one seed: a hypothesis test must not kill a mutant on one run and miss it on the next
            'pytest_add_cli_args = ["--hypothesis-seed=0", "-p", "no:xdist", "-p", "deselect_plugin"]',
            f"also_copy = {toml_list([*also_copy, 'deselect_plugin.py', 'mutation-deselect.txt'])}",
            # the tests import torch (conftest's thread fixture): fork from a clean server process
            'process_isolation = "forkserver"',
            "use_git_change_detection = false",
            "",
        ]
    )


def prepare(
    work: Path, modules: list[str], tests: list[str], also_copy: list[str], rev: str | None
) -> None:
    """Copy the tree mutmut needs into ``work``: the working tree, or the committed tree of
    ``rev``. mutmut regenerates a module's mutants when the source is newer than its mutated
    copy, so a file whose content is unchanged keeps its previous mtime (its results stay
    cached) and a changed one gets a new mtime."""
    work.mkdir(parents=True, exist_ok=True)
    stamp = work / "mutation-modules.json"
    wanted = json.dumps({"modules": modules, "tests": tests})
    if stamp.exists() and stamp.read_text() != wanted:
        # mutmut keeps plain copies of the files it did not mutate, which it would not redo
        shutil.rmtree(work / "mutants", ignore_errors=True)
    # mutmut copies the tests anew each run, but other files of the package only when absent
    shutil.rmtree(work / "mutants" / "tests", ignore_errors=True)
    for p in (work / "mutants" / "eagle3_contracts").rglob("*"):
        if p.is_file() and p.suffix not in (".py", ".meta", ".spans"):
            p.unlink()
    package = work / "eagle3_contracts"
    before = {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in package.rglob("*.py") if p.is_file()
    }
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    names = ["eagle3_contracts", "tests", *also_copy]
    for name in names:
        src, dst = ROOT / name, work / name
        if dst.is_dir():
            shutil.rmtree(dst)
        if rev is None and src.is_dir():
            shutil.copytree(src, dst, ignore=ignore)
        elif rev is None and src.exists():
            shutil.copy2(src, dst)
    if rev is not None:
        tracked = subprocess.run(
            ["git", "ls-tree", "--name-only", rev, *names],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        archive = subprocess.run(
            ["git", "archive", rev, *tracked, "pyproject.toml"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    now = time.time_ns()
    for p in package.rglob("*.py"):
        old = before.get(p)
        mtime = old[1] if old is not None and old[0] == p.read_bytes() else now
        os.utime(p, ns=(mtime, mtime))
    shutil.copy2(HERE / "deselect_plugin.py", work / "deselect_plugin.py")
    pyproject = (work / "pyproject.toml" if rev else ROOT / "pyproject.toml").read_text()
    if "[tool.mutmut]" in pyproject:
        raise SystemExit(
            "pyproject.toml has its own [tool.mutmut]; mutation/config.toml is the one"
        )
    (work / "pyproject.toml").write_text(pyproject + mutmut_table(modules, tests, also_copy))
    stamp.write_text(wanted)


def failing_tests(work: Path, tests: list[str]) -> list[str]:
    """Node ids (or files that fail to import) of the tests failing on the unmutated copy."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--rootdir=.",
            "-q",
            "-rfE",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "--hypothesis-seed=0",
            *tests,
        ],
        cwd=work,
        capture_output=True,
        text=True,
    )
    failing = []
    for line in done.stdout.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            failing.append(line.split()[1])
    return failing


def mutmut(work: Path, args: list[str], log: Path) -> int:
    exe = Path(sys.executable).with_name("mutmut")
    cmd = [str(exe) if exe.exists() else "mutmut", *args]
    with log.open("w") as out:
        out.write(f"$ {' '.join(cmd[:6])}{' ...' if len(cmd) > 6 else ''}\n")
        out.flush()
        return subprocess.call(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT)


def _in_work(work: Path) -> None:
    os.chdir(work)  # mutmut reads its configuration and mutants/ relative to the cwd
    sys.path.insert(0, str(work))


def generate(work: Path) -> None:
    """Write the mutants without running anything (the sample needs their names first)."""
    _in_work(work)
    from mutmut.__main__ import create_mutants
    from mutmut.utils.file_utils import copy_src_dir

    Path("mutants").mkdir(exist_ok=True)
    copy_src_dir()
    create_mutants(os.cpu_count() or 2)


def function_of(name: str, module: str) -> str:
    mangled = name.split("__mutmut_")[0].rsplit(".", 1)[-1]  # x_describe, xǁClassǁmethod
    if mangled.startswith("xǁ"):
        return ".".join(mangled[2:].split("ǁ"))
    return mangled[2:]


def collect(work: Path, modules: list[str]) -> list[Mutant]:
    from mutmut.stats import status_by_exit_code

    found = []
    for module in modules:
        meta = work / "mutants" / (module + ".meta")
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name, code in sorted(codes.items()):
            status = status_by_exit_code[code]
            found.append(Mutant(name, module, function_of(name, module), status))
    return found


def change_of(mutant: Mutant) -> list[str]:
    """The changed lines of a mutant ('-old', '+new'), whitespace after the sign dropped."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(mutant.name, path=mutant.module)
    return [
        line[0] + line[1:].strip()
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def load_equivalents(path: Path) -> list[dict]:
    entries = load_config(path).get("equivalent", []) if path.exists() else []
    for e in entries:
        missing = {"module", "function", "change", "reason"} - set(e)
        if missing or not str(e.get("reason", "")).strip():
            raise SystemExit(f"{path}: entry {e} lacks {sorted(missing) or ['a reason']}")
    return entries


def match_equivalents(mutants: list[Mutant], entries: list[dict]) -> tuple[set[str], list[dict]]:
    """Names of the mutants an entry accepts, and the entries that accept none (stale)."""
    keys = {(e["module"], e["function"], tuple(e["change"])): e for e in entries}
    used, accepted = set(), set()
    for m in mutants:
        if (m.module, m.function) not in {(k[0], k[1]) for k in keys}:
            continue
        key = (m.module, m.function, tuple(change_of(m)))
        if key in keys:
            accepted.add(m.name)
            used.add(key)
    return accepted, [e for k, e in keys.items() if k not in used]


def score(killed: int, total: int) -> float:
    return 100.0 * killed / total if total else 100.0


def report(mutants: list[Mutant], equivalent: set[str], modules: list[str]) -> float:
    rows = []
    for module in [*modules, "all"]:
        ms = [m for m in mutants if module in ("all", m.module)]
        if not ms:
            continue
        c = Counter("equivalent" if m.name in equivalent else m.status for m in ms)
        detected = sum(c[s] for s in DETECTED)
        counted = len(ms) - c["equivalent"]
        other = counted - detected - c["survived"] - c["no tests"]
        rows.append(
            [
                module.removeprefix("eagle3_contracts/"),
                len(ms),
                c["killed"],
                c["timeout"],
                c["survived"],
                c["no tests"],
                other,
                c["equivalent"],
                f"{score(detected, counted):.1f}%",
            ]
        )
    widths = [max(len(str(r[i])) for r in [["module", *COLUMNS], *rows]) for i in range(9)]
    for row in [["module", *COLUMNS], *rows]:
        print(
            "  ".join(
                str(v).rjust(w) if i else str(v).ljust(w)
                for i, (v, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    counted = [m for m in mutants if m.name not in equivalent]
    return score(sum(m.status in DETECTED for m in counted), len(counted))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=HERE / "config.toml")
    ap.add_argument("--equivalents", type=Path, default=HERE / "equivalent.toml")
    ap.add_argument(
        "--workdir", type=Path, help="scratch tree (reused when kept); default: a temp dir"
    )
    ap.add_argument(
        "--keep", action="store_true", help="keep the scratch tree (for reruns, `mutmut show`)"
    )
    ap.add_argument("--module", action="append", help="only this module (repeatable)")
    ap.add_argument(
        "--sample",
        nargs="?",
        const=-1,
        type=int,
        metavar="N",
        help="run a seeded sample of N mutants (default: sample_size from the config)",
    )
    ap.add_argument("--seed", type=int)
    ap.add_argument(
        "--function",
        action="append",
        help="only the mutants of this function (repeatable; as the report names them: "
        "parse_system, CapturePlan.kind): a rerun of the functions a change touched",
    )
    ap.add_argument("--extended", action="store_true", help="also mutate extended_modules")
    ap.add_argument(
        "--survivors",
        action="store_true",
        help="rerun only the survivors of a kept --workdir (after adding tests)",
    )
    ap.add_argument(
        "--rev", help="mutate the committed tree of this git revision, not the working tree"
    )
    ap.add_argument(
        "--skip-failing",
        action="store_true",
        help="leave out the tests that fail on the unmutated tree (a tree other work is changing)",
    )
    ap.add_argument("--min-score", type=float)
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    ap.add_argument(
        "--show", action="store_true", help="print the change of each unaccepted survivor"
    )
    args = ap.parse_args(argv)

    cfg = load_config(args.config)
    wanted = args.module or [*cfg["modules"], *(cfg["extended_modules"] if args.extended else [])]
    modules = existing(wanted, "module")
    tests = existing(cfg["tests"], "test path")
    default_min = cfg["ci_min_score"] if args.sample is not None else cfg["min_score"]
    min_score = default_min if args.min_score is None else args.min_score
    if args.rev is not None:  # a hash, so that a moved branch is a new tree
        args.rev = subprocess.run(
            ["git", "rev-parse", "--verify", args.rev + "^{commit}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="eagle3-mutation-"))).resolve()
    log = work / "mutmut.log"
    started = time.monotonic()
    try:
        prepare(work, modules, tests, cfg.get("also_copy", []), args.rev)
        skipped = failing_tests(work, tests) if args.skip_failing else []
        (work / "mutation-deselect.txt").write_text("".join(f"{t}\n" for t in skipped))
        for t in skipped:
            print(f"note: {t} fails on the unmutated tree; left out of this run")
        _in_work(work)
        entries = load_equivalents(args.equivalents)
        names: list[str] = []
        if args.sample is not None:
            generate(work)
            pool = collect(work, modules)
            accepted, _ = match_equivalents(pool, entries)
            pool = [m.name for m in pool if m.name not in accepted]
            n = cfg["sample_size"] if args.sample < 0 else args.sample
            seed = cfg["seed"] if args.seed is None else args.seed
            names = sorted(random.Random(seed).sample(sorted(pool), min(n, len(pool))))
            print(f"sample: {len(names)} of {len(pool)} mutants (seed {seed})")
        elif args.function:
            generate(work)
            wanted_functions = set(args.function)
            pool = collect(work, modules)
            names = [
                m.name
                for m in pool
                if m.function in wanted_functions
                and not (args.survivors and m.status in DETECTED)  # --survivors: only those
            ]
            missing = wanted_functions - {m.function for m in pool}
            if missing:
                print(f"note: no mutants of {', '.join(sorted(missing))} in these modules")
            print(f"functions: {len(names)} mutants of {len(wanted_functions)} functions")
            if not names and args.survivors:
                print("no survivors left in those functions")
                return 0
            if not names:
                raise SystemExit("no mutants of those functions: check the names (--show)")
        elif args.survivors:
            names = [m.name for m in collect(work, modules) if m.status not in DETECTED]
            print(f"rerunning {len(names)} survivors")
            if not names:
                names = []
        if args.survivors and not names:
            rc = 0
        else:
            rc = mutmut(work, ["run", "--max-children", str(args.max_children), *names], log)
        mutants = collect(work, modules)
        if args.function:  # the report covers those functions' mutants, survivors rerun or not
            mutants = [m for m in mutants if m.function in set(args.function)]
        if names:
            chosen = set(names)
            if not args.survivors:
                mutants = [m for m in mutants if m.name in chosen]
        if rc != 0 or not mutants or any(m.status == "not checked" for m in mutants):
            print(f"mutmut did not finish (exit {rc}); the end of {log}:", file=sys.stderr)
            lines = log.read_text().replace("\r", "\n").splitlines()
            lines = [line for line in lines if line.strip() and line[0] not in SPINNER]
            print("\n".join(lines[-40:]), file=sys.stderr)
            return 2
        accepted, stale = match_equivalents(mutants, entries)
        total = report(mutants, accepted, modules)
        survivors = [m for m in mutants if m.status not in DETECTED and m.name not in accepted]
        if args.show:
            for m in survivors:
                print(f"\n{m.status}: {m.name}  ({m.function})")
                print("    " + "\n    ".join(change_of(m)))
        elif survivors:
            print(
                f"{len(survivors)} undetected mutants not listed in {args.equivalents.name} "
                f"(--show prints their changes; `mutmut show NAME` in a kept --workdir)"
            )
        if stale and args.sample is None and not args.module:
            print(
                f"{len(stale)} entries of {args.equivalents.name} match no surviving mutant "
                "(killed now, or the code changed):"
            )
            for e in stale:
                print(f"    {e['module']} {e['function']}: {' / '.join(e['change'])}")
        elapsed = time.monotonic() - started
        verdict = "ok" if total >= min_score else "BELOW"
        print(f"mutation score {total:.1f}% (minimum {min_score:.0f}%): {verdict}; {elapsed:.0f} s")
        return 0 if total >= min_score else 1
    finally:
        os.chdir(ROOT)
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
