"""What a released engine feeds an EAGLE-3 drafter: one answer per (engine, release, runner,
target model file), from the probed release tables (``conventions/data/*.json``).

``predict_feed("vllm==0.32.0:v1", draft_config, target_config)`` simulates the release reading
the drafter's raw ``config.json`` (as a dict) exactly as its code does:

1. **serve spec.** ``sglang==0.5.23``, ``vllm==0.33.0``, ``vllm==0.33.0:v1``; an unversioned
   ``sglang``/``vllm`` is the newest probed release (the ``Feed`` says so in ``assumptions``).
2. **model file.** The target's ``architectures`` pick the entry class the release registers; a
   class the release registers without EAGLE-3 support is ``unsupported``; one the probe could not
   read is ``unknown`` (with the file and what needs reading).
3. **runner (vLLM).** The release's own default (``runner`` section of the table, read from
   ``vllm/config/vllm.py`` ``use_v2_model_runner``), or the one named after ``:``.
4. **ids.** The reader of that runner/release, in its precedence (``id_source.readers``);
   ``eagle_config.use_aux_hidden_state: false`` means no aux states at all.
5. **selection and placement.** The entry class's probed rule (``+1``, ``+1 if ids[0] == 1``,
   ``sorted(set(ids))``, ...), then the model file's capture placement: which loop indices /
   boundaries its forward can reach, whether index 0 crashes on ``hidden_states + None``.
6. **fc width.** ``num_aux_hidden_states``, else the length of ``eagle_config`` ids, else 3
   (vLLM and SGLang ``llama_eagle3.py``): a different number of captured states crashes.

The result is a frozen ``Feed``. ``canonical`` is what the target collects, in concatenation
order (canonical ``-1`` = embedding stream = HF ``hidden_states[0]``; ``N`` = output of layer
``N``), also when ``kind == "crash"`` because the drafter's fc cannot take it; a crash inside the
target's capture (``embedding-residual-none``) collects nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from eagle3_contracts.conventions import (
    TRAINER_DEFAULTS,
    EngineSpec,
    SystemName,
    TrainerSpec,
    engine_spec,
    methods,
    releases,
    system_name,
)
from eagle3_contracts.conventions.hf import NESTED
from eagle3_contracts.conventions.hf import TOP_LEVEL as TOP
from eagle3_contracts.conventions.releases import (
    ArmsVerdict,
    EntryClass,
    Framework,
    Placement,
    Reader,
    ReleaseTable,
    RunnerDefault,
    SelectionRule,
    split_offset,
)
from eagle3_contracts.errors import ContractError
from eagle3_contracts.layer_ids import from_boundary

Kind = Literal["segments", "crash", "unsupported", "unknown"]

STREAM = "residual stream"
DELTA = "layer delta without the residual (boundaries >= 1)"
FC_SKIPPED = "raw target state: the drafter skips its fc (the feed is as wide as its embedding)"
"""What the drafter's input holds: the residual stream (right), a layer's delta (a model file
storing ``hidden_states`` alone in a fused-residual loop), or raw target states that bypass fc."""

OPT_IN_FLAGS: frozenset[str] = frozenset(
    {"norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"}
)
"""Norm flags a release honours only by reading them (speculators 0.9.0 models/eagle3/config.py
defaults them to false). ModelOpt's use_input_layernorm_in_first_layer / use_last_layernorm
describe norms the engines' drafters build unconditionally (vllm 0.33.0 llama_eagle3.py), so a
release not naming them does not mean it ignores them: recorded in the tables, never a finding."""

IGNORED_FLAG = "the draft config sets"
"""How a note about a norm flag the release never reads begins."""

FC_HIDDEN_SOURCES: dict[Framework, str] = {
    Framework.VLLM: "vllm/model_executor/models/llama_eagle3.py (0.33.0 lines 218-221): "
    "fc_input_size = getattr(config, 'target_hidden_size', config.hidden_size) x states",
    Framework.SGLANG: "sglang/srt/models/llama_eagle3.py (0.5.23 lines 151-152, 163): "
    "hidden_size_in = config.target_hidden_size if set, else config.hidden_size",
}
"""Where each engine takes the per-state fc width from the draft config."""

FC_WIDTH_SOURCES: dict[Framework, str] = {
    Framework.VLLM: "vllm/model_executor/models/llama_eagle3.py (0.32.0/0.33.0 lines 209-221): "
    "num_aux_hidden_states, else len(eagle_config ids), else 3",
    Framework.SGLANG: "sglang/srt/models/llama_eagle3.py (0.5.14 lines 148-156, 0.5.23 lines "
    "156-164): num_aux_hidden_states, else len(eagle_config ids), else 3",
}

USE_AUX_SOURCES: dict[Framework, str] = {
    Framework.VLLM: "vllm/model_executor/models/llama_eagle3.py (0.32.0 lines 179-183) and "
    "v1/spec_decode/llm_base_proposer.py _get_eagle3_use_aux_hidden_state_from_config",
    Framework.SGLANG: "sglang/srt/model_executor/model_runner.py (0.5.14 lines 458-472); "
    "model_runner_components/spec_aux_hidden_state.py (0.5.23 lines 187-196)",
}


class TargetFacts(Protocol):
    """What the prediction needs of a target (``config.readers.TargetConfig`` has it)."""

    @property
    def num_layers(self) -> int: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def architectures(self) -> tuple[str, ...]: ...
    @property
    def model_type(self) -> str | None: ...
    @property
    def text_model_type(self) -> str | None: ...
    @property
    def is_moe(self) -> bool: ...
    @property
    def quantized(self) -> bool: ...


TargetLike = Mapping[str, Any] | TargetFacts


def target_facts(target_config: TargetLike) -> TargetFacts:
    if isinstance(target_config, Mapping):
        # the one reader of target config.json files (torch-free; see tests/test_architecture.py)
        from eagle3_contracts.config.readers import read_target_config

        return read_target_config(target_config)
    return target_config


@dataclass(frozen=True)
class Feed:
    """What one system feeds the drafter: an engine or trainer release's answer (see the module
    docstring), or a fixed reading's (``fixed_feed``: ``release`` "")."""

    kind: Kind
    canonical: tuple[int, ...]
    width_states: int | None
    crash: str | None
    release: str  # "vllm==0.33.0"
    runner: str | None  # "v1" / "v2" (vLLM), None (SGLang)
    model_file: str  # "llama.py" ("" when not found)
    source: str  # file:line of the release code, or the probe table entry
    assumptions: tuple[str, ...] = ()
    final_state: bool = False  # no aux states: the target's final (post-norm) state is fed
    native_ids: tuple[int, ...] | None = None  # ids the release read (None: its default)
    ids_source: str = ""  # the JSON path read, "default" or "explicit"
    entry_class: str = ""  # "llama.py:LlamaForCausalLM"
    notes: tuple[str, ...] = ()
    state: str = "residual stream"  # what each collected segment holds
    read_path: str | None = field(default=None)  # where a fix must write ids for this release
    ignored_flags: tuple[str, ...] = ()  # norm flags the config sets that the release never reads
    unprobed: bool = False  # unknown because the release has no table (source says so)
    # the release answered, typed, its version resolved (None: a fixed reading): what reads the
    # answer on (pipeline fate, the answered-for column) never parses ``release`` again
    spec: EngineSpec | TrainerSpec | None = field(default=None, repr=False, compare=False)

    @property
    def system(self) -> str:
        """``vllm==0.33.0:v2 llama.py``: the full key of the answer."""
        runner = f":{self.runner}" if self.runner else ""
        file = f" {self.model_file}" if self.model_file else ""
        return f"{self.release}{runner}{file}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "canonical": list(self.canonical),
            "width_states": self.width_states,
            "crash": self.crash,
            "release": self.release,
            "runner": self.runner,
            "model_file": self.model_file,
            "entry_class": self.entry_class,
            "source": self.source,
            "assumptions": list(self.assumptions),
            "final_state": self.final_state,
            "native_ids": None if self.native_ids is None else list(self.native_ids),
            "ids_source": self.ids_source,
            "read_path": self.read_path,
            "state": self.state,
            "notes": list(self.notes),
        }


def fixed_feed(
    canonical: tuple[int, ...],
    *,
    kind: Kind = "segments",
    crash: str | None = None,
    source: str = "",
    assumptions: tuple[str, ...] = (),
    native_ids: tuple[int, ...] | None = None,
    ids_source: str = "",
    notes: tuple[str, ...] = (),
) -> Feed:
    """The answer of a fixed reading (a registry entry, a drafter's stamp): the same for every
    release, so it names none (``release`` and ``model_file`` ""), and no release builds its
    fc (``width_states`` None)."""
    return Feed(
        kind=kind,
        canonical=canonical,
        width_states=None,
        crash=crash,
        release="",
        runner=None,
        model_file="",
        source=source,
        assumptions=assumptions,
        native_ids=native_ids,
        ids_source=ids_source,
        notes=notes,
    )


# -- the prediction ---------------------------------------------------------------------------


def predict_feed(
    serve: str | EngineSpec,
    draft_config: Mapping[str, Any],
    target_config: TargetLike,
    *,
    explicit_ids: Sequence[int] | None = None,
) -> Feed:
    """What ``serve`` feeds the drafter ``draft_config`` on ``target_config`` (raw dicts).

    ``explicit_ids``: call the release's setter with these ids instead of reading the draft
    config (how SpecForge 0.2.0 hands its resolved ids to SGLang). Raises ``ContractError`` /
    ``ConfigError`` only for malformed input; a release, model file or code path the tables
    cannot answer gives ``kind="unknown"``.
    """
    spec = serve if isinstance(serve, EngineSpec) else engine_spec(serve, field="serve_with")
    if not isinstance(draft_config, Mapping):
        raise ContractError(
            f"draft_config must be a mapping (the drafter's config.json), got "
            f"{type(draft_config).__name__}",
            field="draft_config",
        )
    target = target_facts(target_config)
    assumptions: list[str] = []
    version = spec.version
    if version is None:
        version = releases.newest_release(spec.framework)
        assumptions.append(
            f"unversioned '{spec.framework}' = the newest probed release "
            f"{spec.framework}=={version}"
        )
    release = f"{spec.framework}=={version}"
    answered = replace(spec, version=version)
    if not releases.has_table(spec.framework, version):
        probed = releases.known_releases().get(spec.framework, ())
        return _unprobed(answered, release, probed, assumptions)
    table = releases.load_table(spec.framework, version)
    ctx = _Context(answered, release, table, target, draft_config, assumptions)
    return ctx.run(explicit_ids)


def predict_system(
    system: str | SystemName,
    draft_config: Mapping[str, Any],
    target_config: TargetLike,
    *,
    field: str = "trained_with",
) -> Feed:
    """What the system named ``system`` answers for the drafter: an engine release's feed
    (``sglang``, ``vllm==0.33.0:v1``), or the features a trainer release trained it on
    (``specforge==0.2.0``, through its pinned capture engine). ``field`` names the option a
    refusal points at (``trained_with``, ``serve_with``) when ``system`` is a string, parsed
    here; a name parsed where it entered is passed on typed."""
    from eagle3_contracts.conventions import trainers  # trainers imports this module

    spec = system_name(system, field=field)
    if isinstance(spec, EngineSpec):
        return predict_feed(spec, draft_config, target_config)
    if isinstance(spec, TrainerSpec):
        return trainers.predict_trainer(spec, draft_config, target_config)
    raise ContractError(
        f"{spec.given!r} is not a trainer release; known: {', '.join(TRAINER_DEFAULTS.values())}",
        field=field,
    )


@dataclass(frozen=True)
class _Read:
    """What the release read: the ids (None: its default), from where, and where a fix writes."""

    native: tuple[int, ...] | None
    ids_source: str
    read_path: str | None


EMBEDDING_UNREAD = frozenset({"needs reading", "stored value read outside this file (see via)"})
"""``Placement.embedding`` values that say the probe did not read what boundary 0 holds
(``probe/placement.py`` ``_embedding``): asking for the embedding there is unknown."""


@dataclass
class _Context:
    spec: EngineSpec
    release: str
    table: ReleaseTable
    target: TargetFacts
    draft: Mapping[str, Any]
    assumptions: list[str]
    notes: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # norm flags the release never reads
    runner: str | None = None
    model_file: str = ""
    entry: str = ""
    fc_states: int | None = None  # a block-draft drafter's fc (methods), else llama_eagle3's
    block: bool = False  # the drafter is of the block-draft family (methods.detect)
    fc_source: str = ""  # how a block-draft drafter's fc is sized (methods), cited

    # -- steps ------------------------------------------------------------------------------
    def run(self, explicit_ids: Sequence[int] | None) -> Feed:
        method = methods.detect(self.draft) if explicit_ids is None else methods.EAGLE3
        if method is not methods.EAGLE3:
            self.assumptions.append(f"drafter method: {methods.describe(method)}")
        found = self._method_row(method)
        if isinstance(found, Feed):
            return found
        if explicit_ids is None and methods.engine_method(method, self.table) is None:
            # an EAGLE-3 drafter (or a variant loaded as one): the release's own registry
            refused = None if method.block else self._unloadable_drafter()
            if refused is not None:
                return refused
        if self.block and self.table.framework is Framework.SGLANG:
            return self._block_sglang(method)
        checked = self._readable_row()
        if isinstance(checked, Feed):
            return checked
        row, rule, placement = checked
        if explicit_ids is None and not self.block:  # serving: the release's own drafter runs
            self._ignored_flags()
        use_aux, use_aux_src = self._use_aux()
        if not use_aux:
            return self._feed(
                "segments",
                (),
                None,
                None,
                f"{use_aux_src}; no aux hidden states: the drafter gets the target's final "
                "hidden state (width H)",
                final_state=True,
            )
        found_ids = self._ids(explicit_ids)
        if isinstance(found_ids, Feed):
            return found_ids
        fed, reader_src = found_ids
        if self.block:  # vLLM: the table's reader; the fix writes where this drafter keeps ids
            native, source = fed.native, fed.ids_source
            v1_reader = methods.vllm_v1_reader(self.table)
            if self.runner == "v1" and v1_reader:  # a dflash branch the precedence lacks
                native, source = methods.vllm_v1_ids(self.draft)
                reader_src = f"{self.release} {v1_reader}"
            # the field it read, else the DFlash field both runners read (before the rest)
            path = source if native is not None else "dflash_config.target_layer_ids"
            fed = _Read(native, source, path)
        elements = self._elements(row, rule, fed.native, reader_src)
        if isinstance(elements, Feed):
            return elements
        source = f"{self._class_source(row)}; {reader_src}; {placement.describe()}"
        return self._collect(row, placement, elements, source, fed)

    def _method_row(self, method: methods.Method) -> Feed | None:
        """The drafter method's row for this release (the table's probed ``methods``): a
        drafter the release cannot build crashes; a block-draft drafter sizes its fc its own
        way; a row the probe could not read is unknown."""
        row = methods.engine_method(method, self.table)
        if row is None:
            if method.block:
                return self._unknown(
                    f"{method.label} drafters are not read for {self.release}: its table has "
                    "no drafter-method rows (scripts/reprobe_releases.py --methods-only)",
                    self.table.path,
                )
            return None
        if row.unknown and row.loads:
            return self._unknown(
                f"{method.label} on {self.release}: the probe did not find "
                f"{'; '.join(row.unknown)}",
                self.table.path,
            )
        fmt = row.only_format
        if not row.loads or (fmt is not None and self.draft.get(fmt[0]) != fmt[1]):
            self.notes.append(f"{self.release} cannot load a {method.label} drafter: {row.drafter}")
            return self._feed("crash", (), None, "unloadable-drafter", row.drafter)
        self.block = method.block
        if self.block and self.table.framework is Framework.VLLM:
            self.fc_states, self.fc_source = methods.vllm_fc_states(self.draft, row.fc)
        return None

    def _block_sglang(self, method: methods.Method) -> Feed:
        """SGLang's block-draft path: its own reader and fallback, then the target's
        ``set_dflash_layers_to_capture`` (loop index id + 1) and the same capture loop."""
        rules = methods.engine_method(method, self.table)
        assert rules is not None  # _method_row returned a Feed otherwise
        read = methods.sglang_block_read(method, self.draft, self.target.num_layers, rules)
        self.notes.extend(read.notes)
        path = (
            read.ids_source
            if read.native is not None
            else (methods.block_ids_path(self.draft) or "dflash_config.target_layer_ids")
        )
        fed = _Read(read.native, read.ids_source, path)
        found = self._entry_class()
        if isinstance(found, Feed) and found.kind != "unsupported":
            return found
        file = found.model_file if isinstance(found, Feed) else self.table.classes[found].file
        dflash = file in methods.sglang_setter_files(self.table, "dflash")
        dspark = method is methods.DSPARK and file in methods.sglang_setter_files(
            self.table, "dspark"
        )
        if not (dflash or dspark):
            self.model_file = file
            entry = found.entry_class if isinstance(found, Feed) else found
            return self._feed_unsupported(
                entry,
                f"{entry}: {self.release} {file} has neither set_dspark_layers_to_capture nor "
                "set_dflash_layers_to_capture (model_runner_components/attention_backend_setup.py"
                ":62-70 raises)",
            )
        if dspark:
            self.model_file = file
            return self._unknown(
                f"{file} has its own set_dspark_layers_to_capture, whose capture is not read "
                "(the table's dspark_setters)",
                f"{self.release} {file}",
            )
        if isinstance(found, Feed):  # no EAGLE-3 setter was probed, but a DFlash one is there
            return self._block_dflash_only(found, file, read, fed)
        self.entry = found
        row = self.table.classes[found]
        self.model_file = row.file
        if read.crash:
            return self._feed("crash", (), read.fc_states, read.crash, read.source, read=fed)
        placement = row.placement
        if placement is None or not placement.boundary_exact:
            return self._unknown(
                f"capture placement not boundary-exact: {row.placement_problem}",
                self._class_source(row),
            )
        self.fc_states, self.fc_source = read.fc_states, rules.fc
        source = f"{self._class_source(row)}; {read.source}; {placement.describe()}"
        return self._collect(row, placement, list(read.elements), source, fed)

    def _block_dflash_only(
        self, found: Feed, file: str, read: methods.BlockRead, fed: _Read
    ) -> Feed:
        """A model file with ``set_dflash_layers_to_capture`` and no EAGLE-3 capture the
        tables read: answered only for NemotronH, whose forward captures every loop index."""
        self.model_file, self.entry = file, found.entry_class
        if file != "nemotron_h.py":
            return self._unknown(
                f"{file} has set_dflash_layers_to_capture but no EAGLE-3 capture the release "
                "tables could read: its forward's capture placement is not read",
                f"{self.release} {file}",
            )
        # every loop index 0..L is captured
        self.assumptions.append(methods.NEMOTRON_H_FORWARD)
        if read.crash:
            return self._feed("crash", (), read.fc_states, read.crash, read.source, read=fed)
        got = tuple(sorted({e - 1 for e in read.elements}))
        kind: Kind = "segments" if len(got) == read.fc_states else "crash"
        return self._feed(
            kind,
            got,
            read.fc_states,
            None if kind == "segments" else "fc-width-mismatch",
            f"{read.source}; {methods.NEMOTRON_H_FORWARD}",
            read=fed,
        )

    def _unloadable_drafter(self) -> Feed | None:
        """``crash`` (unloadable-drafter) when the release's own registry cannot build the
        drafter its config names (``ReleaseTable.drafters``), before any capture is read."""
        registry = self.table.drafters
        why = registry.refusal(self.draft) if registry is not None else None
        if why is None:
            return None
        notes = list(self.notes)
        found = self._entry_class()  # the row still names the target's model file
        if isinstance(found, str):
            self.entry, self.model_file = found, self.table.classes[found].file
        self.notes[:] = notes
        self.notes.append(f"{self.release} cannot load this drafter: {why}")
        return self._feed(
            "crash", (), None, "unloadable-drafter", registry.source if registry else ""
        )

    def _readable_row(self) -> tuple[EntryClass, SelectionRule, Placement] | Feed:
        """The target's entry class (and, for vLLM, the runner), when its rule and placement
        can be simulated; else the answer saying why not."""
        found = self._entry_class()
        if isinstance(found, Feed):
            return found
        self.entry = found
        row = self.table.classes[found]
        self.model_file = row.file
        if self.table.framework is Framework.VLLM:
            runner = self._runner()
            if isinstance(runner, Feed):
                return runner
            self.runner = runner
        problems = list(row.needs_reading)
        rule = row.selection.rule
        if rule is None:
            problems.append(
                f"selection rule {row.selection.rule_name!r} is not one the predictor knows"
            )
        placement = row.placement
        arms = row.setter_arms
        if arms is not None and (
            arms.verdict is ArmsVerdict.UNKNOWN
            or (arms.verdict is ArmsVerdict.NOT_ARMED and self.table.framework is Framework.VLLM)
        ):
            problems.append(
                f"whether the EAGLE-3 setter ({'; '.join(arms.setters)}) arms the capture is not "
                f"read statically ({', '.join(arms.unread) or arms.describe()})"
            )
        if placement is None or not placement.boundary_exact:
            problems.append(f"capture placement not boundary-exact: {row.placement_problem}")
        if problems or placement is None or rule is None:
            return self._unknown("; ".join(problems), self._class_source(row))
        return row, rule, placement

    def _ids(self, explicit_ids: Sequence[int] | None) -> tuple[_Read, str] | Feed:
        """What the release reads (or is handed), and the reader's citation."""
        if explicit_ids is not None:
            return _Read(tuple(explicit_ids), "explicit", None), (
                "ids handed to the setter by the caller"
            )
        found_ids = self._read_ids()
        if isinstance(found_ids, Feed):
            return found_ids
        native, ids_source, reader_src, read_path = found_ids
        return _Read(native, ids_source, read_path), reader_src

    def _elements(
        self,
        row: EntryClass,
        rule: SelectionRule,
        native: tuple[int, ...] | None,
        reader_src: str,
    ) -> list[int] | Feed:
        """The capture-set elements the setter stores (its default when no ids were read)."""
        n = self.target.num_layers
        if native is not None:
            return rule.elements(list(native), n)
        default = row.selection.default
        if default is None:
            return self._unknown(
                f"no-ids default {row.selection.default_name!r} unknown",
                self._class_source(row),
            )
        elements = default.elements(n)
        if rule is SelectionRule.SORTED_SET:
            elements = sorted(set(elements))
        self.notes.append(
            f"no ids where {self.release} reads them ({reader_src}): its default "
            f"{default.value} = {elements} (loop indices / boundaries)"
        )
        return elements

    def _collect(
        self,
        row: EntryClass,
        placement: Placement,
        elements: list[int],
        source: str,
        fed: _Read,
    ) -> Feed:
        """What the target's forward collects for ``elements`` and what the drafter gets."""
        n = self.target.num_layers
        width_states = self._fc_width()
        stored = self._setter(row, placement, elements)
        if isinstance(stored, str):  # the setter's own crash: nothing is captured
            return self._feed("crash", (), width_states, stored, source, read=fed)
        unread = self._unread_capture(row, placement, stored)
        if unread is not None:
            return unread
        crash, collected = self._capture(stored, placement, n)
        state = STREAM
        if placement.residual_dropped:
            state = DELTA
            self.notes.append(
                f"{self.model_file} stores hidden_states alone while its layers return the "
                "residual separately: every segment but the embedding is the layer's delta, not "
                f"the residual stream ({placement.describe()})"
            )
        if crash is not None:
            return self._feed(
                "crash", (), width_states, "embedding-residual-none", f"{crash}; {source}", read=fed
            )
        canonical = tuple(from_boundary(b, n) for b in collected)
        engine_crash = self._engine_crash(stored, collected, placement)
        if engine_crash is None and self._fc_skipped(len(canonical)):
            return self._feed(
                "segments", canonical, width_states, None, source, state=FC_SKIPPED, read=fed
            )
        if engine_crash is not None:
            return self._feed(
                "crash", canonical, width_states, engine_crash, source, state=state, read=fed
            )
        crash = self._fc_crash(canonical, width_states)
        kind: Kind = "segments" if crash is None else "crash"
        return self._feed(kind, canonical, width_states, crash, source, state=state, read=fed)

    def _setter(
        self, row: EntryClass, placement: Placement, elements: list[int]
    ) -> list[int] | str:
        """The elements the setter leaves armed, or its crash class: an inner setter that
        indexes ``self.layers``, or one whose EAGLE-3 arm is never taken."""
        n = self.target.num_layers
        if row.selection.inner_raises_on:
            # the inner setter flags self.layers[e] (sglang 0.5.23 qwen2_moe.py:1153-1156):
            # e >= L raises IndexError, a negative e flags layers[L + e] (observed running
            # the release's qwen2_moe.py on CPU)
            if any(e >= n for e in elements):
                self.notes.append(
                    f"the inner setter indexes self.layers[e] for e in {elements}: e >= {n} "
                    "raises IndexError when the engine starts"
                )
                return "setter-index-error"
            elements = [e + n if e < 0 else e for e in elements]
        arms = row.setter_arms
        if arms is not None and arms.verdict is ArmsVerdict.NOT_ARMED:
            self.notes.append(f"{arms.describe()} ({placement.describe()}): nothing is captured")
            self._engine_crash(elements, (), placement)
            return "no-aux-states"
        return elements

    def _unread_capture(
        self, row: EntryClass, placement: Placement, elements: list[int]
    ) -> Feed | None:
        """Unknown when what a capture site stores was not read (no layer is known), or the
        embedding is asked where the probe did not read what boundary 0 holds."""
        unread = next((s for s in placement.sites if s.value.startswith("needs reading")), None)
        if unread is not None:
            return self._unknown(
                f"what {self.model_file} stores at its capture (line {unread.line}) "
                f"{unread.value} ({placement.describe()})",
                self._class_source(row),
            )
        if 0 in elements and placement.embedding in EMBEDDING_UNREAD:
            return self._unknown(
                f"loop index / boundary 0 (the embedding) asked: what {self.model_file} stores "
                f"there needs reading ({placement.embedding}; {placement.describe()})",
                self._class_source(row),
            )
        return None

    def _fc_crash(self, canonical: tuple[int, ...], width_states: int) -> str | None:
        """``fc-width-mismatch`` (said in a note) when the drafter's fc cannot take what the
        target collects: another per-state width, or another number of states."""
        sized = self._fc_hidden()
        if sized is not None and sized[0] != self.target.hidden_size:
            self.notes.append(
                f"the drafter's fc is built for {width_states} x {sized[0]} inputs from the draft "
                f"config's {sized[1]} ({FC_HIDDEN_SOURCES[self.table.framework]}), the target "
                f"sends {len(canonical)} x {self.target.hidden_size}: shape error at the first "
                "speculative step (set target_hidden_size = "
                f"{self.target.hidden_size} if the drafter was trained on this target)"
            )
            return "fc-width-mismatch"
        if len(canonical) != width_states:
            self.notes.append(
                f"the drafter's fc takes {width_states} states "
                f"({self.fc_source or FC_WIDTH_SOURCES[self.table.framework]}), the target collects "
                f"{len(canonical)}: shape error at the first speculative step"
                + (_VLLM_CPU_FC if self.table.framework is Framework.VLLM else "")
            )
            return "fc-width-mismatch"
        return None

    def _ignored_flags(self) -> None:
        """Norm flags the draft config sets (top level or ``eagle_config``) that the release's
        drafter file never reads: the drafter runs without the norm it was trained with."""
        eagle = self.draft.get("eagle_config")
        for flag, line in self.table.drafter_flags.items():
            if flag not in OPT_IN_FLAGS:
                continue
            value = self.draft.get(flag)
            if value is None and isinstance(eagle, Mapping):
                value = eagle.get(flag)
            if value is True and line is None:
                self.ignored.append(flag)
                self.notes.append(
                    f"{IGNORED_FLAG} {flag} = true; {self.release}'s {self.table.drafter_file} "
                    "never reads it: the drafter runs without that norm"
                )

    def _fc_hidden(self) -> tuple[int, str] | None:
        """The per-state width the engine sizes fc (and its norms) from: the draft config's
        ``target_hidden_size``, else its ``hidden_size`` (speculators: the
        ``transformer_layer_config``'s); ``None`` when the config gives neither."""
        layer = self.draft.get("transformer_layer_config")
        for where, value in (
            ("target_hidden_size", self.draft.get("target_hidden_size")),
            ("hidden_size", self.draft.get("hidden_size")),
            (
                "transformer_layer_config.hidden_size",
                layer.get("hidden_size") if isinstance(layer, Mapping) else None,
            ),
        ):
            if isinstance(value, int) and not isinstance(value, bool):
                return value, where
        return None

    def _fc_skipped(self, count: int) -> bool:
        """SGLang's EAGLE-3 drafter runs fc only when the feed is wider than its embedding
        (``llama_eagle3.py`` ``if hidden_states.shape[-1] != embeds.shape[-1]``: 0.5.12:218,
        0.5.13:213, 0.5.14:214, 0.5.17:229, 0.5.23:238; observed on CPU): a feed exactly as wide
        as the drafter's hidden size is consumed raw, silently."""
        if self.table.framework is not Framework.SGLANG or count == 0 or self.block:
            return False
        hidden = self.draft.get("hidden_size")
        layer = self.draft.get("transformer_layer_config")
        if hidden is None and isinstance(layer, Mapping):
            hidden = layer.get("hidden_size")
        if not isinstance(hidden, int) or count * self.target.hidden_size != hidden:
            return False
        self.notes.append(
            f"{count} state(s) of width {self.target.hidden_size} equal the drafter's hidden size "
            f"{hidden}: SGLang's llama_eagle3.py skips fc and reads the raw target state as its "
            "output, with no error (llama_eagle3.py: if hidden_states.shape[-1] != embeds.shape[-1])"
        )
        return True

    def _engine_crash(
        self, elements: Sequence[int], collected: Sequence[int], placement: Placement
    ) -> str | None:
        """A crash in the target's own forward, before the drafter runs (SGLang)."""
        if self.table.framework is not Framework.SGLANG:
            return None
        if not collected:
            # the inner model returns the bare tensor when nothing was collected and the causal
            # LM unpacks it (0.5.23 llama.py:502-503 and 621; qwen2.py:579, qwen3.py:622,
            # deepseek_v2.py:3419, gemma3_causal.py:785; 0.5.12 llama.py:534; observed on CPU)
            self.notes.append(
                "nothing is collected: the target's forward returns a bare tensor that its "
                "causal LM unpacks as (hidden, aux): ValueError at the first forward"
            )
            return "no-aux-states"
        line = placement.count_checked_line
        if line is not None and len(collected) < len(elements):
            self.notes.append(
                f"{self.model_file}:{line} sizes its collector by len(layers_to_capture) = "
                f"{len(elements)}; {len(collected)} collected: finalize() raises 'captured "
                f"{len(collected)} of {len(elements)} aux hidden states'"
            )
            return "aux-count-short"
        return None

    def _entry_class(self) -> str | Feed:
        table, target = self.table, self.target
        archs = table.architectures
        unsupported = table.unsupported_architectures
        for arch in target.architectures:
            wrapped = releases.WRAPPER_ARCHITECTURES.get(arch)
            if wrapped and wrapped in archs:
                self.assumptions.append(f"{arch} delegates capture to its language model {wrapped}")
                return archs[wrapped]
            if arch in archs:
                return archs[arch]
            if arch in unsupported:
                where = unsupported[arch]
                return self._feed_unsupported(
                    where,
                    f"{where}: {arch} is registered by {self.release} without EAGLE-3 support "
                    f"({_why_unsupported(table.framework)})",
                )
        try:
            return releases.model_file_for(
                table, model_type=target.model_type, architectures=target.architectures
            )
        except ContractError:
            pass
        if target.text_model_type:
            try:
                key = releases.model_file_for(table, model_type=target.text_model_type)
            except ContractError:
                key = None
            if key is not None:
                self.assumptions.append(
                    f"model file chosen from text_config.model_type {target.text_model_type!r}"
                )
                return key
        given = ", ".join(target.architectures) or (
            f"model_type {target.model_type!r}"
            if target.model_type
            else "a target with neither architectures nor model_type"
        )
        return self._unknown(
            f"{self.release} has no probed model file for {given}: the target's class is not "
            "in the release's registry table (give the target's config.json with architectures)",
            f"{table.path} architectures",
        )

    def _runner(self) -> str | Feed:
        rule = self.table.runner
        if self.spec.runner:
            if rule is not None and self.spec.runner not in rule.available:
                return self._unknown(
                    f"{self.release} has no model runner {self.spec.runner}", rule.source
                )
            return self.spec.runner
        if rule is None or rule.default is None:
            return self._unknown(
                f"{self.release}: the default model runner was not probed (name it: "
                f"'{self.release}:v1' or ':v2')",
                f"{self.table.path} runner",
            )
        picked = rule.pick(self.target.architectures, self.target.is_moe, self.target.quantized)
        if picked is not None:
            runner, why = picked
        elif rule.default is RunnerDefault.V2_BY_CASE:
            return self._unknown(
                f"{self.release}: the default model runner for this target was not evaluated "
                f"(name it: '{self.release}:v1' or ':v2')",
                rule.v2_cases_from or rule.source,
            )
        else:
            runner = rule.default.value
            why = rule.assumes
        said = "; ".join(part for part in (why, rule.source) if part)
        self.assumptions.append(
            f"runner {runner} (the release's default{': ' + said if said else ''}); name "
            f"another with '{self.release}:v1' or ':v2'"
        )
        return runner

    def _use_aux(self) -> tuple[bool, str]:
        eagle = self.draft.get("eagle_config")
        value = eagle.get("use_aux_hidden_state", True) if isinstance(eagle, Mapping) else True
        if value is False:
            return False, (
                "eagle_config.use_aux_hidden_state = false "
                f"({USE_AUX_SOURCES[self.table.framework]})"
            )
        return True, ""

    def _reader(self) -> Reader | None:
        want = ""
        if self.table.framework is Framework.VLLM:
            want = "eagle3_utils.py" if self.runner == "v2" else "gpu_model_runner.py"
        evaluated = self.table.evaluated_readers(want)
        return evaluated[0] if evaluated else None

    def _read_ids(
        self,
    ) -> tuple[tuple[int, ...] | None, str, str, str | None] | Feed:
        reader = self._reader()
        if reader is None:
            return self._unknown(
                f"no evaluated draft-config reader for {self.release}"
                + (f" runner {self.runner}" if self.runner else ""),
                f"{self.table.path} id_source",
            )
        where = reader.where
        precedence = list(reader.precedence or ())
        read_path = precedence[0] if precedence else None
        if self.table.framework is Framework.SGLANG:
            return (*self._read_sglang(precedence, where), read_path)
        for entry in precedence:
            path, offset = split_offset(entry)
            value = _at(self.draft, path)
            if value and isinstance(value, (list, tuple)):
                ids = tuple(i + offset for i in int_tuple(value, path))
                return ids, path, f"{where} reads {entry}", read_path
        ignored = [p for p in (TOP, NESTED) if p not in precedence and _at(self.draft, p)]
        if ignored:
            self.notes.append(
                f"the ids at {', '.join(ignored)} are ignored by {self.release}"
                + (f" runner {self.runner}" if self.runner else "")
                + f" ({where} reads {' then '.join(precedence)})"
            )
        return None, "default", f"{where} reads {' then '.join(precedence)}", read_path

    def _read_sglang(self, precedence: list[str], where: str) -> tuple[Any, str, str]:
        # eagle_config["eagle_aux_hidden_state_layer_ids"] inside try/except: a missing
        # eagle_config or key means None (the default); the value is passed on as is.
        for path in precedence:
            head, _, key = path.rpartition(".")
            section = self.draft.get(head) if head else self.draft
            if isinstance(section, Mapping) and key in section and section[key] is not None:
                return int_tuple(section[key], path), path, f"{where} reads {path}"
        if _at(self.draft, TOP) and TOP not in precedence:
            self.notes.append(
                f"the top-level {TOP} is ignored by {self.release} ({where} reads "
                f"{' then '.join(precedence)})"
            )
        return None, "default", f"{where} reads {' then '.join(precedence)}"

    def _capture(
        self, elements: Sequence[int], placement: Placement, n: int
    ) -> tuple[str | None, tuple[int, ...]]:
        """Boundaries collected (ascending, once each), or the crash the capture raises."""
        wanted = sorted(set(elements))
        if 0 in wanted and placement.embedding_raises:
            return f"loop index 0 asked: {placement.embedding}", ()
        got = []
        for e in wanted:
            if placement.reaches(e, n):
                got.append(e)
            else:
                self.notes.append(
                    f"loop index / boundary {e} is never reached by {self.model_file} "
                    f"(it captures {', '.join(placement.elements)} for L = {n}): "
                    "silently not collected"
                )
        if len(got) != len(elements):
            dupes = len(elements) - len(wanted)
            if dupes:
                self.notes.append(f"{dupes} duplicate id(s): each layer is collected once")
        if list(elements) != sorted(elements):
            self.notes.append("collected in layer order (ascending), not in the listed order")
        return None, tuple(got)

    def _fc_width(self) -> int:
        if self.fc_states is not None:
            return self.fc_states
        num = self.draft.get("num_aux_hidden_states")
        if isinstance(num, int) and not isinstance(num, bool):
            return num
        eagle = self.draft.get("eagle_config")
        ids = eagle.get(TOP) if isinstance(eagle, Mapping) else None
        return len(ids) if ids else 3

    # -- results ----------------------------------------------------------------------------
    def _class_source(self, row: EntryClass) -> str:
        chain = " -> ".join(row.chain) or self.entry
        return f"{self.release} {chain}"

    def _feed(
        self,
        kind: Kind,
        canonical: tuple[int, ...],
        width_states: int | None,
        crash: str | None,
        source: str,
        *,
        final_state: bool = False,
        read: _Read | None = None,
        state: str = "residual stream",
    ) -> Feed:
        read = read or _Read(None, "", None)
        return Feed(
            kind=kind,
            canonical=canonical,
            width_states=width_states,
            crash=crash,
            release=self.release,
            runner=self.runner,
            model_file=self.model_file,
            source=source,
            assumptions=tuple(self.assumptions),
            final_state=final_state,
            native_ids=read.native,
            ids_source=read.ids_source,
            entry_class=self.entry,
            notes=tuple(self.notes),
            read_path=read.read_path,
            state=state,
            ignored_flags=tuple(self.ignored),
            spec=self.spec,
        )

    def _feed_unsupported(self, where: str, source: str) -> Feed:
        self.model_file = where.split(":", 1)[0]
        self.entry = where
        return self._feed("unsupported", (), None, None, source)

    def _unknown(self, why: str, source: str) -> Feed:
        self.notes.append(why)
        return self._feed("unknown", (), None, None, source)


def unprobed_reason(release: str, probed: Sequence[str]) -> str:
    """The one line an unprobed release answers: what is known and the command that probes it
    (into the user's cache, ``conventions.releases.cache_dir``)."""
    known = f"{len(probed)} probed, {probed[0]} to {probed[-1]}" if probed else "none probed"
    return (
        f"{release} has no probed table ({known}; `eagle3-contracts check --list` names them); "
        f"probe it with `{releases.probe_advice(release)}` (needs the package index; writes "
        "to the user cache)"
    )


def _unprobed(
    spec: EngineSpec, release: str, probed: Sequence[str], assumptions: list[str]
) -> Feed:
    """An unknown row whose whole reason is the missing table: said once, in ``source``."""
    return Feed(
        kind="unknown",
        canonical=(),
        width_states=None,
        crash=None,
        release=release,
        runner=spec.runner,
        model_file="",
        source=unprobed_reason(release, probed),
        assumptions=tuple(assumptions),
        unprobed=True,
        spec=spec,
    )


_VLLM_CPU_FC = (
    " (F.linear raises on a GPU; the CPU build's onednn_mm, vllm-cpu 0.32.0 _custom_ops.py:"
    "3752-3762, raises, computes rows of uninitialised memory or aborts the engine depending on "
    "tokens x states mod fc states: observed running the vLLM CPU build)"
)


def _why_unsupported(framework: Framework) -> str:
    if framework is Framework.VLLM:
        return (
            "its class does not implement SupportsEagle3 (vllm/v1/worker/gpu/spec_decode/eagle/"
            "eagle3_utils.py set_eagle3_aux_hidden_state_layers raises 'Model does not support "
            "EAGLE3 interface')"
        )
    return (
        "its class has no set_eagle3_layers_to_capture (sglang 0.5.23 model_runner_components/"
        "attention_backend_setup.py:55-59 raises ValueError; 0.5.14 model_runner.py:1009 "
        "calls it unguarded)"
    )


_at = methods.at_path


int_tuple = methods.int_ids  # one reader of id lists (trainers imports it from here)
