"""One name, one meaning: ``conventions.parse_system`` and the entry points that resolve through it.

The property test holds ``check`` (``resolve``, through the release tables), ``diagnose``
(``resolve_claim``), ``stages`` (``stages_report``) and ``conventions.get`` equal for every name
and every probed model file: the same canonical ids, or all of them refuse.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle3_contracts import conventions, resolve
from eagle3_contracts.conventions import (
    ALIASES,
    CANONICAL,
    ENGINES,
    SYSTEM_ORDER,
    TRAINER_NEWEST,
    EngineSpec,
    FixedReading,
    SystemName,
    TrainerSpec,
    engine_name,
    engine_spec,
    known_names,
    needs_target,
    parse_convention,
    parse_system,
    releases,
)
from eagle3_contracts.conventions.release_ids import ReleaseReading
from eagle3_contracts.differences import FindingKind
from eagle3_contracts.dumps.diagnose import resolve_claim
from eagle3_contracts.errors import ContractError
from eagle3_contracts.parallel.report import stages_report

# -- the parser ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("sglang", EngineSpec("sglang", None, None, "sglang")),
        ("sglang==0.5.23", EngineSpec("sglang", "0.5.23", None, "sglang==0.5.23")),
        (" VLLM == 0.33.0 : V1 ", EngineSpec("vllm", "0.33.0", "v1", "VLLM == 0.33.0 : V1")),
        ("vllm:v2", EngineSpec("vllm", None, "v2", "vllm:v2")),
        ("vllm==0.40.0", EngineSpec("vllm", "0.40.0", None, "vllm==0.40.0")),  # unprobed: parses
        ("sglang==0.5.5.post1", EngineSpec("sglang", "0.5.5.post1", None, "sglang==0.5.5.post1")),
        ("vllm==0.32.0+cpu:v1", EngineSpec("vllm", "0.32.0+cpu", "v1", "vllm==0.32.0+cpu:v1")),
        ("vllm-nested", EngineSpec("vllm", "0.33.0", "v1", "vllm-nested")),
        ("sglang-legacy", EngineSpec("sglang", "0.5.12", None, "sglang-legacy")),
        ("sglang-gpt-oss", EngineSpec("sglang", "0.5.17", None, "sglang-gpt-oss")),
        ("specforge", TrainerSpec("specforge", None, "specforge")),
        ("SpecForge == 0.2.0", TrainerSpec("specforge", "0.2.0", "SpecForge == 0.2.0")),
        ("specforge-hf", FixedReading("specforge-hf", "specforge-hf")),
        ("hf-hidden-states", FixedReading("hf-hidden-states", "hf-hidden-states")),
        (" TRTLLM ", FixedReading("trtllm", "TRTLLM")),
        ("eagle-reference", FixedReading("eagle-reference", "eagle-reference")),
        ("speculators==0.9.0", FixedReading("speculators", "speculators==0.9.0")),
        ("modelopt", FixedReading("modelopt", "modelopt")),
        ("output", FixedReading("output", "output")),
        ("boundary", FixedReading("boundary", "boundary")),
    ],
)
def test_every_spelling_parses_to_one_typed_value(text: str, value: SystemName) -> None:
    assert parse_system(text, field="f") == value


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("sglang", "sglang"),
        (" SGLang == 0.5.23 ", "sglang==0.5.23"),
        ("vllm-nested", "vllm==0.33.0:v1"),
        ("vllm:V2", "vllm:v2"),
        ("specforge", "specforge"),
        ("specforge == 0.2.0", "specforge==0.2.0"),
        ("vllm==0.33", "vllm==0.33.0"),  # a release has three numbers, as its wheel is named
        ("VLLM == 0.33 : V1", "vllm==0.33.0:v1"),
        ("sglang==1", "sglang==1.0.0"),
        ("specforge==0.2", "specforge==0.2.0"),
        ("speculators==0.9", "speculators"),
        ("sglang==0.5.5.post1", "sglang==0.5.5.post1"),  # more than numbers: as written
        ("Speculators==0.9.0", "speculators"),
    ],
)
def test_the_key_is_the_canonical_spelling(text: str, key: str) -> None:
    spec = parse_system(text, field="f")
    assert spec.key == key
    assert parse_system(spec.key, field="f").key == key  # the key reads back as itself


def test_a_trainer_stands_for_its_newest_release_until_pinned() -> None:
    bare, pinned = parse_system("specforge", field="f"), parse_system("specforge==0.1", field="f")
    # "0.1" is the release 0.1.0
    assert isinstance(bare, TrainerSpec) and isinstance(pinned, TrainerSpec)
    assert (bare.release_version, bare.release) == ("0.2.0", "specforge==0.2.0")
    assert (pinned.release_version, pinned.release) == ("0.1.0", "specforge==0.1.0")


EMPTY = "a system name is a non-empty string like 'sglang==0.5.23', 'vllm==0.33.0:v1' or "


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", f"{EMPTY}'specforge', got ''"),
        (" ", f"{EMPTY}'specforge', got ' '"),
        (None, f"{EMPTY}'specforge', got None"),
        (3, f"{EMPTY}'specforge', got 3"),
        ("vllm==abc", "'vllm==abc': 'abc' is not a release version (e.g. 'sglang==0.5.23')"),
        ("vllm==0.33", None),  # a version: parses (as 0.33.0)
        (
            "vllm>=0.30",
            "'vllm>=0.30': '>=' names a range of releases and each release answers differently; "
            "name one, vllm==VERSION (e.g. 'vllm==0.33.0', 'sglang==0.5.23')",
        ),
        (
            "SGLang ~= 0.5",
            "'SGLang ~= 0.5': '~=' names a range of releases and each release answers "
            "differently; name one, sglang==VERSION (e.g. 'vllm==0.33.0', 'sglang==0.5.23')",
        ),
        (
            "<0.5:v1",
            "'<0.5:v1': '<' names a range of releases and each release answers differently; "
            "name one, NAME==VERSION (e.g. 'vllm==0.33.0', 'sglang==0.5.23')",
        ),
        ("sglang==", "'sglang==': no version after '=='"),
        ("specforge==", "'specforge==': no version after '=='"),
        ("specforge==x.y", "'specforge==x.y': 'x.y' is not a release version (e.g. 'sglang==0.5.23')"),
        ("sglang:v1", "'sglang:v1': only vLLM has model runners (':v1' or ':v2')"),
        ("specforge:v1", "'specforge:v1': only vLLM has model runners (':v1' or ':v2')"),
        ("vllm:v3", "'vllm:v3': the runner is 'v1' or 'v2', got 'v3'"),
        ("vllm==0.33.0:", "'vllm==0.33.0:': the runner is 'v1' or 'v2', got ''"),
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
)  # fmt: skip
def test_malformed_names_are_refused_with_what_to_change(text: object, message: str) -> None:
    if message is None:
        parse_system(text, field="f")
        return
    with pytest.raises(ContractError) as err:
        parse_system(text, field="serve_with")
    assert err.value.field == "serve_with"
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("spcforge", "'specforge' or 'specforge-hf'"),
        ("sglangg", "'sglang' or 'sglang-legacy' or 'sglang-gpt-oss'"),
        ("vlm", "'vllm'"),
        ("tensorrt", None),
        ("sglang=0.5.23", "'sglang' or 'sglang-legacy' or 'sglang-gpt-oss'"),
    ],
)
def test_an_unknown_name_suggests_the_closest_known(typo: str, meant: str | None) -> None:
    with pytest.raises(ContractError) as err:
        parse_system(typo, field="convention")
    text = str(err.value)
    assert err.value.field == "convention"
    assert text.startswith(f"unknown system name {typo!r}: ")
    if meant is None:
        assert "did you mean" not in text
    else:
        assert f"did you mean {meant}? known: " in text
    assert ("a release is named with '=='" in text) == ("=" in typo)
    assert "known: " + ", ".join(known_names()) + " (or a release, e.g. " in text


def test_known_names_are_every_accepted_unversioned_name() -> None:
    known = known_names()
    assert known[: len(SYSTEM_ORDER)] == SYSTEM_ORDER == conventions.names()
    assert {"specforge", "output", "boundary", "sglang", "vllm", "vllm-nested"} <= set(known)
    assert len(set(known)) == len(known)
    for name in known:
        parse_system(name, field="f")  # each parses
        parse_system(name.upper(), field="f")


def test_one_alias_table_of_probed_releases() -> None:
    probed = releases.known_releases()
    assert ALIASES == {
        "sglang-legacy": "sglang==0.5.12",
        "sglang-gpt-oss": "sglang==0.5.17",
        "vllm-nested": "vllm==0.33.0:v1",
        "z-lab-dflash": "zlab-dflash",
    }
    for alias, release in ALIASES.items():
        spec = parse_system(alias, field="f")
        if isinstance(spec, TrainerSpec):  # another spelling of a trainer's unversioned name
            assert spec.key == release and spec.framework in TRAINER_NEWEST
            continue
        assert isinstance(spec, EngineSpec) and spec.key == release
        assert spec.version in probed[spec.framework]
    # the unversioned engine names are the newest probed releases, never a pinned alias
    for engine in ENGINES:
        assert parse_system(engine, field="f").version is None
    assert not hasattr(releases, "ALIASES")


def test_needs_target_and_parse_convention() -> None:
    assert needs_target(parse_system("sglang", field="f"))
    assert needs_target(parse_system("specforge", field="f"))
    assert not needs_target(parse_system("specforge-hf", field="f"))
    assert parse_convention("canonical", field="f") is None
    assert parse_convention(" Canonical ", field="f") is None
    assert parse_convention(" CANONICAL ", field="f") is None
    assert parse_convention("sglang", field="f") == parse_system("sglang", field="f")
    assert CANONICAL == "canonical"
    with pytest.raises(ContractError) as err:
        parse_convention("canonicall", field="f")
    assert err.value.field == "f"


def test_engine_spec_and_engine_name() -> None:
    assert engine_spec("vllm-nested", field="f").key == "vllm==0.33.0:v1"
    for other in ("specforge", "trtllm", "output"):
        with pytest.raises(ContractError) as err:
            engine_spec(other, field="serve_with")
        assert err.value.field == "serve_with"
        assert str(err.value) == (
            f"{other!r}: release answers exist for sglang, vllm (e.g. 'sglang==0.5.23', "
            "'vllm==0.33.0:v1')"
        )
    assert engine_name("vllm", "0.32.0", "v1") == "vllm==0.32.0:v1"
    assert engine_name("SGLang", "0.5.23") == "sglang==0.5.23"
    assert engine_name("VLLM", "0.33.0", None) == "vllm==0.33.0"
    with pytest.raises(ContractError) as err:
        engine_name("specforge", "0.2.0")
    assert (err.value.field, str(err.value)) == ("release", "'specforge' is not an engine")
    for bad in (("vllm", "dev", None), ("sglang", "0.5.23", "v1")):  # only vLLM has runners
        with pytest.raises(ContractError) as err:
            engine_name(*bad)
        assert err.value.field == "release"


# -- one meaning everywhere: the property -------------------------------------------------------

ENGINE_NAMES = (
    "sglang",
    "sglang-legacy",
    "sglang-gpt-oss",
    *(f"sglang=={v}" for v in releases.known_releases()["sglang"]),
    "vllm",
    "vllm-nested",
    *(f"vllm=={v}" for v in releases.known_releases()["vllm"]),
    *(f"vllm=={v}:v1" for v in releases.known_releases()["vllm"]),
)


def _probed_architectures() -> tuple[str, ...]:
    """Every architecture some probed release maps to a model file."""
    found: set[str] = set()
    for framework, versions in releases.known_releases().items():
        for version in versions:
            found |= set(releases.load_table(framework, version).architectures)
    return tuple(sorted(found))


ARCHITECTURES = _probed_architectures()


def _answers(name: str, ids: tuple[int, ...], arch: str, n: int) -> dict[str, object]:
    """What check, diagnose, stages and conventions.get make of ``ids`` named by ``name`` on a
    target of ``arch``: canonical ids (ascending) or ``None`` for a refusal / no answer."""
    target = {"architectures": [arch], "num_hidden_layers": n, "hidden_size": 16}
    spec = parse_system(name, field="f")
    sglang = isinstance(spec, TrainerSpec) or (
        isinstance(spec, EngineSpec) and spec.framework == "sglang"
    )
    ids_at = "eagle_config" if sglang else None
    draft: dict[str, object] = {"num_aux_hidden_states": len(ids)}
    if ids_at:
        draft["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": list(ids)}
    else:
        draft["eagle_aux_hidden_state_layer_ids"] = list(ids)
    out: dict[str, object] = {}
    plan = resolve(draft, target, name)
    whole = plan.kind == "segments" and len(plan.layer_ids) == len(ids) and not plan.refused
    out["check"] = tuple(sorted(plan.layer_ids)) if whole else None
    try:
        claim = resolve_claim(ids, name, n, basis="dump", architectures=[arch])
        out["diagnose"] = tuple(sorted(claim.expected))
    except ContractError:
        out["diagnose"] = None
    try:
        report = stages_report(ids, n, pp_size=1, convention=name, architectures=[arch])
        verdicts = {f.kind for f in report.findings}  # a crash is a finding, never layers
        no_layers = verdicts & {FindingKind.CRASHES, FindingKind.UNSUPPORTED, FindingKind.UNKNOWN}
        out["stages"] = None if no_layers else tuple(sorted(report.layer_ids))
    except ContractError:
        out["stages"] = None
    try:
        convention = conventions.get(name, architectures=[arch])
        out["get"] = tuple(sorted(convention.to_canonical(ids, n)))
    except ContractError:
        out["get"] = None
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, tuple[int, ...], str, int]:
    name = draw(st.sampled_from((*ENGINE_NAMES, "specforge", "specforge==0.2.0")))
    arch = draw(st.sampled_from(ARCHITECTURES))
    n = draw(st.integers(4, 64))
    ids = draw(st.lists(st.integers(0, n), min_size=3, max_size=3, unique=True))
    return name, tuple(sorted(ids)), arch, n


@settings(max_examples=300, deadline=None)
@given(cases())
def test_check_diagnose_stages_and_get_give_one_answer(case: tuple) -> None:
    """For any engine or trainer name, probed model file and drafter ids: the canonical ids
    ``check`` reports equal what ``diagnose`` expects of a dump labelled with that name, what
    ``stages`` reports and what ``conventions.get`` gives; where one refuses, all do."""
    name, ids, arch, n = case
    answers = _answers(name, ids, arch, n)
    element_wise = {answers["diagnose"], answers["stages"], answers["get"]}
    assert len(element_wise) == 1, (name, ids, arch, n, answers)
    if answers["check"] is not None:  # check's answer is the element-wise one, exactly
        assert answers["get"] == answers["check"], (name, ids, arch, n, answers)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_every_probed_model_file_answers_alike_for_the_unversioned_names(arch: str) -> None:
    for name in ("sglang", "vllm", "specforge"):
        for ids in ((2, 16, 29), (1, 15, 28), (0, 5, 31)):
            answers = _answers(name, ids, arch, 32)
            assert len({answers["diagnose"], answers["stages"], answers["get"]}) == 1, answers
            if answers["check"] is not None:
                assert answers["get"] == answers["check"], (name, arch, ids, answers)


# -- the cases that were seen -------------------------------------------------------------------

LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 16}


def test_sglang_on_a_llama_means_llama_py_in_every_entry_point() -> None:
    """``sglang`` was deepseek_v2.py's rule in dumps/diagnose/stages (ids [2, 16, 29] read as
    loop indices: canonical 1, 15, 28) while check used llama.py (+1 always: 2, 16, 29)."""
    draft = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 16, 29]}}
    assert resolve(draft, LLAMA, "sglang").layer_ids == (2, 16, 29)
    claim = resolve_claim([2, 16, 29], "sglang", 32, basis="dump", model_type="llama")
    assert claim.expected == (2, 16, 29)
    report = stages_report([2, 16, 29], 32, pp_size=1, convention="sglang", model_type="llama")
    assert report.layer_ids == (2, 16, 29)
    assert conventions.get("sglang", model_type="llama").to_canonical([2, 16, 29], 32) == (
        2,
        16,
        29,
    )


@pytest.mark.parametrize("name", ["sglang", "vllm", "sglang-legacy", "vllm-nested", "specforge"])
def test_a_model_file_name_without_a_target_is_refused_never_answered(name: str) -> None:
    for call in (
        lambda: conventions.get(name),
        lambda: resolve_claim([2, 16, 29], name, 32, basis="dump"),
        lambda: stages_report([2, 16, 29], 32, pp_size=2, convention=name),
    ):
        with pytest.raises(ContractError) as err:
            call()
        assert err.value.field == "target"
        assert "--target" in str(err.value) and "model file" in str(err.value)


def test_vllm_means_the_newest_release_everywhere() -> None:
    """``releases.ALIASES`` said vllm = 0.21.0 (top-level ids only); predict and the README said
    the newest probed release: one table now, and 0.33.0 also reads the nested ids."""
    newest = releases.newest_release("vllm")
    assert newest == "0.33.0"
    got = conventions.get("vllm", architectures=["LlamaForCausalLM"])
    assert isinstance(got, ReleaseReading)
    assert got.feed([3, 17, 30], 32).release == f"vllm=={newest}"
    nested = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [3, 17, 30]}}
    assert resolve(nested, LLAMA, "vllm==0.33.0:v1").release == "vllm==0.33.0"
    assert resolve(nested, LLAMA, "vllm-nested").layer_ids == (2, 16, 29)


def test_registry_md_documents_the_one_meaning() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "readme" / "registry.md").read_text()
    assert "vllm 0.21.0 (the newest release that read only the top-level field)" not in text
    assert "`vllm-nested` = `vllm==0.33.0:v1`" in text


def test_dump_metadata_conventions_are_system_names(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    from eagle3_contracts.dumps.format import read_dump, write_dump
    from eagle3_contracts.errors import DumpError

    states, ids = torch.zeros(1, 4, 48), torch.arange(4)[None]
    for good in ("canonical", "sglang==0.5.23", "vllm==0.32.0:v1", "specforge-hf", "sglang"):
        path = write_dump(
            tmp_path / "ok.safetensors", states, ids, layer_ids=[1, 2, 3], convention=good,
            system="s",
        )  # fmt: skip
        assert read_dump(path).convention == good
    with pytest.raises(DumpError, match="unknown system name 'sglng'"):
        write_dump(
            tmp_path / "bad.safetensors", states, ids, layer_ids=[1, 2, 3], convention="sglng",
            system="s",
        )  # fmt: skip
