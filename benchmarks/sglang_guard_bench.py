"""First-prefill cost of the eagle3-contracts SGLang guard, against the same prefill without it.

    PYTHONPATH=$PWD:tests/engines/sglang/stubs SGLANG_USE_CPU_ENGINE=1 OMP_NUM_THREADS=1 \\
      .venv-sglang-0.5.23/bin/python benchmarks/sglang_guard_bench.py      # L=16, H=512, 256 tok
    ... benchmarks/sglang_guard_bench.py --layers 6 --hidden 64 --tokens 64 --reps 3

SGLang's own ``LlamaForCausalLM`` (weights of a random HF model, loaded by its
``load_weights``) on CPU, EAGLE-3 capture on, one prefill (EXTEND) forward, with the engine
suite's harness (``tests/engines/sglang``: SDPA attention stand-in). Every repetition times,
side by side in one process, on copies of the same model:

* ``off``: no hooks (SGLang as without eagle3-contracts);
* ``guard``: the hooks registered as ``--forward-hooks`` registers them, the guard ``warn``
  with a stamped drafter: the first prefill records, identifies and judges (an OK verdict is
  required), then the ``later`` prefill of the same copy (the hooks return at once);
* ``graph``: the same through the prefill-graph path of the engine suite
  (``tests/engines/sglang/test_guard_paths.py``: the release's ``PrefillCudaGraphRunner``,
  the ``GraphReplay`` stand-in for the CUDA graph): the guarded first prefill runs eager,
  the later ones must all replay (counted).

Printed: medians of the process (CPU) time, one thread, which machine load does not
inflate as it does wall time, and their ratios to ``off``. On CPU a replay costs what the eager forward
costs, so ``graph`` shows the guard's cost and that graphs resume, not a GPU's graph speed-up.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IDS = [1, 3, 4]


def build(layers: int, hidden: int, tokens: int) -> tuple[Any, Any]:
    """A random HF llama and a maker of SGLang copies with its weights (the SGLang model holds
    process groups: it cannot be deep-copied)."""
    import torch
    from transformers import AutoModelForCausalLM

    from tests.engines.sglang import harness

    harness.init_runtime()
    config = harness._cfg(
        "llama",
        layers,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=hidden // 8,
        vocab_size=1024,
        max_position_embeddings=tokens + 16,
        tie_word_embeddings=False,
        architectures=["LlamaForCausalLM"],
    )
    torch.manual_seed(0)
    hf = AutoModelForCausalLM.from_config(config, attn_implementation="eager").float().eval()
    from sglang.srt.models.llama import LlamaForCausalLM

    case = harness.BY_FILE["llama.py"]
    input_ids = torch.randint(2, 1024, (tokens,))

    def fresh() -> Any:
        model = LlamaForCausalLM(harness._sglang_config(config), quant_config=None)
        model = model.float().eval()
        model.load_weights(harness._checkpoint_weights(hf, case))
        model.set_eagle3_layers_to_capture(IDS)
        return harness.Pair(case, layers, hf, model, input_ids, [])

    return fresh, input_ids


def stamp(work: Path, layers: int, hidden: int) -> Path:
    from eagle3_contracts.contract import CaptureContract
    from eagle3_contracts.stamp import Stamp, write_stamp

    draft = work / "draft"
    draft.mkdir(parents=True, exist_ok=True)
    (draft / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"]}))
    write_stamp(
        draft,
        Stamp(
            CaptureContract(tuple(IDS), layers, hidden, "as_listed"), trained_with="specforge-hf"
        ),
    )
    return draft


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ["SGLANG_USE_CPU_ENGINE"] = "1"
    os.environ["EAGLE3_CONTRACTS_GUARD"] = "warn"
    os.environ.pop("EAGLE3_CONTRACTS_DUMP", None)
    logging.getLogger("sglang").setLevel(logging.ERROR)
    import torch
    from sglang.srt.model_executor.hook_manager import register_forward_hooks

    from eagle3_contracts.integrations.sglang import forward_hooks, hooks
    from tests.engines.sglang import harness
    from tests.engines.sglang.test_guard_paths import _dispatch, _graph_runner, _model_runner

    torch.set_num_threads(1)
    fresh, input_ids = build(args.layers, args.hidden, args.tokens)
    draft = stamp(Path(tempfile.mkdtemp(prefix="e3-sglang-bench-")), args.layers, args.hidden)
    specs = forward_hooks(str(draft))

    def prefill(model: Any, ids: Any) -> float:
        batch = harness.forward_batch(ids, capture=True)
        start = time.process_time()
        with torch.no_grad():
            model.forward(ids, batch.positions, batch)
        return time.process_time() - start

    def graph_path(copy_: harness.Pair) -> tuple[float, float, int]:
        graph_runner = _graph_runner(copy_, max_tokens=1 << (args.tokens - 1).bit_length())
        model_runner = _model_runner(copy_, graph_runner)
        register_forward_hooks(model_runner.model, specs)  # finds model_runner: see the test
        start = time.process_time()
        assert _dispatch(graph_runner, copy_, copy_.input_ids) == "eager"
        first = time.process_time() - start
        start = time.process_time()
        paths = [_dispatch(graph_runner, copy_, copy_.input_ids) for _ in range(3)]
        later = (time.process_time() - start) / 3
        work.append(first / (first - hooks.session().seconds))  # type: ignore[union-attr]
        return first, later, paths.count("graph")

    names = ("off", "off_later", "guard", "later", "graph", "graph_later")
    rows: dict[str, list[float]] = {k: [] for k in names}
    replays: list[int] = []
    work: list[float] = []  # first prefill / (first prefill - the hooks' own CPU time)
    prefill(fresh().sglang, input_ids)  # warm-up
    for rep in range(args.reps):
        plain = fresh().sglang
        rows["off"].append(prefill(plain, input_ids))
        rows["off_later"].append(prefill(plain, input_ids))
        guarded = fresh().sglang
        hooks.reset()
        register_forward_hooks(guarded, specs)
        rows["guard"].append(prefill(guarded, input_ids))
        session = hooks.session()
        assert session is not None and session.verdict is not None and session.verdict.ok, (
            session and session.first_prefill
        )
        work.append(rows["guard"][-1] / (rows["guard"][-1] - session.seconds))
        rows["later"].append(prefill(guarded, input_ids))
        hooks.reset()
        first, later, replayed = graph_path(fresh())
        rows["graph"].append(first)
        rows["graph_later"].append(later)
        replays.append(replayed)
        hooks.reset()
        print(f"rep {rep} " + json.dumps({k: round(v[-1] * 1e3, 2) for k, v in rows.items()}))
    print(
        f"\nsglang LlamaForCausalLM L={args.layers} H={args.hidden}, prefill {args.tokens} "
        f"tokens, fp32 CPU, 1 thread, {args.reps} reps; median process time (ratio to no hooks):"
    )
    for name, base, label in (
        ("guard", "off", "first prefill, guard"),
        ("graph", "off", "prefill graph path: first prefill (eager, guard)"),
        ("later", "off_later", "later prefill, guard done"),
        ("graph_later", "off_later", "prefill graph path: later prefill (replayed)"),
    ):
        med, ref = statistics.median(rows[name]), statistics.median(rows[base])
        low = min(rows[name]) / min(rows[base])
        print(
            f"  {label:<50} {med * 1e3:8.2f} ms vs {ref * 1e3:8.2f} ms  {med / ref:.3f}x "
            f"(fastest vs fastest {low:.3f}x)"
        )
    print(
        "  the hooks' own CPU time in the guarded first prefill, same runs: first prefill / "
        f"(first prefill - hooks) = {statistics.median(work):.4f}x median, "
        f"{max(work):.4f}x worst of {len(work)}"
    )
    print(f"  later prefills replayed from the graph: {sum(replays)} of {3 * len(replays)}")


if __name__ == "__main__":
    main()
