"""Mutated ExecuTorch programs (`.pte`). Seeds: programs `webxnn.to_pte` writes (payload in a segment and
inline; a conv, a two-in two-out graph, the bundled example with its weights), foreign-style programs whose
constants live in the program's named data (tests/test_xnn_reader.py's builder), ExecuTorch's own export of
a small encoder (tests/data/et_tiny_encoder.pte: delegate calls with kernel calls between them, the merged
path), and ExecuTorch's own golden program from the shared conformance data when present. Mutations,
structure-aware where the format has structure:

- the extended header ("eh00": program size, segment base, segment data size) and the payload's XH00 header
  (flatbuffer and constant-data offsets and sizes) overwritten with extreme or off-by-some values;
- the payload itself mutated in place with the blob mutator (tests/fuzz/blobs.py), same length, so the program
  around it stays intact and the damage reaches the payload's verifier;
- byte flips, 32-bit words set to extremes (mostly in the program flatbuffer, where the offsets are),
  truncation, bytes inserted, and a segment or named-data entry cut short.

Each case goes through `webxnn.load` (the C++ .pte reader, from bytes and now and then from a mapped file),
the Python reader (`payload_for_runtime`), and, when it loads and is small, one run on zeros."""

from __future__ import annotations

import shutil
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np

from .blobs import mutate as mutate_blob

_TESTS = Path(__file__).resolve().parents[1]
GOLDEN = _TESTS.parents[1] / "shared" / "conformance" / "executorch"
_EXTREMES = [0, 1, 8, 40, 127, 128, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, (1 << 64) - 1]

SEED_GRAPHS = [
    """webnn_graph "conv_relu" v1 {
  inputs { x: f32[1, 2, 5, 5]; }
  consts { w: f32[3, 2, 3, 3] @scalar(0.25); b: f32[3] @scalar(-0.5); }
  nodes { c = conv2d(x, w, bias=b, padding=[1, 1, 1, 1]); r = relu(c); }
  outputs { r; }
}""",
    """webnn_graph "two" v1 {
  inputs { a: f32[2, 3]; b: f32[2, 3]; }
  nodes { s = add(a, b); m = mul(a, b); }
  outputs { m; s; }
}""",
]


def seeds(golden: bool = True) -> list[bytes]:
    """The seed programs; each loads and runs. golden: also ExecuTorch's golden files from ../shared, when
    that is present (tests that pin case numbers leave them out, so the cases do not depend on where the clone
    is)."""
    import webxnn

    if str(_TESTS) not in sys.path:  # run as `python -m tests.fuzz`: the test helpers live beside us
        sys.path.insert(0, str(_TESTS))
    from test_xnn_reader import QS, Q, W, build_pte, foreign_payload

    out = []
    for text in SEED_GRAPHS:
        for inline in (False, True):
            out.append(webxnn.to_pte(webxnn.parse(text), inline=inline))
    example = Path(webxnn.__file__).parent / "examples" / "tiny_cnn.webnn"
    out.append(webxnn.to_pte(example))
    for inline in (False, True):
        out.append(build_pte(foreign_payload("named"), {"w": W, "q": Q, "scale_q": QS}, inline))
    out.append((_TESTS / "data" / "et_tiny_encoder.pte").read_bytes())
    if golden and GOLDEN.is_dir():
        out += [p.read_bytes() for p in sorted(GOLDEN.glob("*.pte"))]
    return out


def _payload_span(pte: bytes) -> tuple[int, int] | None:
    """(start, end) of the XNNPACK payload inside `pte` (from its XH00 header), or None."""
    at = pte.find(b"XH00")
    if at < 4:
        return None
    start = at - 4
    if len(pte) < start + 30:
        return None
    _, _, fb_off, fb_size, c_off, c_size = struct.unpack_from("<4s4sIIQQ", pte, start)
    end = start + max(fb_off + fb_size, c_off + c_size)
    return (start, min(end, len(pte)))


def _put(b: bytearray, pos: int, fmt: str, rng: np.random.Generator) -> None:
    """Overwrite the field of struct format `fmt` at `pos` with an extreme or a nearby value."""
    size = struct.calcsize(fmt)
    if pos + size > len(b):
        return
    old = struct.unpack_from(fmt, b, pos)[0]
    limit = 1 << (8 * size)
    new = _pick(rng, _EXTREMES) if rng.random() < 0.6 else old + int(rng.integers(-130, 131))
    struct.pack_into(fmt, b, pos, new % limit)


def _pick(rng: np.random.Generator, seq: list[int]) -> int:
    return seq[int(rng.integers(0, len(seq)))]


def mutate(pte: bytes, rng: np.random.Generator) -> bytes:
    b = bytearray(pte)
    kind = int(rng.integers(0, 8))
    span = _payload_span(pte)
    if kind == 0 and pte[8:12] == b"eh00":  # the extended header: program size, segment base, data size
        _put(b, 8 + 8 + 8 * int(rng.integers(0, 3)), "<Q", rng)
    elif kind == 1 and span:  # the payload's XH00 header: flatbuffer and constant-data offsets and sizes
        field = _pick(rng, [(8, "<I"), (12, "<I"), (16, "<Q"), (24, "<Q")])
        _put(b, span[0] + field[0], field[1], rng)
    elif kind == 2 and span:  # the payload, mutated like a blob but kept at its length
        s, e = span
        inner = mutate_blob(bytes(b[s:e]), rng)
        b[s:e] = inner[: e - s].ljust(e - s, b"\0")
    elif kind == 3:  # flip 1..4 bytes, mostly in the program flatbuffer (the first ~1 KiB)
        for _ in range(int(rng.integers(1, 5))):
            pos = int(rng.integers(0, min(len(b), 1024) if rng.random() < 0.7 else len(b)))
            b[pos] ^= 1 << int(rng.integers(0, 8))
    elif kind == 4:  # a 32-bit word to an extreme (vtable offsets, vector lengths, segment indices)
        pos = int(rng.integers(0, max(1, min(len(b), 1024) - 4))) & ~3
        _put(b, pos, "<I", rng)
    elif kind == 5:  # truncate (often inside a segment or the named data)
        del b[int(rng.integers(0, len(b))) :]
    elif kind == 6:  # insert bytes: every offset after them is off
        pos = int(rng.integers(0, len(b)))
        b[pos:pos] = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
    else:  # random bytes at random places anywhere
        for _ in range(int(rng.integers(1, 9))):
            b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
    return bytes(b)


class Workdir:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="webxnn-fuzz-pte-"))

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def check(work: Workdir, data: bytes, from_file: bool) -> None:
    """Both readers; an error that is not a WebxnnError wins over one that is, so no finding is hidden."""
    from webxnn import runtime
    from webxnn.errors import WebxnnError
    from webxnn.pte.reader import payload_for_runtime

    from .run_graph import run_program

    errors: list[Exception] = []
    try:
        payload_for_runtime(data)
    except Exception as e:  # noqa: BLE001 - sorted below
        errors.append(e)
    try:
        if from_file:  # the C++ reader on a mapped file
            path = work.root / "m.pte"
            path.write_bytes(data)
            p = runtime.load(path, threads=1)
        else:
            p = runtime.load(data, threads=1)
        run_program(p)
    except Exception as e:  # noqa: BLE001 - sorted below
        errors.append(e)
    errors.sort(key=lambda e: isinstance(e, WebxnnError))
    if errors:
        raise errors[0]
