"""Pass 5, select: turn each WebNN-level node into XNN nodes with its `@lowers` rule.

Every node that cannot be lowered is collected first, so the error names all of them at once (op, count,
node ids, and the reason when a rule refused a particular configuration)."""

from __future__ import annotations

from collections import defaultdict

from ..errors import UnsupportedError
from .ir import LGraph, LNode, is_xnn_kind
from .registry import LOWER_RULES, RuleCtx


def _node_id(node: LNode) -> str:
    return node.src.rsplit(":", 1)[0]


def select(lg: LGraph) -> LGraph:
    missing: dict[str, list[str]] = defaultdict(list)
    refused: list[str] = []
    out: list[LNode] = []
    ctx = RuleCtx(lg, out)
    for node in lg.nodes:
        if is_xnn_kind(node.kind):
            out.append(node)
            continue
        rule = LOWER_RULES.get(node.kind)
        if rule is None:
            missing[node.kind].append(_node_id(node))
            continue
        ctx.src = node.src
        mark = len(out)
        try:
            rule(ctx, node)
        except UnsupportedError as e:
            del out[mark:]
            refused.append(str(e))
    if missing or refused:
        parts = []
        if missing:
            total = sum(len(v) for v in missing.values())
            ops = "; ".join(
                f"{op} ×{len(ids)} ({', '.join(repr(i) for i in ids[:8])}{', …' if len(ids) > 8 else ''})"
                for op, ids in sorted(missing.items())
            )
            parts.append(f"{total} node(s) use ops webxnn cannot lower yet: {ops}")
        parts.extend(refused)
        raise UnsupportedError("; ".join(parts))
    lg.nodes = out
    return lg
