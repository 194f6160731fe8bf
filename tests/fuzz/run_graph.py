"""What every harness does with an input that was accepted: compile it, load the blob, run it on zeros when
the inputs and the arena are small (a fuzzer must not spend its time on a model that is merely large)."""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_INPUT_BYTES = 16 << 20
MAX_ARENA_BYTES = 64 << 20
# A graph whose constants together exceed this is not compiled: the blob must hold them, so compiling a
# declared f32[1e9] constant needs 4 GB however it was declared (an allocation the model does need).
MAX_CONST_BYTES = 256 << 20


def zeros_for(p: Any) -> list[np.ndarray] | None:
    """Zero inputs for Program `p`, or None when they would exceed MAX_INPUT_BYTES."""
    total = 0
    arrs = []
    for i in p.inputs:
        n = int(np.prod(i.shape, dtype=np.int64)) * np.dtype(i.dtype).itemsize
        total += n
        if total > MAX_INPUT_BYTES:
            return None
        arrs.append(np.zeros(i.shape, i.dtype))
    return arrs


def run_program(p: Any) -> bool:
    """Run `p` once on zeros when it is small enough; whether it ran."""
    if p.peak_arena_bytes > MAX_ARENA_BYTES:
        return False
    xs = zeros_for(p)
    if xs is None:
        return False
    outs = p.run(xs)
    assert len(outs) == len(p.outputs)
    return True


def compile_and_run(g: Any) -> None:
    import webxnn
    from webxnn.dtypes import dtype_size

    if any(not all(isinstance(d, int) for d in op.shape) for op in g.inputs.values()):
        return  # symbolic dims: importing it was the test
    const_bytes = sum(int(np.prod(c.shape, dtype=object)) * dtype_size(c.dtype) for c in g.consts.values())
    if const_bytes > MAX_CONST_BYTES:
        return
    run_program(webxnn.load(webxnn.compile(g), threads=1))
