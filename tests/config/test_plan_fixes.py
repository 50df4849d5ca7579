"""``config.plan``'s proven fix: the fix ``proven_fix`` prints for what a release feeds
(``conventions.predict.predict_system``): the ids to write where that release reads them, proven by
predicting again (a printed fix re-checks as ok), or why no id list can work; ``apply_fix``
writes exactly those ids at that path and leaves the rest of the drafter's config unchanged.
"""

from __future__ import annotations

import copy

import pytest

from eagle3_contracts.config import plan
from eagle3_contracts.config.readers import IDS_FIELD, read_draft_config, read_target_config
from eagle3_contracts.conventions import needs_target, parse_system, predict
from eagle3_contracts.conventions.predict import Feed

NESTED = f"eagle_config.{IDS_FIELD}"
DSV3 = read_target_config(
    {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61, "hidden_size": 7168}
)
LLAMA = read_target_config(
    {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 8}
)
GEMMA = read_target_config(
    {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 34, "hidden_size": 8}
)


def nested(*ids: int) -> dict:
    return {"eagle_config": {IDS_FIELD: list(ids)}}


def draft(*ids: int):
    return read_draft_config(nested(*ids) if ids else {})


def feed_of(system: str, config: dict, target) -> Feed:
    return predict.predict_system(system, config, target)


def feed_for(system: str, drafter, target) -> Feed:
    return predict.predict_system(system, dict(drafter.raw), target)


def row(**kw: object) -> Feed:
    """A hand-made answer, for the verdict classes no search is tried for."""
    fields: dict = {
        "kind": "segments",
        "canonical": (1, 29, 57),
        "width_states": 3,
        "crash": None,
        "release": "sglang==0.5.23",
        "runner": None,
        "model_file": "deepseek_v2.py",
        "source": "deepseek_v2.py:3458",
        "read_path": NESTED,
    }
    return Feed(**{**fields, **kw})


# -- which names are answered per release --------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "answered"),
    [
        ("sglang", True),
        ("sglang==0.5.12", True),
        ("sglang-legacy", True),  # an alias of a release
        ("vllm==0.33.0:v1", True),
        ("sglang==0.4.0", True),  # answered (as unknown: not probed), not refused
        ("specforge", True),
        ("specforge==0.2.0", True),
        ("specforge == 0.2.0", True),
        ("trtllm", False),  # registry rows
        ("specforge-hf", False),
        ("speculators", False),
    ],
)
def test_engines_aliases_and_trainer_releases_are_answered_per_release(
    name: str, answered: bool
) -> None:
    assert needs_target(parse_system(name, field="serve_with")) is answered


# -- what a release feeds ------------------------------------------------------------------------
def test_an_unversioned_engine_is_its_newest_release_and_says_so() -> None:
    fed = feed_for("sglang", draft(2, 30, 58), DSV3)
    assert (fed.kind, fed.release, fed.model_file) == (
        "segments",
        "sglang==0.5.23",
        "deepseek_v2.py",
    )
    # 0.5.23 reads ids[0] != 1 as loop indices: boundaries 2, 30, 58 = canonical 1, 29, 57
    assert (fed.canonical, fed.native_ids, fed.ids_source) == ((1, 29, 57), (2, 30, 58), NESTED)
    assert fed.assumptions == ("unversioned 'sglang' = the newest probed release sglang==0.5.23",)
    legacy = feed_for("sglang-legacy", draft(2, 30, 58), DSV3)  # +1 always
    assert (legacy.release, legacy.canonical, legacy.assumptions) == (
        "sglang==0.5.12",
        (2, 30, 58),
        (),
    )


def test_a_trainer_release_feeds_what_it_trained_on() -> None:
    # SpecForge 0.2.0 captures with SGLang 0.5.14, which reads [2, 30, 58] as loop indices
    fed = feed_for("specforge==0.2.0", draft(2, 30, 58), DSV3)
    assert (fed.kind, fed.release, fed.canonical) == ("segments", "specforge==0.2.0", (1, 29, 57))
    assert "training features = what sglang==0.5.14 captures" in fed.assumptions[-1]
    # the unversioned trainer name says which release and backend it stands for
    bare = feed_for("specforge", draft(2, 30, 58), DSV3)
    assert bare.canonical == fed.canonical and bare.assumptions[0] == (
        "unversioned 'specforge' = its newest release specforge==0.2.0 with its default (only) "
        "backend sglang"
    )


# -- the fix: none, with the reason ---------------------------------------------------------------
def test_an_unsupported_row_has_no_fix_and_names_its_source() -> None:
    fix = plan.proven_fix((1, 29, 57), 3, "sglang", row(kind="unsupported"), draft(), DSV3)
    assert fix == plan.Fix(None, None, "no native ids can fix it: deepseek_v2.py:3458")
    assert fix.label == "no native ids can fix it (see details)"


def test_an_unknown_row_has_no_fix_and_names_every_note() -> None:
    unknown = row(kind="unknown", notes=("needs reading at a.py:1", "and at b.py:2"))
    fix = plan.proven_fix((1, 29, 57), 3, "sglang", unknown, draft(), DSV3)
    assert (fix.native_ids, fix.path) == (None, None)
    assert (
        fix.why == "no fix is printed for an unknown answer: needs reading at a.py:1; and at b.py:2"
    )


def test_serving_the_final_state_has_no_id_fix() -> None:
    config = {"eagle_config": {IDS_FIELD: [2, 30, 58], "use_aux_hidden_state": False}}
    fed = feed_of("sglang==0.5.23", config, DSV3)
    assert fed.final_state
    fix = plan.proven_fix((1, 29, 57), 3, "sglang==0.5.23", fed, draft(2, 30, 58), DSV3)
    assert (fix.native_ids, fix.path) == (None, None)
    assert fix.why == (
        "no native ids can fix it: eagle_config.use_aux_hidden_state is false, so no aux states "
        "are captured; remove it (or set it true) to serve an EAGLE-3 drafter"
    )


@pytest.mark.parametrize(
    ("want", "shown"),
    [
        ((29, 1, 57), "29, 1, 57"),  # not ascending
        ((1, 29, 29), "1, 29, 29"),  # ascending, but a layer twice
        ((29, 29), "29, 29"),
    ],
)
def test_an_order_or_a_repeat_no_engine_concatenates_has_no_id_fix(
    want: tuple[int, ...], shown: str
) -> None:
    fed = feed_for("sglang", draft(2, 30, 58), DSV3)
    fix = plan.proven_fix(want, len(want), "sglang", fed, draft(2, 30, 58), DSV3)
    assert (fix.native_ids, fix.path) == (None, None)
    assert fix.why == (
        "no native ids can express it: sglang==0.5.23 concatenates each layer once in ascending "
        f"order, the drafter was trained on [{shown}]; retrain with a sorted list of distinct ids"
    )


def test_a_release_feeding_layer_deltas_cannot_serve_a_residual_trained_drafter() -> None:
    fed = feed_for("sglang==0.5.23", draft(1, 16, 30), GEMMA)
    assert fed.state == predict.DELTA and len(fed.notes) == 1
    fix = plan.proven_fix((1, 16, 33), 3, "sglang==0.5.23", fed, draft(1, 16, 30), GEMMA)
    assert (fix.native_ids, fix.path) == (None, None)
    assert fix.why == (
        f"no native ids can fix it: sglang==0.5.23 gemma3_causal.py feeds the {predict.DELTA} "
        f"({fed.notes[-1]}); serve with a release that captures the residual stream"
    )


def test_the_delta_reason_cites_the_last_note_else_the_source() -> None:
    noted = row(state=predict.DELTA, notes=("first", "why: stores hidden alone"))
    fix = plan.proven_fix((1, 29, 57), 3, "sglang", noted, draft(), DSV3)
    assert fix.why == (
        "no native ids can fix it: sglang==0.5.23 deepseek_v2.py feeds the "
        f"{predict.DELTA} (why: stores hidden alone); serve with a release that captures the "
        "residual stream"
    )
    bare = plan.proven_fix((1, 29, 57), 3, "sglang", row(state=predict.DELTA), draft(), DSV3)
    assert f"{predict.DELTA} (deepseek_v2.py:3458); serve" in bare.why


def test_a_release_reading_no_config_field_has_no_id_fix() -> None:
    fix = plan.proven_fix((1, 29, 57), 3, "sglang", row(read_path=None), draft(), DSV3)
    assert fix == plan.Fix(
        None, None, "no native ids can fix it: sglang==0.5.23 reads no config field"
    )


def test_a_residual_release_cannot_serve_a_delta_trained_drafter() -> None:
    # sglang-legacy feeds Gemma's residual stream: no id list gives the deltas it was trained on
    fed = feed_for("sglang-legacy", draft(1, 16, 30), GEMMA)
    assert fed.state == predict.STREAM
    kw = {"state": predict.DELTA}
    fix = plan.proven_fix((1, 16, 33), 3, "sglang-legacy", fed, draft(1, 16, 30), GEMMA, **kw)
    assert fix == plan.Fix(
        None,
        None,
        f"no id list written at {NESTED} makes sglang==0.5.12 gemma3_causal.py feed canonical "
        "[1, 16, 33]",
    )


def test_a_layer_the_release_cannot_capture_has_no_fix() -> None:
    # sglang 0.5.23 never captures the last layer's output (canonical 60 of 61)
    fed = feed_for("sglang", draft(2, 30, 58), DSV3)
    fix = plan.proven_fix((10, 20, 60), 3, "sglang", fed, draft(2, 30, 58), DSV3)
    assert fix == plan.Fix(
        None,
        None,
        f"no id list written at {NESTED} makes sglang==0.5.23 deepseek_v2.py feed canonical "
        "[10, 20, 60]",
    )


def test_an_fc_for_another_number_of_states_names_the_setting() -> None:
    fed = feed_for("sglang", draft(2, 30, 58), DSV3)  # fc for 3 states
    # the drafter's fc was trained on 4 states (3 layers and the post-norm state)
    fix = plan.proven_fix((1, 10, 20), 4, "sglang", fed, draft(2, 30, 58), DSV3)
    assert (fix.native_ids, fix.path) == (None, None)
    assert fix.why == (
        f"no id list written at {NESTED} makes sglang==0.5.23 deepseek_v2.py feed canonical "
        "[1, 10, 20]; its fc takes 3 states, the drafter has 4: set num_aux_hidden_states = 4"
    )


def test_a_row_that_sizes_no_fc_gets_no_width_hint() -> None:
    fed = feed_for("sglang", draft(2, 30, 58), DSV3)
    unsized = row(width_states=None, canonical=fed.canonical)
    fix = plan.proven_fix((10, 20, 60), 4, "sglang", unsized, draft(2, 30, 58), DSV3)
    assert fix.why == (
        f"no id list written at {NESTED} makes sglang==0.5.23 deepseek_v2.py feed canonical "
        "[10, 20, 60]"
    )


# -- the fix: ids, proven --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("system", "target", "want", "ids", "path", "key"),
    [
        # the trained layers as written
        ("sglang", DSV3, (1, 10, 20), (1, 10, 20), NESTED, "sglang==0.5.23 deepseek_v2.py"),
        ("sglang-legacy", LLAMA, (5,), (5,), NESTED, "sglang==0.5.12 llama.py"),
        # one more each (boundaries)
        ("sglang", DSV3, (-1, 10, 20), (0, 11, 21), NESTED, "sglang==0.5.23 deepseek_v2.py"),
        ("vllm==0.33.0:v1", LLAMA, (10, 20, 31), (11, 21, 32), IDS_FIELD,
         "vllm==0.33.0:v1 llama.py"),
        # canonical 0 needs boundary 1 without ids[0] == 1: the +1 list rotated
        ("sglang", DSV3, (0, 10, 20), (11, 21, 1), NESTED, "sglang==0.5.23 deepseek_v2.py"),
        ("sglang==0.5.23", GEMMA, (1, 16, 33), (1, 16, 33), NESTED,
         "sglang==0.5.23 gemma3_causal.py"),
    ],
)  # fmt: skip
def test_a_printed_fix_rechecks_as_the_trained_layers(
    system: str, target, want: tuple[int, ...], ids: tuple[int, ...], path: str, key: str
) -> None:
    raw = nested(2, 12, 22)
    fed = feed_of(system, raw, target)
    state = fed.state  # a delta-trained drafter is fixed for a release feeding deltas
    fix = plan.proven_fix(want, len(want), system, fed, read_draft_config(raw), target, state=state)
    assert (fix.native_ids, fix.path) == (ids, path)
    shown = ", ".join(map(str, ids))
    assert fix.why == f"set {path} = [{shown}]: {key} then feeds them"
    assert fix.label == f"{path} = [{shown}]"
    again = feed_of(system, plan.apply_fix(raw, fix), target)
    assert (again.kind, again.canonical, again.width_states) == ("segments", want, len(want))
    assert again.native_ids == ids and again.ids_source == path


def test_the_default_state_is_the_residual_stream() -> None:
    fed = feed_for("sglang", draft(2, 30, 58), DSV3)
    fix = plan.proven_fix((1, 10, 20), 3, "sglang", fed, draft(2, 30, 58), DSV3)
    assert fix.native_ids == (1, 10, 20)


# -- applying a fix ------------------------------------------------------------------------------
def test_apply_fix_writes_the_ids_where_the_release_reads_and_nothing_else() -> None:
    raw = {
        "eagle_config": {IDS_FIELD: [2, 30, 58], "use_aux_hidden_state": True},
        IDS_FIELD: [9],
        "draft_vocab_size": 32000,
    }
    before = copy.deepcopy(raw)
    out = plan.apply_fix(raw, plan.Fix((1, 29, 57), NESTED, "set"))
    assert out == {
        "eagle_config": {IDS_FIELD: [1, 29, 57], "use_aux_hidden_state": True},
        IDS_FIELD: [9],
        "draft_vocab_size": 32000,
    }
    assert raw == before  # the caller's config (and its nested dicts) untouched
    top = plan.apply_fix(raw, plan.Fix((3,), IDS_FIELD, "set"))
    assert top == {**before, IDS_FIELD: [3]} and raw == before


@pytest.mark.parametrize("eagle_config", [None, [1, 2], "nested"])
def test_apply_fix_replaces_a_section_that_is_not_a_mapping(eagle_config: object) -> None:
    out = plan.apply_fix({"eagle_config": eagle_config, "x": 1}, plan.Fix((4, 5), NESTED, ""))
    assert out == {"eagle_config": {IDS_FIELD: [4, 5]}, "x": 1}


def test_apply_fix_creates_the_sections_of_a_deeper_path() -> None:
    out = plan.apply_fix({"a": {"keep": 1}}, plan.Fix((7,), "a.b.c", ""))
    assert out == {"a": {"keep": 1, "b": {"c": [7]}}}
    assert plan.apply_fix({}, plan.Fix((7,), "a.b", "")) == {"a": {"b": [7]}}


@pytest.mark.parametrize(
    "fix", [plan.Fix(None, None, "why"), plan.Fix((1,), None, ""), plan.Fix(None, "p", "")]
)
def test_a_fix_without_ids_or_path_cannot_be_applied(fix: plan.Fix) -> None:
    with pytest.raises(ValueError) as err:
        plan.apply_fix({}, fix)
    assert str(err.value) == "this fix has no native ids to apply"
    assert fix.label == "no native ids can fix it (see details)"


def test_a_feed_already_right_has_no_id_fix_and_says_what_it_reads() -> None:
    """What is wrong on such a row is not the ids (a partition, a flag): the search never
    proposes the ids the config already holds."""
    feed = feed_for("sglang==0.5.23", draft(1, 15, 28), LLAMA)
    assert feed.canonical == (1, 15, 28)
    fix = plan.proven_fix((1, 15, 28), 3, "sglang==0.5.23", feed, draft(1, 15, 28), LLAMA)
    assert (fix.native_ids, fix.path) == (None, None)
    assert fix.why == (
        "no id list changes it: sglang==0.5.23 llama.py already feeds canonical [1, 15, 28] "
        f"from {NESTED} = [1, 15, 28]"
    )
    default = feed_for("sglang==0.5.23", draft(), LLAMA)
    fix = plan.proven_fix((1, 15, 28), 3, "sglang==0.5.23", default, draft(), LLAMA)
    assert fix.native_ids is None and fix.why.endswith(
        "from its default (no ids where it reads them)"
    )


@pytest.mark.parametrize("ids", [(1, 15, 28), ()])
def test_a_pipeline_drop_on_sglang_names_the_partition_not_the_ids(ids: tuple[int, ...]) -> None:
    """``check --pp-size 4`` of a Llama drafter on SGLang: the remedy is the partition; the fix
    never prints the ids the config already holds (or their default's equal)."""
    from eagle3_contracts.config.check import check_drafter

    report = check_drafter(
        nested(*ids) if ids else {},
        target=LLAMA,
        trained_with="specforge" if ids else "eagle-reference",
        serve_with=("sglang==0.5.23",),
        pp_size=4,
        environ={},
    )
    (row,) = report.rows
    assert not row.ok and row.plan.pp_dropped == (1, 15)
    assert row.fix_native_ids is None and row.fix_setting() is None
    assert row.fix_label() == "no ids fix it: the pipeline partition (see details)"
    assert row.fix.endswith(
        "keep every trained layer on the last pipeline stage, the only one sglang==0.5.23 "
        "llama.py captures on: serve without pipeline parallelism, or with a --pp-partition "
        "whose last stage starts at layer 2 or earlier"
    )
