"""The acceptance oracle beside today's unbatched oracle and one batched greedy generation, in one
run on the tiny trained fixture (CPU, 1 thread by default).

    OMP_NUM_THREADS=1 python benchmarks/acceptance_bench.py            # 16 prompts x 64 tokens
    OMP_NUM_THREADS=1 python benchmarks/acceptance_bench.py --prompts 2 --reps 1   # smoke

Modes, interleaved within each repetition so machine noise hits all alike, on the same seeded
prompts (``new_tokens`` greedy tokens each, k drafts from every anchor, one wiring):

* ``oracle``: ``measure`` (all prompts in one batched generation that captures the fed states,
  the k-draft chains of every anchor of every prompt batched);
* ``unbatched oracle``: the oracle as it ran before batching, one prompt at a time: its greedy
  continuation with a KV cache, one forward over the whole sequence with hooks, its chains;
* ``batched generation``: transformers' ``generate`` of the same prompts in one batch, greedy:
  the work no oracle can skip (it must know the sequence an engine would serve).

Reported: tokens/s of each (tokens = generated tokens), and each mode's time over the oracle's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eagle3_contracts.acceptance.chain import accepted
from eagle3_contracts.acceptance.drafter import load_drafter
from eagle3_contracts.acceptance.fixture import DRAFTER, TARGET, TRAINED
from eagle3_contracts.acceptance.measure import measure
from eagle3_contracts.acceptance.prompts import greedy_prompts
from eagle3_contracts.acceptance.target import cache_keyword
from eagle3_contracts.capture.hooks import decoder_layers, layer_hooks
from eagle3_contracts.capture.targets import load_target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    target = load_target(TARGET)
    drafter, _ = load_drafter(DRAFTER)
    model, drafter = target.model.to(dev), drafter.to(dev)
    prompts = list(greedy_prompts(args.prompts, target.vocab_size, seed=0))
    new, k = args.new_tokens, args.k
    key = cache_keyword(model)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def oracle() -> None:
        measure(model, drafter, prompts, [TRAINED], num_layers=target.num_layers, k=k,
                new_tokens=new)  # fmt: skip

    def unbatched_oracle() -> None:
        states: dict[int, torch.Tensor] = {}

        def keep(n: int, state: torch.Tensor) -> None:
            states[n] = state[0]

        for p in prompts:
            ids = torch.tensor([p], device=dev)
            with torch.no_grad():
                out = model(ids, use_cache=True)
                made = [out.logits[:, -1].argmax(-1, keepdim=True)]
                for _ in range(new - 1):
                    out = model(made[-1], use_cache=True, **{key: getattr(out, key)})
                    made.append(out.logits[:, -1].argmax(-1, keepdim=True))
            tokens = torch.cat([ids, *made], dim=1)[0]
            with layer_hooks(decoder_layers(model), keep, TRAINED), torch.no_grad():
                greedy = model(tokens[None], use_cache=False).logits[0].argmax(-1)
                embeds = model.get_input_embeddings()(tokens)
            fed = torch.cat([states[i] for i in TRAINED], dim=-1)
            anchors = torch.arange(len(p) - 1, tokens.numel() - k, device=dev)
            accepted(drafter, fed, embeds, greedy, anchors, k).sum(0).cpu()

    def batched_generation() -> None:
        ids = torch.tensor(prompts, device=dev)
        with torch.no_grad():
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                           min_new_tokens=new, do_sample=False, pad_token_id=0)  # fmt: skip

    modes = {
        "oracle": oracle,
        "unbatched oracle (before)": unbatched_oracle,
        "batched generation": batched_generation,
    }
    times: dict[str, list[float]] = {m: [] for m in modes}
    oracle()  # warm-up
    for _ in range(args.reps):
        for name, fn in modes.items():
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            times[name].append(time.perf_counter() - t0)
    tokens = args.prompts * new
    print(
        f"{target.describe()}; {args.prompts} prompts x {new} new tokens = {tokens} tokens, "
        f"k={k}, 1 wiring, {dev}, {args.threads} thread(s), {args.reps} reps (median)"
    )
    base = statistics.median(times["oracle"])
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"  {name:<27} {t:7.3f} s  {tokens / t:9.0f} tokens/s  {t / base:6.2f}x oracle")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
