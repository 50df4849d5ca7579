"""The bad-input corpus of the CLI: hostile files and arguments, and what each must give.

Each ``Case`` is a command line whose ``{name}`` placeholders name files that ``build_world``
writes (or special files: a FIFO, ``/dev/zero``, ``/dev/urandom``), the exit code it must
give, and a fragment its one stderr line must hold. ``tests/cli/test_bad_inputs.py`` runs
every case in a forked child with a time and an address-space limit. The classes: unreadable
or unsafe files, malformed JSON and safetensors headers, absurd sizes, out-of-range values.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from eagle3_contracts.config import examples
from eagle3_contracts.dumps.format import FORMAT

H = 32  # hidden size of the tiny target and its dumps
T = 4  # tokens
DEEP = 100_000  # nesting depth of the deep-JSON cases


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    expect: str  # fragment of the one stderr line ("" = no stderr expected)
    code: int = 2


def _c(name: str, argv: str, expect: str, code: int = 2) -> Case:
    return Case(name, tuple(argv.split()), expect, code)


# -- files -----------------------------------------------------------------------------------
def _target_config(**overrides: object) -> dict[str, object]:
    config: dict[str, object] = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": 3,
        "hidden_size": H,
        "intermediate_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 96,
    }
    config.update(overrides)
    return config


def _meta(**overrides: str) -> dict[str, str]:
    meta = {
        "format": FORMAT,
        "layer_ids": "[0, 1, 2]",
        "convention": "canonical",
        "system": "corpus",
        "dtype": "float32",
        "hidden_size": str(H),
        "layout": "concatenated",
        "segments": '["hidden_states"]',
    }
    meta.update(overrides)
    return meta


def _safetensors(header: object, data: bytes = b"", *, raw: bytes | None = None) -> bytes:
    text = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _dump_header(states: object = None, ids: object = None, meta: object = None) -> dict:
    width = 3 * H * T * 4
    header: dict[str, object] = {
        "hidden_states": {"dtype": "F32", "shape": [1, T, 3 * H], "data_offsets": [0, width]},
        "input_ids": {"dtype": "I64", "shape": [1, T], "data_offsets": [width, width + 8 * T]},
        "__metadata__": _meta() if meta is None else meta,
    }
    if states is not None:
        header["hidden_states"] = states
    if ids is not None:
        header["input_ids"] = ids
    return header


def _dump_bytes(**kwargs: object) -> bytes:
    return _safetensors(_dump_header(**kwargs), bytes(3 * H * T * 4 + 8 * T))  # type: ignore[arg-type]


def _write_dump(
    path: Path,
    *,
    ids: torch.Tensor | None = None,
    states: torch.Tensor | None = None,
    **meta: str,
) -> None:
    tensors = {
        "hidden_states": torch.randn(1, T, 3 * H) if states is None else states,
        "input_ids": torch.arange(T).unsqueeze(0) if ids is None else ids,
    }
    save_file(tensors, str(path), metadata=_meta(**meta))


def build_world(tmp: Path) -> dict[str, str]:
    """Write every file the corpus names under ``tmp``; return placeholder -> path."""
    paths: dict[str, str] = {
        "fifo": str(tmp / "fifo"),
        "zero": "/dev/zero",
        "urandom": "/dev/urandom",
        "tmp": str(tmp),
        "missing": str(tmp / "absent.json"),
    }
    os.mkfifo(tmp / "fifo")
    draft, target = examples.load("kimi-k2.5")
    paths["draft"], paths["target"] = str(draft), str(target)

    def put(name: str, data: bytes | str | object, suffix: str = ".json") -> None:
        path = tmp / f"{name}{suffix}"
        if isinstance(data, bytes):
            path.write_bytes(data)
        elif isinstance(data, str):
            path.write_text(data)
        else:
            path.write_text(json.dumps(data))
        paths[name] = str(path)

    ids_field = "eagle_aux_hidden_state_layer_ids"
    deep = "[" * DEEP + "]" * DEEP
    # -- drafter / target / contract JSON ---------------------------------------------------
    put("empty", b"")
    put("not_json", "{nope")
    put("binary", bytes(range(256)) * 4)
    put("json_list", [1, 2, 3])
    put("deep", '{"a": ' + deep + "}")
    put("ids_string", {ids_field: "2,30,58"})
    put("ids_float", {ids_field: [2, 30.5, 58]})
    put("ids_bool", {ids_field: [True, 30, 58]})
    put("ids_million", {ids_field: list(range(1_000_000))})
    put("ids_empty", {ids_field: []})
    put("ids_huge_value", {ids_field: [2, 30, 10**30]})
    put("eagle_config_list", {"eagle_config": [2, 30, 58]})
    put("ids_nested_deep", '{"eagle_config": {"' + ids_field + '": ' + deep + "}}")
    big = tmp / "big.json"
    with big.open("wb") as fh:  # sparse: 17 MiB of nothing, over the 16 MiB config limit
        fh.truncate(17 << 20)
    paths["big"] = str(big)
    put("target_no_layers", {"hidden_size": 7168})
    put("target_hidden_str", {"num_hidden_layers": 61, "hidden_size": "wide"})
    put("target_layers_huge", {"num_hidden_layers": 10**12, "hidden_size": 64})
    put("contract_null", "null")
    put(
        "contract_ids_dict",
        {"layer_ids": {"a": 1}, "num_layers": 3, "hidden_size": H, "order": "ascending"},
    )
    put(
        "contract_ids_set_like",
        {"layer_ids": "0,1", "num_layers": 3, "hidden_size": H, "order": "ascending"},
    )
    put("contract_missing", {"layer_ids": [0, 1]})
    # -- HF targets for diagnose ---------------------------------------------------------------
    put("tcfg", _target_config())
    put("tcfg_hidden_neg", _target_config(hidden_size=-4))
    put("tcfg_hidden_str", _target_config(hidden_size="wide"))
    put("tcfg_hidden_indiv", _target_config(hidden_size=33))
    put("tcfg_vocab_huge", _target_config(vocab_size=10**12))
    put("tcfg_hidden_huge", _target_config(hidden_size=32_000_000, num_attention_heads=4))
    put("tcfg_layers_100k", _target_config(num_hidden_layers=100_000))
    put("tcfg_no_type", {k: v for k, v in _target_config().items() if k != "model_type"})
    put("tcfg_unknown_type", _target_config(model_type="nosuch"))
    put("tcfg_layers_bool", _target_config(num_hidden_layers=True))
    model_dir = tmp / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(_target_config()))
    good_weights = _safetensors(
        {"w": {"dtype": "F32", "shape": [64, 64], "data_offsets": [0, 64 * 64 * 4]}},
        bytes(64 * 64 * 4),
    )
    (model_dir / "model.safetensors").write_bytes(good_weights[: len(good_weights) // 2])
    paths["model_truncated"] = str(model_dir)
    # -- drafter weights (check --weights) -------------------------------------------------------
    put("weights_truncated_header", struct.pack("<Q", 10_000) + b'{"w": ', ".safetensors")
    put("weights_deep", _safetensors(None, raw=b'{"a": ' + deep.encode() + b"}"), ".safetensors")
    put("weights_not_object", _safetensors([1, 2]), ".safetensors")
    # -- dumps -----------------------------------------------------------------------------
    width = 3 * H * T * 4
    f32 = {"dtype": "F32", "shape": [1, T, 3 * H]}
    dumps: dict[str, bytes] = {
        "d_offsets_null": _dump_bytes(states={**f32, "data_offsets": None}),
        "d_offsets_three": _dump_bytes(states={**f32, "data_offsets": [0, 1, width]}),
        "d_offsets_float": _safetensors(
            None,
            raw=json.dumps(_dump_header(states={**f32, "data_offsets": [0, "X"]}))
            .replace('"X"', "1e400")
            .encode(),
        ),
        "d_offsets_strings": _dump_bytes(states={**f32, "data_offsets": ["0", str(width)]}),
        "d_offsets_negative": _dump_bytes(states={**f32, "data_offsets": [-8, width - 8]}),
        "d_offsets_beyond": _dump_bytes(states={**f32, "data_offsets": [10**15, 10**15 + width]}),
        "d_offsets_overlap": _dump_bytes(
            ids={"dtype": "I64", "shape": [1, T], "data_offsets": [8, 8 + 8 * T]}
        ),
        "d_offsets_vs_shape": _dump_bytes(states={**f32, "data_offsets": [0, width - 4]}),
        "d_dtype_unknown": _dump_bytes(states={**f32, "dtype": "Q7", "data_offsets": [0, width]}),
        "d_dtype_number": _dump_bytes(states={**f32, "dtype": 4, "data_offsets": [0, width]}),
        "d_shape_negative": _dump_bytes(
            states={"dtype": "F32", "shape": [1, -T, 3 * H], "data_offsets": [0, width]}
        ),
        "d_shape_deep": _dump_bytes(
            states={"dtype": "F32", "shape": [1] * 20, "data_offsets": [0, 4]}
        ),
        "d_shape_string": _dump_bytes(
            states={"dtype": "F32", "shape": "1,4,96", "data_offsets": [0, width]}
        ),
        "d_entry_list": _dump_bytes(states=[0, width]),
        "d_header_deep": _safetensors(None, raw=b'{"a": ' + deep.encode() + b"}"),
        "d_header_list": _safetensors([1, 2, 3]),
        "d_header_huge_length": struct.pack("<Q", 2**63) + b"{}",
        "d_header_not_utf8": _safetensors(None, raw=b'{"\xff\xfe": 1}'),
        "d_meta_list": _dump_bytes(meta=["format", FORMAT]),
        "d_meta_int_value": _dump_bytes(meta={**_meta(), "hidden_size": 32}),
        "d_meta_ids_deep": _dump_bytes(meta=_meta(layer_ids=deep)),
        "d_meta_ids_many": _dump_bytes(meta=_meta(layer_ids=json.dumps(list(range(5000))))),
        "d_meta_hidden_huge": _dump_bytes(meta=_meta(hidden_size="1" + "0" * 5000)),
        "d_meta_hidden_float": _dump_bytes(meta=_meta(hidden_size="1e400")),
        "d_meta_missing": _dump_bytes(meta={"format": FORMAT}),
        "d_text": b"these are not hidden states\n" * 8,
    }
    for name, data in dumps.items():
        put(name, data, ".safetensors")
    _write_dump(
        tmp / "d_ids_u64_huge.safetensors",
        ids=torch.tensor([[0, 1, 2, 2**63 + 5]], dtype=torch.uint64),
    )
    _write_dump(tmp / "d_ids_out_of_vocab.safetensors", ids=torch.tensor([[0, 1, 2, 10**6]]))
    _write_dump(tmp / "d_ids_float.safetensors", ids=torch.zeros(1, T))
    nan = torch.randn(1, T, 3 * H)
    nan[0, 1, 5] = float("nan")
    _write_dump(tmp / "d_nan.safetensors", states=nan)
    _write_dump(tmp / "d_claim_out_of_range.safetensors", layer_ids="[0, 1, 99]")
    _write_dump(tmp / "d_good.safetensors")
    for name in (
        "d_ids_u64_huge",
        "d_ids_out_of_vocab",
        "d_ids_float",
        "d_nan",
        "d_claim_out_of_range",
        "d_good",
    ):
        paths[name] = str(tmp / f"{name}.safetensors")
    (tmp / "capture.pt").write_bytes(b"PK\x03\x04 not really a zip")
    paths["pt"] = str(tmp / "capture.pt")
    paths["file"] = paths["not_json"]
    stamped = tmp / "stamp-draft"  # a copy: stamp writes into the drafter's config.json
    stamped.mkdir()
    (stamped / "config.json").write_bytes(Path(draft).read_bytes())
    paths["stamp_draft"] = str(stamped)
    return paths


# -- the cases -------------------------------------------------------------------------------
REGULAR = "must be a regular file"
CHECK = "check {draft} --target {target}"
DIAG = "diagnose --dump {d_good} --target {tcfg}"

CASES: tuple[Case, ...] = (
    # -- check: the drafter config --------------------------------------------------------------
    _c("check-draft-missing", "check {missing} --num-layers 8 --hidden-size 8", "no such file"),
    _c(
        "check-draft-dir-without-config",
        "check {tmp} --num-layers 8 --hidden-size 8",
        "cannot read",
    ),
    _c("check-draft-fifo", "check {fifo} --num-layers 8 --hidden-size 8", "FIFO"),
    _c("check-draft-dev-zero", "check {zero} --num-layers 8 --hidden-size 8", REGULAR),
    _c("check-draft-dev-urandom", "check {urandom} --num-layers 8 --hidden-size 8", REGULAR),
    _c("check-draft-empty", "check {empty} --num-layers 8 --hidden-size 8", "not valid JSON"),
    _c("check-draft-not-json", "check {not_json} --num-layers 8 --hidden-size 8", "not valid JSON"),
    _c(
        "check-draft-binary", "check {binary} --num-layers 8 --hidden-size 8", "draft config is not"
    ),
    _c("check-draft-json-list", "check {json_list} --num-layers 8 --hidden-size 8", "JSON object"),
    _c("check-draft-deep-json", "check {deep} --num-layers 8 --hidden-size 8", "deeper than"),
    _c("check-draft-17-mib", "check {big} --num-layers 8 --hidden-size 8", "byte limit"),
    _c("check-ids-string", "check {ids_string} --num-layers 8 --hidden-size 8", "must be a list"),
    _c(
        "check-ids-float",
        "check {ids_float} --num-layers 8 --hidden-size 8",
        "[1] must be an integer",
    ),
    _c(
        "check-ids-bool",
        "check {ids_bool} --num-layers 8 --hidden-size 8",
        "[0] must be an integer",
    ),
    _c(
        "check-ids-million",
        "check {ids_million} --num-layers 8 --hidden-size 8",
        "over the limit of 1024",
    ),
    _c("check-ids-empty", "check {ids_empty} --num-layers 8 --hidden-size 8", "is empty"),
    _c(
        "check-ids-huge-value",
        "check {ids_huge_value} --num-layers 61 --hidden-size 8",
        "eagle_aux_hidden_state_layer_ids",
        code=1,
    ),
    _c(
        "check-ids-nested-deep",
        "check {ids_nested_deep} --num-layers 8 --hidden-size 8",
        "deeper than",
    ),
    _c(
        "check-eagle-config-list",
        "check {eagle_config_list} --num-layers 8 --hidden-size 8",
        "eagle_config must be a JSON object",
    ),
    _c("check-num-layers-zero", "check {draft} --num-layers 0 --hidden-size 8", "--num-layers"),
    _c(
        "check-num-layers-negative", "check {draft} --num-layers -5 --hidden-size 8", "--num-layers"
    ),
    _c("check-num-layers-text", "check {draft} --num-layers abc --hidden-size 8", "--num-layers"),
    _c(
        "check-num-layers-1e12",
        "check {draft} --num-layers 1000000000000 --hidden-size 8",
        "over the limit of 100000",
    ),
    _c("check-target-missing", "check {draft} --target {missing}", "no such file"),
    _c("check-target-fifo", "check {draft} --target {fifo}", "FIFO"),
    _c("check-target-dev-zero", "check {draft} --target {zero}", REGULAR),
    _c("check-target-deep", "check {draft} --target {deep}", "deeper than"),
    _c("check-target-no-layers", "check {draft} --target {target_no_layers}", "num_hidden_layers"),
    _c("check-target-hidden-string", "check {draft} --target {target_hidden_str}", "hidden_size"),
    _c(
        "check-target-layers-1e12",
        "check {draft} --target {target_layers_huge}",
        "over the limit of 100000",
    ),
    _c("check-weights-fifo", CHECK + " --weights {fifo}", "FIFO"),
    _c("check-weights-dev-zero", CHECK + " --weights {zero}", REGULAR),
    _c(
        "check-weights-truncated-header",
        CHECK + " --weights {weights_truncated_header}",
        "header length",
    ),
    _c("check-weights-deep-header", CHECK + " --weights {weights_deep}", "deeper than"),
    _c("check-weights-header-list", CHECK + " --weights {weights_not_object}", "not a JSON object"),
    _c("check-serve-with-unknown", CHECK + " --serve-with nosuch-engine", "nosuch-engine"),
    _c("check-trained-with-unknown", CHECK + " --trained-with nosuch-trainer", "nosuch-trainer"),
    _c("check-pp-size-zero", CHECK + " --pp-size 0", "--pp-size"),
    _c("check-pp-partition-text", CHECK + " --pp-partition a,b", "pp_partition[0]"),
    _c(
        "check-pp-partition-5000-stages",
        CHECK + " --pp-partition " + ",".join(["1"] * 5000),
        "over the limit of 4096",
    ),
    _c("check-example-unknown", "check --example nosuch", "nosuch"),
    _c("check-example-and-draft", "check {draft} --example kimi-k2.5", "--example replaces DRAFT"),
    _c("check-no-draft", "check", "DRAFT is required"),
    _c("check-unknown-option", "check {draft} --frobnicate", "unrecognized arguments"),
    # -- stages -------------------------------------------------------------------------------
    _c(
        "stages-1e9-layers-1e9-stages",
        "stages --num-layers 1000000000 --pp-size 1000000000 --ids 1,2",
        "over the limit of 100000",
    ),
    _c(
        "stages-1e12-layers",
        "stages --num-layers 1000000000000 --ids 1,2 --pp-size 2",
        "over the limit of 100000",
    ),
    _c(
        "stages-partition-30000",
        "stages --num-layers 30000 --ids 1,2 --pp-partition " + ",".join(["1"] * 30000),
        "over the limit of 4096",
    ),
    _c(
        "stages-5000-ids",
        "stages --num-layers 8000 --pp-size 2 --ids " + ",".join(map(str, range(5000))),
        "over the limit of 1024",
    ),
    _c("stages-ids-empty-item", "stages --num-layers 8 --pp-size 2 --ids 1,,2", "--ids item 1"),
    _c("stages-ids-empty", "stages --num-layers 8 --pp-size 2 --ids=", "--ids is empty"),
    _c(
        "stages-ids-out-of-range", "stages --num-layers 8 --pp-size 2 --ids 1,99", "outside [-1, 7]"
    ),
    _c(
        "stages-pp-size-over-layers",
        "stages --num-layers 8 --pp-size 9 --ids 1,2",
        "exceeds num_layers",
    ),
    _c(
        "stages-pp-rule-unknown",
        "stages --num-layers 8 --pp-size 2 --ids 1,2 --pp-rule nosuch",
        "nosuch",
    ),
    _c(
        "stages-convention-unknown",
        "stages --num-layers 8 --pp-size 2 --ids 1,2 --convention nosuch",
        "nosuch",
    ),
    _c("stages-target-fifo", "stages --target {fifo} --pp-size 2 --ids 1,2", "FIFO"),
    _c("stages-target-dev-urandom", "stages --target {urandom} --pp-size 2 --ids 1,2", REGULAR),
    _c(
        "stages-partition-wrong-sum",
        "stages --num-layers 8 --pp-partition 4,5 --ids 1,2",
        "sums to 9",
    ),
    _c(
        "stages-partition-negative",
        "stages --num-layers 8 --pp-partition 9,-1 --ids 1,2",
        "pp_partition[1]",
    ),
    _c("stages-no-depth", "stages --pp-size 2 --ids 1,2", "--num-layers N or --target"),
    _c(
        "stages-100000-layers-4096-stages",
        "stages --num-layers 100000 --pp-size 4096 --ids 1,2,99999",
        "",
        code=0,
    ),
    # -- diagnose: the dump -----------------------------------------------------------------
    _c("dump-fifo", "diagnose --dump {fifo} --target {tcfg}", "FIFO"),
    _c("dump-dev-zero", "diagnose --dump {zero} --target {tcfg}", REGULAR),
    _c("dump-dev-urandom", "diagnose --dump {urandom} --target {tcfg}", REGULAR),
    _c("dump-missing", "diagnose --dump {missing} --target {tcfg}", "no such file"),
    _c("dump-directory", "diagnose --dump {tmp} --target {tcfg}", "is a directory"),
    _c(
        "dump-pt-suffix",
        "diagnose --dump {pt} --target {tcfg}",
        "torch.load(weights_only=True) refused it",
    ),
    _c("dump-empty", "diagnose --dump {empty} --target {tcfg}", "only 0 bytes"),
    _c("dump-text", "diagnose --dump {d_text} --target {tcfg}", "not a safetensors"),
    _c(
        "dump-offsets-null", "diagnose --dump {d_offsets_null} --target {tcfg}", "data_offsets None"
    ),
    _c(
        "dump-offsets-three",
        "diagnose --dump {d_offsets_three} --target {tcfg}",
        "data_offsets [0, 1,",
    ),
    _c(
        "dump-offsets-1e400",
        "diagnose --dump {d_offsets_float} --target {tcfg}",
        "data_offsets [0, inf]",
    ),
    _c(
        "dump-offsets-strings",
        "diagnose --dump {d_offsets_strings} --target {tcfg}",
        "d_offsets_strings.safetensors: malformed",
    ),
    _c(
        "dump-offsets-negative",
        "diagnose --dump {d_offsets_negative} --target {tcfg}",
        "non-negative integers",
    ),
    _c(
        "dump-offsets-beyond-file",
        "diagnose --dump {d_offsets_beyond} --target {tcfg}",
        "truncated: tensor data ends",
    ),
    _c("dump-offsets-overlap", "diagnose --dump {d_offsets_overlap} --target {tcfg}", "overlap"),
    _c(
        "dump-offsets-vs-shape",
        "diagnose --dump {d_offsets_vs_shape} --target {tcfg}",
        "needs 1536",
    ),
    _c("dump-dtype-unknown", "diagnose --dump {d_dtype_unknown} --target {tcfg}", "dtype 'Q7'"),
    _c("dump-dtype-number", "diagnose --dump {d_dtype_number} --target {tcfg}", "dtype 4"),
    _c(
        "dump-shape-negative",
        "diagnose --dump {d_shape_negative} --target {tcfg}",
        "shape [1, -4, 96]",
    ),
    _c("dump-shape-20-dims", "diagnose --dump {d_shape_deep} --target {tcfg}", "at most 8"),
    _c("dump-shape-string", "diagnose --dump {d_shape_string} --target {tcfg}", "shape '1,4,96'"),
    _c("dump-entry-list", "diagnose --dump {d_entry_list} --target {tcfg}", "not a JSON object"),
    _c("dump-header-deep", "diagnose --dump {d_header_deep} --target {tcfg}", "deeper than"),
    _c("dump-header-list", "diagnose --dump {d_header_list} --target {tcfg}", "not a safetensors"),
    _c(
        "dump-header-length-2-63",
        "diagnose --dump {d_header_huge_length} --target {tcfg}",
        "not a safetensors",
    ),
    _c("dump-header-not-utf8", "diagnose --dump {d_header_not_utf8} --target {tcfg}", "not UTF-8"),
    _c(
        "dump-metadata-list",
        "diagnose --dump {d_meta_list} --target {tcfg}",
        "__metadata__ must map",
    ),
    _c(
        "dump-metadata-int-value",
        "diagnose --dump {d_meta_int_value} --target {tcfg}",
        "__metadata__ must map",
    ),
    _c(
        "dump-metadata-ids-deep",
        "diagnose --dump {d_meta_ids_deep} --target {tcfg}",
        "metadata layer_ids",
    ),
    _c(
        "dump-metadata-ids-5000",
        "diagnose --dump {d_meta_ids_many} --target {tcfg}",
        "over the limit of 1024",
    ),
    _c(
        "dump-metadata-hidden-5000-digits",
        "diagnose --dump {d_meta_hidden_huge} --target {tcfg}",
        "not a positive integer",
    ),
    _c(
        "dump-metadata-hidden-1e400",
        "diagnose --dump {d_meta_hidden_float} --target {tcfg}",
        "not a positive integer",
    ),
    _c(
        "dump-metadata-missing",
        "diagnose --dump {d_meta_missing} --target {tcfg}",
        "missing metadata",
    ),
    _c(
        "dump-input-ids-uint64-over-int64",
        "diagnose --dump {d_ids_u64_huge} --target {tcfg}",
        "negative token id",
    ),
    _c(
        "dump-input-ids-out-of-vocab",
        "diagnose --dump {d_ids_out_of_vocab} --target {tcfg}",
        "outside the target's vocabulary",
    ),
    _c("dump-input-ids-float", "diagnose --dump {d_ids_float} --target {tcfg}", "must be integers"),
    _c("dump-nan", "diagnose --dump {d_nan} --target {tcfg}", "non-finite"),
    _c(
        "dump-claim-out-of-range",
        "diagnose --dump {d_claim_out_of_range} --target {tcfg}",
        "outside [-1, 2]",
    ),
    _c(
        "dump-three-dumps",
        "diagnose --dump {d_good} --dump {d_good} --dump {d_good} --target {tcfg}",
        "got 3",
    ),
    # -- diagnose: the target ----------------------------------------------------------------
    _c("target-fifo", "diagnose --dump {d_good} --target {fifo}", "FIFO"),
    _c("target-dev-zero", "diagnose --dump {d_good} --target {zero}", REGULAR),
    _c("target-missing", "diagnose --dump {d_good} --target {missing}", "no such file"),
    _c("target-deep-json", "diagnose --dump {d_good} --target {deep}", "deeper than"),
    _c(
        "target-hidden-negative",
        "diagnose --dump {d_good} --target {tcfg_hidden_neg}",
        "hidden_size must be a positive integer",
    ),
    _c(
        "target-hidden-string", "diagnose --dump {d_good} --target {tcfg_hidden_str}", "hidden_size"
    ),
    _c(
        "target-hidden-not-divisible",
        "diagnose --dump {d_good} --target {tcfg_hidden_indiv}",
        "is not a multiple of",
    ),
    _c("target-vocab-1e12", "diagnose --dump {d_good} --target {tcfg_vocab_huge}", "GiB"),
    _c("target-hidden-32e6", "diagnose --dump {d_good} --target {tcfg_hidden_huge}", "GiB"),
    _c(
        "target-100k-layers",
        "diagnose --dump {d_good} --target {tcfg_layers_100k}",
        "over the limit of 1024",
    ),
    _c(
        "target-layers-bool",
        "diagnose --dump {d_good} --target {tcfg_layers_bool}",
        "num_hidden_layers",
    ),
    _c("target-no-model-type", "diagnose --dump {d_good} --target {tcfg_no_type}", "no model_type"),
    _c(
        "target-unknown-model-type",
        "diagnose --dump {d_good} --target {tcfg_unknown_type}",
        "nosuch",
    ),
    _c(
        "target-truncated-weights",
        "diagnose --dump {d_good} --target {model_truncated}",
        "cannot load the model",
    ),
    _c("target-over-the-raised-limit", DIAG + " --max-target-gib 0.00001", "over the"),
    # -- diagnose: options and contract -------------------------------------------------------------
    _c("contract-fifo", DIAG + " --contract {fifo}", "FIFO"),
    _c("contract-dev-zero", DIAG + " --contract {zero}", REGULAR),
    _c("contract-deep", DIAG + " --contract {deep}", "too deep"),
    _c("contract-null", DIAG + " --contract {contract_null}", "must be a JSON object"),
    _c(
        "contract-ids-object",
        DIAG + " --contract {contract_ids_dict}",
        "layer_ids must be a JSON list",
    ),
    _c(
        "contract-ids-string",
        DIAG + " --contract {contract_ids_set_like}",
        "layer_ids must be a JSON list",
    ),
    _c("contract-fields-missing", DIAG + " --contract {contract_missing}", "missing num_layers"),
    _c("diagnose-rtol-nan", DIAG + " --rtol nan", "--rtol"),
    _c("diagnose-rtol-negative", DIAG + " --rtol -1", "--rtol"),
    _c("diagnose-seed-negative", DIAG + " --seed -1", "--seed"),
    _c("diagnose-seed-2-70", DIAG + " --seed 1180591620717411303424", "--seed"),
    _c("diagnose-max-gib-zero", DIAG + " --max-target-gib 0", "--max-target-gib"),
    _c("diagnose-ids-text", DIAG + " --ids 1,x --convention canonical", "--ids"),
    _c(
        "diagnose-ids-5000",
        DIAG + " --convention canonical --ids " + ",".join(map(str, range(5000))),
        "over the limit of 1024",
    ),
    # -- stamp --------------------------------------------------------------------------------
    _c("stamp-draft-fifo", "stamp {fifo} --show", "FIFO"),
    _c("stamp-draft-dev-zero", "stamp {zero} --show", REGULAR),
    _c("stamp-draft-deep", "stamp {deep} --show", "deeper than"),
    _c("stamp-draft-17-mib", "stamp {big} --show", "byte limit"),
    _c("stamp-draft-json-list", "stamp {json_list} --show", "JSON object"),
    _c("stamp-target-fifo", "stamp {stamp_draft} --trained-with specforge --target {fifo}", "FIFO"),
    _c(
        "stamp-target-dev-zero",
        "stamp {stamp_draft} --trained-with specforge --target {zero}",
        REGULAR,
    ),
    _c(
        "stamp-trained-with-unknown",
        "stamp {stamp_draft} --trained-with nosuch --target {target}",
        "nosuch",
    ),
    # -- demo ---------------------------------------------------------------------------------
    _c("demo-out-is-a-file", "demo --out {file}", "--out"),
    _c("demo-out-under-dev-null", "demo --out /dev/null/x", "--out"),
)
