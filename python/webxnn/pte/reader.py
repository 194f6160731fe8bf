"""Run ExecuTorch programs (`.pte`): find the XnnpackBackend payload, resolve its named data, and hand the
runtime a self-contained `.xnn` blob. A method of several delegate calls with portable operators between them
(what the XnnpackPartitioner leaves for a transformer) is merged into one webxnn graph (`merge.py`); operators
webxnn does not map, and several methods or control flow, are refused saying what is there."""

from __future__ import annotations

from ..errors import FormatError, UnsupportedError
from ..xnn.ir import XnnGraph
from ..xnn.reader import PlanContents, extract_from_pte, open_pte, program_contents, read
from ..xnn.writer import InvalidIRError, serialize


def _describe(plans: list[PlanContents]) -> str:
    parts = []
    for p in plans:
        bits = []
        if p.delegates:
            bits.append("delegates " + ", ".join(p.delegates))
        if p.kernel_ops:
            bits.append(f"{len(p.kernel_ops)} non-delegated operator(s): " + ", ".join(p.kernel_ops[:8]))
            if len(p.kernel_ops) > 8:
                bits[-1] += ", ..."
        other = {k: n for k, n in p.instructions.items() if k not in ("DelegateCall", "KernelCall")}
        if other:
            bits.append(", ".join(f"{n} {k}" for k, n in other.items()))
        parts.append(f"method {p.name!r}: " + ("; ".join(bits) or "no instructions"))
    return " | ".join(parts) or "none"


def is_one_delegate_call(pte: bytes | bytearray | memoryview) -> bool:
    """Whether the program is one method making one call into one XnnpackBackend delegate (what the C++
    loader runs in place; anything else goes through `payload_for_runtime`)."""
    plans = program_contents(pte)
    return (
        len(plans) == 1
        and len(plans[0].delegates) == 1
        and "xnnpack" in plans[0].delegates[0].lower()
        and set(plans[0].instructions) <= {"DelegateCall"}
        and plans[0].instructions.get("DelegateCall", 0) <= 1
    )


def payload_for_runtime(pte: bytes | bytearray | memoryview, where: str = "the .pte") -> bytes:
    """The `.xnn` blob that runs the program `pte`: its XnnpackBackend payload, with constants kept in the
    program's named data (ExecuTorch >= 0.6) copied in; or, for a method that also runs portable operators,
    one graph merging its delegates and those operators. UnsupportedError (naming what is there) for
    programs webxnn cannot express."""
    if not is_one_delegate_call(pte):
        return _merged(pte, where)
    payload, named = extract_from_pte(pte)
    g = read(payload, named)
    missing = [r.named_key for r, c in zip(g.constant_refs, g.constants) if r.named_key and c is None]
    if missing:
        raise UnsupportedError(
            f"{where}: the payload's constants {missing[:5]} are not in the program's named data (kept in "
            "a separate .ptd file?); webxnn reads only what the .pte holds"
        )
    if any(r.named_key for r in g.constant_refs):
        return _serialize(g, where)  # named constants copied into the blob's own constant segment
    return payload


def _serialize(g: XnnGraph, where: str) -> bytes:
    """The blob of a graph read (and maybe merged) from a `.pte`. The writer's consistency check is the last
    line against a damaged payload the readers let through: its finding is the file's fault, said as such."""
    try:
        return serialize(g)
    except InvalidIRError as e:
        raise FormatError(f"{where}: its XnnpackBackend payload is inconsistent: {e}") from None


def _merged(pte: bytes | bytearray | memoryview, where: str) -> bytes:
    from .merge import merge
    from .program import read_method

    f = open_pte(pte)
    try:
        method = read_method(f, where)
        return _serialize(merge(f, method, where), where)
    except UnsupportedError as e:
        plans = program_contents(pte)
        raise UnsupportedError(f"{e}. The program has {len(plans)} method(s): {_describe(plans)}") from None


__all__ = ["is_one_delegate_call", "payload_for_runtime", "program_contents"]
