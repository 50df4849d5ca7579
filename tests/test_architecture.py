"""The package's dependency rules (docs/architecture.md), read from the import statements.

Each room of ``eagle3_contracts`` may import only the rooms below it. A violation names the
importing module, the imported one and the rule; an exception needs a stated reason here.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import eagle3_contracts

PACKAGE = Path(eagle3_contracts.__file__).parent

BASE = frozenset(
    {
        "errors.py",
        "layer_ids.py",
        "contract.py",
        "differences.py",
        "_io.py",
        "_json_edit.py",
    }
)
EVERYTHING = frozenset(
    {
        *BASE,
        "conventions",
        "config",
        "stamp.py",
        "capture",
        "dumps",
        "parallel",
        "parallel.partition",
        "probe",
        "testing",
        "acceptance",
        "integrations",
        "cli",
    }
)

ALLOWED: dict[str, frozenset[str]] = {
    # room: the rooms it may import (besides itself and the package root's lazy re-exports)
    "errors.py": frozenset(),
    "_io.py": frozenset({"errors.py"}),  # bounded reading of user-named files
    "_json_edit.py": frozenset({"errors.py"}),  # minimal textual edits of a user's JSON file
    "layer_ids.py": frozenset({"errors.py"}),
    "contract.py": frozenset({"errors.py", "layer_ids.py"}),
    "differences.py": frozenset({"errors.py", "layer_ids.py"}),
    "conventions": BASE,
    "stamp.py": BASE | {"conventions"},
    "config": BASE | {"conventions", "stamp.py", "parallel.partition"},
    "probe": BASE | {"conventions"},
    "capture": BASE | {"conventions", "config"},
    "dumps": BASE | {"conventions", "config", "stamp.py", "capture"},
    "parallel": BASE | {"conventions", "config", "capture"},
    # the acceptance oracle runs a drafter on the states a release feeds: it reads the
    # registry's answer (config.plan), the stamp, and captures the target with capture.hooks
    "acceptance": BASE | {"conventions", "config", "stamp.py", "capture"},
    "testing": EVERYTHING - {"cli", "integrations"},
    "integrations": EVERYTHING - {"cli", "testing"},
    "cli": EVERYTHING - {"testing"},
    "strategies.py": frozenset({"testing"}),
    "__main__.py": frozenset({"cli"}),
}

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("contract.py", "testing"): "CaptureContract.contracts() hands out the hypothesis strategy "
    "(one declaration validates and generates); imported lazily inside the method",
    ("parallel", "testing"): "the parallel simulations run synthetic targets on real gloo "
    "processes: they are test machinery by purpose",
    ("dumps", "testing"): "demo replays the incident on a tiny random-init HF model",
    ("capture", "testing"): "reference_states runs a synthetic target's explicit layer loop",
    ("conventions", "config"): "predict_feed takes the target's raw config.json: "
    "config.readers.read_target_config is the one (torch-free) reader of target configs, "
    "imported lazily inside predict_feed; release_ids.from_canonical (an engine name's ids for "
    "canonical layers) is config.plan.proven_fix, the one proven-fix search, imported lazily",
}

TORCH_FREE = (
    "errors",
    "layer_ids",
    "contract",
    "differences",
    "conventions",
    "config",
    "probe",
    "stamp",
)


def _room(module: str) -> str:
    """The room a module lives in: a subpackage name, or a top-level ``name.py``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "<root>"
    return parts[1] if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


def _target(module: str) -> str:
    """The room an import reaches; ``parallel.partition`` is torch-free and named alone."""
    if module.startswith("eagle3_contracts.parallel.partition"):
        return "parallel.partition"
    return _room(module)


def _imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            found.append(("<relative>", node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module == "eagle3_contracts":
            found += [(f"eagle3_contracts.{a.name}", node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "eagle3_contracts."
        ):
            found.append((node.module or "", node.lineno))
        elif isinstance(node, ast.Import):
            found += [
                (a.name, node.lineno) for a in node.names if a.name.startswith("eagle3_contracts.")
            ]
    return found


def _modules() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.name != "__init__.py"
    )


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_rooms_below_it(path: Path) -> None:
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    room = _room(module.removesuffix(".__init__"))
    assert room in ALLOWED, f"{module}: room {room!r} has no rule in ALLOWED; add one"
    for imported, line in _imports(path):
        assert imported != "<relative>", f"{module}:{line}: relative import; import absolutely"
        target = _target(imported)
        if target in ("<root>", room) or target.split(".")[0] == room:
            continue
        if (room, target.split(".")[0]) in EXCEPTIONS:
            continue
        allowed = ALLOWED[room]
        assert target in allowed, (
            f"{module}:{line} imports {imported} ({target}), but {room} may import only "
            f"{sorted(allowed)}: move the shared piece down, or state an exception with its "
            f"reason in EXCEPTIONS"
        )


def test_every_subpackage_has_a_rule() -> None:
    rooms = {m.name + ("" if m.ispkg else ".py") for m in pkgutil.iter_modules([str(PACKAGE)])}
    missing = sorted(rooms - set(ALLOWED) - {"__main__.py"} - {"__init__"})
    assert not missing, f"give {missing} a rule in ALLOWED (tests/test_architecture.py)"


def test_config_side_never_imports_torch() -> None:
    """Config-only checking must not pay for torch: import every torch-free module, then run
    ``check`` on an embedded example, in a fresh interpreter."""
    names = []
    for name in TORCH_FREE:
        target = PACKAGE / name
        if target.is_dir():
            names += [
                f"eagle3_contracts.{name}.{m.name}"
                for m in pkgutil.walk_packages([str(target)])
                if m.name not in ("__main__",)
            ]
            names.append(f"eagle3_contracts.{name}")
        elif target.with_suffix(".py").exists():
            names.append(f"eagle3_contracts.{name}")
    code = (
        (
            "import importlib, sys\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            "from eagle3_contracts.cli import main\n"
            "main(['check', '--example', 'kimi-k2.5', '--json'])\n"
        )
        + "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n"
    )
    wrapped = f"import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    try:\n        exec({code!r})\n    except SystemExit:\n        pass\nimport sys\nassert 'torch' not in sys.modules, 'torch imported'\n"
    done = subprocess.run(
        [sys.executable, "-c", wrapped], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
