"""Docs that run: every code example in README.md and docs/ runs here, as written.

Every Markdown file under docs/ is found by a glob, so a new page is covered without touching
this file. Each fenced block is handled by its language:

* ``python``: each block runs alone, in a fresh namespace (a reader copies one snippet, not the
  page), with ``__name__ == "__main__"``, in a scratch directory, under hypothesis's *default*
  profile (a reader's, not this repository's); every ``test_*`` function it defines is then
  called.
* ``console``: each ``$ eagle3-contracts ...`` line runs the installed console script in a
  scratch directory holding the embedded examples (``kimi-k2.5/target.json``, ... as
  ``eagle3_contracts/config/examples/`` ships them); the lines after it are its stdout, compared line by line (a line ``...`` skips any number of
  lines, ``...`` inside a line matches any text). A block whose preceding comment says
  ``<!-- ...: tests/X.py runs these commands as written -->`` is run by that test instead (it
  prepares what the commands need, e.g. a Hub cache): the test file must exist and name the
  page.
* ``bash`` / ``sh`` / ``shell``: commands to run elsewhere (a GPU, the network, an engine):
  every ``eagle3-contracts`` command must parse with the real parser, every
  ``python -m eagle3_contracts.X`` name an existing module, every ``python FILE`` an existing
  file, every ``tox -e ENV`` a tox environment.
* ``json`` parses; ``ini``'s ``eagle3_*`` keys are options the pytest plugin defines.
* a block without a language (or ``text``) is output, a synopsis or prose and must not look
  like a command; any other language is an error until this file learns it.
* every ``pytest.mark.NAME`` a page names is a marker pytest or the plugin defines.

``<!-- docs-test: MARKER -->`` on the line before a block adds a pytest marker to its test
(``distributed`` for examples that start processes).
"""

from __future__ import annotations

import configparser
import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli._entry import ROOT, run_entry

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
SHELLS = frozenset({"bash", "sh", "shell"})
KNOWN = frozenset({"", "text", "python", "console", "json", "ini", *SHELLS})
FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)\s*$")
TAG = re.compile(r"<!--\s*docs-test:\s*([\w ,-]+?)\s*-->")
SUBCOMMANDS = (
    "check",
    "diagnose",
    "demo",
    "stages",
    "stamp",
    "sglang-launch",
    "fix",
    "accept",
    "doctor",
    "--",
)
COMMAND_START = re.compile(
    rf"^(\$ |eagle3-contracts ({'|'.join(SUBCOMMANDS)})(\s|$)|python3? |tox |pip |[A-Z0-9_]+=\S* )"
)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    tags: tuple[str, ...]  # pytest markers from a <!-- docs-test: ... --> comment before it
    before: str = ""  # the last non-blank line before the block

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of one Markdown file, with their language and tags."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, lang = opening.groups()
        before = next((t for t in reversed(lines[:i]) if t.strip()), "")
        tag = TAG.search(before)
        tags = tuple(t.strip() for t in tag.group(1).split(",")) if tag else ()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == fence)
        text = "\n".join(lines[i + 1 : end])
        blocks.append(Block(path, i + 1, lang.lower(), text, tags, before))
        i = end + 1
    return blocks


ALL = [b for path in DOCS for b in read_blocks(path)]


def _params(lang: frozenset[str] | str) -> list[Any]:
    langs = {lang} if isinstance(lang, str) else lang
    return [
        pytest.param(b, id=b.where, marks=[getattr(pytest.mark, t) for t in b.tags])
        for b in ALL
        if b.lang in langs
    ]


# -- every block is one this file knows how to run ---------------------------------------------
@pytest.mark.parametrize("block", _params(frozenset(KNOWN | {b.lang for b in ALL})))
def test_every_block_has_a_known_language_and_commands_are_tagged(block: Block) -> None:
    assert block.lang in KNOWN, (
        f"{block.where}: a ```{block.lang} block; tests/test_docs.py runs only "
        f"{sorted(KNOWN - {''})} (and untagged output): tag it or teach the test"
    )
    if block.lang == "":
        first = next((t for t in block.text.splitlines() if t.strip()), "")
        assert not COMMAND_START.match(first), (
            f"{block.where}: an untagged block that starts like a command ({first[:40]!r}): "
            "tag it ```console (run, output compared) or ```bash (checked, not run)"
        )


# -- python -------------------------------------------------------------------------------------
@contextlib.contextmanager
def _default_hypothesis_profile() -> Iterator[None]:
    """Hypothesis's own defaults (200 ms deadline, 100 examples), as a reader's project has."""
    from hypothesis import settings

    before = settings.get_current_profile_name()
    settings.load_profile("default")
    try:
        yield
    finally:
        settings.load_profile(before)


@pytest.mark.parametrize("block", _params("python"))
def test_python_examples_run(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block runs alone, in a fresh namespace: a reader copies one snippet, not the page."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    with _default_hypothesis_profile():
        code = compile(block.text, f"{block.where} (python block)", "exec")
        exec(code, namespace)
        for name, fn in list(namespace.items()):
            if name.startswith("test_") and callable(fn) and _takes_no_arguments(fn):
                fn()


def _takes_no_arguments(fn: Any) -> bool:
    """A test function callable as it is (hypothesis's ``@given`` fills its own arguments;
    one that wants pytest fixtures is left to pytest)."""
    import inspect

    required = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return not required


# -- console ------------------------------------------------------------------------------------
def _sessions(block: Block) -> list[tuple[str, list[str]]]:
    """``(command, expected stdout lines)`` per ``$ `` line of a console block."""
    sessions: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            sessions.append((line[2:], []))
        else:
            assert sessions, f"{block.where}: a console block starts with a `$ ` command line"
            sessions[-1][1].append(line.rstrip())
    return sessions


def _line_matches(expected: str, actual: str) -> bool:
    if "..." not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Do ``actual`` lines match ``expected`` (``...`` lines skip any number of lines)?"""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(output_matches(rest, actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and _line_matches(head, actual[0]) and output_matches(rest, actual[1:])


DELEGATED = re.compile(r"<!--.*?(tests/\S+\.py) runs these commands as written.*?-->")


@pytest.mark.parametrize("block", _params("console"))
def test_console_examples_print_what_the_docs_show(block: Block, tmp_path: Path) -> None:
    from eagle3_contracts.config import examples

    delegated = DELEGATED.search(block.before)
    if delegated:  # that test builds what the commands need and runs them as written
        runner = ROOT / delegated.group(1)
        assert runner.is_file(), f"{block.where}: {delegated.group(1)} does not exist"
        assert block.path.name in runner.read_text(encoding="utf-8"), (
            f"{block.where}: {delegated.group(1)} does not read {block.path.name}"
        )
        return

    for name in examples.names():
        shutil.copytree(Path(examples.__file__).parent / name, tmp_path / name)
    for command, expected in _sessions(block):
        argv = shlex.split(command)
        assert argv[0] == "eagle3-contracts", f"{block.where}: only eagle3-contracts runs here"
        done = run_entry(*argv[1:], cwd=tmp_path, timeout=300)
        assert done.returncode in (0, 1), f"{block.where}: `{command}`: {done.stderr}"
        actual = [line.rstrip() for line in done.stdout.splitlines()]
        while expected and not expected[-1]:
            expected = expected[:-1]
        assert output_matches(expected, actual), (
            f"{block.where}: `{command}` printed:\n{done.stdout}\nthe doc shows:\n"
            + "\n".join(expected)
        )


def test_the_output_matcher_skips_and_compares() -> None:
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a ... s", "..."], ["a 3.4 s", "x"])
    assert not output_matches(["a", "d"], ["a", "b", "d"])
    assert not output_matches(["a", "...", "e"], ["a", "b", "d"])


# -- shell commands shown, not run ----------------------------------------------------------
def _commands(text: str) -> Iterator[list[str]]:
    """Each simple command of a shell block (continuations joined, comments and leading
    ``NAME=value`` assignments dropped, split at ``&&``, ``||``, ``;`` and ``|``)."""
    joined = re.sub(r"\\\n", " ", text)
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in [*words, ";"]:
            if word in ("&&", "||", ";", "|"):
                while current and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", current[0]):
                    current = current[1:]
                if current:
                    yield current
                current = []
            else:
                current.append(word)


def _tox_envs() -> set[str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini")
    return {s.split(":", 1)[1] for s in parser.sections() if s.startswith("testenv:")}


@pytest.mark.parametrize("block", _params(SHELLS))
def test_shell_commands_name_real_commands_options_and_files(block: Block) -> None:
    from eagle3_contracts.cli import build_parser

    for argv in _commands(block.text):
        program = Path(argv[0]).name
        if program == "eagle3-contracts":
            try:
                build_parser().parse_args(argv[1:])
            except SystemExit as exc:  # --help and --version exit 0
                assert exc.code == 0, f"{block.where}: {shlex.join(argv)}"
            except Exception as exc:
                pytest.fail(f"{block.where}: `{shlex.join(argv)}` does not parse: {exc}")
        elif program.startswith("python") and argv[1:2] == ["-m"]:
            module = argv[2]
            if module.startswith("eagle3_contracts"):
                assert importlib.util.find_spec(module), f"{block.where}: no module {module}"
        elif program.startswith("python") and len(argv) > 1 and argv[1].endswith(".py"):
            assert (ROOT / argv[1]).is_file(), f"{block.where}: no file {argv[1]}"
        elif program == "tox" and "-e" in argv:
            env = argv[argv.index("-e") + 1]
            assert set(env.split(",")) <= _tox_envs(), f"{block.where}: no tox env {env}"


def test_shell_commands_are_split_like_a_shell() -> None:
    text = "A=1 B=2 tox -e gpu -- x  # note\npython -m m refresh && eagle3-contracts \\\n  check --list"
    assert list(_commands(text)) == [
        ["tox", "-e", "gpu", "--", "x"],
        ["python", "-m", "m", "refresh"],
        ["eagle3-contracts", "check", "--list"],
    ]


# -- data -------------------------------------------------------------------------------------
@pytest.mark.parametrize("block", _params("json"))
def test_json_examples_parse(block: Block) -> None:
    json.loads(block.text)


@pytest.mark.parametrize("block", _params("ini"))
def test_ini_examples_use_only_options_the_plugin_defines(block: Block) -> None:
    from eagle3_contracts.testing.pytest_plugin import OPTIONS

    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(block.text)
    keys = {k for s in parser.sections() for k in parser[s] if k.startswith("eagle3_")}
    assert keys, f"{block.where}: an ini example without eagle3_* options"
    assert keys <= set(OPTIONS), f"{block.where}: unknown options {sorted(keys - set(OPTIONS))}"


PYTEST_MARKS = frozenset(
    {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_pytest_markers_named_in_the_docs_exist(path: Path) -> None:
    from eagle3_contracts.testing.pytest_plugin import GPU_MARKER

    named = set(re.findall(r"pytest\.mark\.(\w+)", path.read_text(encoding="utf-8")))
    unknown = named - PYTEST_MARKS - {GPU_MARKER}
    assert not unknown, f"{path.name} names markers nobody defines: {sorted(unknown)}"


def test_docs_are_found_by_a_glob() -> None:
    assert ROOT / "docs" / "readme" / "core.md" in DOCS and len(DOCS) >= 8
    assert os.path.basename(DOCS[0]) == "README.md"
