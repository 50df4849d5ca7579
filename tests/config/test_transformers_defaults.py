"""Where a multimodal target's missing depth, width and vocab come from: the defaults of its
``model_type``'s transformers config class, read from the installed transformers source (both
the transformers 5 class-level layout and the transformers 4 ``__init__`` keyword layout), and
how ``read_target_config`` reports each default it applied in ``TargetConfig.filled``.

The fake transformers trees below are written under ``tmp_path`` and found through a patched
``importlib.util.find_spec``: no network, no import of transformers."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from eagle3_contracts import ConfigError
from eagle3_contracts.config.readers import read_target_config, transformers_defaults

# transformers 5: defaults are class-level (annotated) constants of a dataclass-like config.
T5_LAYOUT = '''
from ...configuration_utils import PreTrainedConfig


class MyModelVisionConfig(PreTrainedConfig):
    model_type = "my-model_vision"
    hidden_size: int = 1
    num_hidden_layers: int = 1


class MyModelConfig(PreTrainedConfig):
    r"""The text model \u2014 d\u00e9fauts (non-ASCII on purpose)."""

    model_type = "my-model"
    sub_configs = {"vision_config": MyModelVisionConfig}
    base_model_tp_plan = {"layers.*.mlp": "colwise"}
    attribute_map = {"n_layer": "num_hidden_layers"}
    alias = other = "ignored"
    vocab_size: int = 1000
    hidden_size: int = 64
    intermediate_size: int = 4 * 64
    num_hidden_layers: int = 3
    head_dim: int
    hidden_act = "silu"

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
'''

# transformers 4: defaults are keyword defaults of __init__ (a non-constant one is not read).
T4_LAYOUT = """
from ...configuration_utils import PretrainedConfig


class OldConfig(PretrainedConfig):
    model_type = "old"
    keys_to_ignore_at_inference = ["past_key_values"]

    @property
    def helper(self):
        return 1

    def __init__(
        self,
        vocab_size=500,
        hidden_size=4 * 8,
        num_hidden_layers=6,
        hidden_act="gelu",
        *args,
        pad_token_id=None,
        **kwargs,
    ):
        super().__init__(pad_token_id=pad_token_id, **kwargs)
"""

# transformers 4 with every wanted default in __init__.
T4_ALL = """
class AllConfig:
    model_type = "all"

    def __init__(self, hidden_size=16, num_hidden_layers=2, vocab_size=99):
        pass
"""

T5_DEFAULTS = {
    "vocab_size": 1000,
    "hidden_size": 64,
    "num_hidden_layers": 3,
    "__class__": "transformers MyModelConfig",
}


def fake_transformers(monkeypatch: pytest.MonkeyPatch, root: Path, **files: str) -> Path:
    """A transformers package at ``root`` whose ``models/<name>/configuration_<name>.py``
    hold ``files[name]``; ``importlib.util.find_spec("transformers")`` finds it."""
    package = root / "transformers"
    for name, text in files.items():
        folder = package / "models" / name
        folder.mkdir(parents=True)
        (folder / f"configuration_{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    package.mkdir(parents=True, exist_ok=True)
    spec = SimpleNamespace(name="transformers", submodule_search_locations=[str(package)])
    without_transformers(monkeypatch, spec)
    return package


def without_transformers(monkeypatch: pytest.MonkeyPatch, spec: object = None) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object, **kwargs: object) -> object:
        return spec if name == "transformers" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


# -- transformers_defaults ---------------------------------------------------------------


def test_transformers_5_class_constants(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The class whose ``model_type`` matches (not the vision sub-config before it) gives its
    constant depth, width and vocab, nothing else; '-' in a model_type is '_' in the path."""
    fake_transformers(monkeypatch, tmp_path, my_model=T5_LAYOUT)
    assert transformers_defaults("my-model") == T5_DEFAULTS


TEXT_SUBCONFIG = """
class ThingTextConfig:
    model_type = "thing_text"
    hidden_size: int = 8
    num_hidden_layers: int = 5


class ThingConfig:
    model_type = "thing"
    sub_configs = {"text_config": ThingTextConfig}
"""


def test_a_text_sub_config_is_found_in_its_models_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``thing_text`` (no folder of its own) is read from ``models/thing`` (as Gemma3TextConfig
    lives in ``models/gemma3``); a folder of its own is preferred when it exists."""
    fake_transformers(monkeypatch, tmp_path, thing=TEXT_SUBCONFIG)
    assert transformers_defaults("thing_text") == {
        "hidden_size": 8,
        "num_hidden_layers": 5,
        "__class__": "transformers ThingTextConfig",
    }
    assert transformers_defaults("other_text") is None


def test_a_text_type_with_its_own_folder_reads_that_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    own = TEXT_SUBCONFIG.replace("num_hidden_layers: int = 5", "num_hidden_layers: int = 7")
    fake_transformers(monkeypatch, tmp_path, thing=TEXT_SUBCONFIG, thing_text=own)
    defaults = transformers_defaults("thing_text")
    assert defaults is not None and defaults["num_hidden_layers"] == 7


def test_the_model_type_must_match_exactly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``my_model`` finds the same file as ``my-model`` but no class of that model_type."""
    fake_transformers(monkeypatch, tmp_path, my_model=T5_LAYOUT)
    assert transformers_defaults("my_model") is None


def test_a_dash_in_the_folder_name_is_not_looked_up(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_transformers(monkeypatch, tmp_path, **{"my-model": T5_LAYOUT})
    assert transformers_defaults("my-model") is None


def test_transformers_4_init_keyword_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``__init__``'s constant keyword defaults of the wanted fields are read; a computed
    default (``4 * 8``) and other fields are not; methods before ``__init__`` do not count."""
    fake_transformers(monkeypatch, tmp_path, old=T4_LAYOUT, all=T4_ALL)
    assert transformers_defaults("old") == {
        "vocab_size": 500,
        "num_hidden_layers": 6,
        "__class__": "transformers OldConfig",
    }
    assert transformers_defaults("all") == {
        "vocab_size": 99,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "__class__": "transformers AllConfig",
    }


@pytest.mark.parametrize(
    "text",
    [
        "class Broken(:\n",  # not Python
        "class OtherConfig:\n    model_type = 'other'\n    hidden_size = 8\n",  # no such class
        "x = 1\n",  # no class at all
    ],
    ids=["not Python", "another class", "no class"],
)
def test_no_defaults_from_a_file_without_the_class(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str
) -> None:
    fake_transformers(monkeypatch, tmp_path, mine=text)
    assert transformers_defaults("mine") is None


def test_no_defaults_from_an_undecodable_or_missing_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = fake_transformers(monkeypatch, tmp_path, mine="")
    (package / "models" / "mine" / "configuration_mine.py").write_bytes(b"\xff\xfe\x00 = 1\n")
    assert transformers_defaults("mine") is None
    assert transformers_defaults("absent") is None


def test_the_source_is_read_as_utf8_whatever_the_locale(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """transformers sources hold non-ASCII text; under an ASCII locale (simulated: a
    ``read_text`` without an encoding decodes as ASCII) they are still read."""
    fake_transformers(monkeypatch, tmp_path, my_model=T5_LAYOUT)

    def read_text(self: Path, encoding: str | None = None, errors: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "ascii")

    monkeypatch.setattr(Path, "read_text", read_text)
    assert transformers_defaults("my-model") == T5_DEFAULTS


@pytest.mark.parametrize(
    "spec",
    [
        None,
        SimpleNamespace(submodule_search_locations=[]),
        SimpleNamespace(submodule_search_locations=None),
    ],
    ids=["not installed", "a module", "no locations"],
)
def test_no_defaults_without_a_transformers_package(
    monkeypatch: pytest.MonkeyPatch, spec: object
) -> None:
    without_transformers(monkeypatch, spec)
    assert transformers_defaults("llama") is None


def test_the_installed_transformers_llama() -> None:
    pytest.importorskip("transformers")
    assert transformers_defaults("llama") == {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "__class__": "transformers LlamaConfig",
    }


# -- read_target_config completing a section --------------------------------------------


def test_a_section_is_completed_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_transformers(monkeypatch, tmp_path, my_model=T5_LAYOUT)
    t = read_target_config({"model_type": "wrapper", "text_config": {"model_type": "my-model"}})
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (3, 64, 1000)
    assert (t.section, t.text_model_type) == ("text_config.", "my-model")
    assert t.filled == (
        "text_config.num_hidden_layers = 3 (transformers MyModelConfig default)",
        "text_config.hidden_size = 64 (transformers MyModelConfig default)",
        "text_config.vocab_size = 1000 (transformers MyModelConfig default)",
    )


def test_only_the_missing_fields_are_filled(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A depth under an alias (``n_layer``) is not missing; a written vocab is kept."""
    fake_transformers(monkeypatch, tmp_path, my_model=T5_LAYOUT)
    t = read_target_config(
        {"llm_config": {"model_type": "my-model", "n_layer": 5, "vocab_size": 77}}
    )
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (5, 64, 77)
    assert t.filled == ("llm_config.hidden_size = 64 (transformers MyModelConfig default)",)
    t = read_target_config(
        {"text_config": {"model_type": "my-model", "num_hidden_layers": 2, "hidden_size": 8}}
    )
    assert (t.num_layers, t.hidden_size, t.vocab_size, t.filled) == (2, 8, None, ())


def test_a_class_without_some_default_leaves_it_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """transformers 4's OldConfig computes its hidden_size: depth and vocab are filled, the
    width is still refused by its field."""
    fake_transformers(monkeypatch, tmp_path, old=T4_LAYOUT)
    with pytest.raises(ConfigError) as err:
        read_target_config({"text_config": {"model_type": "old"}})
    assert (err.value.field, err.value.source) == ("text_config.hidden_size", "<dict>")
    t = read_target_config({"text_config": {"model_type": "old", "hidden_size": 8}})
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (6, 8, 500)
    assert t.filled == (
        "text_config.num_hidden_layers = 6 (transformers OldConfig default)",
        "text_config.vocab_size = 500 (transformers OldConfig default)",
    )


def test_without_transformers_the_missing_field_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_transformers(monkeypatch)
    with pytest.raises(ConfigError) as err:
        read_target_config({"text_config": {"model_type": "llama", "num_hidden_layers": 2}})
    assert (err.value.field, err.value.source) == ("text_config.hidden_size", "<dict>")
    assert str(err.value) == (
        "<dict>: text_config.hidden_size is missing and no installed transformers config class "
        "for model_type 'llama' gives its default: add text_config.hidden_size to the target "
        "config"
    )


def test_a_section_without_model_type_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        read_target_config({"text_config": {"num_hidden_layers": 2}})
    assert str(err.value) == (
        "<dict>: text_config.hidden_size is missing and text_config.model_type is absent, so no "
        "transformers default applies: add text_config.hidden_size to the target config"
    )
    assert err.value.field == "text_config.hidden_size"


def test_a_bad_section_model_type_is_refused_by_its_path() -> None:
    with pytest.raises(ConfigError) as err:
        read_target_config({"text_config": {"model_type": 3}})
    assert (err.value.field, err.value.source) == ("text_config.model_type", "<dict>")
    assert str(err.value) == "<dict>: text_config.model_type must be a string, got number 3"


def test_a_top_level_config_is_not_completed() -> None:
    """Only sections are completed: a top-level config is what ``save_pretrained`` wrote,
    with every field, so a missing depth there is an error, not a default."""
    pytest.importorskip("transformers")
    with pytest.raises(ConfigError) as err:
        read_target_config({"model_type": "llama", "hidden_size": 8})
    assert err.value.field == "num_hidden_layers"


def test_the_installed_transformers_completes_a_llava_text_config() -> None:
    """llava-hf's text_config names only its model_type (llama) among the sizes: depth, width
    and vocab are LlamaConfig's defaults, and ``filled`` names each one."""
    pytest.importorskip("transformers")
    t = read_target_config(
        {
            "architectures": ["LlavaForConditionalGeneration"],
            "model_type": "llava",
            "text_config": {"model_type": "llama"},
        }
    )
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (32, 4096, 32000)
    assert t.filled == (
        "text_config.num_hidden_layers = 32 (transformers LlamaConfig default)",
        "text_config.hidden_size = 4096 (transformers LlamaConfig default)",
        "text_config.vocab_size = 32000 (transformers LlamaConfig default)",
    )
    assert (t.model_type, t.text_model_type, t.section) == ("llava", "llama", "text_config.")


# transformers 4 with a positional-only parameter: defaults cover posonly and plain arguments.
T4_POSONLY = """
class OddConfig:
    model_type = "odd"

    def __init__(self, vocab_size=10, /, num_hidden_layers=2, hidden_size=8, **kwargs):
        pass
"""


def test_positional_only_defaults_are_read_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_transformers(monkeypatch, tmp_path, odd=T4_POSONLY)
    assert transformers_defaults("odd") == {
        "vocab_size": 10,
        "num_hidden_layers": 2,
        "hidden_size": 8,
        "__class__": "transformers OddConfig",
    }
    t = read_target_config({"text_config": {"model_type": "odd"}})
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (2, 8, 10)
