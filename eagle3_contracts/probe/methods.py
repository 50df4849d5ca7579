"""Drafter-method facts of one engine release, read from its sources by AST (never imported).

For each method beyond EAGLE-3 (DFlash, DFlash2, Domino, DSpark, Nemotron-3.5 drafts, P-EAGLE)
the release table records whether the release registers a drafter for it, where it reads the
taps, what it captures without them, how the drafter's fc is sized, the target hook the ids go
through and the release's own checks, each cited ``file:line`` where the release's code holds
it (``table["methods"]``). A statement the probe cannot find leaves the row unknown, naming what
was looked for; a release without the method's drafter class records its absence. SGLang's
model files defining ``set_dflash_layers_to_capture`` / ``set_dspark_layers_to_capture`` and
vLLM's V1 runner reader (its DFlash branch) are recorded beside the rows.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3_contracts.probe.frameworks import FrameworkSpec


@dataclass(frozen=True)
class Anchor:
    """A statement of a release file, found by the text it holds (the innermost such node)."""

    file: str  # under the engine package ("srt/speculative/dflash_utils.py")
    text: str  # text the statement's source holds
    kind: type[ast.AST] = ast.stmt
    within: str = ""  # the enclosing function or class name ("" anywhere)
    through: str = ""  # a later statement's text: the span ends with it
    body_only: bool = False  # an if/elif: its own body, not the elif chain below it
    start_only: bool = False  # cite the first line only


def _nodes(tree: ast.AST, within: str) -> Iterator[ast.AST]:
    if not within:
        yield from ast.walk(tree)
        return
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == within
        ):
            yield from ast.walk(node)
            return


def _end(node: ast.AST, body_only: bool) -> int:
    if body_only and isinstance(node, ast.If):
        last: Any = node.body[-1].end_lineno or node.lineno
        return int(last)
    end: Any = getattr(node, "end_lineno", None) or getattr(node, "lineno", 0)
    return int(end)


def _text(lines: list[str], node: ast.AST) -> str:
    return "\n".join(lines[node.lineno - 1 : node.end_lineno])  # type: ignore[attr-defined]


def _find(tree: ast.AST, lines: list[str], anchor: Anchor, text: str) -> ast.AST | None:
    """The first (by line) innermost node of ``anchor.kind`` whose source holds ``text``."""
    found = [
        n
        for n in _nodes(tree, anchor.within)
        if isinstance(n, anchor.kind) and text in _text(lines, n)
    ]
    inner = [
        n
        for n in found
        if not any(
            o is not n and n.lineno <= o.lineno and o.end_lineno <= n.end_lineno  # type: ignore[attr-defined]
            for o in found
        )
    ]
    return min(inner, key=lambda n: n.lineno, default=None)  # type: ignore[attr-defined]


class Sources:
    """One release's extracted engine package, parsed on demand."""

    def __init__(self, spec: FrameworkSpec, root: Path) -> None:
        self.package = root / spec.name
        self._parsed: dict[str, tuple[ast.Module, list[str]] | None] = {}

    def parsed(self, file: str) -> tuple[ast.Module, list[str]] | None:
        if file not in self._parsed:
            path = self.package / file
            try:
                text = path.read_text(encoding="utf-8")
                self._parsed[file] = (ast.parse(text), text.splitlines())
            except (OSError, SyntaxError, UnicodeDecodeError):
                self._parsed[file] = None
        return self._parsed[file]

    def locate(self, anchor: Anchor) -> str | None:
        """``"a-b"`` (or ``"a"``): the lines of the statement ``anchor`` names, ``None`` when
        the release's file does not hold it."""
        parsed = self.parsed(anchor.file)
        if parsed is None:
            return None
        tree, lines = parsed
        node = _find(tree, lines, anchor, anchor.text)
        if node is None:
            return None
        start, end = node.lineno, _end(node, anchor.body_only)  # type: ignore[attr-defined]
        if anchor.through:
            last = _find(
                tree,
                lines,
                Anchor(anchor.file, anchor.through, within=anchor.within),
                anchor.through,
            )
            if last is None or last.lineno < start:  # type: ignore[attr-defined]
                return None
            end = _end(last, anchor.body_only)
        return str(start) if anchor.start_only or start == end else f"{start}-{end}"

    def files(self, folder: str) -> list[str]:
        base = self.package / folder
        if not base.is_dir():
            return []
        return sorted(p.relative_to(self.package).as_posix() for p in base.glob("*.py"))

    def defines(self, file: str, name: str) -> bool:
        parsed = self.parsed(file)
        return parsed is not None and any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
            for n in ast.walk(parsed[0])
        )


# -- SGLang -------------------------------------------------------------------------------

_SG_UTILS = "srt/speculative/dflash_utils.py"
_SG_AUX = "srt/model_executor/model_runner_components/spec_aux_hidden_state.py"
_SG_SETUP = "srt/model_executor/model_runner_components/attention_backend_setup.py"
_SG_DSPARK_CFG = "srt/speculative/dspark_components/dspark_config.py"
_SG_DFLASH = "srt/models/dflash.py"
_SG_DSPARK = "srt/models/dspark.py"

SGLANG_ANCHORS: Mapping[str, Anchor] = {
    "read": Anchor(
        _SG_UTILS,
        "layer_ids = dflash_cfg.get(",
        ast.Assign,
        "parse_dflash_draft_config",
        through="if layer_ids is None",
    ),
    "llama": Anchor("srt/models/llama.py", "def set_dflash_layers_to_capture", ast.FunctionDef),
    "qwen3": Anchor("srt/models/qwen3.py", "def set_dflash_layers_to_capture", ast.FunctionDef),
    "nemotron_h": Anchor(
        "srt/models/nemotron_h.py", "def set_dflash_layers_to_capture", ast.FunctionDef
    ),
    "fallback": Anchor(
        _SG_UTILS, "if self.target_layer_ids is None", ast.If, "resolve_target_layer_ids"
    ),
    "fallback_call": Anchor(
        _SG_AUX, "target_layer_ids = dflash_draft_config.resolve_target_layer_ids(", ast.Assign
    ),
    "build": Anchor(_SG_UTILS, "def build_target_layer_ids", ast.FunctionDef),
    "fc": Anchor(
        _SG_DFLASH,
        "if draft_config.num_target_layers is not None",
        ast.If,
        through="self.num_context_features * hidden_size, hidden_size",
    ),
    "range": Anchor(_SG_UTILS, "for idx, val in enumerate(resolved)", ast.For),
    "warn": Anchor(_SG_AUX, "trained_target_layers != target_num_layers", ast.If),
    "layers": Anchor(_SG_UTILS, "def require_num_layers", ast.FunctionDef),
    "entry": Anchor(_SG_DFLASH, "EntryClass", ast.Assign),
    "dflash2": Anchor(_SG_DFLASH, "class DFlash2DraftModel", ast.ClassDef, start_only=True),
    "setter": Anchor(_SG_SETUP, "if dflash_use_aux_hidden_state:", ast.If),
    "domino": Anchor(_SG_UTILS, "def is_domino", ast.FunctionDef),
    "domino_checks": Anchor(
        _SG_UTILS,
        "if not isinstance(shift_label, bool)",
        ast.If,
        through="DFLASH Domino requires block_size > 1",
    ),
    "dspark_entry": Anchor(_SG_DSPARK, "EntryClass", ast.Assign),
    "dspark_override": Anchor(_SG_AUX, "if spec_algorithm.is_dspark():", ast.If),
    "dspark_fields": Anchor(
        _SG_DSPARK_CFG,
        "prefixed_markov_rank = ",
        ast.Assign,
        through="uses_prefixed = any(",
    ),
    "markov": Anchor(_SG_AUX, "require_markov()", ast.If),
    "nemotron": Anchor(_SG_UTILS, "def is_nemotron_35_draft_config", ast.FunctionDef),
    "nemotron_check": Anchor(
        _SG_UTILS,
        "if len(target_layer_ids) != len(aux_layer_ids)",
        ast.If,
        "is_nemotron_35_draft_config",
        through="int(target) + 1 != int(aux)",
    ),
}
"""The statements each SGLang row cites (``{key}`` in the row texts below)."""

_SG_READ = (
    "dflash_config.target_layer_ids, else top-level target_layer_ids (srt/speculative/"
    "dflash_utils.py:{read}), then model set_dflash_layers_to_capture: loop index id + 1 "
    "(models/llama.py:{llama}, qwen3.py:{qwen3}, nemotron_h.py:{nemotron_h})"
)
_SG_FALLBACK = (
    "build_target_layer_ids(L, draft num_hidden_layers) on the runtime target "
    "(dflash_utils.py:{fallback}, spec_aux_hidden_state.py:{fallback_call}): a guess, logged "
    "nowhere"
)
_SG_FC = (
    "len(target_layer_ids), else draft num_hidden_layers, x hidden_size (models/dflash.py:{fc})"
)
_SG_CHECKS = (
    "ids must lie in [0, L) (dflash_utils.py:{range} ValueError)",
    "num_target_layers != L only logs a warning (spec_aux_hidden_state.py:{warn})",
    "draft num_hidden_layers required (dflash_utils.py:{layers})",
)
_SG_SETTER = "set_dflash_layers_to_capture (attention_backend_setup.py:{setter})"


def _sglang_entry_classes(src: Sources) -> dict[str, str]:
    """Every class an ``EntryClass`` list of ``srt/models/*.py`` registers -> its file."""
    out: dict[str, str] = {}
    for file in src.files("srt/models"):
        parsed = src.parsed(file)
        if parsed is None:
            continue
        for node in parsed[0].body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets
            ):
                value = node.value
                items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
                for item in items:
                    if isinstance(item, ast.Name):
                        out.setdefault(item.id, file)
    return out


def _sglang_rows(src: Sources, version: str) -> dict[str, dict[str, Any]]:
    registered = _sglang_entry_classes(src)
    cite = _Cites(src, SGLANG_ANCHORS)
    absent = "no EntryClass registers {} (srt/models/*.py): the draft model cannot be built"
    dflash = "DFlashDraftModel" in registered
    base = {
        "reads": [cite(_SG_READ)],
        "fallback": cite(_SG_FALLBACK),
        "fc": cite(_SG_FC),
        "setter": cite(_SG_SETTER),
        "checks": [cite(c) for c in _SG_CHECKS],
    }
    rows: dict[str, dict[str, Any]] = {}
    rows["dflash"] = (
        _row(cite, True, cite("models/dflash.py:{entry} EntryClass DFlashDraftModel"), base)
        if dflash
        else _absent(absent.format("DFlashDraftModel"))
    )
    rows["dflash2"] = (
        _row(
            cite,
            True,
            cite("models/dflash.py:{dflash2}, {entry} EntryClass DFlash2DraftModel"),
            base,
        )
        if "DFlash2DraftModel" in registered
        else _absent(absent.format("DFlash2DraftModel"))
    )
    domino = cite.has("domino")
    rows["domino"] = (
        _row(
            cite,
            True,
            cite(
                "models/dflash.py DFlashDraftModel with projector_type 'domino' "
                "(dflash_utils.py:{domino})"
            ),
            base,
            extra_checks=(
                "Domino needs shift_label (bool), pure_draft_prefix_len == 1, gru_hidden_dim, "
                "emb_dim, block_size > 1 (dflash_utils.py:{domino_checks})",
            ),
        )
        if dflash and domino
        else _absent(
            absent.format("DFlashDraftModel")
            if not dflash
            else f"no sglang {version} dflash_utils.py reads projector_type 'domino': a "
            "Domino drafter's projector has no module to load into"
        )
    )
    spark = [
        c for c in ("Qwen3DSparkModel", "LingDSparkModel", "DSparkDraftModel") if c in registered
    ]
    rows["dspark"] = (
        _row(
            cite,
            True,
            cite("models/dspark.py:{dspark_entry} EntryClass " + ", ".join(spark)),
            {
                **base,
                "reads": [
                    cite(
                        "dspark_target_layer_ids overrides the DFlash ids (spec_aux_hidden_state"
                        ".py:{dspark_override}, speculative/dspark_components/dspark_config.py:"
                        "{dspark_fields}); " + _SG_READ
                    )
                ],
                "setter": cite(
                    "set_dspark_layers_to_capture, else set_dflash_layers_to_capture "
                    "(attention_backend_setup.py:{setter})"
                ),
            },
            extra_checks=("markov_rank > 0 (spec_aux_hidden_state.py:{markov} ValueError)",),
        )
        if spark
        else _absent(absent.format("Qwen3DSparkModel / DSparkDraftModel"))
    )
    rows["nemotron-3.5"] = (
        _row(
            cite,
            True,
            cite(
                "models/dflash.py DFlashDraftModel / models/dspark.py Qwen3DSparkModel, the "
                "Nemotron-3.5 layout told by is_nemotron_35_draft_config (dflash_utils.py:"
                "{nemotron})"
            ),
            {
                **base,
                "reads": [
                    cite(
                        _SG_READ
                        + "; eagle_aux_hidden_state_layer_ids is read only to tell the layout"
                    )
                ],
            },
            extra_checks=(
                "the Nemotron-3.5 layout needs eagle_aux_hidden_state_layer_ids[i] == "
                "target_layer_ids[i] + 1 (dflash_utils.py:{nemotron_check}), else it is built "
                "as a generic DFlash drafter",
            ),
        )
        if dflash
        else _absent(absent.format("DFlashDraftModel"))
    )
    peagle = [c for c in registered if c.lower().startswith("peagle")]
    rows["p-eagle"] = (
        _absent(absent.format("PEagleDraftModel / PeagleLlamaForCausalLM"))
        if not peagle
        else _unknown_row(
            f"srt/models/{registered[peagle[0]]} registers {peagle[0]}: its taps are not read"
        )
    )
    return rows


# -- vLLM ---------------------------------------------------------------------------------

_VL_REGISTRY = "model_executor/models/registry.py"
_VL_UTILS = "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"

VLLM_ANCHORS: Mapping[str, Anchor] = {
    "reader": Anchor(_VL_UTILS, "def get_eagle3_aux_layers_from_config", ast.FunctionDef),
    "fc": Anchor(
        "model_executor/models/qwen3_dflash.py", "def _get_dflash_fc_input_size", ast.FunctionDef
    ),
    "fc_check": Anchor(
        "model_executor/models/qwen3_dflash.py", "hidden_states.shape[-1] != expected", ast.If
    ),
    "dspark_class": Anchor(
        "model_executor/models/qwen3_dspark.py",
        "class Qwen3DSparkForCausalLM",
        ast.ClassDef,
        start_only=True,
    ),
    "peagle_method": Anchor(
        "transformers_utils/configs/speculators/base.py",
        'result["method"] == "peagle"',
        ast.If,
        body_only=True,
    ),
    "peagle_algo": Anchor(
        "transformers_utils/configs/speculators/algos.py", "def update_peagle", ast.FunctionDef
    ),
    "eagle3_rename": Anchor(
        "transformers_utils/configs/eagle.py", 'elif method == "eagle3"', ast.If, body_only=True
    ),
    "eagle_wrap": Anchor(
        "config/speculative.py", 'if self.method in ("eagle", "eagle3", "dflash")', ast.If
    ),
    "v1_reader": Anchor(
        "v1/worker/gpu_model_runner.py", "def _get_eagle3_aux_layers_from_config", ast.FunctionDef
    ),
}
"""The statements each vLLM row cites."""

_VL_READ = (
    "V2 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:{reader}: top-level "
    "eagle_aux_hidden_state_layer_ids, then dflash_config.target_layer_ids + 1, then "
    "dspark_target_layer_ids + 1, then target_layer_ids + 1 (boundaries)"
)
_VL_FALLBACK = "the EAGLE-3 default boundaries (2, L//2, L-3) of the target model file"
_VL_FC = (
    "len(eagle3_utils ids), else draft num_hidden_layers, x (target_hidden_size or "
    "hidden_size) (model_executor/models/qwen3_dflash.py:{fc}; a different feed raises "
    "ValueError at qwen3_dflash.py:{fc_check})"
)
_VL_SETTER = "SupportsEagle3 set_aux_hidden_state_layers"
_VL_READER_FIELDS = tuple(
    f'getattr(hf_config, "{f}"'
    for f in (
        "eagle_aux_hidden_state_layer_ids",
        "dflash_config",
        "dspark_target_layer_ids",
        "target_layer_ids",
    )
)
"""The V2 reader's precedence ``_VL_READ`` states, in the order its source must name them."""


def _vllm_registry(src: Sources) -> dict[str, tuple[int, str]]:
    """``registry.py`` dict entries: architecture -> (line, module)."""
    parsed = src.parsed(_VL_REGISTRY)
    out: dict[str, tuple[int, str]] = {}
    if parsed is None:
        return out
    for node in ast.walk(parsed[0]):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if (
                isinstance(key, ast.Constant)
                and isinstance(key.value, str)
                and isinstance(value, ast.Tuple)
                and value.elts
                and isinstance(value.elts[0], ast.Constant)
            ):
                out.setdefault(key.value, (key.lineno, str(value.elts[0].value)))
    return out


def _reads_string(src: Sources, value: str) -> bool:
    """Any file of the release holds the string constant ``value``."""
    for path in sorted(src.package.rglob("*.py")):
        if value not in path.read_text(encoding="utf-8", errors="replace"):
            continue  # parse only the files that hold the text at all
        parsed = src.parsed(path.relative_to(src.package).as_posix())
        if parsed is not None and any(
            isinstance(n, ast.Constant) and n.value == value for n in ast.walk(parsed[0])
        ):
            return True
    return False


def _vllm_reader_ok(src: Sources, cite: _Cites) -> bool:
    """The V2 reader names the fields in ``_VL_READ``'s order (else its rows are unknown)."""
    span = cite.spans.get("reader")
    parsed = src.parsed(_VL_UTILS)
    if span is None or parsed is None:
        return False
    start, _, end = span.partition("-")
    body = "\n".join(parsed[1][int(start) - 1 : int(end or start)])
    places = [body.find(f) for f in _VL_READER_FIELDS]
    return all(p >= 0 for p in places) and places == sorted(places)


def _vllm_rows(src: Sources, version: str) -> dict[str, dict[str, Any]]:
    registry = _vllm_registry(src)
    cite = _Cites(src, VLLM_ANCHORS)
    if not _vllm_reader_ok(src, cite):  # cited only where it reads _VL_READ's precedence
        cite.spans.pop("reader", None)
        cite.anchors = {
            **cite.anchors,
            "reader": Anchor(_VL_UTILS, f"a reader of {', '.join(_VL_READER_FIELDS)} in order"),
        }
    base = {
        "reads": [cite(_VL_READ)],
        "fallback": _VL_FALLBACK,
        "fc": cite(_VL_FC),
        "setter": _VL_SETTER,
    }

    def registered(method: str, arch: str) -> dict[str, Any]:
        if arch not in registry:
            return _absent(f"{_VL_REGISTRY} lists no {arch}: the engine refuses to start")
        line, module = registry[arch]
        extra = ""
        if method == "dspark":
            extra = cite(" (DFlash fc sizing, qwen3_dspark.py:{dspark_class})")
        return _row(cite, True, f"{_VL_REGISTRY}:{line} {arch} -> {module}{extra}", base)

    rows = {
        "dflash": registered("dflash", "DFlashDraftModel"),
        "dflash2": registered("dflash2", "DFlash2DraftModel"),
        "dspark": registered("dspark", "Qwen3DSparkModel"),
        "nemotron-3.5": registered("nemotron-3.5", "DFlashDraftModel"),
    }
    if rows["nemotron-3.5"]["loads"]:
        rows["nemotron-3.5"]["reads"] = [
            rows["nemotron-3.5"]["reads"][0] + " (the eagle_aux ids win here)"
        ]
    rows["domino"] = (
        _unknown_row(f"a vllm {version} file reads projector_type 'domino': not read")
        if _reads_string(src, "domino")
        else {
            **_row(
                cite,
                False,
                f"no vllm {version} file reads dflash_config.projector_type: a Domino drafter's "
                "projector (gru_hidden_dim, emb_dim) has no module to load into",
                base,
            ),
            "setter": "",
        }
    )
    rows["p-eagle"] = _vllm_peagle(registry, cite)
    return rows


def _vllm_peagle(registry: Mapping[str, tuple[int, str]], cite: _Cites) -> dict[str, Any]:
    archs = [a for a in ("PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM") if a in registry]
    if not archs:
        return _absent(
            f"{_VL_REGISTRY} lists no PeagleLlamaForCausalLM: the engine refuses to start"
        )
    lines = ", ".join(str(registry[a][0]) for a in archs)
    text = cite(
        "P-EAGLE loads from the speculators format only: speculators_model_type 'peagle' -> "
        "method eagle3 with parallel drafting (transformers_utils/configs/speculators/base.py:"
        "{peagle_method}, algos.py:{peagle_algo} -> "
        + " / ".join(archs)
        + ", registry.py:"
        + lines
        + "); any other config is wrapped by EAGLEConfig as 'Eagle3' + architecture "
        "(transformers_utils/configs/eagle.py:{eagle3_rename}, config/speculative.py:"
        "{eagle_wrap}), e.g. Eagle3PEagleDraftModel, which registry.py does not list: the "
        "engine refuses to start"
    )
    row = {
        "loads": True,
        "drafter": text,
        "reads": ["as EAGLE-3"],
        "fallback": "as EAGLE-3",
        "fc": "as EAGLE-3 (llama_eagle3.py)",
        "setter": _VL_SETTER,
        "checks": [],
        "only_format": ["speculators_model_type", "peagle"],
    }
    return _with_unknown(row, cite)


def _vllm_v1_reader(src: Sources) -> str:
    """The V1 runner's reader when it has a DFlash branch ("" when it reads only the EAGLE-3
    fields the table's precedence lists)."""
    cite = _Cites(src, VLLM_ANCHORS)
    span = cite.spans.get("v1_reader")
    parsed = src.parsed("v1/worker/gpu_model_runner.py")
    if span is None or parsed is None:
        return ""
    start, _, end = span.partition("-")
    body = "\n".join(parsed[1][int(start) - 1 : int(end or start)])
    if '"dflash_config"' not in body:
        return ""
    return (
        f"v1/worker/gpu_model_runner.py:{span} _get_eagle3_aux_layers_from_config: top-level "
        "eagle_aux_hidden_state_layer_ids, else dflash_config.target_layer_ids + 1, replaced by "
        "eagle_config.eagle_aux_hidden_state_layer_ids whenever an eagle_config exists"
    )


# -- rows ---------------------------------------------------------------------------------


class _Cites:
    """Fills ``{key}`` citations from the anchors a release holds; records what it lacks."""

    def __init__(self, src: Sources, anchors: Mapping[str, Anchor]) -> None:
        self.anchors: Mapping[str, Anchor] = anchors
        self.spans = {k: s for k, a in anchors.items() if (s := src.locate(a)) is not None}
        self.missing: list[str] = []
        self.lacking: dict[str, list[str]] = {}  # rendered text -> what it could not cite

    def has(self, key: str) -> bool:
        return key in self.spans

    def __call__(self, template: str) -> str:
        before = len(self.missing)
        text = template.format_map(_Filled(self))
        if len(self.missing) > before:
            self.lacking.setdefault(text, []).extend(self.missing[before:])
        return text

    def unknown(self, row: Mapping[str, Any]) -> list[str]:
        """What the row's texts could not cite."""
        texts = [v for v in row.values() if isinstance(v, str)]
        texts += [t for v in row.values() if isinstance(v, list) for t in v if isinstance(t, str)]
        return sorted({m for t in texts for m in self.lacking.get(t, ())})


class _Filled(dict[str, str]):
    def __init__(self, cites: _Cites) -> None:
        super().__init__(cites.spans)
        self.cites = cites

    def __missing__(self, key: str) -> str:
        anchor = self.cites.anchors[key]
        self.cites.missing.append(f"{anchor.file}: {anchor.text!r}")
        return "?"


def _row(
    cite: _Cites,
    loads: bool,
    drafter: str,
    base: Mapping[str, Any],
    extra_checks: tuple[str, ...] = (),
) -> dict[str, Any]:
    row = {
        "loads": loads,
        "drafter": drafter,
        **base,
        "checks": [*base.get("checks", ()), *(cite(c) for c in extra_checks)],
        "only_format": None,
    }
    return _with_unknown(row, cite)


def _with_unknown(row: dict[str, Any], cite: _Cites) -> dict[str, Any]:
    unknown = cite.unknown(row)
    if unknown and row["loads"]:
        row["unknown"] = unknown
    return row


def _absent(why: str) -> dict[str, Any]:
    return {
        "loads": False,
        "drafter": why,
        "reads": [],
        "fallback": "",
        "fc": "",
        "setter": "",
        "checks": [],
        "only_format": None,
    }


def _unknown_row(why: str) -> dict[str, Any]:
    return {**_absent(why), "loads": True, "unknown": [why]}


def read_methods(spec: FrameworkSpec, version: str, root: Path) -> dict[str, Any]:
    """The ``methods`` section of a release table, from its extracted sources under ``root``."""
    src = Sources(spec, root)
    if spec.name == "sglang":
        models = src.files("srt/models")
        return {
            "dflash_setters": sorted(
                f.rsplit("/", 1)[1]
                for f in models
                if src.defines(f, "set_dflash_layers_to_capture")
            ),
            "dspark_setters": sorted(
                f.rsplit("/", 1)[1]
                for f in models
                if src.defines(f, "set_dspark_layers_to_capture")
            ),
            "rows": _sglang_rows(src, version),
        }
    return {"rows": _vllm_rows(src, version), "v1_reader": _vllm_v1_reader(src)}
