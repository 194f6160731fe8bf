"""Control flow that a static graph can still express, translated as plain nodes.

- If with a constant condition (exporters' shape checks, function bodies' rank tests) is the branch it takes.
- Scan over a sequence of static length (LinearAttention's function body, exported RNN cells) is its body
  repeated once per step: each step's values renamed apart, the scanned inputs sliced, the states threaded
  through and the per-step outputs stacked.

Subgraph nodes read the outer scope by name (ONNX names are unique across subgraphs), so the copies need no
other renaming. Anything else (a run-time condition, Loop) stays refused by design.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import UnsupportedError, ValidationError
from .convert import Converter, attrs_of, where
from .tensors import to_array

# An unrolled Scan may hold at most this many nodes (steps x body nodes)
MAX_UNROLLED_NODES = 50_000


def static_translator(ctx: Converter, node: Any) -> Callable[[Converter, Any], None] | None:
    if node.op_type == "If" and node.input[0] in ctx.consts:
        return inline_branch
    if node.op_type == "Scan" and ctx.opset >= 9:
        return unroll_scan
    return None


def _graph_consts(ctx: Converter, graph: Any) -> dict[str, np.ndarray]:
    """The subgraph's initializers as arrays, by name (read once: a Scan's steps share them)."""
    return {t.name: to_array(t, ctx.base) for t in graph.initializer}


def inline_branch(ctx: Converter, node: Any) -> None:
    a = attrs_of(node)
    cond = np.asarray(ctx.consts[node.input[0]]).reshape(-1)
    if cond.size != 1:
        raise ValidationError(f"{where(node)}: the condition holds {cond.size} values, not 1")
    branch = a["then_branch" if bool(cond[0]) else "else_branch"]
    if len(branch.output) != len(node.output):
        raise ValidationError(
            f"{where(node)}: the branch has {len(branch.output)} outputs, the If {len(node.output)}"
        )
    ctx.consts.update(_graph_consts(ctx, branch))
    ctx.translate_as(node, list(branch.node))
    for out, sub in zip(node.output, branch.output):
        if out:
            _bind(ctx, node, out, sub.name)


def _bind(ctx: Converter, node: Any, out: str, src: str) -> None:
    if src in ctx.consts or src in ctx.vals:
        ctx.alias(out, src)
    else:
        raise ValidationError(f"{where(node)}: subgraph output {src!r} is never computed")


def _renamed(node: Any, rename: Callable[[str], str]) -> Any:
    new = type(node)()
    new.CopyFrom(node)
    del new.input[:]
    del new.output[:]
    new.input.extend(rename(i) for i in node.input)
    new.output.extend(rename(o) for o in node.output)
    new.name = rename(node.name or node.output[0])
    return new


def unroll_scan(ctx: Converter, node: Any) -> None:
    from onnx import helper

    a = attrs_of(node)
    body = a["body"]
    m = int(a["num_scan_inputs"])
    n_state = len(node.input) - m
    n_scan_out = len(body.output) - n_state
    if n_state < 0 or len(body.input) != len(node.input) or n_scan_out < 0:
        raise ValidationError(f"{where(node)}: the body's inputs and outputs do not fit the Scan's")
    if any(at.HasField("g") or len(at.graphs) for sub in body.node for at in sub.attribute):
        raise UnsupportedError("a Scan whose body holds subgraphs")
    in_axes = [int(v) for v in a.get("scan_input_axes", [0] * m)]
    in_dirs = [int(v) for v in a.get("scan_input_directions", [0] * m)]
    out_axes = [int(v) for v in a.get("scan_output_axes", [0] * n_scan_out)]
    out_dirs = [int(v) for v in a.get("scan_output_directions", [0] * n_scan_out)]
    scanned = node.input[n_state:]
    shapes = [ctx.static_shape(s, "Scan") for s in scanned]
    in_axes = [ax % len(sh) if sh else 0 for ax, sh in zip(in_axes, shapes)]
    steps = {sh[ax] for ax, sh in zip(in_axes, shapes)}
    if len(steps) != 1:
        raise ValidationError(f"{where(node)}: the scanned inputs have different lengths {sorted(steps)}")
    t_len = steps.pop()
    if t_len * max(1, len(body.node)) > MAX_UNROLLED_NODES:
        raise UnsupportedError(
            f"a Scan of {t_len} steps over {len(body.node)} nodes (over {MAX_UNROLLED_NODES})"
        )
    prefix = f"{node.output[0] or node.name}/Scan/"
    local = (
        {v.name for v in body.input}
        | {o for sub in body.node for o in sub.output}
        | {t.name for t in body.initializer}
    )
    nodes: list[Any] = []
    states = list(node.input[:n_state])
    per_step: list[list[str]] = [[] for _ in range(n_scan_out)]
    inits = _graph_consts(ctx, body)
    for t in range(t_len):

        def rename(name: str, t: int = t) -> str:
            return f"{prefix}{t}/{name}" if name in local else name

        for name, arr in inits.items():
            ctx.consts[rename(name)] = arr
        for i, vi in enumerate(body.input):
            src = states[i] if i < n_state else ""
            if i >= n_state:
                j = i - n_state
                k = t if in_dirs[j] == 0 else t_len - 1 - t
                idx = f"{prefix}{t}/index{j}"
                ctx.set_const(idx, np.array(k, np.int64))
                src = scanned[j]
                nodes.append(helper.make_node("Gather", [src, idx], [rename(vi.name)], axis=in_axes[j]))
            else:
                nodes.append(helper.make_node("Identity", [src], [rename(vi.name)]))
        nodes.extend(_renamed(sub, rename) for sub in body.node)
        states = [rename(o.name) for o in body.output[:n_state]]
        for j, o in enumerate(body.output[n_state:]):
            per_step[j].append(rename(o.name))
    for out, src in zip(node.output[:n_state], states):
        if out:
            nodes.append(helper.make_node("Identity", [src], [out]))
    for j, out in enumerate(node.output[n_state:]):
        if not out:
            continue
        seq = per_step[j] if out_dirs[j] == 0 else per_step[j][::-1]
        axes = f"{prefix}out_axis{j}"
        ctx.set_const(axes, np.array([out_axes[j]], np.int64))
        parts = []
        for t, src in enumerate(seq):
            parts.append(f"{prefix}{t}/stacked{j}")
            if ctx.opset >= 13:
                nodes.append(helper.make_node("Unsqueeze", [src, axes], [parts[-1]]))
            else:  # axes were an attribute
                nodes.append(helper.make_node("Unsqueeze", [src], [parts[-1]], axes=[out_axes[j]]))
        nodes.append(helper.make_node("Concat", parts, [out], axis=out_axes[j]))
    ctx.translate_as(node, nodes)
