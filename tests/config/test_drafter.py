"""Drafter coherence: fc width, d2t/t2d, norm flags; safetensors headers read without data."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from eagle3_contracts import ConfigError
from eagle3_contracts.config.drafter import check_drafter_coherence, read_safetensors_header
from eagle3_contracts.config.readers import TargetConfig, read_draft_config

TARGET = TargetConfig(source="t", num_layers=8, hidden_size=16, vocab_size=10)


def by_name(checks) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in checks}


def weights(tmp_path: Path, *, fc_in: int = 48, d2t=None, t2d=None) -> Path:
    tensors = {"fc.weight": torch.zeros(16, fc_in)}
    if d2t is not None:
        tensors["d2t"] = torch.tensor(d2t, dtype=torch.int64)
    if t2d is not None:
        tensors["t2d"] = torch.tensor(t2d, dtype=torch.bool)
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    return path


GOOD_D2T = [0, 1, 3, 5]  # draft i -> target i + d2t[i]: 0, 2, 5, 8
GOOD_T2D = [i in (0, 2, 5, 8) for i in range(10)]


def test_fc_width_from_config() -> None:
    ok = check_drafter_coherence(read_draft_config({"hidden_size": 16}), TARGET, 3)
    assert by_name(ok)["fc-width"][0] == "ok" and "48 = 3 x 16" in by_name(ok)["fc-width"][1]
    bad = by_name(check_drafter_coherence(read_draft_config({"hidden_size": 8}), TARGET, 3))
    assert bad["fc-width"][0] == "error" and "target_hidden_size = 16" in bad["fc-width"][1]
    explicit = {"hidden_size": 8, "target_hidden_size": 16}
    assert (
        by_name(check_drafter_coherence(read_draft_config(explicit), TARGET, 3))["fc-width"][0]
        == "ok"
    )
    assert (
        by_name(check_drafter_coherence(read_draft_config({}), TARGET, 3))["fc-width"][0]
        == "skipped"
    )


def test_fc_width_from_weights(tmp_path: Path) -> None:
    cfg = read_draft_config({"hidden_size": 16})
    assert (
        by_name(check_drafter_coherence(cfg, TARGET, 3, weights=weights(tmp_path)))["fc-width"][0]
        == "ok"
    )
    res = by_name(check_drafter_coherence(cfg, TARGET, 3, weights=weights(tmp_path, fc_in=32)))
    assert res["fc-width"] == (
        "error",
        "fc.weight takes 32 inputs (2 x 16) but 3 ids x target hidden 16 = 48",
    )


def test_vocab_mapping(tmp_path: Path) -> None:
    cfg = read_draft_config({"hidden_size": 16, "vocab_size": 10, "draft_vocab_size": 4})
    no_weights = by_name(check_drafter_coherence(cfg, TARGET, 3))
    assert (
        no_weights["vocab-mapping"][0] == "warning"
        and "--weights" in no_weights["vocab-mapping"][1]
    )
    good = weights(tmp_path, d2t=GOOD_D2T, t2d=GOOD_T2D)
    assert (
        by_name(check_drafter_coherence(cfg, TARGET, 3, weights=good))["vocab-mapping"][0] == "ok"
    )


@pytest.mark.parametrize(
    ("d2t", "t2d", "message"),
    [
        (None, GOOD_T2D, "lack d2t"),
        (GOOD_D2T, None, "lack t2d"),
        (GOOD_D2T, [True] * 10, "t2d marks 10"),
        ([0, 1, 3, 9], GOOD_T2D, "map outside [0, 10)"),
        ([0, 1, 3, 4], GOOD_T2D, "does not mark"),
        ([0, 1, 3], GOOD_T2D, "want [4]"),
    ],
)
def test_vocab_mapping_errors(tmp_path: Path, d2t, t2d, message: str) -> None:
    cfg = read_draft_config({"hidden_size": 16, "vocab_size": 10, "draft_vocab_size": 4})
    res = by_name(
        check_drafter_coherence(cfg, TARGET, 3, weights=weights(tmp_path, d2t=d2t, t2d=t2d))
    )
    status, text = res["vocab-mapping"]
    assert status == "error" and message in text


def test_vocab_sizes() -> None:
    too_big = read_draft_config({"vocab_size": 10, "draft_vocab_size": 11})
    assert by_name(check_drafter_coherence(too_big, TARGET, 3))["vocab-mapping"][0] == "error"
    other = read_draft_config({"vocab_size": 12})
    assert by_name(check_drafter_coherence(other, TARGET, 3))["vocab"][0] == "error"


def test_unknown_norm_flags_are_reported() -> None:
    cfg = read_draft_config({"norm_before_fc": True, "eagle_config": {"my_norm_trick": True}})
    checks = [c for c in check_drafter_coherence(cfg, TARGET, 3) if c.name == "norm-flags"]
    assert [c.status for c in checks] == ["ok", "warning"]
    assert "eagle_config.my_norm_trick=true" in checks[1].message


def test_header_is_read_without_tensor_data(tmp_path: Path) -> None:
    header = json.dumps(
        {"fc.weight": {"dtype": "BF16", "shape": [7168, 21504], "data_offsets": [0, 308281344]}}
    )
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode())  # no data at all
    info = read_safetensors_header(path)["fc.weight"]
    assert info.shape == (7168, 21504) and info.dtype == "BF16"
    folder = read_safetensors_header(tmp_path)  # a directory: every *.safetensors
    assert "fc.weight" in folder


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"\x01\x02",
        struct.pack("<Q", 10**9) + b"{}",
        struct.pack("<Q", 2) + b"{x",
        struct.pack("<Q", 2) + b"[]",
        struct.pack("<Q", 22) + b'{"a": {"shape": [-1]}}',
    ],
)
def test_bad_headers(tmp_path: Path, blob: bytes) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(ConfigError) as err:
        read_safetensors_header(path)
    assert err.value.source == str(path)


def test_missing_weights(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        read_safetensors_header(tmp_path / "nope.safetensors")
    with pytest.raises(ConfigError, match=r"no \*\.safetensors"):
        read_safetensors_header(tmp_path)
