"""Argument types shared by the subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3_contracts.conventions import SystemName


def positive_int(text: str) -> int:
    """argparse ``type=`` for counts and sizes: a positive integer, else a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def layer_count(text: str) -> int:
    """argparse ``type=`` for a target depth: a positive integer up to ``MAX_NUM_LAYERS``."""
    from eagle3_contracts.layer_ids import MAX_NUM_LAYERS

    value = positive_int(text)
    if value > MAX_NUM_LAYERS:
        raise argparse.ArgumentTypeError(
            f"{value} is over the limit of {MAX_NUM_LAYERS} layers (released models have a few "
            f"hundred at most)"
        )
    return value


def serving_names(args: argparse.Namespace) -> list[str]:
    """``--serve-with`` as system names (``conventions.lists.split_names``: commas and spaces,
    also inside one argument). Its values run to the next option, so a DRAFT typed after them
    (``--serve-with vllm drafter/``) lands there: it is moved back to ``args.draft`` when DRAFT
    is missing, and any other path-like value is a usage error naming it."""
    if not args.serve_with:
        return []
    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.conventions.lists import split_names

    names = split_names(args.serve_with)
    if getattr(args, "draft", "") is None and names and _path_like(names[-1]):
        args.draft = names.pop()
    stray = [name for name in names if _path_like(name)]
    if stray:
        raise UsageError(
            f"--serve-with takes system names, got {stray[0]!r}: give one DRAFT, before "
            "--serve-with or right after its names"
        )
    return names


def system_names(
    serve_with: Sequence[str], trained_with: str | None
) -> tuple[tuple[SystemName, ...], SystemName | None]:
    """``--serve-with`` and ``--trained-with`` parsed once, here, where they enter (a refusal
    names the option, ``serve_with`` / ``trained_with``, as the API's would): the typed values
    go on to ``check_drafter`` / ``fix_drafter``, which parse nothing again."""
    from eagle3_contracts.conventions import parse_system

    serve = tuple(parse_system(name, field="serve_with") for name in serve_with)
    trained = parse_system(trained_with, field="trained_with") if trained_with else None
    return serve, trained


def _path_like(text: str) -> bool:
    """A value that names a file, folder or Hub id rather than a system: system names never
    hold a slash or end in ``.json``; an existing path counts only when no system has its name."""
    import os

    if "/" in text or os.sep in text or text.lower().endswith(".json"):
        return True
    if not os.path.exists(text):
        return False
    from eagle3_contracts.conventions import parse_system
    from eagle3_contracts.errors import ContractError

    try:
        parse_system(text, field="--serve-with")
    except ContractError:
        return True
    return False


def require_draft(args: argparse.Namespace) -> str:
    """``args.draft``, or a usage error saying where DRAFT goes."""
    from eagle3_contracts.cli import UsageError

    if not args.draft:
        raise UsageError("DRAFT is required: the drafter's directory, config.json or Hub id")
    return str(args.draft)


DRAFTER_MARKERS = ("eagle", "speculator", "draft", "medusa", "mtp")
"""Words a drafter's ``architectures`` class name holds (``LlamaForCausalLMEagle3``,
``Eagle3Speculator``); a target model's class holds none of them."""


def refuse_target_as_draft(draft: str) -> None:
    """A usage error when DRAFT is a target model's config: no EAGLE-3 ids in any schema, a
    model class that is no drafter, and more than one decoder layer. Checked as a drafter it
    would be 'fed' the engines' defaults and pass, a false ok. Unreadable configs are left to
    the command's own reader, which names the problem."""
    from pathlib import Path

    from eagle3_contracts.cli import UsageError
    from eagle3_contracts.config.readers import (
        read_draft_config,
        read_target_config,
        resolve_model,
    )
    from eagle3_contracts.errors import Eagle3ContractsError

    try:
        local, _ = resolve_model(draft, what="draft")
        path = Path(local)
        path = path / "config.json" if path.is_dir() else path
        config = read_draft_config(path)
        names = " ".join(config.architectures).lower()
        if config.schema != "none" or not config.architectures:
            return
        if any(marker in names for marker in DRAFTER_MARKERS):
            return
        layers = read_target_config(path).num_layers  # nested text_config too (multimodal)
    except (Eagle3ContractsError, OSError):
        return
    if layers > 1:
        raise UsageError(
            f"DRAFT {draft} looks like a target model's config ({', '.join(config.architectures)}, "
            f"{layers} layers, no EAGLE-3 layer ids): give the drafter's config.json or folder as "
            "DRAFT and this one as --target"
        )
