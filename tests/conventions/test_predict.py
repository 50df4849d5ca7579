"""predict_feed / predict_system: one answer per (engine, release, runner, model file) and per
(trainer, release, backend), from the committed probe tables (no network)."""

from __future__ import annotations

import pytest

from eagle3_contracts.conventions import parse_system, predict
from eagle3_contracts.conventions.predict import Feed, predict_feed, predict_system
from eagle3_contracts.conventions.releases import known_releases
from eagle3_contracts.errors import ContractError

IDS = "eagle_aux_hidden_state_layer_ids"
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61, "hidden_size": 7168}
LLAMA = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 4096}
QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 36, "hidden_size": 4096}


def nested(*ids: int, **extra: object) -> dict:
    return {"eagle_config": {IDS: list(ids), **extra}}


def top(*ids: int) -> dict:
    return {IDS: list(ids)}


@pytest.mark.parametrize("framework", ["sglang", "vllm"])
def test_unversioned_name_is_the_newest_probed_release(framework: str) -> None:
    newest = known_releases()[framework][-1]
    for draft in (nested(2, 30, 58), top(3, 31, 59), {}, nested(1, 29, 57)):
        plain = predict_feed(framework, draft, DSV3)
        pinned = predict_feed(f"{framework}=={newest}", draft, DSV3)
        assert plain.release == pinned.release == f"{framework}=={newest}"
        assert (plain.kind, plain.canonical, plain.runner) == (
            pinned.kind,
            pinned.canonical,
            pinned.runner,
        )
        assert any(f"newest probed release {framework}=={newest}" in a for a in plain.assumptions)


def test_feed_is_the_planned_api() -> None:
    feed = predict_feed("vllm==0.32.0:v1", nested(2, 30, 58), DSV3)
    assert isinstance(feed, Feed)
    assert (feed.kind, feed.canonical, feed.width_states, feed.crash) == (
        "segments",
        (1, 29, 57),
        3,
        None,
    )
    assert (feed.release, feed.runner, feed.model_file) == ("vllm==0.32.0", "v1", "deepseek_v2.py")
    assert "gpu_model_runner.py" in feed.source and feed.to_dict()["kind"] == "segments"


# -- vLLM runners ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("serve", "target", "runner"),
    [
        ("vllm==0.33.0", DSV3, "v2"),  # V2 unless Triton is missing (assumed present)
        ("vllm==0.32.0", LLAMA, "v2"),
        ("vllm==0.22.0", QWEN3, "v2"),  # DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES, dense
        ("vllm==0.22.0", LLAMA, "v1"),
        ("vllm==0.22.0", {**QWEN3, "quantization_config": {"quant_method": "fp8"}}, "v1"),
        ("vllm==0.22.0", {**QWEN3, "num_experts": 128}, "v1"),
        ("vllm==0.33.0:v1", DSV3, "v1"),
    ],
)
def test_the_runner_each_release_picks(serve: str, target: dict, runner: str) -> None:
    feed = predict_feed(serve, top(3, 17, 30), target)
    assert feed.runner == runner
    if ":" not in serve:
        assert any("runner" in a and "use_v2_model_runner" in a for a in feed.assumptions)


def test_v2_ignores_the_nested_eagle_ids_v1_reads_them() -> None:
    v1 = predict_feed("vllm==0.33.0:v1", nested(3, 17, 30), LLAMA)
    v2 = predict_feed("vllm==0.33.0:v2", nested(3, 17, 30), LLAMA)
    assert v1.canonical == (2, 16, 29) and v1.ids_source == f"eagle_config.{IDS}"
    assert v2.canonical == (1, 15, 28) and v2.native_ids is None  # model default (2, 16, 29)
    assert any("ignored" in n for n in v2.notes)
    layer_ids = predict_feed("vllm==0.33.0:v2", {"eagle_config": {"layer_ids": [3, 17, 30]}}, LLAMA)
    assert layer_ids.canonical == (2, 16, 29)  # V2 reads eagle_config.layer_ids


# -- fc width, duplicates, unreachable ids ---------------------------------------------------


def test_fc_width_rule() -> None:
    # num_aux_hidden_states wins; else the nested ids; top-level ids never size fc
    assert predict_feed("vllm==0.33.0:v1", top(1, 2, 3, 4), LLAMA).width_states == 3
    assert predict_feed("vllm==0.33.0:v1", top(1, 2, 3, 4), LLAMA).crash == "fc-width-mismatch"
    four = {**top(1, 2, 3, 4), "num_aux_hidden_states": 4}
    assert predict_feed("vllm==0.33.0:v1", four, LLAMA).kind == "segments"
    assert predict_feed("vllm==0.33.0:v1", nested(1, 2), LLAMA).width_states == 2


def test_duplicates_and_ids_past_l_crash_the_drafter() -> None:
    dup = predict_feed("vllm==0.32.0:v1", top(3, 3, 17), LLAMA)
    assert (dup.kind, dup.crash, dup.canonical) == ("crash", "fc-width-mismatch", (2, 16))
    past = predict_feed("vllm==0.32.0:v1", top(3, 17, 40), LLAMA)
    assert (past.kind, past.canonical) == ("crash", (2, 16))
    assert any("never reached" in n for n in past.notes)


def test_use_aux_hidden_state_false_feeds_the_final_state() -> None:
    for serve in ("sglang==0.5.23", "vllm==0.33.0:v1"):
        feed = predict_feed(serve, nested(2, 30, 58, use_aux_hidden_state=False), DSV3)
        assert feed.kind == "segments" and feed.final_state and feed.canonical == ()
        assert "use_aux_hidden_state" in feed.source


# -- SGLang model files ------------------------------------------------------------------------


def test_sglang_rule_per_model_file() -> None:
    # llama.py adds +1 in every release; deepseek_v2.py only when ids[0] == 1 from 0.5.13
    assert predict_feed("sglang", nested(2, 16, 29), LLAMA).canonical == (2, 16, 29)
    assert predict_feed("sglang", nested(2, 30, 58), DSV3).canonical == (1, 29, 57)
    assert predict_feed("sglang==0.5.12", nested(2, 30, 58), DSV3).canonical == (2, 30, 58)


def test_sglang_embedding_crashes_where_the_loop_adds_none() -> None:
    old = predict_feed("sglang==0.5.12", nested(-1, 2, 16), LLAMA)
    assert (old.kind, old.crash, old.canonical) == ("crash", "embedding-residual-none", ())
    new = predict_feed("sglang==0.5.23", nested(-1, 2, 16), LLAMA)
    assert (new.kind, new.canonical) == ("segments", (-1, 2, 16))


def test_sglang_crashes_observed_on_cpu() -> None:
    """registry-disagreements D1-D3 (SGLang's own model code run on CPU)."""
    nothing = predict_feed("sglang==0.5.23", nested(31), LLAMA)  # +1 = 32 = L: never reached
    assert (nothing.crash, nothing.canonical) == ("no-aux-states", ())
    short = predict_feed("sglang==0.5.23", nested(2, 2, 30), DSV3)  # packer sized 3, gets 2
    assert short.crash == "aux-count-short" and short.canonical == (1, 29)
    qwen3_moe = {"architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 6, "hidden_size": 8}
    assert predict_feed("sglang==0.5.23", nested(2, 4, 5), qwen3_moe).crash == "setter-index-error"


def test_delegating_and_after_stack_model_files() -> None:
    qwen3_vl = {
        "architectures": ["Qwen3VLForConditionalGeneration"],
        "text_config": {"num_hidden_layers": 36, "hidden_size": 4096},
    }
    feed = predict_feed("sglang==0.5.23", nested(1, 17, 32), qwen3_vl)
    assert feed.kind == "segments" and feed.canonical == (1, 17, 32)  # +1 once (delegated)
    gemma = {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
    old = predict_feed("sglang==0.5.14", nested(1, 16, 33), gemma)
    assert old.canonical == (1, 16, 33) and old.state == "residual stream"  # 33 = last output
    new = predict_feed("sglang==0.5.23", nested(1, 16, 33), gemma)
    assert new.canonical == (1, 16, 33) and new.state.startswith("layer delta")


def test_unsupported_is_a_verdict() -> None:
    gemma = {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
    feed = predict_feed("vllm==0.33.0", nested(1, 16, 30), gemma)
    assert feed.kind == "unsupported" and "SupportsEagle3" in feed.source and feed.canonical == ()
    longcat = {"architectures": ["LongcatFlashForCausalLM"], "num_layers": 28, "hidden_size": 8}
    assert predict_feed("vllm", {}, longcat).kind == "unsupported"


def test_unknown_does_not_raise() -> None:
    assert predict_feed("sglang==0.4.0", {}, LLAMA).kind == "unknown"
    nameless = {"num_hidden_layers": 32, "hidden_size": 8}  # no architectures, no model_type
    feed = predict_feed("sglang", nested(1, 2, 3), nameless)
    assert feed.kind == "unknown" and "architectures" in feed.notes[-1]


@pytest.mark.parametrize("bad", ["", "trtllm==1.0", "sglang==", "sglang==0.5.23:v1", "vllm:v3"])
def test_malformed_serve_names_are_typed_errors(bad: str) -> None:
    with pytest.raises(ContractError) as err:
        predict_feed(bad, {}, LLAMA)
    assert err.value.field == "serve_with"


def test_aliases() -> None:
    assert (
        predict_feed("vllm-nested", nested(3, 17, 30), LLAMA).system == "vllm==0.33.0:v1 llama.py"
    )
    assert parse_system("sglang-legacy", field="serve_with").key == "sglang==0.5.12"


# -- trainers ----------------------------------------------------------------------------------


def test_specforge_0_2_0_trains_what_sglang_0_5_14_captures() -> None:
    kimi = predict_system("specforge", nested(2, 30, 58), DSV3)
    assert kimi.release == "specforge==0.2.0" and kimi.canonical == (1, 29, 57)
    assert any("newest release specforge==0.2.0" in a for a in kimi.assumptions)
    default = predict_system("specforge==0.2.0", {}, LLAMA)  # [1, 15, 28], explicit to SGLang
    assert default.canonical == (1, 15, 28) and default.native_ids == (1, 15, 28)


@pytest.mark.parametrize(
    ("ids", "why"), [((1, 2), "exactly 3"), ((2, 2, 30), "duplicate"), ((1, 2, 61), "depth")]
)
def test_specforge_refuses_what_its_resolver_refuses(ids: tuple[int, ...], why: str) -> None:
    feed = predict_system("specforge==0.2.0", nested(*ids), DSV3)
    assert feed.crash == "trainer-refused" and why in feed.notes[0]


def test_an_engine_release_as_trainer_is_its_capture() -> None:
    assert predict_system("sglang==0.5.14", nested(2, 16, 29), LLAMA) == predict_feed(
        "sglang==0.5.14", nested(2, 16, 29), LLAMA
    )


# The unversioned names, used element-wise by stages/diagnose through conventions.get, must say
# what the release they name feeds for the target's model file (check answers through predict).
REGISTRY_TIES = (
    ("sglang", "sglang", DSV3, "nested"),  # sglang#25454 rule: deepseek_v2.py
    ("vllm", "vllm", LLAMA, "top"),  # newest release, default runner V2: top-level ids
    ("vllm-nested", "vllm-nested", LLAMA, "nested"),  # vllm==0.33.0:v1 reads the nested ids
    ("sglang-legacy", "sglang-legacy", LLAMA, "nested"),  # sglang==0.5.12: +1 always
)


@pytest.mark.parametrize(("entry", "serve", "target", "where"), REGISTRY_TIES)
def test_registry_entries_equal_their_release(
    entry: str, serve: str, target: dict, where: str
) -> None:
    from eagle3_contracts import conventions

    convention = conventions.get(entry, architectures=target["architectures"])
    n = target["num_hidden_layers"]
    cases = [(2, n // 2, n - 3), (1, n // 2 - 1, n - 4), (0, 5, 9), (1, 5, 9), (3, 7, n - 1)]
    for ids in cases:
        draft = nested(*ids) if where == "nested" else top(*ids)
        feed = predict_feed(serve, draft, target)
        try:
            expected = tuple(sorted(convention.to_canonical(ids, n)))
        except ContractError:
            expected = None  # the entry says some id is never captured
        if feed.kind == "segments":
            assert feed.canonical == expected, (entry, ids, feed.canonical, expected)
        else:  # the release crashes (embedding + None, fc width): the entry must refuse too
            assert expected is None or len(expected) != len(ids), (entry, ids, feed.crash)


def test_checked_convention_releases() -> None:
    """--trained-with speculators==0.9.0: its reading, checked in that wheel, is the entry."""
    from eagle3_contracts import conventions

    assert conventions.get("speculators==0.9.0") is conventions.get("speculators")
    with pytest.raises(ContractError, match=r"speculators==0\.9\.0"):
        conventions.get("speculators==0.8.0")


def test_sglang_drafter_skips_fc_for_a_feed_as_wide_as_its_embedding() -> None:
    """One collected state of width H on a drafter of hidden size H runs silently
    without fc (llama_eagle3.py compares the feed's width with its embedding's)."""
    small = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 6, "hidden_size": 64}
    one = predict_feed("sglang==0.5.23", {"hidden_size": 64, **nested(4, 5, 6)}, small)
    assert (one.kind, one.canonical, one.state) == ("segments", (4,), predict.FC_SKIPPED)
    two = predict_feed("sglang==0.5.23", {"hidden_size": 64, **nested(2, 4, 5)}, small)
    assert two.crash == "fc-width-mismatch"  # 128 wide: fc runs and cannot take it
    vllm = predict_feed("vllm==0.32.0:v1", {"hidden_size": 64, **top(5, 6, 9)}, small)
    assert vllm.crash == "fc-width-mismatch"  # vLLM always applies fc
