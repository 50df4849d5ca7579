"""The pytest11 plugin, exercised in throwaway pytest runs (pytester)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eagle3_contracts.config import examples
from eagle3_contracts.testing.pytest_plugin import GPU_REASON

pytest_plugins = ["pytester"]


def _drafter_repo(pytester: pytest.Pytester, ini: str) -> None:
    draft, target = examples.load("kimi-k2.5")  # nested ids [2, 30, 58], 61-layer target
    for name in ("kimi", "kimi-copy"):
        folder = pytester.path / "drafters" / name
        folder.mkdir(parents=True)
        shutil.copy(draft, folder / "config.json")
        shutil.copy(target, folder / "target.json")
    pytester.makeini(f"[pytest]\ntestpaths = drafters\n{ini}")


@pytest.mark.parametrize(
    "configs, serve",
    [
        ("drafters/*/config.json", "sglang-legacy sglang"),
        # lists split as the command line splits them: eagle3_serve_with as --serve-with
        # (commas and spaces), eagle3_configs at commas (paths may hold spaces)
        ("drafters/kimi/config.json, drafters/kimi-copy/config.json", "sglang-legacy, sglang"),
        ("drafters/kimi/config.json,drafters/kimi-copy/config.json", "sglang-legacy,sglang"),
    ],
)
def test_each_config_becomes_one_item_per_serving_system(pytester, configs, serve):
    _drafter_repo(
        pytester,
        f"eagle3_configs = {configs}\neagle3_serve_with = {serve}\n"
        "eagle3_trained_with = specforge-hf\n",
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*drafters/kimi/config.json::serve[[]sglang-legacy[]] PASSED*",
            "*drafters/kimi/config.json::serve[[]sglang[]] FAILED*",
            "*drafters/kimi-copy/config.json::serve[[]sglang-legacy[]] PASSED*",
        ]
    )
    # the failure is the core findings, not a traceback
    result.stdout.fnmatch_lines(["*1 layer early*", "*fix*eagle_aux_hidden_state_layer_ids*"])
    assert "Traceback" not in result.stdout.str()


def test_target_from_ini_and_default_engines_item(pytester):
    draft, target = examples.load("kimi-k2.5")
    (pytester.path / "drafters").mkdir()
    shutil.copy(draft, pytester.path / "drafters" / "draft.json")
    shutil.copy(target, pytester.path / "kimi-target.json")
    pytester.makeini(
        "[pytest]\ntestpaths = drafters\neagle3_configs = drafters/draft.json\n"
        "eagle3_target = kimi-target.json\neagle3_trained_with = specforge-hf\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(failed=1)  # vLLM ignores nested-only ids among the engines
    result.stdout.fnmatch_lines(["*serve[[]default engines[]] FAILED*", "*no --serve-with*"])


def test_a_missing_target_fails_with_what_to_do(pytester):
    draft, _ = examples.load("kimi-k2.5")
    (pytester.path / "d").mkdir()
    shutil.copy(draft, pytester.path / "d" / "config.json")
    pytester.makeini(
        "[pytest]\ntestpaths = d\neagle3_configs = d/*.json\neagle3_serve_with = vllm\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no target config: set eagle3_target*"])


def test_a_malformed_config_is_one_line_not_a_traceback(pytester):
    (pytester.path / "d").mkdir()
    (pytester.path / "d" / "config.json").write_text(json.dumps({"eagle_config": [1, 2]}))
    shutil.copy(examples.load("kimi-k2.5")[1], pytester.path / "d" / "target.json")
    pytester.makeini(
        "[pytest]\ntestpaths = d\neagle3_configs = d/config.json\neagle3_serve_with = vllm\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ConfigError: *eagle_config must be a JSON object*"])
    assert "Traceback" not in result.stdout.str()


def test_json_files_outside_the_globs_are_not_collected(pytester):
    _drafter_repo(
        pytester, "eagle3_configs = drafters/kimi/config.json\neagle3_serve_with = sglang-legacy\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["drafters/kimi/config.json::serve[[]sglang-legacy[]]"])
    assert "kimi-copy" not in result.stdout.str()


def test_gpu_marker_skips_with_the_reason_without_cuda(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.eagle3_gpu
        def test_needs_cuda():
            import torch
            assert torch.cuda.is_available()

        def test_plain():
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", "--strict-markers")
    import torch

    if torch.cuda.is_available():
        result.assert_outcomes(passed=2)
    else:
        result.assert_outcomes(passed=1, skipped=1)
        result.stdout.fnmatch_lines([f"*{GPU_REASON}*"])


def test_profiles_are_registered_but_not_loaded(pytester):
    pytester.makepyfile(
        """
        from hypothesis import settings

        def test_profiles():
            ours = {"eagle3-dev", "eagle3-ci", "eagle3-gpu"}
            assert ours <= set(settings._profiles)
            assert settings._current_profile not in ours
            # hypothesis's own "ci" profile (auto-loaded on CI machines) is left untouched
            assert settings.get_profile("ci").max_examples == settings.default.max_examples
            ci = settings.get_profile("eagle3-ci")
            assert ci.derandomize and ci.deadline is None and ci.max_examples <= 10
        """
    )
    # a fresh process: this run has loaded "eagle3-ci" itself (through the repository conftest)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_fixtures_give_a_tiny_target_and_its_contract(pytester):
    pytester.makepyfile(
        """
        from eagle3_contracts import capture_hidden_states

        def test_fixtures(eagle3_tiny_target, eagle3_contract, eagle3_input_ids, eagle3_verify):
            out = capture_hidden_states(eagle3_tiny_target, eagle3_input_ids, eagle3_contract.layer_ids)
            eagle3_contract.validate(out)
            assert eagle3_verify(lambda m, i: capture_hidden_states(m, i, (1, 3, 5))).ok

        def test_hf_factory(eagle3_hf_target):
            model = eagle3_hf_target("qwen2", num_layers=2, hidden_size=16)
            assert len(model.model.layers) == 2
        """
    )
    pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore").assert_outcomes(passed=2)


def test_the_entry_point_is_registered():
    from importlib.metadata import entry_points

    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("eagle3_contracts") == "eagle3_contracts.testing.pytest_plugin"
    assert Path(__file__).name  # the plugin is loaded in this very run:
    import eagle3_contracts.testing.pytest_plugin as plugin

    assert plugin.PROFILES == ("eagle3-dev", "eagle3-ci", "eagle3-gpu")


# -- a glob that checks nothing is an error, never a green run --------------------
def test_a_glob_matching_nothing_is_a_usage_error_naming_pattern_and_rootdir(pytester):
    _drafter_repo(pytester, "eagle3_configs = drafter/*/config.json\n")  # typo: drafters
    pytester.makepyfile(test_other="def test_other(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: eagle3_configs pattern 'drafter/*/config.json' matches no file under the "
            f"rootdir {pytester.path}"
        ]
    )


def test_configs_outside_testpaths_are_a_usage_error_not_a_silent_pass(pytester):
    _drafter_repo(pytester, "eagle3_configs = drafters/*/config.json\n")
    pytester.makeini("[pytest]\ntestpaths = tests\neagle3_configs = drafters/*/config.json\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_other.py").write_text("def test_other(): pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: eagle3_configs pattern 'drafters/*/config.json' matches 2 file(s) under *"
            "none inside the collected paths*add their folder to testpaths"
        ]
    )


def test_a_glob_with_dotdot_outside_the_rootdir_is_a_usage_error_not_internalerror(pytester):
    """A glob reaching out of the rootdir (``..``) names its match in full in the message."""
    draft, _ = examples.load("kimi-k2.5")
    outside = pytester.path.parent / f"{pytester.path.name}-outside"
    for name in ("kimi", "kimi-copy"):
        (outside / name).mkdir(parents=True)
        shutil.copy(draft, outside / name / "config.json")
    pattern = f"../{outside.name}/*/config.json"
    pytester.makeini(f"[pytest]\ntestpaths = tests\neagle3_configs = {pattern}\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_other.py").write_text("def test_other(): pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(
        [
            f"ERROR: eagle3_configs pattern '{pattern}' matches 2 file(s) under * (e.g. "
            f"{outside}/kimi*/config.json), none inside the collected paths*"
        ]
    )


def test_a_hub_id_with_dotdot_in_its_revision_is_a_usage_error(pytester):
    _drafter_repo(pytester, "eagle3_configs = org/draft@main/../../x\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(
        ["ERROR: eagle3_configs entry 'org/draft@main/../../x': *'..' part*"]
    )


def test_an_explicit_path_argument_may_leave_the_configs_out(pytester):
    _drafter_repo(pytester, "eagle3_configs = drafters/*/config.json\n")
    pytester.makepyfile(test_other="def test_other(): pass")
    pytester.runpytest("-p", "no:cacheprovider", "test_other.py").assert_outcomes(passed=1)


def test_recursive_globs_are_resolved_from_the_rootdir(pytester):
    _drafter_repo(pytester, "eagle3_configs = drafters/**/config.json\neagle3_serve_with = vllm\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "drafters/kimi/config.json::serve[[]vllm[]]",
            "drafters/kimi-copy/config.json::serve[[]vllm[]]",
        ]
    )


def test_cublas_workspace_is_set_only_inside_our_gpu_tests(pytester, monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    pytester.makepyfile(
        """
        import os

        def test_plain():
            assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_plugins_take_no_generic_names(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture
        def golden():
            return "theirs"

        def test_their_golden(golden, eagle3_golden):
            assert golden == "theirs"
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_config_only_drafter_checks_never_import_torch(pytester):
    """The plugins and the hypothesis entry point load in every downstream run."""
    _drafter_repo(
        pytester, "eagle3_configs = drafters/kimi/config.json\neagle3_serve_with = vllm\n"
    )
    pytester.makeconftest(
        """
        import sys

        def pytest_sessionfinish(session):
            print("torch imported:", "torch" in sys.modules)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines(["*torch imported: False*"])


# -- the plugin as a downstream repository uses it --------------------------------------------
def test_the_environment_claim_is_honoured_like_the_cli(pytester, monkeypatch):
    """config/check.py used to pass an empty environment to claim_source: the plugin ignored
    EAGLE3_CONTRACTS_TRAINED_WITH and every item failed as ambiguous."""
    _drafter_repo(pytester, "eagle3_configs = drafters/*/config.json\neagle3_serve_with = trtllm\n")
    monkeypatch.delenv("EAGLE3_CONTRACTS_TRAINED_WITH", raising=False)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rf", "-vv")
    result.assert_outcomes(failed=2)  # no claim at all: the ids' meaning is ambiguous
    result.stdout.fnmatch_lines(["FAILED *serve[[]trtllm[]] - serve[[]trtllm[]]: AMBIGUOUS*"])
    monkeypatch.setenv("EAGLE3_CONTRACTS_TRAINED_WITH", "specforge-hf")
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2)  # trained on outputs 2, 30, 58: what TensorRT-LLM feeds


@pytest.mark.parametrize(
    ("ini", "expected"),
    [
        (
            "eagle3_config = drafters/*/config.json\n",
            "*'eagle3_config'*did you mean eagle3_configs?*",
        ),
        ("eagle3_serve = vllm\n", "*'eagle3_serve'*did you mean eagle3_serve_with?*"),
    ],
)
def test_an_unknown_eagle3_option_is_a_usage_error(pytester, ini, expected):
    """A misspelt option used to give a green run that checked nothing (exit 5 or 0)."""
    _drafter_repo(pytester, ini)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {expected}"])


@pytest.mark.parametrize(
    ("ini", "expected"),
    [
        (
            "eagle3_serve_with = vllm sglang-nope\n",
            "*eagle3_serve_with 'sglang-nope': unknown system name*",
        ),
        (
            "eagle3_serve_with = vllm\neagle3_trained_with = spcforge\n",
            "*eagle3_trained_with 'spcforge': *did you mean*",
        ),
    ],
)
def test_an_unknown_system_name_is_one_usage_error_for_the_session(pytester, ini, expected):
    """It used to be one failure per drafter (here two), each repeating the same error."""
    _drafter_repo(pytester, "eagle3_configs = drafters/*/config.json\n" + ini)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {expected}"])
    assert result.stderr.str().count("ERROR:") == 1


def test_the_short_summary_leads_with_the_verdict_and_the_fix(pytester):
    """`-r` used to show the report's first line ('draft: ...'), not what is wrong."""
    _drafter_repo(
        pytester,
        "eagle3_configs = drafters/kimi/config.json\neagle3_serve_with = vllm==0.33.0:v1\n"
        "eagle3_trained_with = specforge-hf\n",
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rf", "-vv")  # -vv: not cut
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED drafters/kimi/config.json::serve[[]vllm==0.33.0:v1[]] - "
            "serve[[]vllm==0.33.0:v1[]]: shifted -1; fix eagle_aux_hidden_state_layer_ids = [[]3, 31, 59[]]"
        ]
    )


def test_an_unknown_system_name_in_the_ini_is_a_usage_error_with_suggestions(pytester):
    _drafter_repo(pytester, "eagle3_configs = drafters/*/config.json\neagle3_serve_with = vlm\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: eagle3_serve_with 'vlm': unknown system name 'vlm': did you mean 'vllm'?*"]
    )
    pytester.makeini(
        "[pytest]\ntestpaths = drafters\neagle3_configs = drafters/*/config.json\n"
        "eagle3_trained_with = vllm==abc\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: eagle3_trained_with 'vllm==abc': *not a release version*"])
