"""Every entry point that names a probed release gives check's layers, for every probed release,
runner and model file: ``conventions.get`` (and ``to_canonical``), ``diagnose``'s claim and
``stages`` (all through the release's ``Convention``) against ``conventions.predict`` (check's
simulation), and the guards' fix against check's."""

from __future__ import annotations

import pytest

from eagle3_contracts import conventions
from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.plan import release_fix
from eagle3_contracts.config.readers import IDS_FIELD, read_target_config
from eagle3_contracts.conventions import predict, releases
from eagle3_contracts.errors import ContractError
from eagle3_contracts.parallel.report import stages_report

L = 32
IDS = ([1, 15, 28], [2, 16, 29], [0, 1, 2], [3, 17, 31])


def _rows() -> dict[str, list[str]]:
    """Every probed release (and vLLM runner): one architecture per model file."""
    out = {}
    for framework, versions in releases.known_releases().items():
        runners = [f":{r}" for r in conventions.RUNNERS] if framework == "vllm" else [""]
        for version in versions:
            table = releases.load_table(framework, version)
            first: dict[str, str] = {}
            for arch, key in sorted(table.architectures.items()):
                first.setdefault(key, arch)
            out |= {f"{framework}=={version}{r}": sorted(first.values()) for r in runners}
    return out


ROWS = _rows()


def _draft(ids: list[int]) -> dict:
    return {"hidden_size": 16, "eagle_config": {IDS_FIELD: ids}, IDS_FIELD: ids}


def test_every_probed_release_and_model_file_is_covered() -> None:
    assert len({name.split(":")[0] for name in ROWS}) == sum(
        len(v) for v in releases.known_releases().values()
    )
    assert sum(map(len, ROWS.values())) > 100


@pytest.mark.parametrize("name", sorted(ROWS))
def test_get_diagnose_and_stages_feed_what_check_predicts(name: str) -> None:
    from eagle3_contracts.dumps.diagnose import resolve_claim

    compared = refused = 0
    for arch in ROWS[name]:
        target = read_target_config(
            {"architectures": [arch], "num_hidden_layers": L, "hidden_size": 16}
        )
        try:
            conv = conventions.get(name, architectures=[arch])
        except ContractError:
            refused += 1
            continue  # the table cannot back a registry entry: get refuses, never answers
        for ids in IDS:
            feed = predict.predict_feed(name, _draft(ids), target)
            if feed.kind != "segments" or len(feed.canonical) != len(ids):
                continue  # a crash, an unknown, a dropped id: only check's simulation says it
            assert tuple(sorted(conv.to_canonical(ids, L))) == feed.canonical, (arch, ids)
            claim = resolve_claim(ids, name, L, basis="dump", architectures=[arch])
            assert claim.expected == feed.canonical, (arch, ids)
            report = stages_report(ids, L, pp_size=2, convention=name, architectures=[arch])
            assert tuple(sorted(report.layer_ids)) == feed.canonical, (arch, ids)
            compared += 1
    # every release answers some model file through both paths, or get refuses every one of
    # them (a runner the release lacks; a release that reads no drafter ids, vLLM 0.10.0-0.11.0,
    # has no id convention): never a model file where the two paths give different layers
    assert compared or refused == len(ROWS[name])
    framework, _, rest = name.partition("==")
    version, _, runner = rest.partition(":")
    rule = releases.load_table(framework, version).runner
    if runner and rule is not None and runner not in rule.available:
        with pytest.raises(ContractError, match=rf"has no model runner {runner}"):
            conventions.get(name, architectures=["LlamaForCausalLM"])


@pytest.mark.parametrize("name", ["sglang==0.5.23", "sglang==0.5.12", "vllm==0.33.0:v1"])
@pytest.mark.parametrize("arch", ["LlamaForCausalLM", "DeepseekV3ForCausalLM", "Qwen3ForCausalLM"])
def test_the_guards_fix_is_checks_fix(name: str, arch: str) -> None:
    config = {"architectures": [arch], "num_hidden_layers": L, "hidden_size": 16}
    for ids in IDS[:2]:
        report = check_drafter(
            _draft(ids), target=config, trained_with="specforge-hf", serve_with=(name,), environ={}
        )
        (row,) = report.rows
        fix = release_fix(report.readings[0][1].layer_ids, name, _draft(ids), config)
        assert (fix.native_ids, fix.path) == (
            row.fix_native_ids,
            row.fix_field if row.fix_native_ids is not None else None,
        )


def test_the_public_conversions_take_the_target_for_engine_names() -> None:
    """``to_canonical`` / ``from_canonical`` answer an engine name for the target's model file
    (refused without it), the same as check's simulation."""
    import eagle3_contracts as e3

    kimi = {"model_type": "deepseek_v3"}
    assert e3.to_canonical([2, 30, 58], "sglang==0.5.23", 61, **kimi) == (1, 29, 57)
    assert e3.from_canonical([2, 30, 58], "sglang==0.5.23", 61, **kimi) == (3, 31, 59)
    llama = {"architectures": ["LlamaForCausalLM"]}
    assert e3.to_canonical([2, 30, 58], "sglang==0.5.23", 61, **llama) == (2, 30, 58)
    target = read_target_config({**llama, "num_hidden_layers": 61, "hidden_size": 16})
    fed = predict.predict_feed("vllm==0.33.0:v1", _draft([3, 31, 59]), target).canonical
    assert e3.to_canonical([3, 31, 59], "vllm==0.33.0:v1", 61, **llama) == fed == (2, 30, 58)
    with pytest.raises(ContractError, match="depends on the target's model file") as err:
        e3.to_canonical([1], "vllm", 61)
    assert err.value.field == "target"
    assert e3.to_canonical([2, 30, 58], "specforge-hf", 61) == (2, 30, 58)  # no target needed
