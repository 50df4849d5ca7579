"""Exit 2 with one line when torch sees no CUDA device.

``tox -e gpu`` runs this before pytest: without it a GPU run on a host with no visible device
passes with every ``gpu`` test skipped, which reads as "the GPU goldens hold" when nothing was
compared. On a CUDA host it prints the device it found (the goldens name it too) and exits 0.
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        import torch
    except ImportError as exc:
        print(f"tox -e gpu: torch cannot be imported ({exc})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        build = torch.version.cuda or "none (a CPU build)"
        print(
            f"tox -e gpu: no CUDA device visible (torch {torch.__version__}, CUDA build {build}, "
            "torch.cuda.is_available() is False): run it on a GPU host; the CPU suite is "
            "`python -m pytest`",
            file=sys.stderr,
        )
        return 2
    name = torch.cuda.get_device_name(0)
    print(f"tox -e gpu: {torch.cuda.device_count()} CUDA device(s), the first {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
