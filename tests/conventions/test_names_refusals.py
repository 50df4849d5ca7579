"""What a refused system name says at its edges (the common refusals are in test_names.py):
suggestions, every checked release, and a trainer or engine name given without a target.

The words are the contract here: each refusal names the field, what was typed, and what would be
accepted instead.
"""

from __future__ import annotations

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.conventions import parse_system
from eagle3_contracts.errors import ContractError


def refusal(name: str, field: str = "serve_with") -> str:
    with pytest.raises(ContractError) as err:
        parse_system(name, field=field)
    assert err.value.field == field
    return str(err.value)


def test_a_name_with_two_single_equals_is_matched_on_what_precedes_the_first() -> None:
    said = refusal("sglang=0.5=23")
    assert "a release is named with '==' (sglang==VERSION); did you mean 'sglang' or" in said


def test_at_most_three_names_are_suggested(monkeypatch: pytest.MonkeyPatch) -> None:
    similar = ("abcd1", "abcd2", "abcd3", "abcd4")
    monkeypatch.setattr(conventions, "known_names", lambda: similar)
    said = refusal("abcd")  # difflib's best three, ties by reverse order
    assert "did you mean 'abcd4' or 'abcd3' or 'abcd2'? known:" in said


def test_every_checked_release_of_a_fixed_reading_is_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(conventions.FIXED_RELEASES, "speculators==0.8.0", "speculators")
    assert "checked releases: speculators==0.9.0, speculators==0.8.0 (or the unversioned" in (
        refusal("speculators==0.7.0")
    )


@pytest.mark.parametrize(
    ("name", "newest"),
    [("specforge", " (the newest probed release)"), ("specforge==0.2.0", "")],
)
def test_a_trainer_without_a_target_is_refused_saying_which_release(name: str, newest: str) -> None:
    with pytest.raises(ContractError) as err:
        conventions.get(name)
    assert err.value.field == "target"
    assert str(err.value).startswith(
        f"{name!r} means specforge==0.2.0{newest}, which captures through sglang==0.5.14: "
    )


@pytest.mark.parametrize(
    ("name", "unversioned"), [("specforge", True), ("specforge==0.2.0", False)]
)
def test_a_trainer_is_answered_from_the_model_type_alone(name: str, unversioned: bool) -> None:
    """A target known by its model_type (no architectures) picks the model file too: what
    sglang==0.5.14's deepseek_v2.py captures for the ids (loop indices unless ids[0] == 1)."""
    feed = conventions.get(name, model_type="deepseek_v3").feed([2, 30, 58], 61)
    assert (feed.release, feed.model_file, feed.canonical) == (
        "specforge==0.2.0",
        "deepseek_v2.py",
        (1, 29, 57),
    )
    said = " ".join(feed.assumptions)
    assert "what sglang==0.5.14 captures for deepseek_v2.py" in said
    assert ("its newest release specforge==0.2.0" in said) is unversioned


@pytest.mark.parametrize(
    ("name", "means"),
    [
        ("sglang", "the newest probed sglang release"),
        ("vllm:v1", "the newest probed vllm release"),
        ("sglang==0.5.23", "sglang==0.5.23"),
    ],
)
def test_an_engine_without_a_target_is_refused_naming_the_target(name: str, means: str) -> None:
    with pytest.raises(ContractError) as err:
        conventions.get(name)
    assert err.value.field == "target"
    assert str(err.value) == (
        f"{name!r} means {means}, whose rule depends on the target's model file: give the "
        "target (--target CONFIG, its config's architectures/model_type)"
    )
