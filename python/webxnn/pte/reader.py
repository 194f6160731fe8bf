"""Run ExecuTorch programs (`.pte`) whose work is one XnnpackBackend delegate: find the payload, resolve its
named data, and hand the runtime a self-contained `.xnn` blob. Anything else in the program (several
delegates or methods, operators ExecuTorch runs itself) is refused saying what is there."""

from __future__ import annotations

from ..errors import UnsupportedError
from ..xnn.reader import PlanContents, extract_from_pte, program_contents, read
from ..xnn.writer import serialize


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


def payload_for_runtime(pte: bytes | bytearray | memoryview, where: str = "the .pte") -> bytes:
    """The `.xnn` blob that runs the program `pte`: its XnnpackBackend payload, with constants kept in the
    program's named data (ExecuTorch >= 0.6) copied in. UnsupportedError unless the program is exactly one
    method that makes one call into one XnnpackBackend delegate."""
    plans = program_contents(pte)
    ok = (
        len(plans) == 1
        and len(plans[0].delegates) == 1
        and "xnnpack" in plans[0].delegates[0].lower()
        and set(plans[0].instructions) <= {"DelegateCall"}
        and plans[0].instructions.get("DelegateCall", 0) <= 1
    )
    if not ok:
        raise UnsupportedError(
            f"{where}: webxnn runs ExecuTorch programs that are one method making one XnnpackBackend "
            f"delegate call; this one has {len(plans)} method(s): {_describe(plans)}. Export the model "
            "to ONNX and compile that, or partition it wholly to XNNPACK"
        )
    payload, named = extract_from_pte(pte)
    g = read(payload, named)
    missing = [r.named_key for r, c in zip(g.constant_refs, g.constants) if r.named_key and c is None]
    if missing:
        raise UnsupportedError(
            f"{where}: the payload's constants {missing[:5]} are not in the program's named data (kept in "
            "a separate .ptd file?); webxnn reads only what the .pte holds"
        )
    if any(r.named_key for r in g.constant_refs):
        return serialize(g)  # named constants copied into the blob's own constant segment
    return payload


__all__ = ["payload_for_runtime", "program_contents"]
