"""Edges of the Hub resolver in ``config.readers``: what each step returns or refuses.

A refusal is one ``ConfigError`` whose ``field`` (the CLI reports it), ``source`` and one-line
message are pinned here. The network is never used: ``huggingface_hub.hf_hub_download`` and
``huggingface_hub.HfApi`` are replaced by fakes that record their calls and return or raise.
"""

from __future__ import annotations

from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub import constants, try_to_load_from_cache
from huggingface_hub.utils import SafetensorsFileMetadata, SafetensorsRepoMetadata, TensorInfo

from eagle3_contracts.config import readers as hub
from eagle3_contracts.errors import ConfigError
from tests.hub._cache import DRAFT, add_repo, config_bytes

COMMIT = "c" * 40
NOT_TRIED = "HF_HUB_OFFLINE is set, so the network was not tried"


def _refusal(err: pytest.ExceptionInfo[ConfigError], field: str) -> str:
    """The refusal's message, after checking what every Hub miss shares: the field it names,
    no source file (a Hub id is no file) and no traceback chained to it."""
    assert err.value.field == field
    assert err.value.source is None
    shown_context = err.value.__context__ is not None and not err.value.__suppress_context__
    assert err.value.__cause__ is None and not shown_context
    text = str(err.value)
    assert "\n" not in text
    return text


# -- parse_hub_id ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [None, 3, b"org/name", Path("org/name"), ["org/name"]])
def test_only_text_can_be_a_hub_id(value: object) -> None:
    """A path object or bytes is a local path the caller built, never a Hub id."""
    assert hub.parse_hub_id(value) is None


@pytest.mark.parametrize(
    "name", ["w.json", "w.safetensors", "w.pt", "w.bin", "w.ckpt", "w.gz", "W.SafeTensors"]
)
def test_a_file_name_is_a_local_path_in_any_case(name: str) -> None:
    """``org/w.pt`` is a missing local file (a clear no-such-file error), not a Hub repo."""
    assert hub.parse_hub_id(f"org/{name}") is None


@pytest.mark.parametrize("text", ["org/gz-tools", "org/json.models", "org/bin"])
def test_a_suffix_inside_a_repo_name_is_still_a_hub_id(text: str) -> None:
    """Only a name that ends like a file is taken for one."""
    assert hub.parse_hub_id(text) == hub.HubId(text)


def test_hub_id_text_and_cache_folder() -> None:
    """``str`` round-trips the id as typed; the folder is huggingface_hub's ``models--org--name``."""
    from huggingface_hub.file_download import repo_folder_name

    assert str(hub.HubId("org/name")) == "org/name"
    assert str(hub.HubId("org/name", "v1")) == "org/name@v1"
    assert hub.HubId("org/name").folder == repo_folder_name(repo_id="org/name", repo_type="model")


# -- cache_dir and offline: the environment as huggingface_hub reads it --------------------------
def _clear_cache_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)


def test_cache_dir_defaults_to_home_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With nothing set, the cache is ``~/.cache/huggingface/hub`` (constants.py:159-169)."""
    _clear_cache_env(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub.cache_dir() == tmp_path / ".cache" / "huggingface" / "hub"


def test_cache_dir_legacy_variable_and_precedence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``HUGGINGFACE_HUB_CACHE`` is read when ``HF_HUB_CACHE`` is unset, and loses to it."""
    _clear_cache_env(monkeypatch)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "legacy"))
    assert hub.cache_dir() == tmp_path / "legacy"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "new"))
    assert hub.cache_dir() == tmp_path / "new"


@pytest.mark.parametrize("key", ["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"])
def test_cache_dir_expands_user_and_variables(
    key: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``~`` and ``$VAR`` in the variables are expanded, as the library does."""
    _clear_cache_env(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("E3C_ROOT", str(tmp_path / "var"))
    tail = ("hub",) if key == "HF_HOME" else ()
    monkeypatch.setenv(key, "~/tilde")
    assert hub.cache_dir() == Path(tmp_path, "tilde", *tail)
    monkeypatch.setenv(key, "$E3C_ROOT/dollar")
    assert hub.cache_dir() == Path(tmp_path, "var", "dollar", *tail)


@pytest.mark.parametrize(
    ("hf_hub_offline", "transformers_offline", "expected"),
    [
        ("1", None, True),
        ("true", None, True),
        ("Yes", None, True),
        ("on", None, True),
        ("TRUE", None, True),
        ("0", None, False),
        ("false", None, False),
        ("2", None, False),
        ("", None, False),
        (None, None, False),
        (None, "1", True),
        (None, "yes", True),
        (None, "0", False),
        ("", "1", True),  # empty counts as unset: the library's `or`
        ("0", "1", False),  # a set HF_HUB_OFFLINE wins over TRANSFORMERS_OFFLINE
    ],
)
def test_offline_reads_the_variables_like_the_library(
    hf_hub_offline: str | None,
    transformers_offline: str | None,
    expected: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same answer as huggingface_hub's own ``HF_HUB_OFFLINE`` (constants.py:194, ``_is_true``)."""
    for key, value in (
        ("HF_HUB_OFFLINE", hf_hub_offline),
        ("TRANSFORMERS_OFFLINE", transformers_offline),
    ):
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    assert hub.offline() is expected
    assert constants._is_true(hf_hub_offline or transformers_offline) is expected


# -- the cache layout ----------------------------------------------------------------------------
def test_a_ref_is_read_without_its_newline(cache: Path) -> None:
    """A ref file written with a trailing newline still names its snapshot."""
    snapshot = add_repo(cache, "org/draft", {"config.json": b"{}"}, commit=COMMIT)
    (cache / "models--org--draft" / "refs" / "main").write_text(COMMIT + "\n")
    assert hub.cached_snapshot(hub.HubId("org/draft")) == snapshot


def test_no_revision_reads_refs_main(cache: Path) -> None:
    """Without ``@revision`` the ``main`` ref decides, not another branch's."""
    main = add_repo(cache, "org/draft", {"config.json": b"{}"}, commit=COMMIT)
    add_repo(cache, "org/draft", {"config.json": b"[]"}, commit="d" * 40, branch="dev")
    assert hub.cached_snapshot(hub.HubId("org/draft")) == main
    assert hub.cached_snapshot(hub.HubId("org/draft", "dev")) == cache.joinpath(
        "models--org--draft", "snapshots", "d" * 40
    )


def test_a_commit_without_a_ref_is_its_own_snapshot(cache: Path) -> None:
    """``org/name@<commit>`` finds ``snapshots/<commit>`` with no ref naming it."""
    snapshot = add_repo(cache, "org/draft", {"config.json": b"{}"}, commit=COMMIT)
    (cache / "models--org--draft" / "refs" / "main").unlink()
    assert hub.cached_snapshot(hub.HubId("org/draft", COMMIT)) == snapshot
    assert hub.cached_snapshot(hub.HubId("org/draft")) is None


def test_a_ref_to_a_missing_snapshot_is_a_miss(cache: Path) -> None:
    """A ref whose snapshot folder was deleted (``huggingface-cli delete-cache``) is no hit."""
    add_repo(cache, "org/draft", {"config.json": b"{}"}, commit=COMMIT)
    (cache / "models--org--draft" / "refs" / "v2").write_text("e" * 40)
    assert hub.cached_snapshot(hub.HubId("org/draft", "v2")) is None
    assert hub.cached_snapshot(hub.HubId("org/draft", "v9")) is None
    assert hub.cached_snapshot(hub.HubId("org/other")) is None


def test_a_file_missing_from_its_snapshot_is_a_miss(cache: Path) -> None:
    """The snapshot exists but lacks the file, or has a folder by that name, or the file is
    recorded in ``.no_exist`` (known absent): no path, as ``try_to_load_from_cache`` agrees."""
    snapshot = add_repo(cache, "org/draft", {"sub/config.json": b"{}"}, commit=COMMIT)
    no_exist = cache / "models--org--draft" / ".no_exist" / COMMIT
    no_exist.mkdir(parents=True)
    (no_exist / "config.json").touch()
    repo = hub.HubId("org/draft")
    assert hub.cached_file(repo, "sub/config.json") == snapshot / "sub" / "config.json"
    assert hub.cached_file(repo, "sub") is None
    assert hub.cached_file(repo, "tokenizer.json") is None
    assert hub.cached_file(repo, "config.json") is None
    theirs = try_to_load_from_cache("org/draft", "config.json", cache_dir=cache)
    assert theirs is not None and not isinstance(theirs, str)  # the library's "known absent"


# -- cached_weights ------------------------------------------------------------------------------
def _index(*shards: str) -> bytes:
    return config_bytes({"metadata": {}, "weight_map": {f"t{i}": s for i, s in enumerate(shards)}})


def test_single_file_weights(cache: Path) -> None:
    """Without an index, any ``*.safetensors`` makes the snapshot the weights folder."""
    snapshot = add_repo(cache, "org/a", {"config.json": b"{}", "model.safetensors": b"x"})
    add_repo(cache, "org/b", {"config.json": b"{}", "pytorch_model.bin": b"x"})
    assert hub.cached_weights(hub.HubId("org/a")) == snapshot
    assert hub.cached_weights(hub.HubId("org/b")) is None
    assert hub.cached_weights(hub.HubId("org/none")) is None


def test_sharded_weights_need_every_shard(cache: Path) -> None:
    """Every shard the index names must be cached; one missing shard is a miss."""
    a, b = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    whole = add_repo(cache, "org/whole", {hub.WEIGHTS_INDEX: _index(a, b, a), a: b"x", b: b"y"})
    add_repo(cache, "org/part", {hub.WEIGHTS_INDEX: _index(a, b), a: b"x"})
    assert hub.cached_weights(hub.HubId("org/whole")) == whole
    assert hub.cached_weights(hub.HubId("org/part")) is None


@pytest.mark.parametrize(
    "index",
    [
        config_bytes({"weight_map": {}}),
        config_bytes({"metadata": {}}),
        config_bytes({"weight_map": None}),
        b'["model.safetensors"]',
    ],
)
def test_an_index_naming_no_shard_is_a_miss(cache: Path, index: bytes) -> None:
    """An index that names no shard proves nothing, even beside a ``*.safetensors`` file."""
    add_repo(cache, "org/draft", {hub.WEIGHTS_INDEX: index, "model.safetensors": b"x"})
    assert hub.cached_weights(hub.HubId("org/draft")) is None


def test_a_broken_index_names_its_file(cache: Path) -> None:
    """A cached index that is no JSON is refused with its path and what it is."""
    snapshot = add_repo(cache, "org/draft", {hub.WEIGHTS_INDEX: b"{oops", "model.safetensors": b""})
    with pytest.raises(ConfigError) as err:
        hub.cached_weights(hub.HubId("org/draft"))
    assert err.value.source == str(snapshot / hub.WEIGHTS_INDEX)
    assert str(err.value).startswith(f"{snapshot / hub.WEIGHTS_INDEX}: the safetensors index is")
    assert "not valid JSON" in str(err.value)


# -- the network, stubbed ------------------------------------------------------------------------
class FakeDownload:
    """``hf_hub_download`` that records its calls and writes the file into the cache, or raises."""

    def __init__(self, cache: Path, error: Exception | None = None) -> None:
        self.cache, self.error = cache, error
        self.calls: list[tuple[str, str, str | None, str]] = []

    def __call__(
        self, repo_id: str, filename: str, *, revision: str | None, cache_dir: str, **_: object
    ) -> str:
        self.calls.append((repo_id, filename, revision, cache_dir))
        if self.error is not None:
            raise self.error
        snapshot = add_repo(
            Path(cache_dir),
            repo_id,
            {filename: config_bytes(DRAFT)},
            commit="f" * 40,
            branch=revision or "main",
        )
        return str(snapshot / filename)


class FakeApi:
    """``HfApi`` whose ``get_safetensors_metadata`` records its calls and returns ``meta`` or
    raises ``error``."""

    calls: list[tuple[str, str | None]]
    meta: SafetensorsRepoMetadata | None = None
    error: Exception | None = None

    def get_safetensors_metadata(
        self, repo_id: str, *, revision: str | None, timeout: float
    ) -> SafetensorsRepoMetadata:
        assert timeout == hub.HUB_TIMEOUT
        self.calls.append((repo_id, revision))
        if self.error is not None:
            raise self.error
        assert self.meta is not None
        return self.meta


@pytest.fixture
def online(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The empty ``cache``, with the network allowed (and stubbed by each test)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    return cache


def _stub_download(monkeypatch: pytest.MonkeyPatch, fake: FakeDownload) -> FakeDownload:
    """``hf_hub_download`` replaced by ``fake``, and the one metadata request before it answered
    (the file is there)."""
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url, **_: None)
    return fake


def _stub_api(
    monkeypatch: pytest.MonkeyPatch,
    meta: SafetensorsRepoMetadata | None = None,
    error: Exception | None = None,
) -> type[FakeApi]:
    api = type("Api", (FakeApi,), {"calls": [], "meta": meta, "error": error})
    monkeypatch.setattr(huggingface_hub, "HfApi", api)
    return api


# -- config_file and resolve_model ---------------------------------------------------------------
def test_a_cached_config_is_never_downloaded(online: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cache first, even online: a hit calls nothing in huggingface_hub."""
    snapshot = add_repo(online, "org/draft", {"config.json": config_bytes(DRAFT)})
    fake = _stub_download(monkeypatch, FakeDownload(online))
    assert hub.config_file(hub.HubId("org/draft")) == (snapshot / "config.json", "HF cache")
    assert hub.resolve_model("org/draft", what="draft") == (
        str(snapshot),
        f"draft org/draft: HF cache {snapshot}",
    )
    assert fake.calls == []


@pytest.mark.parametrize("revision", [None, "v1"])
def test_a_missing_config_is_downloaded_into_the_cache(
    online: Path, monkeypatch: pytest.MonkeyPatch, revision: str | None
) -> None:
    """A miss online downloads exactly ``config.json`` at the revision asked for, into the cache
    this tool reads, and says so."""
    fake = _stub_download(monkeypatch, FakeDownload(online))
    repo = hub.HubId("org/draft", revision)
    path, how = hub.config_file(repo)
    assert fake.calls == [("org/draft", "config.json", revision, str(online))]
    assert how == "downloaded"
    assert path == online / "models--org--draft" / "snapshots" / ("f" * 40) / "config.json"
    text = str(repo)
    assert hub.resolve_model(text, what="target") == (
        str(path.parent),
        f"target {text}: HF cache {path.parent}",
    )


def test_resolve_model_reports_a_download(online: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The note says the config was downloaded, and where it now lies."""
    _stub_download(monkeypatch, FakeDownload(online))
    folder, how = hub.resolve_model("org/draft@v1", what="draft")
    assert folder == str(online / "models--org--draft" / "snapshots" / ("f" * 40))
    assert how == f"draft org/draft@v1: downloaded {folder}"


def test_resolve_model_leaves_local_paths_alone(cache: Path, tmp_path: Path) -> None:
    """A local path (existing or not) is returned as given, with no note."""
    assert hub.resolve_model(str(tmp_path)) == (str(tmp_path), None)
    assert hub.resolve_model("drafts/config.json", what="draft") == ("drafts/config.json", None)


def test_offline_config_miss(cache: Path) -> None:
    """Offline, a miss names the id, the cache searched and that the network was not tried; its
    field is what was asked for (``model`` unless the caller says)."""
    with pytest.raises(ConfigError) as err:
        hub.config_file(hub.HubId("org/missing", "v1"))
    text = _refusal(err, "model")
    assert (
        text
        == f"model org/missing@v1: no such local path, and not in the HF cache ({cache}); {NOT_TRIED}"
    )


def test_resolve_model_names_a_model_by_default(cache: Path) -> None:
    """Without ``what``, a miss is about the ``model`` (field and message)."""
    with pytest.raises(ConfigError) as err:
        hub.resolve_model("org/missing")
    assert _refusal(err, "model").startswith(
        "model org/missing: no such local path, and not in the HF cache"
    )


def test_a_refusal_field_is_what_the_caller_named(cache: Path) -> None:
    """``what`` becomes the field with spaces as underscores (a JSON-path-like name)."""
    with pytest.raises(ConfigError) as err:
        hub.resolve_model("org/missing", what="draft model")
    text = _refusal(err, "draft_model")
    assert text.startswith("draft model org/missing: no such local path, and not in the HF cache")


def test_online_config_miss_says_why_in_one_line(
    online: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library's error (any type) becomes one line: its class and its first 240 characters."""
    fake = _stub_download(monkeypatch, FakeDownload(online, OSError("connection\n  refused")))
    with pytest.raises(ConfigError) as err:
        hub.resolve_model("org/missing@v1", what="target")
    text = _refusal(err, "target")
    assert text == (
        f"target org/missing@v1: no such local path, and not in the HF cache ({online}); "
        "the Hub was tried: OSError: connection refused"
    )
    assert fake.calls == [("org/missing", "config.json", "v1", str(online))]


def test_offline_never_calls_the_library(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``HF_HUB_OFFLINE=1``: neither the download nor the metadata call runs."""
    fake = _stub_download(monkeypatch, FakeDownload(cache))
    api = _stub_api(monkeypatch, error=OSError("no"))
    for call in (lambda: hub.resolve_model("org/x"), lambda: hub.resolve_weights("org/x")):
        with pytest.raises(ConfigError, match=NOT_TRIED):
            call()
    assert fake.calls == [] and api.calls == []


# -- resolve_weights -----------------------------------------------------------------------------
def _meta() -> SafetensorsRepoMetadata:
    """Two shards' headers, as ``get_safetensors_metadata`` returns them."""

    def info(dtype: str, *shape: int) -> TensorInfo:
        return TensorInfo(dtype=dtype, shape=list(shape), data_offsets=(0, 0))  # type: ignore[arg-type]

    files = {
        "model-1.safetensors": SafetensorsFileMetadata(
            metadata={}, tensors={"fc.weight": info("BF16", 16, 48), "d2t": info("I64", 8)}
        ),
        "model-2.safetensors": SafetensorsFileMetadata(
            metadata={}, tensors={"t2d": info("BOOL", 64)}
        ),
    }
    weight_map = {n: f for f, m in files.items() for n in m.tensors}
    return SafetensorsRepoMetadata(
        metadata=None, sharded=True, weight_map=weight_map, files_metadata=files
    )


def test_resolve_weights_local_and_cached(cache: Path, tmp_path: Path) -> None:
    """A local path is given back untouched; a cached id is its snapshot folder."""
    assert hub.resolve_weights(str(tmp_path)) == (str(tmp_path), None)
    snapshot = add_repo(cache, "org/draft", {"model.safetensors": b"x"}, commit=COMMIT)
    assert hub.resolve_weights(f"org/draft@{COMMIT}") == (
        str(snapshot),
        f"weights org/draft@{COMMIT}: HF cache {snapshot}",
    )


def test_offline_weights_miss(cache: Path) -> None:
    """Offline, uncached weights are refused with field ``weights``."""
    add_repo(cache, "org/draft", {"config.json": b"{}"})
    with pytest.raises(ConfigError) as err:
        hub.resolve_weights("org/draft@v1")
    text = _refusal(err, "weights")
    assert (
        text
        == f"weights org/draft@v1: no such local path, and not in the HF cache ({cache}); {NOT_TRIED}"
    )


def test_uncached_weights_are_read_as_headers(
    online: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Online, uncached weights become the headers of every shard (name, file, dtype, shape),
    read at the revision asked for; no weights are downloaded."""
    api = _stub_api(monkeypatch, meta=_meta())
    tensors, how = hub.resolve_weights("org/draft@v1")
    assert api.calls == [("org/draft", "v1")]
    assert tensors == {
        "fc.weight": hub.RemoteTensor("org/draft@v1:model-1.safetensors", "BF16", (16, 48)),
        "d2t": hub.RemoteTensor("org/draft@v1:model-1.safetensors", "I64", (8,)),
        "t2d": hub.RemoteTensor("org/draft@v1:model-2.safetensors", "BOOL", (64,)),
    }
    assert how == "weights org/draft@v1: safetensors headers from the Hub (no weights downloaded)"
    main, _ = hub.resolve_weights("org/draft")
    assert api.calls[-1] == ("org/draft", None)
    assert isinstance(main, dict) and main["t2d"].file == "org/draft:model-2.safetensors"


def test_cached_weights_skip_the_network(online: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cache first, even online: cached weights never reach ``HfApi``."""
    add_repo(online, "org/draft", {"model.safetensors": b"x"})
    api = _stub_api(monkeypatch, error=OSError("no"))
    assert hub.resolve_weights("org/draft")[1] is not None
    assert api.calls == []


def test_online_weights_miss_says_why_in_one_line(
    online: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repo with no safetensors (the library raises) is one line with field ``weights``."""
    api = _stub_api(monkeypatch, error=ValueError("'org/bin' is not a safetensors repo.\n"))
    with pytest.raises(ConfigError) as err:
        hub.resolve_weights("org/bin@v2")
    text = _refusal(err, "weights")
    assert text == (
        f"weights org/bin@v2: no such local path, and not in the HF cache ({online}); "
        "the Hub was tried: ValueError: 'org/bin' is not a safetensors repo."
    )
    assert api.calls == [("org/bin", "v2")]


# -- _network_error -------------------------------------------------------------------------------
class HubDown(ConnectionError):
    """A library error subclass: its own name is reported, not a base class's."""


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (OSError("a\n  b\tc "), "OSError: a b c"),
        (HubDown("503 Service Unavailable"), "HubDown: 503 Service Unavailable"),
        (ValueError("x" * 300), "ValueError: " + "x" * 240),
        (RuntimeError(), "RuntimeError"),
        (RuntimeError(" \n\t"), "RuntimeError"),
    ],
)
def test_network_error_is_one_bounded_line(exc: Exception, line: str) -> None:
    """The class name, then the message's words on one line, cut at 240 characters; a bare
    class name when the message is empty."""
    assert hub._network_error(exc) == line


@pytest.mark.parametrize("terminal", [True, False])
def test_a_miss_asks_once_with_a_progress_line_on_a_terminal(
    online: Path, monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    """The one request is said before it is made when a person watches stderr; a pipe gets
    only the result. A request that fails is never followed by the download's retries."""
    import io

    class Stderr(io.StringIO):
        def isatty(self) -> bool:
            return terminal

    asked: list[tuple[str, float]] = []

    def unreachable(url: str, *, timeout: float, **_: object) -> None:
        asked.append((url, timeout))
        raise OSError("network is unreachable")

    fake = _stub_download(monkeypatch, FakeDownload(online))
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", unreachable)
    err = Stderr()
    monkeypatch.setattr("sys.stderr", err)
    with pytest.raises(ConfigError, match="the Hub was tried: OSError: network is unreachable"):
        hub.config_file(hub.HubId("org/missing"), what="draft")
    assert len(asked) == 1 and asked[0][1] == hub.HUB_TIMEOUT and fake.calls == []
    said = err.getvalue().splitlines()
    assert said == (
        [
            "draft org/missing: not in the HF cache; asking the Hugging Face Hub (one try, 10 s "
            "timeout) ..."
        ]
        if terminal
        else []
    )
