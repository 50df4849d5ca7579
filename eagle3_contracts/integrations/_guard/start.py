"""What ``check`` says, at engine start, of the drafter the engine loaded: the same simulation,
claim and proven fix as the CLI (``config.check.check_drafter``) for the release table that
answers for the installed code. Both guards say the drafter's method (EAGLE-3, DFlash, DSpark,
EAGLE-3.1, P-EAGLE, a two-encoding Nemotron draft) and, before any request, a problem check
proves: a drafter that release cannot load, a silent fallback guess that differs from the
trained taps, an fc built for another width. The first prefill then judges what was fed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eagle3_contracts.config.check import CheckRow, check_drafter
from eagle3_contracts.config.readers import DraftConfig, read_draft_config, read_target_config
from eagle3_contracts.conventions import methods
from eagle3_contracts.conventions.predict import Feed
from eagle3_contracts.differences import FindingKind
from eagle3_contracts.integrations._guard.claim import guard_claim
from eagle3_contracts.integrations._guard.installed import answering_release
from eagle3_contracts.integrations._guard.report import (
    PREFIX,
    cannot_observe_line,
    installed_line,
    one_line,
)
from eagle3_contracts.integrations._guard.settings import Settings
from eagle3_contracts.stamp import ENV_TRAINED_WITH


@dataclass(frozen=True)
class AtStart:
    """The drafter's method and what check proves for the release before any request."""

    method: methods.Method
    problems: tuple[str, ...]  # check's verdict and fix per proven problem ("" when none)
    unknown: str = ""  # why check could not decide (never a verdict)

    @property
    def method_said(self) -> str:
        return f"a {self.method.label} drafter"

    def line(self, where: str, claim: str) -> str | None:
        """The start-up MISMATCH line (``None`` when check proves nothing wrong)."""
        if not self.problems:
            return None
        return (
            f"{PREFIX} guard [{where}]: MISMATCH predicted at start-up for {self.method_said} "
            f"({claim}): {'; '.join(self.problems)}"
        )


def check_at_start(
    release: str,
    draft: DraftConfig | Mapping[str, Any],
    target: Mapping[str, Any],
    settings: Settings,
) -> AtStart:
    """``check`` of ``draft`` on ``target`` served by ``release`` (the answering table, with
    the runner for vLLM), claim from the stamp or the environment ``settings`` read."""
    config = draft if isinstance(draft, DraftConfig) else read_draft_config(dict(draft))
    method = methods.detect(config.raw)
    environ = {ENV_TRAINED_WITH: settings.trained_with} if settings.trained_with else {}
    report = check_drafter(
        config, target=read_target_config(dict(target)), serve_with=(release,), environ=environ
    )
    claimed = report.claim is not None and report.claim.plan is not None
    problems: list[str] = []
    unknown = ""
    for row in report.rows:
        if row.ok:
            continue
        kinds = {f.kind for f in row.findings}
        said = "; ".join(f.message for f in row.findings)
        if FindingKind.UNKNOWN in kinds:
            unknown = unknown or said
        elif claimed or kinds <= {FindingKind.CRASHES, FindingKind.UNSUPPORTED}:
            # a crash or a target the release cannot serve needs no claim to be proven
            line = f"{_guessed(row.plan.feed)}{said}; fix: {fix_words(row)}"
            problems += [line] if line not in problems else []
    return AtStart(method, tuple(problems), unknown)


def fix_words(row: CheckRow) -> str:
    """Check's fix for a row in one line: the ids at the field the release reads, else why no
    id list can fix it (what the matrix leaves to its details, a log line says in full)."""
    if row.fix_native_ids is not None or not row.fix:
        return row.fix_label()
    return row.fix


def _guessed(feed: Feed) -> str:
    """Where the release fed a fallback guess (the config names no taps: SGLang's
    ``build_target_layer_ids``, dflash_utils.py:348-385, 568-571), the guess named first: a
    silent guess is the problem, whatever it happens to feed."""
    if feed.ids_source != "fallback":
        return ""
    said = next((n for n in feed.notes if "guess" in n), "the release guessed the taps")
    return f"the drafter names no taps, so {feed.release} fed its fallback guess ({said}): "


def guard_start(
    log: Any,
    where: str,
    engine: tuple[str, str, str],
    settings: Settings,
    read_draft: Callable[[], DraftConfig | Mapping[str, Any] | None],
    target: Mapping[str, Any] | None,
    *,
    claim_where: str | None = None,
) -> tuple[str, str]:
    """Engine start with the guard on, for both engines: resolve the table answering for the
    installed code (``engine``: framework, running version, runner suffix such as ``":v2"``)
    and say it when the installed files are not the wheel's; then say what ``check`` proves
    for the drafter on it. Returns (the answering name the fix is searched with, the drafter's
    method in words for the armed line). Never raises: a check that cannot run is one line."""
    framework, version, runner = engine
    answering = answering_release(framework, version)
    if answering.note:
        log.warning("%s", installed_line(where, answering.note))
    answers = answering.release + runner
    try:
        draft = read_draft()
        if draft is None or target is None:
            return answers, ""
        found = check_at_start(answers, draft, target, settings)
        _, claim = guard_claim(draft, target, settings, where=claim_where)
    except Exception as exc:  # advice before serving: never a stop
        why = f"{one_line(exc)[:300]} at engine start"
        log.warning("%s", cannot_observe_line(where, why, "the first prefill is still judged"))
        return answers, ""
    line = found.line(where, claim)
    if line is not None:
        log.warning("%s", line)
    if found.unknown:
        log.info("%s [%s]: check cannot decide at start: %s", PREFIX, where, found.unknown)
    return answers, f" ({found.method_said})"
