"""pytest plugin (``pytest11`` entry point) for repositories that train or serve EAGLE-3 drafters.

Loaded automatically once ``eagle3-contracts`` is installed. It adds:

* the ``eagle3_gpu`` marker: such tests are skipped, with the reason, when no CUDA device
  exists, and run with ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` when it is unset (deterministic
  cuBLAS; set for those tests only, restored after);
* fixtures: ``eagle3_tiny_target`` (a 6 x 32 synthetic decoder), ``eagle3_contract`` (a
  contract for it), ``eagle3_input_ids``, ``eagle3_hf_target`` (factory of tiny random HF
  models), ``eagle3_verify`` (``verify_capture`` with those defaults);
* hypothesis profiles ``eagle3-dev``, ``eagle3-ci`` and ``eagle3-gpu``, registered in
  ``pytest_configure`` (never at import) but not loaded (load one with
  ``--hypothesis-profile=eagle3-ci`` or ``settings.load_profile("eagle3-ci")``);
* ini options ``eagle3_configs`` (globs of drafter config files, or Hub ids ``org/name[@rev]``
  read from the HF cache first), ``eagle3_serve_with``
  (serving systems; ``sglang==installed`` / ``vllm==installed`` name the engine installed in
  this environment, as ``check --serve-with`` does) and ``eagle3_trained_with`` (the training system), optionally
  ``eagle3_target`` (the target ``config.json`` or a Hub id ``org/name[@revision]``, read from
  the HF cache first; else a ``target.json`` next to each drafter config): every matching config becomes one test item per serving system, failing with the
  findings of ``eagle3_contracts.config.check.check_drafter`` when serving would feed the drafter
  other layers than training did.

  The globs are resolved from the rootdir (``Path.glob`` syntax, ``**`` recurses), whatever
  ``testpaths`` says; the configs become items where pytest collects, so they must lie under a
  collected path. A glob that matches no file is a usage error naming the pattern and the
  rootdir, and so is a glob whose files all lie outside ``testpaths`` in a run that collects
  ``testpaths``: a typo never gives a green run that checked nothing. So is an ``eagle3_*``
  ini option this plugin does not define (``eagle3_config`` for ``eagle3_configs``), and an
  unknown system name in ``eagle3_serve_with`` / ``eagle3_trained_with``: one usage error for
  the session, before any drafter is read. Without ``eagle3_trained_with`` (and without a stamp
  in the drafter's config) ``EAGLE3_CONTRACTS_TRAINED_WITH`` is the training claim, as in the
  CLI. A failing item's first line, the one ``-r`` shows, is its verdict and fix
  (``serve[vllm]: shifted -1; fix eagle_aux_hidden_state_layer_ids = [3, 31, 59]``).

Nothing here imports torch until a fixture or item needs it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.conventions import SystemName

GPU_MARKER = "eagle3_gpu"
GPU_REASON = f"{GPU_MARKER}: no CUDA device available (torch.cuda.is_available() is False)"
CUBLAS_WORKSPACE = ":4096:8"
TINY_TARGET: dict[str, Any] = {"num_layers": 6, "hidden_size": 32, "vocab_size": 64, "seed": 0}
TINY_CONTRACT_IDS = (1, 3, 5)


# -- hypothesis profiles -----------------------------------------------------------------
def register_hypothesis_profiles() -> tuple[str, ...]:
    """Register ``eagle3-dev``, ``eagle3-ci`` and ``eagle3-gpu`` (loading none); return their names.

    Namespaced on purpose: hypothesis auto-loads a profile named ``ci`` when it detects a CI
    environment, so a plugin registering ``ci`` would silently change every downstream
    project's CI settings.
    """
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:  # hypothesis is a test extra; the plugin must load without it
        return ()
    settings.register_profile("eagle3-dev", max_examples=25, deadline=None)
    settings.register_profile(
        "eagle3-ci",
        max_examples=8,
        deadline=None,
        derandomize=True,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(
        "eagle3-gpu",
        max_examples=4,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    return ("eagle3-dev", "eagle3-ci", "eagle3-gpu")


PROFILES = ("eagle3-dev", "eagle3-ci", "eagle3-gpu")


# -- options and markers -----------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "eagle3_configs",
        type="linelist",
        default=[],
        help="eagle3-contracts: globs (relative to rootdir) of drafter config.json files to "
        "check, or Hub ids org/name[@revision] (HF cache first)",
    )
    parser.addini(
        "eagle3_serve_with",
        type="args",
        default=[],
        help="eagle3-contracts: serving systems to check each drafter config against "
        "(registry names or framework==version, e.g. sglang==0.5.23 vllm)",
    )
    parser.addini(
        "eagle3_trained_with",
        type="string",
        default="",
        help="eagle3-contracts: the system the drafters were trained with (e.g. specforge)",
    )
    parser.addini(
        "eagle3_target",
        type="string",
        default="",
        help="eagle3-contracts: target config.json (relative to rootdir) or a Hub id "
        "org/name[@revision] (HF cache first); default: a target.json next to each drafter config",
    )


@pytest.hookimpl(tryfirst=True)  # before a conftest loads one of the profiles
def pytest_configure(config: pytest.Config) -> None:
    register_hypothesis_profiles()
    config.addinivalue_line(
        "markers",
        f"{GPU_MARKER}: needs a CUDA device; skipped with the reason when none is available",
    )
    _refuse_unknown_options(config)
    config.stash[_CONFIGS] = _resolve_config_globs(config)
    _check_system_names(config)


_CONFIGS = pytest.StashKey[frozenset[Path]]()
_HUB_DRAFTS = pytest.StashKey[tuple[tuple[str, Path], ...]]()
_NAMES = pytest.StashKey[dict[tuple[str, str], "SystemName"]]()
"""(option, name as configured) -> the name typed, parsed once per session: what each item
hands ``check_drafter`` (``conventions.SystemName``)."""


def _hub_draft(config: pytest.Config, pattern: str) -> bool:
    """An ``eagle3_configs`` entry naming a Hub id (no file under the rootdir has its name):
    resolved now through the HF cache (then the network unless offline), its ``config.json``
    kept for collection; a miss is a usage error naming the id and what was tried."""
    from eagle3_contracts.config.readers import config_file, parse_hub_id
    from eagle3_contracts.errors import ConfigError

    try:
        hub = parse_hub_id(pattern)
        if hub is None or (config.rootpath / pattern).exists():
            return False
        path, _ = config_file(hub, what="draft")
    except ConfigError as exc:
        raise pytest.UsageError(f"eagle3_configs entry {pattern!r}: {exc}") from None
    config.stash[_HUB_DRAFTS] = (*config.stash.get(_HUB_DRAFTS, ()), (str(hub), path))
    return True


OPTION_PREFIX = "eagle3_"
OPTIONS = ("eagle3_configs", "eagle3_serve_with", "eagle3_trained_with", "eagle3_target")


def _refuse_unknown_options(config: pytest.Config) -> None:
    """A usage error for an ``eagle3_*`` ini key no plugin defines: a misspelt option would
    otherwise be a green run that checked nothing (pytest only warns about unknown keys)."""
    for key in _ini_keys(config):
        if not key.startswith(OPTION_PREFIX):
            continue
        try:
            config.getini(key)  # defined by this plugin, the goldens plugin or a conftest
            continue
        except ValueError:
            pass
        from difflib import get_close_matches

        near = get_close_matches(key, OPTIONS, n=1)
        hint = f"did you mean {near[0]}?" if near else f"known: {', '.join(OPTIONS)}"
        raise pytest.UsageError(f"ini option {key!r} is not an eagle3-contracts option; {hint}")


def _ini_keys(config: pytest.Config) -> list[str]:
    """The keys the ini file sets: ``config._inicfg`` on pytest >= 9 (where ``inicfg`` is
    deprecated and ``getini`` cannot list keys), ``config.inicfg`` before."""
    raw = vars(config).get("_inicfg")
    return sorted(raw if raw is not None else config.inicfg)


def _check_system_names(config: pytest.Config) -> None:
    """``eagle3_serve_with`` / ``eagle3_trained_with`` name systems ``check`` knows (and a
    trainer release never serves): one usage error for the session for one it does not (with
    the closest known names), before anything is collected."""
    from eagle3_contracts.config.check import check_system_name
    from eagle3_contracts.errors import ContractError

    named = [("eagle3_serve_with", s, True) for s in serve_with(config)]
    trained = config.getini("eagle3_trained_with").strip()
    named += [("eagle3_trained_with", trained, False)] if trained else []
    typed = {}
    for option, name, serving in named:
        try:
            resolved = name
            if serving and "installed" in name.lower():  # the engine in this environment:
                from eagle3_contracts.probe.installed import resolve_names

                resolved = resolve_names([name])[0][0]  # found (and probed) once, here
            typed[option, name] = check_system_name(resolved, serving=serving)
        except ContractError as exc:
            raise pytest.UsageError(f"{option} {name!r}: {exc}") from None
    config.stash[_NAMES] = typed


def serve_with(config: pytest.Config) -> list[str]:
    """``eagle3_serve_with`` split as ``--serve-with`` is (``conventions.lists.split_names``):
    ``sglang==0.5.23, vllm`` and ``sglang==0.5.23 vllm`` name the same two systems."""
    from eagle3_contracts.conventions.lists import split_names

    return split_names(config.getini("eagle3_serve_with"))


def config_patterns(config: pytest.Config) -> list[str]:
    """``eagle3_configs``: one glob or Hub id per line, or several on a line separated by
    commas (paths may hold spaces, so only commas split a line)."""
    lines = config.getini("eagle3_configs")
    return [part.strip() for line in lines for part in line.split(",") if part.strip()]


def _resolve_config_globs(config: pytest.Config) -> frozenset[Path]:
    """The drafter configs ``eagle3_configs`` names; a usage error for a glob that names none,
    or only files this run will not collect."""
    root = config.rootpath
    default_run = config.args_source is not pytest.Config.ArgsSource.ARGS
    roots = [Path(a.split("::")[0]).resolve() for a in config.args]
    found: set[Path] = set()
    for pattern in config_patterns(config):
        if not pattern or _hub_draft(config, pattern):
            continue
        try:
            matches = sorted(p.resolve() for p in root.glob(pattern) if p.is_file())
        except (ValueError, NotImplementedError) as exc:
            raise pytest.UsageError(
                f"eagle3_configs pattern {pattern!r} is not a glob relative to the rootdir "
                f"{root}: {exc}"
            ) from None
        if not matches:
            raise pytest.UsageError(
                f"eagle3_configs pattern {pattern!r} matches no file under the rootdir {root}"
            )
        if default_run and not any(m.is_relative_to(r) for m in matches for r in roots):
            shown = ", ".join(str(r) for r in roots)
            raise pytest.UsageError(
                f"eagle3_configs pattern {pattern!r} matches {len(matches)} file(s) under "
                f"{root} (e.g. {_relative(matches[0], root)}), none inside the collected paths "
                f"({shown}): add their folder to testpaths"
            )
        found.update(matches)
    return frozenset(found)


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it, else in full (a glob with ``..`` can match
    files outside the rootdir)."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker(GPU_MARKER) is None:
        return (yield)
    if not _cuda_available():
        pytest.skip(GPU_REASON)
    if "CUBLAS_WORKSPACE_CONFIG" not in os.environ:  # ours to set, for this test only
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = CUBLAS_WORKSPACE
        item.stash[_SET_CUBLAS] = True
    return (yield)


_SET_CUBLAS = pytest.StashKey[bool]()


def pytest_runtest_teardown(item: pytest.Item) -> None:
    if item.stash.get(_SET_CUBLAS, False):
        os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


# -- drafter configs as test items --------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    configs = parent.config.stash.get(_CONFIGS, frozenset())
    if configs and file_path.resolve() in configs:
        return DrafterConfigFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Hub-id drafters (``eagle3_configs = org/name``) live in the HF cache, outside every
    collected path: their items are added here, named by the id."""
    for hub, path in config.stash.get(_HUB_DRAFTS, ()):
        node = DrafterConfigFile.from_parent(session, path=path, nodeid=f"hub:{hub}")
        node.hub_id = hub
        items.extend(node.collect())


class DrafterConfigFile(pytest.File):
    """One drafter config: one item per serving system in ``eagle3_serve_with``."""

    hub_id: str | None = None  # the Hub id it was resolved from (HF cache), if any

    def collect(self) -> Iterator[pytest.Item]:
        systems = serve_with(self.config)
        if not systems:
            yield DrafterServeItem.from_parent(self, name="serve[default engines]", system=None)
            return
        for system in systems:
            yield DrafterServeItem.from_parent(self, name=f"serve[{system}]", system=system)


class DrafterCheckFailed(Exception):
    """The drafter would be fed other layers when served than when trained."""


class DrafterServeItem(pytest.Item):
    """Check one drafter config against one serving system with ``check_drafter``."""

    def __init__(self, *, system: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.system = system

    def _target(self) -> Path | str | None:
        from eagle3_contracts.config.readers import parse_hub_id

        configured = str(self.config.getini("eagle3_target")).strip()
        local = self.config.rootpath / configured
        if configured and not local.exists() and parse_hub_id(configured) is not None:
            return configured  # a Hub id: check_drafter resolves it (HF cache first)
        if configured:
            return local
        sibling = self.path.parent / "target.json"
        return sibling if sibling.exists() else None

    def runtest(self) -> None:
        import eagle3_contracts  # its check_drafter also takes <engine>==installed

        target = self._target()
        if target is None:
            raise DrafterCheckFailed(
                f"{self._shown()}: no target config: set eagle3_target in the pytest ini or "
                f"put the target's config.json next to the drafter as target.json"
            )
        trained = self.config.getini("eagle3_trained_with").strip() or None
        typed = self.config.stash.get(_NAMES, {})  # parsed once, when the session started
        report = eagle3_contracts.check_drafter(
            str(self.path),
            target=str(target),
            trained_with=trained and typed.get(("eagle3_trained_with", trained), trained),
            serve_with=()
            if self.system is None
            else (typed.get(("eagle3_serve_with", self.system), self.system),),
        )
        if not report.ok:
            # the first line is what `pytest -r` shows: the verdict and the fix
            lines = report.failure_lines(with_system=self.system is None)
            summary = f"{self.name}: " + "; ".join(lines)
            raise DrafterCheckFailed(f"{summary}\n\n{report.render_text()}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, DrafterCheckFailed):
            return str(excinfo.value)
        from eagle3_contracts.errors import Eagle3ContractsError

        if isinstance(excinfo.value, Eagle3ContractsError):
            return f"{type(excinfo.value).__name__}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        system = self.system or "default engines"
        return self.path, None, f"eagle3 drafter config {self._shown()} served with {system}"

    def _shown(self) -> str:
        """The config's path relative to the rootdir (several drafters share one file name),
        or the Hub id it came from."""
        hub = getattr(self.parent, "hub_id", None)
        if hub:
            return str(hub)
        return _relative(self.path, self.config.rootpath)


# -- fixtures ------------------------------------------------------------------------------
@pytest.fixture
def eagle3_tiny_target() -> Any:
    """A 6-layer, 32-wide synthetic decoder (residual style, seed 0), eval mode."""
    from eagle3_contracts.testing.synthetic import SyntheticConfig, build_synthetic

    return build_synthetic(SyntheticConfig(**TINY_TARGET))


@pytest.fixture
def eagle3_contract() -> CaptureContract:
    """``CaptureContract((1, 3, 5), 6, 32)``: fits ``eagle3_tiny_target`` (5 = last, pre-norm)."""
    from eagle3_contracts.contract import CaptureContract

    return CaptureContract(TINY_CONTRACT_IDS, TINY_TARGET["num_layers"], TINY_TARGET["hidden_size"])


@pytest.fixture
def eagle3_input_ids() -> Any:
    """2 x 12 seeded random tokens for ``eagle3_tiny_target``."""
    import torch

    g = torch.Generator().manual_seed(0)
    return torch.randint(0, TINY_TARGET["vocab_size"], (2, 12), generator=g)


@pytest.fixture
def eagle3_hf_target() -> Callable[..., Any]:
    """Factory ``(arch, **config_overrides) -> tiny random HF model`` (skips without transformers)."""
    pytest.importorskip("transformers")
    from eagle3_contracts.testing.hf_models import build_tiny_hf, tiny_hf_config

    def make(arch: str, *, seed: int = 0, **overrides: Any) -> Any:
        return build_tiny_hf(tiny_hf_config(arch, **overrides), seed=seed)

    return make


@pytest.fixture
def eagle3_verify(eagle3_tiny_target: Any, eagle3_contract: CaptureContract) -> Callable[..., Any]:
    """``verify(capture_fn, model=tiny target, contract=tiny contract, input_ids=None)``.

    A failure is the ``ContractViolation`` alone (still catchable with ``pytest.raises``): its
    traceback starts at the caller's line, so pytest prints the test and the message, not the
    verifier's source."""
    from eagle3_contracts.capture.verify import verify_capture
    from eagle3_contracts.errors import ContractViolation

    def verify(
        capture_fn: Callable[..., Any],
        model: Any = None,
        contract: CaptureContract | None = None,
        input_ids: Any = None,
    ) -> Any:
        __tracebackhide__ = True
        try:
            return verify_capture(
                capture_fn,
                eagle3_tiny_target if model is None else model,
                eagle3_contract if contract is None else contract,
                input_ids,
            )
        except ContractViolation as exc:
            raise exc.with_traceback(None) from None

    return verify
