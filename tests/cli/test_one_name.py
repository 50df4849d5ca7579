"""One name, one answer, through the commands: the cases where a system name meant one thing in
``check`` and another in ``diagnose``/``stages``/dumps, or where something unread was called ok.

Only the public API and the CLI are used, so each test runs (and fails) on code that predates
``conventions.parse_system``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from eagle3_contracts.cli import main
from eagle3_contracts.config import examples

EXAMPLES = Path(examples.__file__).parent
LLAMA_DRAFT = str(EXAMPLES / "llama-3.1-8b" / "draft.json")
LLAMA_TARGET = str(EXAMPLES / "llama-3.1-8b" / "target.json")
KIMI_TARGET = str(EXAMPLES / "kimi-k2.5" / "target.json")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- diagnose: a correct dump labelled with any accepted name is OK -------------------------------


def test_a_correct_sglang_0_5_23_llama_dump_labelled_sglang_is_ok(
    tmp_path: Path, tiny_llama, make_dump
) -> None:
    """SGLang 0.5.23's llama.py adds 1 to every id: ids [2, 3, 4] capture the outputs of layers
    2, 3, 4. Labelled 'sglang' such a dump was read with deepseek_v2.py's rule (loop indices:
    1, 2, 3) and diagnosed MISMATCH 'the capture code itself deviates'."""
    from eagle3_contracts.capture.targets import target_from_model
    from eagle3_contracts.dumps.diagnose import diagnose
    from eagle3_contracts.dumps.format import read_dump

    model, ids = tiny_llama
    target = target_from_model(model, random_init=True, seed=7)
    for label in ("sglang", "sglang==0.5.23", " SGLang == 0.5.23 "):
        path = make_dump(tmp_path, "s.safetensors", model, ids, (2, 3, 4), [2, 3, 4], label)
        report = diagnose([read_dump(path)], target)
        assert report.exit_code == 0, (label, report.render_text())


def test_every_accepted_name_labels_a_correct_dump_ok(
    tmp_path: Path, tiny_llama, make_dump
) -> None:
    from eagle3_contracts import conventions
    from eagle3_contracts.capture.targets import target_from_model
    from eagle3_contracts.dumps.diagnose import diagnose
    from eagle3_contracts.dumps.format import read_dump

    model, ids = tiny_llama
    target = target_from_model(model, random_init=True, seed=7)
    names = (
        *conventions.names(),
        "specforge",
        "specforge==0.2.0",
        "output",
        "boundary",
        "speculators==0.9.0",
        "vllm==0.32.0:v1",
        "vllm==0.21.0",
        "sglang==0.5.14",
        "canonical",
    )
    claim = [2, 3, 4]
    for name in names:
        if name == "canonical":
            fed = tuple(claim)
        else:
            convention = conventions.get(
                name, model_type=target.model_type, architectures=target.architectures
            )
            fed = convention.to_canonical(claim, 6)
            if not isinstance(convention, conventions.Convention) or (
                convention.concat_order == "ascending"
            ):  # an engine or trainer release concatenates ascending
                fed = tuple(sorted(fed))
        path = make_dump(tmp_path, f"{len(name)}.safetensors", model, ids, fed, claim, name)
        report = diagnose([read_dump(path)], target)
        assert report.exit_code == 0, (name, fed, report.render_text())


def test_an_unknown_convention_is_refused_before_any_model_loads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from eagle3_contracts.capture import targets

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded before the name was checked")

    monkeypatch.setattr(targets, "load_target", never)
    start = time.perf_counter()
    code, out, err = run(
        capsys,
        "diagnose",
        "--dump",
        str(tmp_path / "absent.safetensors"),
        "--target",
        LLAMA_TARGET,
        "--ids",
        "1,2,3",
        "--convention",
        "spcforge",
    )
    assert time.perf_counter() - start < 1.0
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert "unknown system name 'spcforge': did you mean 'specforge'" in err


# -- stages: a release name with the target's model file -------------------------------------------


def test_stages_with_a_release_and_a_target_uses_the_targets_model_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`stages --convention sglang --target llama` said canonical 1, 15, 28 (deepseek_v2.py's
    rule) where check says SGLang feeds 2, 16, 29; with a release it exited 2 with a 4 KB line."""
    for name in ("sglang", "sglang==0.5.23"):
        code, out, err = run(
            capsys,
            "stages",
            "--target",
            LLAMA_TARGET,
            "--ids",
            "2,16,29",
            "--pp-size",
            "1",
            "--convention",
            name,
        )
        assert code == 0 and err == "", err
        assert "ids (sglang==0.5.23 llama.py): 2, 16, 29 = canonical 2, 16, 29" in out
    for name in ("vllm==0.33.0", "specforge"):
        code, out, err = run(
            capsys, "stages", "--target", LLAMA_TARGET, "--ids", "2,16,29", "--pp-size", "2",
            "--convention", name,
        )  # fmt: skip
        assert code in (0, 1) and err == "", err
        assert len(out.splitlines()[1]) < 200


def test_check_and_stages_agree_on_what_sglang_feeds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    draft = json.loads(Path(LLAMA_DRAFT).read_text())
    draft["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [2, 16, 29]}
    path = tmp_path / "draft.json"
    path.write_text(json.dumps(draft))
    _, out, _ = run(
        capsys,
        "check",
        str(path),
        "--target",
        LLAMA_TARGET,
        "--trained-with",
        "specforge-hf",
        "--serve-with",
        "sglang",
        "--json",
    )
    (row,) = json.loads(out)["rows"]
    assert row["layer_ids"] == [2, 16, 29] and row["plan"]["native_ids"] == [2, 16, 29]
    _, out, _ = run(
        capsys, "stages", "--target", LLAMA_TARGET, "--ids", "2,16,29", "--pp-size", "1",
        "--convention", "sglang", "--json",
    )  # fmt: skip
    assert [r["id"] for r in json.loads(out)["ownership"]] == row["layer_ids"]


# -- check: vllm is the newest release; malformed releases; PP unread -> unknown ------------------


def test_check_list_has_one_meaning_of_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--list")
    assert code == 0
    assert "unversioned 'vllm' = 0.33.0" in out
    assert "vllm-nested = vllm==0.33.0:v1" in out
    assert "vllm: boundary ids" not in out  # the top-level-only (0.21.0) reading under 'vllm'


def test_a_pipeline_row_nothing_read_vouches_for_is_unknown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`check --serve-with vllm==0.21.0 --pp-size 4` said ok (exit 0) while its note said the
    states' fate 'depends on the release'."""
    code, out, _ = run(
        capsys, "check", LLAMA_DRAFT, "--target", LLAMA_TARGET, "--trained-with", "boundary",
        "--serve-with", "vllm==0.21.0", "--pp-size", "4", "--json",
    )  # fmt: skip
    (row,) = json.loads(out)["rows"]
    assert code == 1 and row["unknown"] and not row["ok"] and row["verdict"] == "unknown"
    code, out, _ = run(
        capsys, "check", LLAMA_DRAFT, "--target", LLAMA_TARGET, "--trained-with", "boundary",
        "--serve-with", "vllm==0.21.0",
    )  # fmt: skip
    assert code == 0, out  # without pipeline parallelism the same row is proven ok


def test_a_malformed_release_is_a_usage_error_and_an_unprobed_one_unknown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "check", LLAMA_DRAFT, "--target", LLAMA_TARGET, "--serve-with", "vllm==abc"
    )
    assert (code, err.count("\n")) == (2, 1)
    assert "'abc' is not a release version" in err
    code, out, err = run(
        capsys, "check", LLAMA_DRAFT, "--target", LLAMA_TARGET, "--serve-with", "vllm==0.40.0"
    )
    assert code == 1 and "unknown" in out
    assert "probe refresh --release vllm==0.40.0" in out
