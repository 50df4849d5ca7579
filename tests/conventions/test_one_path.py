"""One simulation behind every entry point: for generated drafters of every method (EAGLE-3
included) on every probed target model file, ``check`` (``check_drafter``), ``diagnose``'s
claim path (``cli.diagnose._claimed_contract``: ``config.claim.trained_claim``) and ``stages``
at one pipeline stage (``stages_report`` with the drafter) give the same trained layers, the
same fed layers, the same verdict and the same proven fix. APIs, not processes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle3_contracts.cli.diagnose import _claimed_contract
from eagle3_contracts.config.check import check_drafter
from eagle3_contracts.config.claim import trained_claim
from eagle3_contracts.config.readers import read_draft_config, read_target_config
from eagle3_contracts.conventions import releases
from eagle3_contracts.errors import ContractError
from eagle3_contracts.parallel.report import stages_report
from eagle3_contracts.testing.strategies import METHOD_NAMES, draft_configs, method_configs

SERVED = ("sglang==0.5.23", "vllm==0.33.0")
TRAINED_WITH = ("specforge-hf", "specforge", "hf-hidden-states")


def _architectures() -> tuple[str, ...]:
    """One architecture per model file the newest probed releases register."""
    out: dict[str, str] = {}
    for framework in ("sglang", "vllm"):
        table = releases.load_table(framework, releases.newest_release(framework))
        for arch, key in sorted(table.architectures.items()):
            out.setdefault(f"{framework}:{key}", arch)
    return tuple(sorted(set(out.values())))


ARCHITECTURES = _architectures()


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], str, str]:
    n = draw(st.integers(4, 48))
    method = draw(st.sampled_from(("eagle3", *METHOD_NAMES)))
    if method == "eagle3":
        ids = draw(st.lists(st.integers(0, n - 1), min_size=3, max_size=3, unique=True))
        draft = draw(
            draft_configs(
                st.sampled_from(("eagle_config", "top-level", "none")),
                layer_ids=tuple(sorted(ids)),
                num_target_layers=n,
                hidden_size=64,
            )
        )
    else:
        draft = draw(method_configs(method, num_target_layers=n, hidden_size=64))
    arch = draw(st.sampled_from(ARCHITECTURES))
    target = {"architectures": [arch], "num_hidden_layers": n, "hidden_size": 64}
    return draft, target, draw(st.sampled_from(SERVED)), draw(st.sampled_from(TRAINED_WITH))


def _diagnose_claim(draft: dict, target: dict, trained_with: str) -> tuple[int, ...] | None:
    """The layers ``diagnose --draft D --trained-with T`` checks the dumps against (None: the
    claim names no canonical layers, refused in one line)."""
    with tempfile.TemporaryDirectory() as tmp:
        d, t = Path(tmp, "draft.json"), Path(tmp, "target.json")
        d.write_text(json.dumps(draft))
        t.write_text(json.dumps(target))
        try:
            contract, _, _ = _claimed_contract(str(d), str(t), trained_with)
        except ContractError:
            return None
    assert contract is not None  # a trainer name always claims something
    return contract.layer_ids


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(cases())
def test_check_diagnose_and_stages_agree(case: tuple[dict, dict, str, str]) -> None:
    draft, target, served, trained_with = case
    d, t = read_draft_config(draft), read_target_config(target)
    try:
        report = check_drafter(
            draft, target=target, trained_with=trained_with, serve_with=(served,), environ={}
        )
    except ContractError as refused:  # the claim itself is refused: by every entry point
        with pytest.raises(ContractError) as again:
            trained_claim(d, t, trained_with, {})
        assert str(again.value) == str(refused)
        assert _diagnose_claim(draft, target, trained_with) is None
        return
    (row,) = report.rows
    claim = trained_claim(d, t, trained_with, {})
    assert claim.plan is not None
    # the trained side: diagnose's claim is check's trained plan
    trained = claim.plan
    whole = trained.kind == "segments" and not trained.refused and not trained.non_canonical
    # a contract names each layer once: a claim repeating one is refused by diagnose, in a line
    whole = whole and len(set(trained.layer_ids)) == len(trained.layer_ids)
    assert _diagnose_claim(draft, target, trained_with) == (
        trained.layer_ids if whole and trained.layer_ids else None
    ), (trained.describe(), trained.kind)
    # the served side and the verdict: stages at one stage is check's row
    stages = stages_report(
        (), t.num_layers, pp_size=1, convention=served, target=t, draft=d, trained=trained
    )
    assert stages.layer_ids == tuple(sorted(row.plan.layer_ids)) or len(
        set(stages.native_ids)
    ) != len(stages.layer_ids), (stages.layer_ids, row.plan.layer_ids)
    assert [f.kind for f in stages.findings] == [f.kind for f in row.findings], row.verdict
    assert [f.fix_native_ids for f in stages.findings] == [f.fix_native_ids for f in row.findings]
    assert stages.exit_code == (0 if row.ok else 1)
    # no printed fix is the ids already there
    for f in row.findings:
        assert f.fix_native_ids is None or f.fix_native_ids != row.plan.native_ids, f.fix
