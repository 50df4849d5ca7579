"""One claim: the stamp, then ``--trained-with``, then ``EAGLE3_CONTRACTS_TRAINED_WITH``,
resolved once (``stamp.resolve_claim``, ``config.claim.trained_claim``), a disagreeing lower
claim named, and the same trained layers at every entry point that reads one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.claim import trained_claim, trained_stamp
from eagle3_contracts.config.fix import fix_drafter
from eagle3_contracts.config.plan import resolve
from eagle3_contracts.config.readers import IDS_FIELD, read_draft_config, read_target_config
from eagle3_contracts.errors import ConfigError, ContractError
from eagle3_contracts.stamp import ENV_TRAINED_WITH, STAMP_KEY, resolve_claim

TARGET = read_target_config(
    {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 8,
     "hidden_size": 16, "vocab_size": 64}
)  # fmt: skip
DRAFT = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "vocab_size": 64,
    "eagle_config": {IDS_FIELD: [1, 3, 5]},
}


def stamped(trained_with: str = "specforge-hf") -> dict:
    draft = read_draft_config(DRAFT)
    stamp = trained_stamp(resolve(draft, TARGET, trained_with), trained_with, TARGET)
    return {**DRAFT, STAMP_KEY: stamp.to_dict()}


@pytest.mark.parametrize(
    ("config", "given", "env", "kind", "said"),
    [
        (stamped(), None, {}, "stamp", ""),
        (stamped(), "specforge-hf", {ENV_TRAINED_WITH: "specforge-hf"}, "stamp", ""),
        (
            stamped(),
            "boundary",
            {ENV_TRAINED_WITH: "output"},
            "stamp",
            f" (--trained-with boundary ignored: the stamp is read first) ({ENV_TRAINED_WITH}="
            "output ignored: the stamp is read first)",
        ),
        (
            DRAFT,
            "boundary",
            {ENV_TRAINED_WITH: "output"},
            "--trained-with",
            f" ({ENV_TRAINED_WITH}=output ignored: --trained-with is read first)",
        ),
        (DRAFT, None, {ENV_TRAINED_WITH: "output"}, "env", ""),
        (DRAFT, None, {}, "none", ""),
    ],
)
def test_the_order_is_stamp_flag_environment_and_a_disagreement_is_named(
    config: dict, given: str | None, env: dict, kind: str, said: str
) -> None:
    claim = resolve_claim(config, "drafter/config.json", given, env)
    assert claim.kind == kind
    assert claim.describe().endswith(said) if said else not claim.overridden
    assert claim.describe().count("ignored") == said.count("ignored")


def test_a_claim_is_answered_as_the_trained_plan() -> None:
    draft = read_draft_config(stamped())
    claim = trained_claim(draft, TARGET, "boundary", {})
    assert claim.plan is not None and claim.plan.layer_ids == (1, 3, 5)
    assert claim.plan.system == "stamp (specforge-hf)"
    unstamped = trained_claim(read_draft_config(DRAFT), TARGET, "boundary", {})
    assert unstamped.plan is not None and unstamped.plan.layer_ids == (0, 2, 4)
    assert trained_claim(read_draft_config(DRAFT), TARGET, None, {}).plan is None


def test_a_stamp_for_another_target_is_refused_naming_both_sizes() -> None:
    other = read_target_config({"num_hidden_layers": 12, "hidden_size": 16})
    with pytest.raises(ConfigError) as err:
        trained_claim(read_draft_config(stamped()), other, None, {})
    assert err.value.field == STAMP_KEY
    assert "made for a 8 x 16 target, this target is 12 x 16" in str(err.value)


def test_a_stamp_of_no_canonical_contract_is_refused() -> None:
    draft = read_draft_config({**DRAFT, "eagle_config": {IDS_FIELD: [8, 9, 10]}})
    plan = resolve(draft, TARGET, "specforge-hf")
    with pytest.raises(ContractError) as err:
        trained_stamp(plan, "specforge-hf", TARGET)
    assert err.value.field == "trained_with"


def test_check_notes_a_flag_overriding_the_environment() -> None:
    report = check_drafter(
        DRAFT,
        target=TARGET,
        trained_with="boundary",
        serve_with=("sglang==0.5.23",),
        environ={ENV_TRAINED_WITH: "output"},
    )
    assert report.trained_with == "boundary"
    assert (
        f"training claim: no stamp; --trained-with boundary ({ENV_TRAINED_WITH}=output ignored: "
        "--trained-with is read first)" in report.notes
    )


@pytest.mark.parametrize("config", [DRAFT, stamped("boundary")])
def test_every_entry_point_reads_the_same_trained_layers(
    tmp_path: Path, config: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle3_contracts.acceptance.wiring import trained_wiring

    monkeypatch.delenv(ENV_TRAINED_WITH, raising=False)
    (tmp_path / "config.json").write_text(json.dumps(config))
    target = tmp_path / "target.json"
    target.write_text(json.dumps({**TARGET.raw}))
    serve = ("sglang==0.5.23",)
    report = check_drafter(
        str(tmp_path), target=str(target), trained_with="boundary", serve_with=serve
    )
    fix = fix_drafter(tmp_path, target=target, serve_with=serve, trained_with="boundary")
    wiring = trained_wiring(tmp_path, target, "boundary")
    assert report.readings[0][1].layer_ids == (0, 2, 4)
    assert fix.claim.plan is not None and fix.claim.plan.layer_ids == (0, 2, 4)
    assert wiring.wiring == (0, 2, 4)
    assert fix.claim.describe() == report.claim.describe() == wiring.source  # type: ignore[union-attr]
    from eagle3_contracts.integrations._guard.claim import guard_claim
    from eagle3_contracts.integrations._guard.settings import Settings

    class Loaded(dict):  # a config as vLLM loaded it (hf_config.to_dict())
        def to_dict(self) -> dict:
            return dict(self)

    env = Settings(None, "warn", 32, "boundary", ())
    ids, said = guard_claim(
        Loaded(config), Loaded(TARGET.raw), env, where="the drafter's config.json"
    )
    assert ids == (0, 2, 4)
    assert said.startswith(
        "stamp in the drafter's config.json" if STAMP_KEY in config else "no stamp"
    )
