"""Validating a big dump costs a small, fixed amount of memory (a 4 GB dump's NaN check once
copied the whole tensor). Measured in a child process: anonymous memory, sampled during
``read_dump``; the dump's own pages are a read-only file mapping, not a copy."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

from eagle3_contracts.dumps.format import FORMAT, VALUE_CHUNK

H, K = 1024, 3
SIZE = 256 << 20  # bytes of states
# The fixed budget: a float32 copy of one strided chunk (16 MiB), its masks and torch's own
# allocations: measured 65-76 MiB for 256 MiB and 2 GiB dumps alike. Copying the whole tensor
# (the bug this guards against) costs at least SIZE.
BUDGET = 6 * VALUE_CHUNK * 4

MEASURE = """
import re, sys, threading, time
import torch
from eagle3_contracts.dumps.format import read_dump

def anon():
    return int(re.search(r"RssAnon:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) << 10

torch.set_num_threads(1)
base = anon(); peak = [base]; done = []
def watch():
    while not done:
        peak[0] = max(peak[0], anon()); time.sleep(0.001)
thread = threading.Thread(target=watch); thread.start()
dump = read_dump(sys.argv[1])
done.append(1); thread.join()
assert dump.num_segments == 3 and dump.num_tokens > 0
print(peak[0] - base)
"""


def _write(path: Path) -> None:
    tokens = SIZE // (K * H * 4)
    states, ids = tokens * K * H * 4, tokens * 8
    meta = {
        "format": FORMAT,
        "layer_ids": "[2, 30, 58]",
        "convention": "canonical",
        "system": "memory test",
        "dtype": "float32",
        "hidden_size": str(H),
        "layout": "concatenated",
        "segments": '["hidden_states"]',
    }
    header = {
        "__metadata__": meta,
        "hidden_states": {"dtype": "F32", "shape": [1, tokens, K * H], "data_offsets": [0, states]},
        "input_ids": {"dtype": "I64", "shape": [1, tokens], "data_offsets": [states, states + ids]},
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    chunk = struct.pack("<f", 0.5) * (1 << 20)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for _ in range(states // len(chunk)):
            fh.write(chunk)
        fh.write(chunk[: states % len(chunk)])
        fh.write(bytes(ids))


def test_validating_a_dump_takes_a_small_fraction_of_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    _write(path)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    extra = int(done.stdout.strip().splitlines()[-1])
    assert BUDGET < SIZE // 2
    assert extra < BUDGET, (
        f"read_dump took {extra >> 20} MiB of anonymous memory for a {SIZE >> 20} MiB dump "
        f"(budget {BUDGET >> 20} MiB)"
    )
