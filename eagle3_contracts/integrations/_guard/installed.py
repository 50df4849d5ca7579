"""The release table that answers for the engine a guard runs inside: ``<engine>==installed``.

A guard observes the code installed in its own Python environment, local patches included, so
its fix is searched with the table of that code, not of the release it claims to be:
``probe.installed.resolve`` hashes the files the probe reads, answers with the shipped table
when they are the released wheel's, and otherwise probes them into the user's cache (keyed by
the files' hash) and names the files that differ. Resolved once at engine start, never in a
prefill; anything that goes wrong is a note and the release's own table, never a stop.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagle3_contracts.integrations._guard.report import one_line


@dataclass(frozen=True)
class Answering:
    """The table that answers for the running engine, and what to say about it."""

    release: str  # "sglang==0.5.23", or "sglang==0.5.23+installed.<digest>" for patched files
    note: str  # "" when the installed files are the released wheel's

    @property
    def patched(self) -> bool:
        return "+installed." in self.release


def answering_release(framework: str, version: str) -> Answering:
    """The table for ``framework`` at ``version`` (the version the running engine reports) as
    installed here: the release's when its files are the wheel's, else the installed probe."""
    plain = f"{framework}=={version.split('+', 1)[0]}"
    try:
        from eagle3_contracts.probe.installed import resolve

        found = resolve(framework)
    except Exception as exc:  # the comparison is advice: a guard never stops serving for it
        return Answering(
            plain,
            f"{framework}==installed: the installed files could not be compared with the "
            f"released wheel ({one_line(exc)[:300]}); answered as {plain}",
        )
    if found.version.split("+", 1)[0] != version.split("+", 1)[0]:
        return Answering(
            plain,
            f"{framework}==installed: the distribution metadata says {found.version}, the "
            f"running engine {version} (two installs on one path?); answered as {plain}",
        )
    return Answering(found.release, "" if found.release == plain else found.note())
