"""``eagle3-contracts diagnose``: which target layer is each segment of a hidden-state dump?"""

from __future__ import annotations

import argparse
import math

from eagle3_contracts.cli._output import emit
from eagle3_contracts.contract import CaptureContract
from eagle3_contracts.errors import ContractError

COMMAND = "diagnose"
HELP = (
    "identify which target layer each segment of a hidden-state dump really is, against its "
    "claim, a contract or a second (serving) dump"
)

DEFAULT_SEED = 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dump",
        action="append",
        required=True,
        metavar="D",
        help="a .safetensors dump (eagle3_contracts.dumps.format.write_dump), or another tool's "
        "file as it is: speculators hs_<i>.safetensors, SpecForge .ckpt/.ckpt.gz, ModelOpt or "
        "TensorRT-LLM .pt (torch.load weights_only=True in a limited child; they record no "
        "ids: pass --ids/--convention, --contract or --draft); give two for training then serving",
    )
    parser.add_argument(
        "--target",
        required=True,
        metavar="MODEL",
        help="a local Hugging Face directory with *.safetensors weights, a Hub id "
        "org/name[@revision] whose weights are in the HF cache, or a config.json "
        "(random-init model; see --seed)",
    )
    expect = parser.add_mutually_exclusive_group()
    expect.add_argument(
        "--contract", metavar="C.json", help="check against this CaptureContract JSON"
    )
    expect.add_argument(
        "--ids",
        metavar="2,30,58",
        help="check against these claimed ids (needs --convention) instead of the dumps' own",
    )
    expect.add_argument(
        "--draft",
        metavar="DRAFT",
        help="the drafter's directory or config.json: check against its stamp (eagle3-contracts "
        "stamp); without a stamp the dumps' own metadata is the claim, and the report says so",
    )
    parser.add_argument(
        "--trained-with",
        metavar="NAME",
        help="with --draft: what trained it when its config carries no stamp (as check: the "
        "stamp, then this, then EAGLE3_CONTRACTS_TRAINED_WITH)",
    )
    parser.add_argument(
        "--convention",
        metavar="NAME",
        help="convention of --ids: 'canonical' or a system name (sglang==0.5.23, specforge, "
        "specforge-hf, ...), resolved for --target's model file",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        default=None,
        help=f"seed of a random-init target built from a config.json (default {DEFAULT_SEED})",
    )
    parser.add_argument(
        "--rtol",
        type=_positive_float,
        default=None,
        help="relative-error tolerance of a match (default: by dtype, reported)",
    )
    parser.add_argument(
        "--max-target-gib",
        type=_positive_float,
        default=None,
        metavar="GIB",
        help="refuse a target estimated above this size (default: physical memory, or "
        "RLIMIT_AS when lower)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _positive_float(text: str) -> float:
    """argparse ``type=``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _seed(text: str) -> int:
    """argparse ``type=``: a seed torch accepts (0 <= seed < 2**63)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**63), got {value}")
    return value


def _checked_ids(args: argparse.Namespace) -> tuple[int, ...] | None:
    """Every name and argument checked before torch is imported or a model loads: the claimed
    ``--ids`` (None when not given)."""
    from eagle3_contracts.cli import UsageError, parse_ids
    from eagle3_contracts.conventions import parse_convention

    if len(args.dump) > 2:
        raise UsageError(f"give one --dump, or two (training, serving); got {len(args.dump)}")
    if args.ids is not None and not args.convention:
        raise UsageError("--ids needs --convention (e.g. canonical, sglang, specforge)")
    if args.convention and args.ids is None:
        raise UsageError(
            "--convention applies to --ids; a dump's own convention is in its metadata"
        )
    if args.convention:
        parse_convention(args.convention, field="convention")  # before any file is read
    if args.trained_with is not None and not args.draft:
        raise UsageError("--trained-with names the training of --draft")
    return parse_ids(args.ids) if args.ids is not None else None


def run(args: argparse.Namespace) -> int:
    from eagle3_contracts.cli._output import progress, start_torch_work

    ids = _checked_ids(args)
    from eagle3_contracts._io import read_bounded

    contract = None
    if args.contract:
        text = read_bounded(args.contract, what="--contract file")  # regular file, <= 16 MiB
        try:
            contract = CaptureContract.from_json(text)
        except ContractError as exc:
            raise ContractError(f"--contract {args.contract}: {exc}", field=exc.field) from None
    notes: list[str] = []
    contract_source = f"contract {args.contract}"
    from eagle3_contracts.config.readers import resolve_model

    target_path, how = resolve_model(args.target, what="target")
    notes += [how] if how else []
    if args.draft:
        contract, contract_source, note = _claimed_contract(
            resolve_model(args.draft, what="draft")[0], target_path, args.trained_with
        )
        notes.append(note)
    step = progress(args.json)
    start_torch_work(step)
    from eagle3_contracts.capture.targets import load_target
    from eagle3_contracts.dumps.diagnose import diagnose
    from eagle3_contracts.dumps.format import ForeignClaim, read_any_dump

    own = (  # another tool's file records no ids: the claim given here is what it holds
        ForeignClaim(ids, args.convention)
        if ids is not None
        else ForeignClaim(contract.layer_ids, "canonical")
        if contract is not None
        else None
    )
    step(f"reading {len(args.dump)} dump(s)")
    dumps = [read_any_dump(p, own) for p in args.dump]  # every dump checked before the model
    seed = DEFAULT_SEED if args.seed is None else args.seed
    limit = None if args.max_target_gib is None else int(args.max_target_gib * 2**30)
    step(f"loading the target {args.target}")
    target = load_target(target_path, seed=seed, max_bytes=limit)
    if target.random_init and args.seed is None:
        notes.append(f"--seed not given: the default seed {DEFAULT_SEED} applied")
    report = diagnose(
        dumps,
        target,
        contract=contract,
        claim_ids=ids,
        claim_convention=args.convention,
        contract_source=contract_source,
        claim_source=f"--ids {args.ids} --convention {args.convention}",
        rtol=args.rtol,
        notes=notes,
        progress=step,
    )
    return emit(report, args.json)


def _claimed_contract(
    draft: str, target: str, trained_with: str | None
) -> tuple[CaptureContract | None, str, str]:
    """The drafter's training claim as a contract (``None``: nobody claims anything), its
    source, and the note saying which claim the report uses: the one resolver ``check`` calls
    (``config.claim.trained_claim``: the stamp, then ``--trained-with``, then the
    environment), answered for the target's config as ``check`` answers it."""
    import os

    from eagle3_contracts.config.claim import trained_claim
    from eagle3_contracts.config.readers import read_draft_config, read_target_config

    claim = trained_claim(
        read_draft_config(draft), read_target_config(target), trained_with, os.environ
    )
    plan = claim.plan
    if plan is None:
        return (
            None,
            "",
            (
                f"no training claim for {draft} (no stamp, --trained-with or "
                "EAGLE3_CONTRACTS_TRAINED_WITH): the dumps' own metadata is the claim"
            ),
        )
    if plan.kind != "segments" or plan.refused or plan.non_canonical or not plan.layer_ids:
        raise ContractError(
            f"the training claim ({claim.describe()}) names no canonical layers: "
            f"{plan.describe()} ({plan.kind}; {'; '.join(plan.notes[-1:]) or plan.source})",
            field="trained_with",
        )
    contract = CaptureContract(plan.layer_ids, plan.num_layers, plan.hidden_size, plan.order)
    return contract, f"training claim {claim.describe()}", f"training claim: {claim.describe()}"
