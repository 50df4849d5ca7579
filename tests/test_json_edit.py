"""``_json_edit``: one member set, every other byte kept (fix's id lists and the stamp block)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle3_contracts._json_edit import edit_ids, set_member, set_top_level_key
from eagle3_contracts.errors import ConfigError

PATH = "eagle_aux_hidden_state_layer_ids"
NESTED = "eagle_config.eagle_aux_hidden_state_layer_ids"


def _p(template: str) -> str:
    return template.replace("@", PATH)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (_p('{"a": 1, "@": [1,3,5]}'), _p('{"a": 1, "@": [2,4,6]}')),
        (_p('{"a": 1, "@": [1, 3, 5]}'), _p('{"a": 1, "@": [2, 4, 6]}')),
        (_p('{"@": [ 1, 3 ]}'), _p('{"@": [ 2, 4, 6 ]}')),
        (
            _p('{\n    "@": [\n        1,\n        3\n    ],\n    "z": 0\n}\n'),
            _p('{\n    "@": [\n        2,\n        4,\n        6\n    ],\n    "z": 0\n}\n'),
        ),
        (
            '{\n  "b": true,\n  "a": 1\n}\n',
            _p('{\n  "b": true,\n  "a": 1,\n  "@": [2, 4, 6]\n}\n'),
        ),
        ('{"b":true,"a":1}', _p('{"b":true,"a":1,"@":[2, 4, 6]}')),
        ("{}", _p('{"@": [2, 4, 6]}')),
    ],
)
def test_set_member_keeps_the_style(before: str, after: str) -> None:
    assert set_member(before, PATH, [2, 4, 6]) == after


def test_nested_member_and_missing_parent() -> None:
    text = '{\n  "eagle_config": {\n    "x": 1,\n    "eagle_aux_hidden_state_layer_ids": [0, 2]\n  }\n}'
    assert set_member(text, NESTED, [1, 3]) == text.replace("[0, 2]", "[1, 3]")
    bare = '{\n  "a": 1\n}'
    assert json.loads(set_member(bare, NESTED, [1])) == {"a": 1, "eagle_config": {PATH: [1]}}
    with pytest.raises(ConfigError, match="not a JSON object"):
        set_member('{"eagle_config": [1]}', NESTED, [1])


def test_duplicate_keys_take_the_last_as_json_does() -> None:
    text = _p('{"@": [9], "@": [8]}')
    assert json.loads(set_member(text, PATH, [1])) == {PATH: [1]}


def test_edit_ids_checks_the_result() -> None:
    with pytest.raises(ConfigError, match="does not give the fixed config"):
        edit_ids('{"a": 1}', [(PATH, [1])], {"a": 2, PATH: [1]}, "x.json")


_scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), st.text("ab_", max_size=3))
_docs = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=4).filter(lambda k: k not in (PATH, "eagle_config")),
    st.one_of(_scalars, st.lists(st.integers(0, 9), max_size=3)),
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(
    doc=_docs,
    nested=st.booleans(),
    present=st.booleans(),
    indent=st.sampled_from([None, 2, 4, "\t"]),
    ids=st.lists(st.integers(-1, 99), min_size=1, max_size=4),
)
def test_any_document_gets_exactly_the_edit(doc, nested, present, indent, ids) -> None:
    path = NESTED if nested else PATH
    data = dict(doc)
    if present:
        if nested:
            data["eagle_config"] = {"k": 1, PATH: [0]}
        else:
            data[PATH] = [0]
    text = json.dumps(data, indent=indent)
    edited = set_member(text, path, ids)
    want = json.loads(text)
    node = want
    for key in path.split(".")[:-1]:
        node = node.setdefault(key, {})
    node[path.split(".")[-1]] = ids
    assert json.loads(edited) == want
    assert list(json.loads(edited)) == list(want)  # key order kept, a new key appended
    if present:  # only the array's text changed
        old = json.dumps([0], indent=indent)
        head = text.index(old) if "\n" not in old else text.index("[")
        assert edited[:head] == text[:head]
        tail = len(text) - (text.index(old) + len(old)) if "\n" not in old else None
        if tail is not None:
            assert edited[len(edited) - tail :] == text[len(text) - tail :]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a multi-line file: the block one member a line, one step deeper than its key
        (
            '{\n  "a": 1\n}\n',
            '{\n  "a": 1,\n  "k": {\n    "x": [1, 2],\n    "y": "z"\n  }\n}\n',
        ),
        # a compact file stays on one line
        ('{"a": 1}', '{"a": 1, "k": {"x": [1, 2], "y": "z"}}'),
        # an existing block is replaced where it is
        (
            '{\n    "k": {},\n    "a": 1\n}',
            '{\n    "k": {\n        "x": [1, 2],\n        "y": "z"\n    },\n    "a": 1\n}',
        ),
        # an empty object gets the block on its own lines
        ("{}", '{\n  "k": {\n    "x": [1, 2],\n    "y": "z"\n  }\n}'),
    ],
)
def test_top_level_block_is_written_in_the_files_style(text: str, expected: str) -> None:
    out = set_top_level_key(text, "k", {"x": [1, 2], "y": "z"})
    assert out == expected
    assert json.loads(out) == {**json.loads(text), "k": {"x": [1, 2], "y": "z"}}


def test_top_level_key_with_a_dot_is_one_key() -> None:
    out = set_top_level_key('{"a.b": 1}', "a.b", 2)
    assert json.loads(out) == {"a.b": 2}
