"""Hypothesis strategies of valid and corrupted drafter/target configs, and the full pipeline.

``corrupted_cases()`` draws a valid (draft, target) pair and applies one corruption that must
make reading fail: each case is ``(kind, draft, target)`` where draft/target are dicts, or
``bytes`` to be written to a file. ``pipeline`` runs everything a user can run on a config.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from eagle3_contracts import conventions
from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.plan import compare, resolve
from eagle3_contracts.config.readers import IDS_FIELD, read_draft_config, read_target_config
from eagle3_contracts.testing.strategies import draft_configs

NOT_AN_INT = st.one_of(
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
NOT_A_LIST = st.one_of(
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.dictionaries(st.text(), st.integers(), max_size=2),
)
NOT_AN_OBJECT = st.one_of(
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
BAD_SIZE = st.one_of(
    st.integers(max_value=0),
    st.booleans(),
    st.floats(),
    st.text(max_size=4),
    st.lists(st.integers(), max_size=1),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
DRAFT_KEYS = (
    IDS_FIELD,
    "eagle_config",
    "hidden_size",
    "target_hidden_size",
    "vocab_size",
    "draft_vocab_size",
    "architectures",
    "model_type",
    "speculators_model_type",
    "transformer_layer_config",
    "speculators_config",
    "norm_before_fc",
    "my_custom_norm",
)
TARGET_KEYS = ("num_hidden_layers", "hidden_size", "vocab_size", "text_config", "model_type")


@st.composite
def targets(draw: st.DrawFn) -> dict[str, Any]:
    sizes = {
        "num_hidden_layers": draw(st.integers(4, 96)),
        "hidden_size": draw(st.sampled_from((256, 1024, 4096))),
        "vocab_size": draw(st.sampled_from((32000, 128256))),
    }
    if draw(st.booleans()):  # multimodal wrapper
        return {"model_type": "wrapper", "architectures": ["X"], "text_config": sizes}
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], **sizes}


def _ids_holder(draft: dict[str, Any]) -> dict[str, Any]:
    if isinstance(draft.get("eagle_config"), dict):
        return draft["eagle_config"]
    return draft


@st.composite
def corrupted_cases(draw: st.DrawFn) -> tuple[str, Any, Any]:
    """One corruption of a valid pair; reading must raise ``ConfigError``/``ContractError``."""
    draft = draw(
        draft_configs(schema=st.sampled_from(("eagle_config", "top-level", "speculators")))
    )
    target = draw(targets())
    sizes = target.get("text_config", target)
    kind = draw(
        st.sampled_from(
            (
                "ids-not-a-list",
                "id-not-an-int",
                "ids-empty",
                "eagle-config-not-object",
                "bad-draft-size",
                "bad-target-size",
                "target-depth-missing",
                "text-config-not-object",
                "root-not-object",
                "truncated-json",
                "not-utf8",
                "architectures-not-strings",
                "known-norm-flag-not-bool",
            )
        )
    )
    holder = _ids_holder(draft)
    if kind == "ids-not-a-list":
        holder[IDS_FIELD] = draw(NOT_A_LIST)
    elif kind == "id-not-an-int":
        ids = list(holder[IDS_FIELD])
        ids.insert(
            draw(st.integers(0, len(ids))),
            draw(NOT_AN_INT.filter(lambda v: v is not None) | st.none()),
        )
        holder[IDS_FIELD] = ids
    elif kind == "ids-empty":
        holder[IDS_FIELD] = []
    elif kind == "eagle-config-not-object":
        draft["eagle_config"] = draw(NOT_AN_OBJECT)
    elif kind == "bad-draft-size":
        key = draw(st.sampled_from(("hidden_size", "target_hidden_size", "draft_vocab_size")))
        where = draft.get("transformer_layer_config", draft) if key == "hidden_size" else draft
        where[key] = draw(BAD_SIZE)
    elif kind == "bad-target-size":
        sizes[draw(st.sampled_from(("num_hidden_layers", "hidden_size", "vocab_size")))] = draw(
            BAD_SIZE
        )
    elif kind == "target-depth-missing":
        del sizes["num_hidden_layers"]
    elif kind == "text-config-not-object":
        target = {"model_type": "wrapper", "text_config": draw(NOT_AN_OBJECT)}
    elif kind == "root-not-object":
        value = draw(NOT_AN_OBJECT | st.none())
        import json

        blob = json.dumps(value).encode()
        if draw(st.booleans()):
            draft = blob
        else:
            target = blob
    elif kind == "truncated-json":
        import json

        blob = json.dumps(draft).encode()
        draft = blob[: draw(st.integers(0, len(blob) - 1))]
    elif kind == "not-utf8":
        import json

        draft = b"\xff\xfe" + json.dumps(draft).encode()
    elif kind == "architectures-not-strings":
        draft["architectures"] = draw(
            st.lists(st.integers(), min_size=1, max_size=2) | st.integers()
        )
    elif kind == "known-norm-flag-not-bool":
        draft["norm_before_fc"] = draw(
            st.integers() | st.text(max_size=3) | st.lists(st.booleans(), max_size=1)
        )
    return kind, draft, target


def materialize(obj: Any, folder: Path, name: str) -> Any:
    """Bytes are written to ``folder/name`` (the path is returned); dicts pass through."""
    if isinstance(obj, bytes):
        path = folder / name
        path.write_bytes(obj)
        return str(path)
    return obj


def pipeline(draft: Any, target: Any) -> None:
    """Everything a user can run on configs: read, resolve every system, compare, check."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        draft = materialize(draft, folder, "draft.json")
        target = materialize(target, folder, "target.json")
        d = read_draft_config(draft)
        t = read_target_config(target)
        plans = []
        for name in conventions.names():
            if name == "hf-hidden-states" and d.ids is None:
                continue  # needs explicit ids (tested separately)
            plans.append(resolve(d, t, name))
        for trained in plans:
            for served in plans:
                compare(trained, served)
        check_drafter(d, target=t, trained_with="specforge")
        check_drafter(d, target=t)
