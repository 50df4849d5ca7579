"""Drafter coherence findings at their edges: which check answers, its status, and the numbers
and fields its message names (the ``check`` report and its JSON print these messages)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from eagle3_contracts import ConfigError
from eagle3_contracts.config.drafter import (
    DrafterCheck,
    check_drafter_coherence,
    read_safetensors_header,
)
from eagle3_contracts.config.readers import TargetConfig, read_draft_config

TARGET = TargetConfig(source="t", num_layers=8, hidden_size=16, vocab_size=10)


def checks(draft: dict, *, weights: Path | None = None, k: int = 3) -> list[tuple[str, str, str]]:
    cfg = read_draft_config(draft)
    return [
        (c.name, c.status, c.message)
        for c in check_drafter_coherence(cfg, TARGET, k, weights=weights)
    ]


def header_file(tmp_path: Path, entries: dict, name: str = "model.safetensors") -> Path:
    header = json.dumps(entries).encode()
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    return path


def tensor(shape: list[int], dtype: str = "F32") -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [0, 0]}


def test_to_dict_is_the_json_form() -> None:
    check = DrafterCheck("fc-width", "ok", "fine")
    assert check.to_dict() == {"name": "fc-width", "status": "ok", "message": "fine"}


# -- fc width from the config --------------------------------------------------------------


def test_fc_width_from_hidden_size() -> None:
    assert checks({"hidden_size": 16}) == [
        ("fc-width", "ok", "fc input 48 = 3 x 16 (from the config's hidden_size)")
    ]


def test_fc_width_from_target_hidden_size() -> None:
    assert checks({"hidden_size": 8, "target_hidden_size": 16}, k=4) == [
        ("fc-width", "ok", "fc input 64 = 4 x 16 (from the config's target_hidden_size)")
    ]


def test_a_wrong_hidden_size_names_the_field_and_the_fix() -> None:
    [(name, status, message)] = checks({"hidden_size": 8})
    assert (name, status) == ("fc-width", "error")
    assert message == (
        "fc is sized 3 x 8 from the draft's hidden_size = 8, but the target's hidden size is 16: "
        "set target_hidden_size = 16 (sglang#24620)"
    )


def test_a_wrong_target_hidden_size_names_that_field() -> None:
    [(_, status, message)] = checks({"hidden_size": 16, "target_hidden_size": 12})
    assert status == "error"
    assert message.startswith("fc is sized 3 x 12 from the draft's target_hidden_size = 12,")


def test_no_width_in_the_config_skips_and_asks_for_weights() -> None:
    [(name, status, message)] = checks({})
    assert (name, status) == ("fc-width", "skipped")
    assert message == (  # the advice check prints for a skipped check: both fields, the option
        "the draft config gives neither target_hidden_size nor hidden_size; pass --weights to "
        "read fc.weight"
    )


# -- fc width from the weights --------------------------------------------------------------


def test_fc_width_from_the_weights_wins_over_the_config(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"model.fc.weight": tensor([16, 48])})
    assert checks({"hidden_size": 8}, weights=path) == [
        ("fc-width", "ok", "model.fc.weight takes 48 = 3 x 16 (from the weights)")
    ]


def test_weights_without_fc_are_an_error(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"lm_head.weight": tensor([10, 16]), "fcx.weight": tensor([1])})
    assert checks({}, weights=path) == [
        ("fc-width", "error", "the weights have no fc.weight tensor")
    ]


def test_an_fc_that_is_not_2d_is_an_error(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"fc.weight": tensor([16, 48, 1])})
    assert checks({}, weights=path) == [
        ("fc-width", "error", "fc.weight has shape [16, 48, 1], not 2-D")
    ]


def test_an_fc_width_that_is_no_multiple_says_so(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"fc.weight": tensor([16, 50])})
    [(_, status, message)] = checks({}, weights=path)
    assert status == "error"
    assert message == (
        "fc.weight takes 50 inputs (not a multiple of the target's 16) but 3 ids x target "
        "hidden 16 = 48"
    )


def test_the_first_fc_by_name_is_read(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"b.fc.weight": tensor([16, 32]), "a.fc.weight": tensor([16, 48])})
    assert checks({}, weights=path)[0][2].startswith("a.fc.weight takes 48")


# -- vocab ---------------------------------------------------------------------------------


def test_equal_vocabs_need_no_mapping() -> None:
    assert [c[0] for c in checks({"hidden_size": 16, "vocab_size": 10})] == ["fc-width"]
    assert [c[0] for c in checks({"hidden_size": 16, "draft_vocab_size": 10})] == ["fc-width"]


def test_a_vocab_mismatch_names_both_sizes() -> None:
    assert checks({"hidden_size": 16, "vocab_size": 12})[1] == (
        "vocab",
        "error",
        "draft vocab_size 12 != target vocab_size 10",
    )


def test_a_draft_vocab_larger_than_the_vocab_is_an_error() -> None:
    assert checks({"hidden_size": 16, "draft_vocab_size": 11})[1] == (
        "vocab-mapping",
        "error",
        "draft_vocab_size 11 > vocab_size 10",
    )


def test_a_smaller_draft_vocab_without_weights_is_a_warning_naming_both_sizes() -> None:
    [_, (name, status, message)] = checks({"hidden_size": 16, "draft_vocab_size": 4})
    assert (name, status) == ("vocab-mapping", "warning")
    assert message.startswith("draft_vocab_size 4 < vocab_size 10 needs d2t/t2d tensors")


def test_missing_mapping_tensors_are_named(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"fc.weight": tensor([16, 48])})
    [_, (name, status, message)] = checks({"hidden_size": 16, "draft_vocab_size": 4}, weights=path)
    assert (name, status) == ("vocab-mapping", "error")
    assert message == (
        "draft_vocab_size 4 < vocab_size 10 but the weights lack d2t and t2d (Automodel#2447)"
    )


def test_mapping_tensors_of_the_wrong_shape_name_both_shapes(tmp_path: Path) -> None:
    path = header_file(
        tmp_path,
        {"fc.weight": tensor([16, 48]), "d2t": tensor([4], "I64"), "t2d": tensor([9], "BOOL")},
    )
    [_, (_, status, message)] = checks({"hidden_size": 16, "draft_vocab_size": 4}, weights=path)
    assert status == "error"
    assert message == "d2t has shape [4] (want [4]), t2d [9] (want [10])"


# -- norms ---------------------------------------------------------------------------------


def test_known_norm_flags_are_listed_with_their_values() -> None:
    assert checks({"hidden_size": 16, "norm_before_fc": True, "fc_norm": False})[1] == (
        "norm-flags",
        "ok",
        "known norm flags: norm_before_fc=true, fc_norm=false",
    )


def test_an_unknown_norm_flag_is_a_warning_naming_it_and_the_known_ones() -> None:
    [_, (name, status, message)] = checks({"hidden_size": 16, "my_norm": False})
    assert (name, status) == ("norm-flags", "warning")
    assert message.startswith("unknown norm flag my_norm=false: ")
    assert "known: norm_before_residual, norm_before_fc, fc_norm" in message


# -- headers -------------------------------------------------------------------------------


def test_metadata_is_no_tensor(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"__metadata__": {"format": "pt"}, "fc.weight": tensor([2, 3])})
    assert list(read_safetensors_header(path)) == ["fc.weight"]
    assert read_safetensors_header(path)["fc.weight"].file == str(path)


def test_every_file_of_a_directory_is_read(tmp_path: Path) -> None:
    header_file(tmp_path, {"fc.weight": tensor([2, 3])}, "a.safetensors")
    header_file(tmp_path, {"d2t": tensor([4], "I64")}, "b.safetensors")
    assert sorted(read_safetensors_header(tmp_path)) == ["d2t", "fc.weight"]


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "F32", "shape": [True, 2]},
        {"dtype": "F32", "shape": [2.0]},
        {"dtype": "F32", "shape": "2"},
        {"dtype": 32, "shape": [2]},
        {"shape": [2]},
        [2],
    ],
)
def test_an_entry_without_valid_dtype_and_shape_is_refused_naming_it(
    tmp_path: Path, entry: object
) -> None:
    path = header_file(tmp_path, {"fc.weight": entry})
    with pytest.raises(ConfigError) as err:
        read_safetensors_header(path)
    assert str(err.value) == f"{path}: safetensors entry 'fc.weight' has no valid dtype/shape"


def test_a_zero_sized_dimension_is_valid(tmp_path: Path) -> None:
    path = header_file(tmp_path, {"fc.weight": tensor([0, 3])})
    assert read_safetensors_header(path)["fc.weight"].shape == (0, 3)


def test_a_header_that_is_no_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "list.safetensors"
    path.write_bytes(struct.pack("<Q", 2) + b"[]")
    with pytest.raises(ConfigError) as err:
        read_safetensors_header(path)
    assert str(err.value) == f"{path}: safetensors header is not a JSON object"


def test_a_header_longer_than_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "short.safetensors"
    path.write_bytes(struct.pack("<Q", 3) + b"{}")
    with pytest.raises(ConfigError) as err:
        read_safetensors_header(path)
    assert str(err.value) == f"{path}: not a safetensors file: header length 3 exceeds the file"
    exact = tmp_path / "exact.safetensors"
    exact.write_bytes(struct.pack("<Q", 2) + b"{}")  # a header that fills the file is fine
    assert read_safetensors_header(exact) == {}


def test_a_header_length_past_any_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", 2**64 - 1) + b"{}")
    with pytest.raises(ConfigError) as err:
        read_safetensors_header(path)
    assert str(err.value) == (
        f"{path}: not a safetensors file: header length {2**64 - 1} exceeds the file"
    )


def test_refusals_name_the_weights_they_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as err:
        read_safetensors_header(empty)
    assert err.value.source == str(empty)
    missing = tmp_path / "nope.safetensors"
    with pytest.raises(ConfigError) as err:
        read_safetensors_header(missing)
    assert err.value.source == str(missing)
    assert str(err.value) == f"{missing}: cannot read the weights file: no such file"


def test_mapping_tensors_without_data_are_refused_naming_the_tensor(tmp_path: Path) -> None:
    path = header_file(
        tmp_path,
        {"fc.weight": tensor([16, 48]), "d2t": tensor([4], "I64"), "t2d": tensor([10], "BOOL")},
    )
    cfg = read_draft_config({"hidden_size": 16, "draft_vocab_size": 4})
    with pytest.raises(ConfigError) as err:
        check_drafter_coherence(cfg, TARGET, 3, weights=path)
    assert err.value.source == str(path)
    assert str(err.value).startswith(f"{path}: cannot read tensor d2t: ")


def test_a_draft_token_mapped_to_exactly_the_vocab_size_is_outside(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file(
        {
            "fc.weight": torch.zeros(16, 48),
            "d2t": torch.tensor([0, 1, 3, 7], dtype=torch.int64),  # 3 + 7 = 10 = vocab_size
            "t2d": torch.tensor([i in (0, 2, 5, 8) for i in range(10)], dtype=torch.bool),
        },
        str(path),
    )
    [_, (name, status, message)] = checks(
        {"hidden_size": 16, "vocab_size": 10, "draft_vocab_size": 4}, weights=path
    )
    assert (name, status) == ("vocab-mapping", "error")
    assert message == "1 draft tokens map outside [0, 10): e.g. 3 + d2t[3] = 10"
