"""SGLang's own ``set_dflash_layers_to_capture`` on CPU (the release's model classes, one forward
each, identified against the HF forward) against ``conventions.methods``: what a DFlash drafter
with ``dflash_config.target_layer_ids`` is fed (``predict_feed("sglang==<release>", ...)``).

The release validates the ids to ``[0, L)`` before the setter (dflash_utils.py:579-585): the
cases stay inside it. The drafter's fc (len(ids) states) is not part of the target: a predicted
``fc-width-mismatch`` is compared by the layers the target collected.
"""

from __future__ import annotations

from typing import Any

import pytest

from eagle3_contracts.conventions import methods
from eagle3_contracts.conventions.predict import predict_feed
from eagle3_contracts.conventions.releases import load_table
from tests.engines.sglang import harness
from tests.engines.sglang.test_model_conformance import CANNOT_RUN, L

pytestmark = pytest.mark.engine

SETTER_FILES = tuple(
    c.model_file
    for c in harness.MODEL_CASES
    if c.model_file in methods.sglang_setter_files(load_table("sglang", "0.5.23"), "dflash")
)
CASES: tuple[tuple[int, ...], ...] = (
    (1, 3, 4),
    (0, 2, 4),  # the output of layer 0: loop index 1
    (2, 4, L - 1),  # the last layer's output: loop index L
    (4, 2, 3),  # unsorted: collected in layer order
    (2, 2, 4),  # duplicates
    (3,),  # one tap
)


@pytest.mark.parametrize("model_file", SETTER_FILES)
@pytest.mark.parametrize("ids", CASES, ids=str)
def test_dflash_capture_equals_prediction(
    sglang_runtime: dict[str, Any], model_file: str, ids: tuple[int, ...]
) -> None:
    release = sglang_runtime["release"]
    if (release, model_file) in CANNOT_RUN:
        pytest.xfail(CANNOT_RUN[(release, model_file)])
    pairs = sglang_runtime["pairs"]
    if model_file not in pairs:
        pairs[model_file] = harness.build_pair(harness.BY_FILE[model_file], L)
    pair = pairs[model_file]
    obs = harness.observe(pair, ids, setter="set_dflash_layers_to_capture")
    draft = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": len(ids),
        "dflash_config": {"target_layer_ids": list(ids)},
    }
    feed = predict_feed(f"sglang=={release}", draft, harness.target_config(pair))
    sglang_runtime["observed"].append(
        {"model_file": model_file, "ids": ids, "setter": "dflash", **obs.outcome()}
    )
    if feed.crash in (None, "fc-width-mismatch"):
        assert (obs.kind, obs.canonical) == ("segments", feed.canonical), (obs, feed.notes)
    else:
        assert (obs.kind, obs.crash) == ("crash", feed.crash), (obs, feed.notes)
