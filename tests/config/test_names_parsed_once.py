"""A system name is parsed once, where it enters, and flows on typed: one ``check`` (or ``fix``)
run calls ``conventions.parse_system`` once per name given, whatever the rows, served configs,
pipeline split or fix search do with it afterwards."""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle3_contracts.cli import main
from eagle3_contracts.config import examples
from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.fix import fix_drafter
from eagle3_contracts.conventions import SERVING, parse_system

KIMI = Path(examples.__file__).parent / "kimi-k2.5"
SERVE = ("sglang", "vllm", "trtllm", "sglang==0.5.23", "vllm==0.33.0:v1", "vllm-nested")
TRAINED = ("specforge-hf", "specforge", "sglang==0.5.14", "output", "hf-hidden-states")


@contextlib.contextmanager
def parses() -> Iterator[Counter[str]]:
    """Every ``parse_system`` call made inside, counted by the text parsed: a profile hook on
    the function's code, so calls through any imported name are seen."""
    code = parse_system.__code__
    seen: Counter[str] = Counter()
    previous = sys.getprofile()

    def hook(frame: Any, event: str, arg: object) -> None:
        if event == "call" and _parses(frame.f_code, code):
            seen[frame.f_locals["text"]] += 1

    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


def _parses(called: Any, code: Any) -> bool:
    """Whether a called code object is ``parse_system``'s body: its own, or under mutation
    testing (where ``parse_system`` is a shared ``*args, **kwargs`` trampoline) the original or
    a mutant the trampoline runs, ``x_parse_system__mutmut_*``."""
    if "text" not in called.co_varnames:
        return False
    return called is code or called.co_name.startswith("x_parse_system__mutmut_")


def once_each(seen: Counter[str], names: set[str]) -> None:
    """Each given name parsed exactly once, and no other name more than once (a trainer
    table's own capture-engine name is parsed at most once per process)."""
    assert {n: seen[n] for n in names} == dict.fromkeys(names, 1), seen
    assert max(seen.values(), default=0) <= 1, seen


def test_cli_check_example_parses_each_name_once() -> None:
    with parses() as seen, contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["check", "--example", "kimi-k2.5"])
    assert code == 1 and "MISMATCH" in out.getvalue()  # the seed incident: rows disagree
    once_each(seen, {"specforge-hf", *SERVING})
    assert sum(seen.values()) == 1 + len(SERVING)


@settings(max_examples=12, deadline=None)
@given(
    serve=st.lists(st.sampled_from(SERVE), min_size=1, max_size=3, unique=True),
    trained=st.sampled_from(TRAINED),
    pp_size=st.sampled_from((None, 2, 4)),
)
def test_check_drafter_parses_each_name_once(
    serve: list[str], trained: str, pp_size: int | None
) -> None:
    """Two served configs, every row, the pipeline partition and every proven-fix candidate:
    still one parse per name."""
    with parses() as seen:
        report = check_drafter(
            KIMI / "draft.json",
            target=KIMI / "target.json",
            trained_with=trained,
            serve_with=serve,
            served_configs=(KIMI / "draft-fixed.json",),
            pp_size=pp_size,
            environ={},
        )
    assert len(report.rows) == 2 * len(serve)
    once_each(seen, {trained, *serve})


def test_environment_claim_parsed_once() -> None:
    with parses() as seen:
        report = check_drafter(
            KIMI / "draft.json",
            target=KIMI / "target.json",
            serve_with=("sglang==0.5.23",),
            environ={"EAGLE3_CONTRACTS_TRAINED_WITH": "specforge-hf"},
        )
    assert report.claim is not None and report.claim.source.kind == "env"
    once_each(seen, {"specforge-hf", "sglang==0.5.23"})


def test_typed_names_are_not_parsed_again() -> None:
    """A caller that parsed the names (the CLI, the plugin) hands them on typed: nothing is
    parsed, and the report is the one the strings give."""
    serve = ("sglang==0.5.23", "vllm", "trtllm")
    typed = [parse_system(n, field="serve_with") for n in serve]
    trained = parse_system("specforge-hf", field="trained_with")
    kw: dict[str, Any] = {"target": KIMI / "target.json", "environ": {}, "pp_size": 4}
    with parses() as seen:
        report = check_drafter(KIMI / "draft.json", trained_with=trained, serve_with=typed, **kw)
    assert not seen
    plain = check_drafter(KIMI / "draft.json", trained_with="specforge-hf", serve_with=serve, **kw)
    assert report.to_dict() == plain.to_dict()


def test_refusal_names_the_field_the_name_was_given_in() -> None:
    from eagle3_contracts.errors import ContractError

    for kw, field in (
        ({"serve_with": ("sglang==abc",)}, "serve_with"),
        ({"trained_with": "specforg"}, "trained_with"),
        (
            {"environ": {"EAGLE3_CONTRACTS_TRAINED_WITH": "vllm>=0.30"}},
            "EAGLE3_CONTRACTS_TRAINED_WITH",
        ),
    ):
        with pytest.raises(ContractError) as caught:
            check_drafter(KIMI / "draft.json", target=KIMI / "target.json", **{"environ": {}, **kw})
        assert caught.value.field == field


def test_fix_parses_each_name_once(tmp_path: Path) -> None:
    """``fix``'s check, its pin of the claim and its re-check of the edited config share the
    names parsed by the first check."""
    for name in ("draft.json", "target.json"):
        shutil.copy(KIMI / name, tmp_path / name)
    serve = ("sglang==0.5.23", "vllm==0.33.0")
    with parses() as seen:
        fixed = fix_drafter(
            tmp_path / "draft.json",
            target=tmp_path / "target.json",
            serve_with=serve,
            trained_with="specforge-hf",
        )
    assert fixed.edits and fixed.stamp is not None  # ids edited and the claim pinned
    once_each(seen, {"specforge-hf", *serve})


def test_cli_fix_write_parses_each_name_once(tmp_path: Path) -> None:
    """``fix --write``: the CLI parses the options, and its check, pin, re-check and the check
    of the written file all take them typed."""
    for name in ("draft.json", "target.json"):
        shutil.copy(KIMI / name, tmp_path / name)
    argv = ["fix", str(tmp_path / "draft.json"), "--target", str(tmp_path / "target.json")]
    argv += ["--trained-with", "specforge-hf", "--serve-with", "sglang==0.5.23,vllm", "--write"]
    with (
        parses() as seen,
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        code = main(argv)
    assert code == 0 and (tmp_path / "draft.json.bak").is_file()  # written, backup kept
    once_each(seen, {"specforge-hf", "sglang==0.5.23", "vllm"})
