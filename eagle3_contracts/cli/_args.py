"""Argument types shared by the subcommands."""

from __future__ import annotations

import argparse


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
