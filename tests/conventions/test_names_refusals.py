"""What a refused system name says: the one line a user reads when a name is no system's.

The words are the contract here: each refusal names the field, what was typed, and what would be
accepted instead (the checked releases, the closest known names, the '==' a release needs).
"""

from __future__ import annotations

import pytest

from eagle3_contracts.conventions import (
    engine_name,
    engine_spec,
    known_names,
    parse_convention,
    parse_system,
)
from eagle3_contracts.errors import ContractError

KNOWN = ", ".join(known_names())
RELEASES = "(or a release, e.g. 'sglang==0.5.23', 'vllm==0.33.0:v1', 'specforge==0.2.0')"


def refusal(name: str, field: str = "serve_with") -> str:
    with pytest.raises(ContractError) as err:
        parse_system(name, field=field)
    assert err.value.field == field
    return str(err.value)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "speculators==0.8.0",
            "'speculators==0.8.0': speculators names one reading for every release; checked "
            "releases: speculators==0.9.0 (or the unversioned 'speculators')",
        ),
        (
            "trtllm==1.0",
            "'trtllm==1.0': trtllm names one reading for every release; give it unversioned, "
            "'trtllm'",
        ),
    ],
)
def test_a_version_on_a_fixed_reading_names_what_is_checked(name: str, said: str) -> None:
    assert refusal(name) == said


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("spcforge", "did you mean 'specforge' or 'specforge-hf'? "),
        ("vlm:v1", "did you mean 'vllm'? "),
        (
            "sglang=0.5.23",
            "a release is named with '==' (sglang==VERSION); did you mean 'sglang' or "
            "'sglang-legacy' or 'sglang-gpt-oss'? ",
        ),
        ("zzz", ""),  # nothing close: no guess
    ],
)
def test_an_unknown_name_says_the_closest_known_names(name: str, hint: str) -> None:
    assert refusal(name, "trained_with") == (
        f"unknown system name {name!r}: {hint}known: {KNOWN} {RELEASES}"
    )


@pytest.mark.parametrize("name", ["specforge", "trtllm", "output"])
def test_a_serving_engine_must_be_an_engine_release(name: str) -> None:
    with pytest.raises(ContractError) as err:
        engine_spec(name, field="serve_with")
    assert err.value.field == "serve_with"
    assert str(err.value) == (
        f"{name!r}: release answers exist for sglang, vllm (e.g. 'sglang==0.5.23', "
        "'vllm==0.33.0:v1')"
    )


def test_engine_name_is_the_key_the_package_reads_back() -> None:
    assert engine_name("vllm", "0.32.0", "v1") == "vllm==0.32.0:v1"
    assert engine_name("sglang", "0.5.23") == "sglang==0.5.23"
    assert engine_name("VLLM", "0.33.0", None) == "vllm==0.33.0"
    with pytest.raises(ContractError) as err:
        engine_name("specforge", "0.2.0")
    assert (err.value.field, str(err.value)) == ("release", "'specforge' is not an engine")
    with pytest.raises(ContractError) as err:
        engine_name("sglang", "0.5.23", "v1")  # only vLLM has runners
    assert err.value.field == "release"


@pytest.mark.parametrize("text", ["canonical", " CANONICAL ", "Canonical"])
def test_canonical_is_no_system_in_any_spelling(text: str) -> None:
    assert parse_convention(text, field="convention") is None


def test_a_convention_that_is_a_system_is_parsed() -> None:
    spec = parse_convention("sglang==0.5.23", field="convention")
    assert spec is not None and spec.key == "sglang==0.5.23"
    with pytest.raises(ContractError) as err:
        parse_convention("canonicl", field="convention")
    assert err.value.field == "convention"


def test_a_name_with_two_single_equals_is_matched_on_what_precedes_the_first() -> None:
    said = refusal("sglang=0.5=23")
    assert "a release is named with '==' (sglang==VERSION); did you mean 'sglang' or" in said


def test_at_most_three_names_are_suggested(monkeypatch: pytest.MonkeyPatch) -> None:
    from eagle3_contracts import conventions

    similar = ("abcd1", "abcd2", "abcd3", "abcd4")
    monkeypatch.setattr(conventions, "known_names", lambda: similar)
    said = refusal("abcd")  # difflib's best three, ties by reverse order
    assert "did you mean 'abcd4' or 'abcd3' or 'abcd2'? known:" in said


def test_every_checked_release_of_a_fixed_reading_is_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from eagle3_contracts import conventions

    monkeypatch.setitem(conventions.FIXED_RELEASES, "speculators==0.8.0", "speculators")
    assert "checked releases: speculators==0.9.0, speculators==0.8.0 (or the unversioned" in (
        refusal("speculators==0.7.0")
    )


@pytest.mark.parametrize(
    ("name", "newest"),
    [("specforge", " (the newest probed release)"), ("specforge==0.2.0", "")],
)
def test_a_trainer_without_a_target_is_refused_saying_which_release(name: str, newest: str) -> None:
    from eagle3_contracts import conventions

    with pytest.raises(ContractError) as err:
        conventions.get(name)
    assert err.value.field == "target"
    assert str(err.value).startswith(
        f"{name!r} means specforge==0.2.0{newest}, which captures through sglang==0.5.14: "
    )


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("specforge", "specforge = specforge==0.2.0 (unversioned: the newest probed release), "),
        ("specforge==0.2.0", "specforge==0.2.0 = specforge==0.2.0, "),
    ],
)
def test_a_trainer_is_answered_from_the_model_type_alone(name: str, said: str) -> None:
    """A target known by its model_type (no architectures) picks the model file too."""
    from eagle3_contracts import conventions

    convention = conventions.get(name, model_type="deepseek_v3")
    assert convention.name == "sglang==0.5.14:deepseek_v2.py"
    assert convention.notes[0] == (
        f"{said}whose training features are what sglang==0.5.14 captures for this target"
    )


@pytest.mark.parametrize(
    ("name", "means"),
    [
        ("sglang", "the newest probed sglang release"),
        ("vllm:v1", "the newest probed vllm release"),
        ("sglang==0.5.23", "sglang==0.5.23"),
    ],
)
def test_an_engine_without_a_target_is_refused_naming_the_target(name: str, means: str) -> None:
    from eagle3_contracts import conventions

    with pytest.raises(ContractError) as err:
        conventions.get(name)
    assert err.value.field == "target"
    assert str(err.value) == (
        f"{name!r} means {means}, whose rule depends on the target's model file: give the "
        "target (--target CONFIG, its config's architectures/model_type)"
    )
