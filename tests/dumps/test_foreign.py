"""Other tools' hidden-state files, each written by this test in the layout the tool's released
code uses (cited in ``eagle3_contracts.dumps.foreign.FORMATS``), diagnosed through the installed
entry point like our own dumps."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from eagle3_contracts.dumps import foreign
from eagle3_contracts.dumps.foreign import ForeignClaim
from eagle3_contracts.dumps.format import read_any_dump
from eagle3_contracts.errors import DumpError

ENTRY = str(Path(sys.executable).with_name("eagle3-contracts"))
H, L = 32, 5


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    from eagle3_contracts.capture.hooks import capture_hidden_states, seeded_input_ids
    from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config

    tmp = tmp_path_factory.mktemp("foreign")
    model = build_tiny_hf(tiny_hf_config("llama", num_layers=L, hidden_size=H), seed=3)
    model.save_pretrained(tmp / "model")
    ids = seeded_input_ids(96, 1, 6, seed=0)

    def states(*canonical: int) -> torch.Tensor:  # [T, k, H]
        got = capture_hidden_states(model, ids, canonical)[0]
        return got.reshape(got.shape[0], len(canonical), H).contiguous()

    return {"dir": tmp, "model": tmp / "model", "ids": ids[0], "states": states}


def speculators_file(world, path: Path, *canonical: int) -> Path:
    """speculators 0.9.0: hs_<i>.safetensors, token_ids [T], hidden_states [T, n, H] (the aux
    layers, then the verifier's last layer)."""
    hs = world["states"](*canonical, L - 1)
    save_file({"hidden_states": hs, "token_ids": world["ids"].clone()}, str(path))
    return path


def specforge_file(world, path: Path, *canonical: int) -> Path:
    """SpecForge 0.2.0 offline feature: input_ids, loss_mask, hidden_state [1, T, H],
    aux_hidden_state [1, T, k*H] (gzip for .ckpt.gz)."""
    hs = world["states"](*canonical)
    data = {
        "input_ids": world["ids"].clone(),
        "loss_mask": torch.ones_like(world["ids"]),
        "hidden_state": world["states"](L - 1).reshape(1, -1, H),
        "aux_hidden_state": hs.reshape(1, hs.shape[0], -1),
    }
    buf = io.BytesIO()
    torch.save(data, buf)
    path.write_bytes(gzip.compress(buf.getvalue()) if path.name.endswith(".gz") else buf.getvalue())
    return path


def modelopt_file(world, path: Path, *canonical: int) -> Path:
    """ModelOpt 0.47.0: input_ids [T], hidden_states [T, H], aux_hidden_states [T, k*H]."""
    hs = world["states"](*canonical)
    torch.save(
        {
            "input_ids": world["ids"].clone(),
            "hidden_states": world["states"](L - 1).reshape(-1, H),
            "aux_hidden_states": hs.reshape(hs.shape[0], -1),
            "conversation_id": 7,
        },
        path,
    )
    return path


def trtllm_file(world, path: Path, *canonical: int) -> Path:
    """TensorRT-LLM SaveHiddenStates: a list of {id, input_ids, hidden_state,
    hidden_state_features [T, k*H]}."""
    hs = world["states"](*canonical)
    record = {
        "id": 1,
        "input_ids": world["ids"].clone(),
        "hidden_state": world["states"](L - 1).reshape(-1, H),
        "hidden_state_features": hs.reshape(hs.shape[0], -1),
    }
    torch.save([record, dict(record, id=2)], path)
    return path


# (writer, file name, ids as the tool's convention writes canonical 1, 2, 3, convention)
CASES = {
    "speculators": (speculators_file, "hs_0.safetensors", "2,3,4", "speculators"),
    "specforge": (specforge_file, "data_0.ckpt", "1,2,3", "specforge"),
    "specforge-gz": (specforge_file, "data_0.ckpt.gz", "1,2,3", "specforge"),
    "modelopt": (modelopt_file, "0.pt", "1,2,3", "modelopt"),
    "trtllm": (trtllm_file, "data_1.pt", "1,2,3", "trtllm"),
}
ENTRY_POINT_CASES = ("speculators", "trtllm")


def cli(*argv: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [ENTRY, *map(str, argv)], env=env, capture_output=True, text=True, timeout=300
    )


def in_process(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    from eagle3_contracts.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", CASES)
def test_each_tool_file_is_identified(world, tmp_path: Path, capsys, name: str) -> None:
    write, filename, ids, convention = CASES[name]
    good = write(world, tmp_path / filename, 1, 2, 3)
    argv = (
        "diagnose",
        "--dump",
        good,
        "--target",
        world["model"],
        "--ids",
        ids,
        "--convention",
        convention,
    )
    if name in ENTRY_POINT_CASES:  # a fresh interpreter costs seconds: two formats take it
        done = cli(*argv)
        code, out, err = done.returncode, done.stdout, done.stderr
    else:
        code, out, err = in_process(capsys, *argv)
    assert code == 0, out + err
    assert "verdict: OK" in out
    early = write(world, tmp_path / ("early-" + filename), 0, 1, 2)
    code, out, err = in_process(
        capsys,
        "diagnose",
        "--dump",
        early,
        "--target",
        world["model"],
        "--ids",
        ids,
        "--convention",
        convention,
    )
    assert code == 1, out + err
    assert "1 layer early" in out


def test_training_and_serving_files_from_two_tools(world, tmp_path: Path, capsys) -> None:
    """A SpecForge training file against a TensorRT-LLM serving capture, claim by contract."""
    contract = tmp_path / "c.json"
    contract.write_text(
        '{"layer_ids": [1, 2, 3], "num_layers": 5, "hidden_size": 32, "order": "ascending"}'
    )
    train = specforge_file(world, tmp_path / "t.ckpt", 1, 2, 3)
    serve = trtllm_file(world, tmp_path / "s.pt", 2, 3, 4)
    code, out, err = in_process(
        capsys,
        "diagnose",
        "--dump",
        train,
        "--dump",
        serve,
        "--target",
        world["model"],
        "--contract",
        contract,
    )
    assert code == 1, out + err
    assert "1 layer late" in out


def test_a_file_without_a_claim_says_what_to_pass(world, tmp_path: Path, capsys) -> None:
    path = modelopt_file(world, tmp_path / "0.pt", 1, 2, 3)
    code, out, err = in_process(capsys, "diagnose", "--dump", path, "--target", world["model"])
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "records no layer ids" in err and "--convention modelopt" in err


class Payload:
    def __reduce__(self):  # what an untrusted pickle would run on load
        return (os.system, ("touch " + os.environ["EAGLE3_PWNED"],))


def test_a_pickle_that_runs_code_is_refused_and_never_runs(
    world, tmp_path: Path, monkeypatch
) -> None:
    marker = tmp_path / "pwned"
    monkeypatch.setenv("EAGLE3_PWNED", str(marker))
    path = tmp_path / "evil.pt"
    torch.save({"input_ids": world["ids"], "aux_hidden_states": Payload()}, path)
    done = cli(
        "diagnose",
        "--dump",
        path,
        "--target",
        world["model"],
        "--ids",
        "1,2,3",
        "--convention",
        "modelopt",
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "weights_only=True) refused it" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        ([1, 2], "record 0 of a list of 2 is not a dict"),
        ("text", "holds a str, not a dict of tensors"),
        (
            {"input_ids": torch.zeros(3, dtype=torch.long), "other": torch.zeros(3)},
            "not a hidden-state file",
        ),
        (
            {
                "input_ids": torch.zeros(6, dtype=torch.long),
                "aux_hidden_states": torch.zeros(6, 40),
            },
            "not [T, k*H] for the 3 claimed ids",
        ),
    ],
)
def test_bad_pickled_files_are_one_line(world, tmp_path: Path, content, expect: str) -> None:
    path = tmp_path / "bad.pt"
    torch.save(content, path)
    with pytest.raises(DumpError, match=None) as err:
        read_any_dump(path, ForeignClaim((1, 2, 3), "modelopt"))
    assert expect in str(err.value) and "\n" not in str(err.value)


def test_shared_tensors_read_as_their_own_copies(world, tmp_path: Path) -> None:
    """ModelOpt's layout whose hidden_states is a view of aux_hidden_states (one storage, as
    ``torch.save`` keeps it): read, never refused as a child killed past its memory."""
    path = modelopt_file(world, tmp_path / "0.pt", 1, 2, 3)
    data = torch.load(path, weights_only=True)
    data["hidden_states"] = data["aux_hidden_states"][:, :H]  # a view: shared storage
    data["ids_again"] = data["input_ids"]  # the same tensor twice
    torch.save(data, path)
    dump = read_any_dump(path, ForeignClaim((1, 2, 3), "modelopt"))
    assert dump.layer_ids == (1, 2, 3)
    assert torch.equal(
        torch.cat(dump.segments, dim=-1).reshape(-1, 3 * H), data["aux_hidden_states"]
    )


def test_a_sparse_tensor_is_named_not_a_memory_kill(world, tmp_path: Path) -> None:
    path = tmp_path / "0.pt"
    torch.save(
        {
            "input_ids": world["ids"].clone(),
            "aux_hidden_states": torch.eye(len(world["ids"]), 3 * H).to_sparse(),
        },
        path,
    )
    with pytest.raises(DumpError) as err:
        read_any_dump(path, ForeignClaim((1, 2, 3), "modelopt"))
    message = str(err.value)
    assert "'aux_hidden_states' is torch.sparse_coo, not a dense tensor" in message, message
    assert "memory" not in message and "\n" not in message


def test_speculators_claim_count_is_checked(world, tmp_path: Path) -> None:
    path = speculators_file(world, tmp_path / "hs_1.safetensors", 1, 2, 3)
    with pytest.raises(DumpError, match="holds 4 layers"):
        read_any_dump(path, ForeignClaim((2, 3), "speculators"))
    whole = read_any_dump(path, ForeignClaim((2, 3, 4, 5), "speculators"))
    assert whole.num_segments == 4  # all of them, as passed to vLLM


def test_memory_and_time_limits(world, tmp_path: Path, monkeypatch) -> None:
    """A file whose load needs more than its budget is refused, and so is a slow one."""
    path = tmp_path / "big.ckpt.gz"
    buf = io.BytesIO()
    torch.save({"aux_hidden_state": torch.zeros(1 << 22)}, buf)  # 16 MiB, compresses to KiB
    path.write_bytes(gzip.compress(buf.getvalue()))
    monkeypatch.setattr(foreign, "LOAD_HEADROOM", 1 << 20)
    with pytest.raises(DumpError, match="over the memory limit"):
        read_any_dump(path, ForeignClaim((1,), "specforge"))
    monkeypatch.setattr(foreign, "LOAD_TIMEOUT_S", 0.01)
    with pytest.raises(DumpError, match="loading took over"):
        read_any_dump(path, ForeignClaim((1,), "specforge"))


def test_our_own_dumps_still_read_the_same(world, tmp_path: Path) -> None:
    from eagle3_contracts.dumps.format import read_dump, write_dump

    ours = write_dump(
        tmp_path / "ours.safetensors",
        world["states"](1, 2, 3).reshape(1, 6, -1),
        world["ids"].unsqueeze(0),
        layer_ids=[1, 2, 3],
        convention="canonical",
        system="t",
    )
    assert read_any_dump(ours).layer_ids == read_dump(ours).layer_ids == (1, 2, 3)
