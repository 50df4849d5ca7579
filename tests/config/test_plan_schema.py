"""The JSON form of plans and findings (``check --json``, schema_version 1) is a user-facing
schema: its field names and their order are pinned here, so a renamed or dropped key fails."""

from __future__ import annotations

from eagle3_contracts import compare, resolve
from eagle3_contracts.config.readers import IDS_FIELD

KIMI = {"num_hidden_layers": 61, "hidden_size": 7168, "model_type": "kimi_k25"}
DRAFT = {"eagle_config": {IDS_FIELD: [2, 30, 58]}}

PLAN_FIELDS = [
    "system", "kind", "crash", "release", "runner", "model_file", "source", "assumptions",
    "width_states", "state", "layer_ids", "order", "native_ids", "ids_source", "width",
    "non_canonical", "refused", "pp_dropped", "notes",
]  # fmt: skip
FINDING_FIELDS = ["kind", "message", "layers", "shift", "fix_native_ids", "fix"]


def test_a_plan_serialises_every_schema_field() -> None:
    plan = resolve(DRAFT, KIMI, "trtllm")
    data = plan.to_dict()
    assert list(data) == PLAN_FIELDS
    assert data["system"] == "trtllm"
    assert data["layer_ids"] == [2, 30, 58]
    assert data["native_ids"] == [2, 30, 58]
    assert data["width"] == 3 * 7168
    for key in ("assumptions", "non_canonical", "pp_dropped", "notes"):
        assert isinstance(data[key], list), key


def test_a_finding_serialises_every_schema_field_and_names_its_layers() -> None:
    trained = resolve(DRAFT, KIMI, "trtllm")
    served = resolve(DRAFT, KIMI, "vllm")
    findings = compare(trained, served)
    assert findings, "vLLM feeds Kimi-K2.5 the boundary reading: layers 1, 29, 57"
    data = findings[0].to_dict()
    assert list(data) == FINDING_FIELDS
    assert data["kind"] == "shifted"
    assert data["shift"] == -1
    assert data["fix_native_ids"] == [3, 31, 59]
    assert data["layers"] == [1, 29, 57]  # the layers it concerns: what vLLM feeds
    assert "[1, 29, 57] instead of [2, 30, 58]" in data["message"]  # the message names them too
    assert "[3, 31, 59]" in data["fix"]
