"""Mutated `.xnn` blobs: byte flips and random bytes (mostly in the flatbuffer, where the structure is),
truncation, inserted bytes and 32-bit words overwritten with extreme values, applied to valid blobs (the
builders of tests/test_hostile_blobs.py and tests/test_runtime_util.py, plus an ExecuTorch payload from the
shared conformance data when present). Each goes through `webxnn.load` and, when small, one run on zeros."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np

_TESTS = Path(__file__).resolve().parents[1]


def mutate(blob: bytes, rng: np.random.Generator) -> bytes:
    b = bytearray(blob)
    kind = rng.integers(0, 6)
    if kind <= 2:  # flip 1..4 bytes (mostly in the flatbuffer, where the structure is)
        for _ in range(int(rng.integers(1, 5))):
            pos = int(rng.integers(0, len(b)))
            b[pos] = int(rng.integers(0, 256)) if kind == 0 else b[pos] ^ (1 << int(rng.integers(0, 8)))
    elif kind == 3:  # truncate
        del b[int(rng.integers(0, len(b))) :]
    elif kind == 4:  # insert bytes
        pos = int(rng.integers(0, len(b)))
        b[pos:pos] = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
    else:  # overwrite a 32-bit word with an extreme value
        pos = int(rng.integers(0, max(1, len(b) - 4)))
        b[pos : pos + 4] = struct.pack(
            "<I", int(rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 16, 255]))
        )
    return bytes(b)


def valid_blobs() -> list[bytes]:
    """The seed blobs (the same corpus test_hostile_blobs.py mutates)."""
    if str(_TESTS) not in sys.path:  # run as `python -m tests.fuzz`: the test helpers live beside us
        sys.path.insert(0, str(_TESTS))
    from test_hostile_blobs import valid_blobs as seeds

    return seeds()


def check(blob: bytes) -> None:
    from webxnn import runtime

    from .run_graph import run_program

    run_program(runtime.load(blob, threads=1))
