"""diagnose names every segment of every target variant, in fp32 and bf16 dumps, and says how
two feeds differ."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle3_contracts.capture.hooks import capture_states, decoder_layers, seeded_input_ids
from eagle3_contracts.capture.targets import target_from_model
from eagle3_contracts.config.plan import FindingKind
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.dumps.diagnose import (
    CANONICAL,
    describe_difference,
    diagnose,
    resolve_claim,
)
from eagle3_contracts.dumps.format import read_dump, write_dump
from eagle3_contracts.errors import ContractError, DumpError
from eagle3_contracts.testing.hf_models import HF_ARCHITECTURES, build_tiny_hf, tiny_hf_config
from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

# -- the targets (OpInfo style: one row per variant, tests generated from the table) ----------


@dataclass(frozen=True)
class TargetCase:
    name: str
    build: Callable[[], torch.nn.Module]  # a random-init model in eval mode
    vocab: int


SYNTHETIC: tuple[TargetCase, ...] = tuple(
    TargetCase(f"synthetic-{name}", lambda cfg=cfg: build_synthetic(cfg), cfg.vocab_size)
    for name, cfg in (
        ("residual", SyntheticConfig(num_layers=6, hidden_size=16, seed=1)),
        ("fused", SyntheticConfig(num_layers=6, hidden_size=16, seed=2, style="fused")),
        ("positions", SyntheticConfig(6, 16, seed=3, position_embeddings=True)),
        ("scaled", SyntheticConfig(6, 16, seed=4, embed_scale=4.0)),
        ("tuples", SyntheticConfig(6, 16, seed=5, tuple_outputs=True)),
    )
)
HF: tuple[TargetCase, ...] = tuple(
    TargetCase(
        f"hf-{arch}",
        lambda arch=arch: build_tiny_hf(tiny_hf_config(arch, num_layers=5, hidden_size=32)),
        96,
    )
    for arch in HF_ARCHITECTURES
)
TARGETS = SYNTHETIC + HF


def _every_state_dump(
    tmp: Path, model: torch.nn.Module, vocab: int, dtype: torch.dtype, seed: int
) -> tuple[Path, tuple[int, ...]]:
    """A per-segment dump holding every canonical state -1..L-1, in a shuffled order."""
    n = len(decoder_layers(model))
    order = list(range(-1, n))
    random.Random(seed).shuffle(order)
    input_ids = seeded_input_ids(vocab, 2, 7, seed=seed)
    states = capture_states(model, input_ids, order)
    path = write_dump(
        tmp / "every.safetensors",
        [states[i].to(dtype) for i in order],
        input_ids,
        layer_ids=order,
        convention=CANONICAL,
        system="test: every state, shuffled",
    )
    return path, tuple(order)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("case", TARGETS, ids=lambda c: c.name)
def test_every_segment_named(tmp_path: Path, case: TargetCase, dtype: torch.dtype) -> None:
    """Every state -1..L-1 at once, shuffled: adjacent layers are never confused."""
    model = case.build()
    target = target_from_model(model, random_init=True, seed=0)
    path, order = _every_state_dump(tmp_path, model, case.vocab, dtype, seed=len(case.name))
    report = diagnose([read_dump(path)], target)
    (d,) = report.dumps
    assert d.found == order, d.segments
    assert d.ok and report.exit_code == 0
    kinds = {s.found: s.kind for s in d.segments}
    assert kinds[-1] == "embedding"
    assert all(kinds[n] == "layer" for n in order if n >= 0)


def test_bf16_model_dump_against_bf16_target(tmp_path: Path) -> None:
    """A dump from a bf16 run, diagnosed on the same bf16 weights (a bf16 checkpoint)."""
    model = build_tiny_hf(
        tiny_hf_config("llama", num_layers=6, hidden_size=32), dtype=torch.bfloat16
    )
    target = target_from_model(model, random_init=True, seed=0)
    path, order = _every_state_dump(tmp_path, model, 96, torch.bfloat16, seed=9)
    (d,) = diagnose([read_dump(path)], target).dumps
    assert d.found == order
    assert d.rtol_source == "default for torch.bfloat16"


# -- faults named ------------------------------------------------------------------------------


def test_post_norm_segment_is_named(tmp_path: Path, tiny_llama, make_dump) -> None:
    model, ids = tiny_llama
    with torch.no_grad():
        hs = model(ids, output_hidden_states=True).hidden_states  # hs[-1] is post-norm
    path = write_dump(
        tmp_path / "pn.safetensors",
        [hs[2], hs[4], hs[6]],
        ids,
        layer_ids=[2, 4, 6],
        convention="hf-hidden-states",
        system="trainer using hidden_states[-1] as the last layer",
    )
    target = target_from_model(model, random_init=True, seed=7)
    with pytest.raises(ContractError, match="post-norm"):  # the claim itself is inexpressible
        diagnose([read_dump(path)], target)
    report = diagnose([read_dump(path)], target, claim_ids=[1, 3, 5], claim_convention=CANONICAL)
    (d,) = report.dumps
    assert d.found == (1, 3, None)
    assert d.segments[2].kind == "post-norm"
    assert FindingKind.POST_NORM_FED.value in {f.kind for f in d.findings}
    assert report.exit_code == 1


def test_shift_names_cause_and_fix(tmp_path: Path, tiny_llama, make_dump) -> None:
    model, ids = tiny_llama
    target = target_from_model(model, random_init=True, seed=7)
    # a drafter trained on outputs [2, 3, 4], served with ids [1, 2, 3]: the newest SGLang's
    # llama.py takes every id as a layer output (+1 always) -> canonical [1, 2, 3]
    served = resolve_claim([1, 2, 3], "sglang", 6, basis="t", model_type="llama").expected
    assert served == (1, 2, 3)
    path = make_dump(tmp_path, "s.safetensors", model, ids, served, [1, 2, 3], "sglang")
    contract = CaptureContract((2, 3, 4), 6, 32)
    (d,) = diagnose([read_dump(path)], target, contract=contract).dumps
    assert d.found == (1, 2, 3)
    assert d.findings[0].kind == FindingKind.SHIFTED.value
    assert "1 layer early" in d.findings[0].message
    assert "read these ids differently" in (d.cause or "")
    assert "[2, 3, 4]" in (d.fix or "")  # what sglang needs to feed outputs 2, 3, 4
    # against its own claim the dump is right: the engine does what its rule says
    (own,) = diagnose([read_dump(path)], target).dumps
    assert own.ok


def test_two_dumps_same_and_different(tmp_path: Path, tiny_llama, make_dump) -> None:
    model, ids = tiny_llama
    target = target_from_model(model, random_init=True, seed=7)
    train = make_dump(tmp_path, "t.safetensors", model, ids, (0, 2, 4), [0, 2, 4], CANONICAL)
    same = make_dump(tmp_path, "s.safetensors", model, ids, (0, 2, 4), [1, 3, 5], "vllm")
    emb = make_dump(tmp_path, "e.safetensors", model, ids, (-1, 0, 2), [0, 2, 4], CANONICAL)
    order = make_dump(tmp_path, "o.safetensors", model, ids, (4, 0, 2), [4, 0, 2], CANONICAL)

    ok = diagnose([read_dump(train), read_dump(same)], target)
    assert ok.comparison is not None and ok.comparison.same and ok.exit_code == 0
    assert [d.role for d in ok.dumps] == ["training", "serving"]

    bad = diagnose([read_dump(train), read_dump(emb)], target)
    assert bad.comparison is not None and not bad.comparison.same
    assert bad.comparison.serving == (-1, 0, 2)
    kinds = [f.kind for f in bad.comparison.findings]
    assert kinds[0] == FindingKind.EMBEDDING_INSERTED.value
    assert "layer 4 was dropped" in bad.comparison.findings[0].message
    assert "capture code itself deviates" in (bad.dumps[1].cause or "")
    assert bad.exit_code == 1

    reordered = diagnose([read_dump(train), read_dump(order)], target)
    # no claim: the training dump is the reference, so the serving dump's order is a finding
    assert reordered.dumps[1].claim.basis == "the training dump"
    assert reordered.dumps[1].claim.expected == (0, 2, 4)
    assert reordered.dumps[1].own_claim is not None and not reordered.dumps[1].ok
    assert reordered.comparison is not None  # the drafter sees another order
    assert reordered.comparison.findings[0].kind == FindingKind.ORDER_DIFFERS.value
    text = reordered.render_text()
    assert "DIFFERENT" in text and "result: MISMATCH (exit 1)" in text
    assert reordered.to_dict()["comparison"]["same"] is False


def test_wrong_target_is_said(tmp_path: Path, tiny_llama, make_dump) -> None:
    model, ids = tiny_llama
    path = make_dump(tmp_path, "d.safetensors", model, ids, (0, 2), [0, 2], CANONICAL)
    other = build_tiny_hf(tiny_hf_config("llama", num_layers=6, hidden_size=32), seed=8)
    (d,) = diagnose([read_dump(path)], target_from_model(other, random_init=True, seed=8)).dumps
    assert d.found == (None, None)
    assert d.findings[0].kind == "unidentified"
    assert "wrong target" in (d.cause or "")


@pytest.mark.parametrize(
    ("mutate", "expect"),
    [
        ({"hidden_size": 16}, "hidden_size 16 != target hidden size 32"),
        ({"vocab": 500}, "outside the target's vocabulary of 96"),
    ],
)
def test_dump_target_mismatch(
    tmp_path: Path, tiny_llama, make_dump, mutate: dict, expect: str
) -> None:
    model, _ = tiny_llama
    h = mutate.get("hidden_size", 32)
    ids = torch.tensor([[1, 2, mutate.get("vocab", 3)]])
    path = write_dump(
        tmp_path / "d.safetensors",
        torch.zeros(1, 3, 2 * h),
        ids,
        layer_ids=[0, 1],
        convention=CANONICAL,
        system="t",
    )
    with pytest.raises(DumpError, match=expect):
        diagnose([read_dump(path)], target_from_model(model, random_init=True, seed=7))


# -- the difference vocabulary, over generated lists -------------------------------------------

L = 61
ids_lists = st.lists(st.integers(-1, L - 1), min_size=1, max_size=5, unique=True)


@settings(max_examples=50, deadline=None)
@given(ids=ids_lists)
def test_identical_lists_have_no_difference(ids: list[int]) -> None:
    assert describe_difference(ids, ids, L) == ()


@settings(max_examples=50, deadline=None)
@given(
    ids=st.lists(st.integers(0, L - 3), min_size=1, max_size=5, unique=True),
    d=st.sampled_from([-1, 1, 2]),
)
def test_uniform_shift_is_named(ids: list[int], d: int) -> None:
    got = [n + d for n in ids]
    found = describe_difference(ids, got, L)
    assert found[0].kind == FindingKind.SHIFTED.value
    assert ("early" if d < 0 else "late") in found[0].message
    assert f"{abs(d)} layer" in found[0].message
    assert sum(f.kind == "segment" for f in found) == len(ids)  # each position detailed


@settings(max_examples=50, deadline=None)
@given(ids=st.lists(st.integers(0, L - 1), min_size=2, max_size=5, unique=True), data=st.data())
def test_permutation_is_order_differs(ids: list[int], data: st.DataObject) -> None:
    perm = data.draw(st.permutations(ids).filter(lambda p: list(p) != ids))
    found = describe_difference(ids, list(perm), L)
    assert found[0].kind == FindingKind.ORDER_DIFFERS.value


@settings(max_examples=50, deadline=None)
@given(ids=st.lists(st.integers(0, L - 1), min_size=2, max_size=5, unique=True))
def test_embedding_insertion_is_named(ids: list[int]) -> None:
    got = [-1, *ids[:-1]]
    found = describe_difference(ids, got, L)
    kinds = [f.kind for f in found]
    assert FindingKind.EMBEDDING_INSERTED.value in kinds
    insertion = found[kinds.index(FindingKind.EMBEDDING_INSERTED.value)]
    assert f"layer {ids[-1]}" in insertion.message and "dropped" in insertion.message


@settings(max_examples=30, deadline=None)
@given(
    want=ids_lists,
    got=st.lists(st.one_of(st.none(), st.integers(-1, L - 1)), min_size=1, max_size=5),
)
def test_any_difference_is_reported_per_segment(want: list[int], got: list[int | None]) -> None:
    found = describe_difference(want, got, L)
    if want == got:
        assert found == ()
        return
    assert found  # something is said
    bad_positions = {
        p
        for p in range(max(len(want), len(got)))
        if p >= len(want) or p >= len(got) or want[p] != got[p] or got[p] is None
    }
    said = {int(f.message.split(":")[0].split()[1]) for f in found if f.kind == "segment"}
    assert said == bad_positions


def test_claim_resolution() -> None:
    assert resolve_claim([3, 31, 59], "hf-hidden-states", 61, basis="x").expected == (2, 30, 58)
    legacy = {"basis": "x", "architectures": ["LlamaForCausalLM"]}
    assert resolve_claim([58, 2, 30], "sglang-legacy", 61, **legacy).expected == (2, 30, 58)
    assert resolve_claim([58, 2, 30], CANONICAL, 61, basis="x").expected == (58, 2, 30)
    # release names resolve with the target's model type (SGLang's rule is per model file)
    kimi = {"basis": "x", "model_type": "deepseek_v3"}
    assert resolve_claim([2, 30, 58], "sglang==0.5.23", 61, **kimi).expected == (1, 29, 57)
    assert resolve_claim([2, 30, 58], "sglang==0.5.12", 61, **kimi).expected == (2, 30, 58)
    with pytest.raises(ContractError, match="unknown system name 'sglangg': did you mean"):
        resolve_claim([1], "sglangg", 61, basis="x")
    with pytest.raises(ContractError, match="--target") as err:  # never another file's rule
        resolve_claim([2, 30, 58], "sglang", 61, basis="x")
    assert err.value.field == "target"
    with pytest.raises(ContractError, match="outside"):
        resolve_claim([61], CANONICAL, 61, basis="x")


def test_two_dumps_without_a_claim_take_training_as_the_reference_and_give_the_fix(
    tmp_path: Path, tiny_llama, make_dump
) -> None:
    """Without a stamp, --contract or --ids, each dump used to be checked against its own
    metadata only: a serving dump one layer early was 'OK', and no fix was printed."""
    model, ids = tiny_llama
    target = target_from_model(model, random_init=True, seed=7)
    train = make_dump(tmp_path, "t.safetensors", model, ids, (0, 2, 4), [0, 2, 4], CANONICAL)
    # vLLM reads [0, 2, 4] as boundaries: canonical [-1, 1, 3], one layer early
    serve = make_dump(tmp_path, "s.safetensors", model, ids, (-1, 1, 3), [0, 2, 4], "vllm")
    report = diagnose([read_dump(train), read_dump(serve)], target)
    serving = report.dumps[1]
    assert serving.claim.basis == "the training dump" and serving.claim.expected == (0, 2, 4)
    assert not serving.ok and "read these ids differently" in (serving.cause or "")
    assert serving.fix_setting is not None
    assert serving.fix_setting["system"] == "vllm" and serving.fix_setting["ids"] == [1, 3, 5]
    assert serving.fix_setting["field"] == "eagle_aux_hidden_state_layer_ids"
    text = report.render_text()
    assert "fix: give vllm the ids [1, 3, 5]" in text
    assert any("training dump" in note for note in report.notes)
    data = report.to_dict()
    assert data["schema_version"] == 1 and data["dumps"][1]["fix_setting"]["ids"] == [1, 3, 5]


def test_a_long_dump_is_identified_on_a_bounded_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dump longer than the token cap (and with more sequences than the row cap) is
    identified on its first tokens of its first sequences, exactly, and the report says so:
    the forward never runs on the whole dump."""
    import eagle3_contracts.capture.identify as identify
    from eagle3_contracts.dumps import diagnose as diagnose_module

    monkeypatch.setattr(diagnose_module, "MAX_TOKENS", 5)
    monkeypatch.setattr(diagnose_module, "MAX_SEQUENCES", 2)
    model = build_synthetic(SyntheticConfig(num_layers=6, hidden_size=16, seed=1))
    input_ids = seeded_input_ids(64, 3, 40, seed=1)
    states = capture_states(model, input_ids, [1, 3, 5])
    path = write_dump(
        tmp_path / "long.safetensors",
        [states[i] for i in (1, 3, 5)],
        input_ids,
        layer_ids=[1, 3, 5],
        convention=CANONICAL,
        system="test: a long dump",
    )
    shapes: list[tuple[int, ...]] = []
    real = identify.identify_segments

    def spy(captured: torch.Tensor, model: torch.nn.Module, ids: torch.Tensor, **kw):  # type: ignore[no-untyped-def]
        shapes.append(tuple(captured.shape))
        return real(captured, model, ids, **kw)

    monkeypatch.setattr(identify, "identify_segments", spy)
    report = diagnose([read_dump(path)], target_from_model(model, random_init=True, seed=1))
    assert shapes == [(2, 5, 48)]
    assert report.ok and report.dumps[0].found == (1, 3, 5)
    assert f"{path}: identified on its first 5 of 40 tokens in 2 of 3 sequences" in " ".join(
        report.notes
    )


@pytest.mark.parametrize("release", ["sglang==0.5.23", "sglang==0.5.12", "vllm==0.33.0:v1"])
def test_a_dump_fix_is_the_fix_check_prints(release: str) -> None:
    """diagnose's fix for a release is the one proven search check uses: same field, same ids."""
    from eagle3_contracts.capture.targets import Target
    from eagle3_contracts.config.check import check_drafter
    from eagle3_contracts.dumps.diagnose import _release_fix, claim_from_contract

    target = Target(None, "t", True, 0, 61, 16, 64, "deepseek_v3", "float32",
                    ("DeepseekV3ForCausalLM",))  # fmt: skip
    config = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
              "num_hidden_layers": 61, "hidden_size": 16}  # fmt: skip
    own = resolve_claim(
        [2, 30, 58], release, 61, basis="dump", model_type="deepseek_v3",
        architectures=("DeepseekV3ForCausalLM",),
    )  # fmt: skip
    trained = claim_from_contract(CaptureContract((2, 30, 58), 61, 16))
    words, setting = _release_fix(own, trained, target)
    draft = {"hidden_size": 16, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]},
             "eagle_aux_hidden_state_layer_ids": [2, 30, 58]}  # fmt: skip
    report = check_drafter(
        draft, target=config, trained_with="specforge-hf", serve_with=(release,), environ={}
    )
    (row,) = report.rows
    if row.fix_setting() is None:
        assert setting is None and words is not None and words.startswith("no ids make")
        return
    assert setting == {**row.fix_setting(), "system": release}  # type: ignore[dict-item]
    assert words == f"give {release} the ids {setting['ids']} (they feed canonical [2, 30, 58])"
