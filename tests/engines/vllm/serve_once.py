"""Serve one token-id prompt with speculative decoding in a fresh process (the plugin reads its
environment once per process): ``python -m tests.engines.vllm.serve_once TARGET DRAFT [METHOD]``.

Prints ``SERVED <token ids>`` on success, ``ENGINE FAILED <error>`` (exit 3) otherwise. The
engine core runs in-process unless VLLM_ENABLE_V1_MULTIPROCESSING=1 (vLLM's default).
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from tests.engines.vllm.harness import serve_prompt

    target, draft, *rest = argv
    method = rest[0] if rest else "eagle3"
    spec: dict[str, object] = {"method": method, "num_speculative_tokens": 2}
    if method == "ngram":
        spec.update(prompt_lookup_max=3, prompt_lookup_min=1)
    else:
        spec["model"] = draft
    try:
        tokens = serve_prompt(target, spec)
    except Exception as exc:
        print(f"ENGINE FAILED {type(exc).__name__}: {' '.join(str(exc).split())[:500]}", flush=True)
        return 3
    print(f"SERVED {tokens}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
