"""Serve token-id prompts with speculative decoding in a fresh process (the plugin reads its
environment once per process)::

    python -m tests.engines.vllm.serve_once TARGET DRAFT [METHOD|none] [--runner v2] [--prompts 2]
        [--dummy-run] [--graph-standin]

Prints ``SERVED <token ids of the first prompt>`` on success, ``ENGINE FAILED <error>``
(exit 3) otherwise, and with ``--graph-standin`` ``REPLAYS <n>``: the steps that ran as a
(stand-in) graph replay. The engine core runs in-process unless
VLLM_ENABLE_V1_MULTIPROCESSING=1 (vLLM's default). ``--runner v2`` runs model runner V2 on
CPU (``tests/engines/vllm/v2_cpu.py``: its stand-ins are named there).
"""

from __future__ import annotations

import argparse
import sys

# the second prompt is shorter: V2 orders a batch's prefills by token count
# (model_runner.py sort_batch_req_ids), so it leads the batch although submitted second
SHORT_PROMPT = [5, 23, 37, 61, 83]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("draft")
    parser.add_argument("method", nargs="?", default="eagle3")
    parser.add_argument("--runner", choices=("v1", "v2"), default="v1")
    parser.add_argument("--prompts", type=int, choices=(1, 2), default=1)
    parser.add_argument("--dummy-run", action="store_true")
    parser.add_argument("--graph-standin", action="store_true")
    args = parser.parse_args(argv)
    if args.runner == "v2":
        from tests.engines.vllm.v2_cpu import prepare_v2_process

        prepare_v2_process()
    from tests.engines.vllm.harness import PROMPT, serve_prompt

    spec: dict[str, object] | None = {"method": args.method, "num_speculative_tokens": 2}
    if args.method == "none":  # no speculative decoding
        spec = None
    elif args.method == "ngram":
        spec.update(prompt_lookup_max=3, prompt_lookup_min=1)
    else:
        spec["model"] = args.draft
    prompts = [PROMPT, SHORT_PROMPT][: args.prompts]
    try:
        tokens, replays = serve_prompt(
            args.target,
            spec,
            prompts=prompts,
            dummy_run=args.dummy_run,
            graph_standin=args.graph_standin,
        )
    except Exception as exc:
        print(f"ENGINE FAILED {type(exc).__name__}: {' '.join(str(exc).split())[:500]}", flush=True)
        return 3
    print(f"SERVED {tokens}", flush=True)
    if args.graph_standin:
        print(f"REPLAYS {replays}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
