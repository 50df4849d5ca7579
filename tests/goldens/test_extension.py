"""GoldenExtension: serialization, tolerant comparison, drift rendering, layout, and a real
pytest session (write, compare, drift, unused report, xdist refusal) in a scratch project."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from eagle3_contracts.testing.goldens import (
    DTYPE_RTOL,
    GOLDEN_KEY,
    GoldenExtension,
    compare_records,
    dumps,
    golden_dir,
    render_drift,
    to_record,
)


def record(
    ids: tuple[int, ...] = (-1, 1, 3),
    *,
    order: str = "ascending",
    dtype: str = "float32",
    norms: tuple[float, ...] = (3.0, 4.0, 5.0),
    near_miss: tuple[str | None, ...] | None = None,
) -> dict[str, Any]:
    """A hand-built capture record shaped like ``golden_cases.capture_record``'s."""
    concat = sorted(ids) if order == "ascending" else list(ids)
    near_miss = near_miss or (None,) * len(ids)
    return {
        "case": "hand-built",
        "contract": {"layer_ids": list(ids), "num_layers": 4, "hidden_size": 8, "order": order},
        "concat_order": concat,
        "segments": [
            {
                "position": p,
                "layer_id": n,
                "identified": None if near_miss[p] else n,
                "near_miss": near_miss[p],
                "columns": [8 * p, 8 * (p + 1)],
                "shape": [2, 3, 8],
                "dtype": dtype,
                "stats": {"norm": norms[p], "mean": 0.01 * (p + 1), "max_abs": 0.5 + p},
            }
            for p, n in enumerate(concat)
        ],
    }


def drift_lines(golden: dict[str, Any], received: dict[str, Any]) -> list[str]:
    ext = GoldenExtension()
    return list(ext.diff_lines(ext.serialize(received), ext.serialize(golden)))


def matches(golden: dict[str, Any], received: dict[str, Any]) -> bool:
    ext = GoldenExtension()
    return ext.matches(serialized_data=ext.serialize(received), snapshot_data=ext.serialize(golden))


# -- the three drifts the goldens exist to catch -----------------------------------------
def test_identical_records_match() -> None:
    assert matches(record(), record())
    assert drift_lines(record(), record())[1:] == []


def test_one_changed_id_fails_naming_the_segment() -> None:
    lines = drift_lines(record((-1, 1, 3)), record((-1, 2, 3)))
    assert not matches(record((-1, 1, 3)), record((-1, 2, 3)))
    assert "  contract: layer_ids: golden [-1, 1, 3], received [-1, 2, 3]" in lines
    assert "  segment 1 (layer_id 1): layer_id: golden 1, received 2" in lines
    assert "  segment 1 (layer_id 1): identified: golden 1, received 2" in lines
    assert not any(line.startswith("  segment 0") or "segment 2" in line for line in lines)


def test_changed_order_fails_naming_each_moved_segment() -> None:
    golden = record((3, -1, 1), order="ascending")
    received = record((3, -1, 1), order="as_listed")
    lines = drift_lines(golden, received)
    assert not matches(golden, received)
    assert "  concat_order: golden [-1, 1, 3], received [3, -1, 1]" in lines
    assert "  segment 0 (layer_id -1): layer_id: golden -1, received 3" in lines
    assert "  segment 2 (layer_id 3): identified: golden 3, received 1" in lines


def test_post_norm_capture_point_fails_naming_the_segment() -> None:
    received = record(near_miss=(None, None, "final-norm output"))
    lines = drift_lines(record(), received)
    assert not matches(record(), received)
    assert "  segment 2 (layer_id 3): identified: golden 3, received null" in lines
    assert '  segment 2 (layer_id 3): near_miss: golden null, received "final-norm output"' in lines


def test_a_missing_segment_is_named() -> None:
    golden, received = record(), record()
    received["segments"].pop()
    assert drift_lines(golden, received)[1:] == [
        "  segment 2 (layer_id 3): golden {...}, received (absent) (only in the golden)"
    ]


# -- tolerant statistics -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", sorted(DTYPE_RTOL))
def test_stats_compare_within_the_dtype_rtol_and_fail_beyond(dtype: str) -> None:
    rtol = DTYPE_RTOL[dtype]
    inside = record(dtype=dtype, norms=(3.0 * (1 + 0.5 * rtol), 4.0, 5.0))
    outside = record(dtype=dtype, norms=(3.0 * (1 + 3 * rtol), 4.0, 5.0))
    assert matches(record(dtype=dtype), inside)
    assert not matches(record(dtype=dtype), outside)
    (line,) = drift_lines(record(dtype=dtype), outside)[1:]
    assert line.startswith("  segment 0 (layer_id -1): stats.norm: golden 3.0, received ")
    assert f"> rtol {rtol:.0e} for {dtype})" in line


def test_bf16_tolerance_is_looser_than_fp32() -> None:
    golden = record(dtype="bfloat16")
    near = record(dtype="bfloat16", norms=(3.03, 4.0, 5.0))  # 1% off
    assert matches(golden, near)
    assert not matches(record(), record(norms=(3.03, 4.0, 5.0)))


def test_mean_near_zero_is_judged_against_the_rms_not_itself() -> None:
    golden = record()
    received = copy.deepcopy(golden)
    # mean 0.01 -> 0.0100001: relative to itself 1e-5, to rms(3/sqrt(48)=0.43) 2e-7
    received["segments"][0]["stats"]["mean"] = 0.01 + 1e-7
    assert matches(golden, received)
    received["segments"][0]["stats"]["mean"] = 0.01 + 1e-3  # 2e-3 of rms: drift
    assert not matches(golden, received)


def test_stats_without_a_known_dtype_compare_exactly() -> None:
    golden, received = record(dtype="int8"), record(dtype="int8", norms=(3.0000001, 4.0, 5.0))
    (line,) = drift_lines(golden, received)[1:]
    assert "no tolerance: dtype 'int8' is not in rtol" in line


def test_numbers_outside_stats_compare_exactly() -> None:
    golden, received = record(), record()
    received["segments"][0]["shape"] = [2, 3, 9]
    received["segments"][1]["columns"] = [8.0, 16.0]  # float vs int: not the same JSON
    lines = drift_lines(golden, received)
    assert "  segment 0 (layer_id -1): shape: golden [2, 3, 8], received [2, 3, 9]" in lines
    assert "  segment 1 (layer_id 1): columns: golden [8, 16], received [8.0, 16.0]" in lines


def test_long_values_are_cut_in_drift_lines() -> None:
    golden, received = record(), record()
    golden["notes"], received["notes"] = ["a" * 300], ["b" * 300]
    (line,) = drift_lines(golden, received)[1:]
    assert line == f'  notes: golden ["{"a" * 75}..., received ["{"b" * 75}...'


def test_new_and_removed_keys_are_drift() -> None:
    golden, received = record(), record()
    received["extra"] = 1
    del received["case"]
    lines = drift_lines(golden, received)
    assert '  case: golden "hand-built", received (absent) (only in the golden)' in lines
    assert "  extra: golden (absent), received 1 (not in the golden)" in lines


# -- serialization -------------------------------------------------------------------------
def test_serialization_is_stable_json_with_the_format_marker_first() -> None:
    text = GoldenExtension().serialize(record())
    assert text.startswith('{\n  "eagle3_golden": 1,\n  "case": "hand-built",')
    assert '"concat_order": [-1, 1, 3],' in text
    assert json.loads(text)["segments"][2]["stats"] == {"norm": 5.0, "mean": 0.03, "max_abs": 2.5}
    assert dumps(to_record(record())) == text


def test_stats_are_stored_to_significant_digits_and_tensors_become_numbers() -> None:
    torch = pytest.importorskip("torch")
    data = {"x": 1 / 3, "stats": {"norm": torch.tensor(1 / 3, dtype=torch.float64)}}
    out = to_record(data)
    assert out["x"] == 1 / 3  # outside stats: exact
    assert out["stats"]["norm"] == 0.33333333


def test_unserializable_values_name_their_path() -> None:
    with pytest.raises(TypeError, match=r"segments\.0\.stats\.norm is a object"):
        to_record({"segments": [{"stats": {"norm": object()}}]})
    with pytest.raises(TypeError, match="must be a mapping"):
        to_record([1, 2])
    with pytest.raises(TypeError, match="reserved"):
        to_record({GOLDEN_KEY: 99})


def test_a_corrupt_golden_never_matches_and_says_why() -> None:
    ext = GoldenExtension()
    assert not ext.matches(serialized_data=ext.serialize(record()), snapshot_data="{oops")
    (line,) = ext.diff_lines(ext.serialize(record()), "{oops")
    assert line.startswith("the stored golden is not valid JSON")
    (line,) = ext.diff_lines(ext.serialize(record()), '{"a": 1}')
    assert "not a golden record" in line


def test_render_drift_counts_the_stats_of_a_changed_segment_instead_of_listing_them() -> None:
    received = record((-1, 0, 3), norms=(3.0, 4.5, 5.5))
    lines = render_drift(compare_records(to_record(record()), to_record(received)))
    assert lines == [
        "golden drift: 5 difference(s) (+1 stats of those segments)",
        "  contract: layer_ids: golden [-1, 1, 3], received [-1, 0, 3]",
        "  concat_order: golden [-1, 1, 3], received [-1, 0, 3]",
        "  segment 1 (layer_id 1): layer_id: golden 1, received 0",
        "  segment 1 (layer_id 1): identified: golden 1, received 0",
        "  segment 2 (layer_id 3): stats.norm: golden 5.0, received 5.5 (relative difference "
        "9.1e-02 > rtol 1e-04 for float32)",
    ]


# -- layout --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("tests/goldens/capture/test_golden_models.py", "goldens/capture/test_golden_models"),
        ("tests/registry/test_probe.py", "goldens/registry/test_probe"),
        ("tests/test_top.py", "goldens/test_top"),
        ("elsewhere/test_loose.py", "elsewhere/goldens/test_loose"),
    ],
)
def test_goldens_mirror_test_modules_under_the_top_level_goldens(
    tmp_path: Path, module: str, expected: str
) -> None:
    class Rooted(GoldenExtension):
        root = tmp_path

    assert golden_dir(tmp_path / module, Rooted) == tmp_path / expected


# -- the fixtures -----------------------------------------------------------------------------
def test_golden_fixtures_use_the_extension_under_deterministic_torch(
    golden: Any, eagle3_golden: Any, request: pytest.FixtureRequest
) -> None:
    torch = pytest.importorskip("torch")
    assert eagle3_golden is golden
    assert issubclass(golden.extension_class, GoldenExtension)
    assert golden.extension_class.root == Path(request.config.rootpath)
    assert GoldenExtension.root is None  # the plugin never mutates the shared class
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.initial_seed() == 0
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"]


def test_deterministic_restores_what_it_changed() -> None:
    torch = pytest.importorskip("torch")
    from eagle3_contracts.testing.goldens_plugin import deterministic

    before = torch.are_deterministic_algorithms_enabled()
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    with deterministic(seed=3):
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.initial_seed() == 3
        torch.rand(100)  # consumes the (forked) stream
    assert torch.are_deterministic_algorithms_enabled() == before
    assert torch.equal(torch.rand(3), expected)


# -- a real pytest session in a scratch project --------------------------------------------
DEMO = """
import os
import pytest

CASES = os.environ["DEMO_CASES"].split(",")
IDENTIFIED = int(os.environ.get("DEMO_IDENTIFIED", "3"))


@pytest.mark.parametrize("case", CASES)
def test_capture(case, eagle3_golden):
    segments = [
        {"position": p, "layer_id": n, "identified": IDENTIFIED if n == 3 else n,
         "shape": [2, 8], "dtype": "float32", "stats": {"norm": 1.5 + p, "mean": 0.1}}
        for p, n in enumerate((-1, 1, 3))
    ]
    assert {"case": case, "concat_order": [-1, 1, 3], "segments": segments} == eagle3_golden
"""


def run_pytest(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env={**outer_env(), "COLUMNS": "200", "PYTHONDONTWRITEBYTECODE": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def outer_env() -> dict[str, str]:
    """This process's environment minus what marks it as a pytest(-xdist worker) process."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "EAGLE3_"))}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_demo.py").write_text(textwrap.dedent(DEMO))
    return tmp_path


def test_session_writes_compares_reports_drift_and_unused_goldens(project: Path) -> None:
    written = run_pytest(project, "--snapshot-update", "-n", "0", DEMO_CASES="a,b")
    assert written.returncode == 0, written.stdout + written.stderr
    assert "2 snapshots generated." in written.stdout
    golden = project / "goldens" / "test_demo" / "test_capture[a].json"
    assert json.loads(golden.read_text())["segments"][2]["identified"] == 3
    assert (project / "goldens" / "test_demo" / "test_capture[b].json").is_file()

    # case b removed and segment 2 now holding layer 2: a drift naming it, and b unused.
    drifted = run_pytest(project, DEMO_CASES="a", DEMO_IDENTIFIED="2")
    out = drifted.stdout
    assert drifted.returncode == 1, out
    assert "segment 2 (layer_id 3): identified: golden 3, received 2" in out
    assert "1 snapshot failed. 1 snapshot unused." in out
    assert "test_capture[b].json" not in out or "Unused" in out
    assert golden.read_text() == written_text(golden)  # a failing run never rewrites


def written_text(path: Path) -> str:
    data = json.loads(path.read_text())
    assert data[GOLDEN_KEY] == 1 and data["case"] == "a"
    return path.read_text()


def test_snapshot_update_under_xdist_is_refused_in_one_line(project: Path) -> None:
    refused = run_pytest(project, "--snapshot-update", "-n", "2", DEMO_CASES="a")
    assert refused.returncode == 4
    assert refused.stderr.strip().splitlines() == [
        "ERROR: --snapshot-update is refused under pytest-xdist (-n 2): goldens are written "
        "by one process; rerun with -n 0 (or -p no:xdist)"
    ]
    assert not (project / "goldens").exists()
