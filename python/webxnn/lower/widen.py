"""Pass 1b, widen: float16 graphs compute in float32.

XNN's float nodes are defined on fp32 here (the runtime's fp16 support is storage, not arithmetic), so:
  * each float16 graph input gets an XNNConvert fp16 → fp32 right after it (readers read the fp32 twin);
  * each float16 graph output gets an XNNConvert fp32 → fp16 right before it;
  * float16 constants become float32 constants (exact) tagged `half`, which `emit` stores as FP16 data
    followed by an XNNConvert, so the blob keeps half-size weights;
  * every other float16 value (and `cast` to float16) becomes float32.
Per-op fp16 rounding is not emulated: results are the fp32 results rounded once at the output, which is at
least as accurate as WebNN's fp16 tolerances ask for.
"""

from __future__ import annotations

import numpy as np

from .ir import LGraph, LNode

HALF, SINGLE = "float16", "float32"


def widen(lg: LGraph) -> LGraph:
    half_outputs = {v for _, v in lg.outputs if lg.values[v].dtype == HALF}
    head: list[LNode] = []
    for name in lg.inputs:
        v = lg.values[name]
        if v.dtype != HALF:
            continue
        wide = lg.add_value(f"{name}.f32", SINGLE, v.shape)
        lg.replace_uses(name, wide)
        head.append(LNode("XNNConvert", {"input_id": name}, [wide], {}, f"{name}:input"))
    for name, v in lg.values.items():
        if v.dtype != HALF or name in lg.inputs:
            continue
        v.dtype = SINGLE
        if v.const is not None:
            v.const = np.asarray(v.const.astype(np.float32), order="C")
            v.half = True
    for node in lg.nodes:
        if node.kind == "cast" and node.attrs.get("type") == HALF:
            node.attrs["type"] = SINGLE
    lg.nodes = head + lg.nodes
    outputs = []
    for oname, vname in lg.outputs:
        if vname in half_outputs or (vname in lg.inputs and lg.values[vname].dtype == HALF):
            v = lg.values[vname]
            narrow = lg.add_value(f"{oname}.f16", HALF, v.shape)
            lg.nodes.append(LNode("XNNConvert", {"input_id": vname}, [narrow], {}, f"{oname}:output"))
            vname = narrow
        outputs.append((oname, vname))
    lg.outputs = outputs
    return lg


def store_half(lg: LGraph) -> LGraph:
    """For `emit`: every constant tagged `half` becomes an FP16 constant plus an XNNConvert to the float32
    value the nodes read (the runtime evaluates all-constant nodes once, at load)."""
    used = {i for n in lg.nodes for i in n.inputs}
    head: list[LNode] = []
    for name in list(lg.values):
        v = lg.values[name]
        if not v.half or v.const is None or v.dtype != SINGLE or name not in used:
            continue
        data16 = v.const.astype(np.float16)
        if not np.array_equal(data16.astype(np.float32), v.const, equal_nan=True):
            continue  # no longer exactly an fp16 value (defensive: keep it fp32)
        h = lg.add_const(f"{name}.f16", np.asarray(data16, order="C"), HALF, layout=v.layout)
        v.const = None
        head.append(LNode("XNNConvert", {"input_id": h}, [name], {}, f"{name}:const"))
    lg.nodes = head + lg.nodes
    return lg


# nodes that only move data: they work on fp16 as well as fp32, so fp16 → fp32 → (these) → fp16 needs no
# conversion at all
DATA_MOVEMENT = frozenset(
    {
        "XNNStaticReshape",
        "XNNStaticTranspose",
        "XNNStaticSlice",
        "XNNCopy",
        "XNNConcatenate2",
        "XNNConcatenate3",
        "XNNConcatenate4",
        "XNNConcatenate5",
        "WXExpand",
        "WXTile",
        "WXReverse",
        "WXSlice",
        "WXGather",
    }
)


def _is_convert(lg: LGraph, node: LNode, src: str, dst: str) -> bool:
    return (
        node.kind == "XNNConvert"
        and lg.values[node.operands["input_id"]].dtype == src
        and lg.values[node.outputs[0]].dtype == dst
    )


def _data_inputs(node: LNode) -> list[str]:
    return [v for k, v in node.operands.items() if v is not None and k != "indices_id"]


def narrow(lg: LGraph) -> LGraph:
    """Pass 7b (on XNN nodes): data movement between widened fp16 values runs on the fp16 data itself.

    A value is narrowable when it is an fp16 input's fp32 twin, a `half` constant, or the output of a
    data-movement node whose data inputs are all narrowable; it is narrowed when, besides, every reader is
    an fp32 → fp16 convert or a data-movement node whose output is narrowed (so nothing computes on it)."""
    producer = lg.producers()
    readers = lg.consumers()
    outputs = lg.output_values()
    narrowable: set[str] = set()
    for node in lg.nodes:
        if _is_convert(lg, node, HALF, SINGLE):
            narrowable.add(node.outputs[0])
        elif node.kind in DATA_MOVEMENT and all(
            i in narrowable or (lg.values[i].half and lg.values[i].const is not None)
            for i in _data_inputs(node)
        ):
            narrowable.update(o for o in node.outputs if lg.values[o].dtype == SINGLE)
    narrowable.update(n for n, v in lg.values.items() if v.half and v.const is not None)
    narrowed: set[str] = set()

    def decide(name: str) -> None:
        if name not in narrowable or name in outputs:
            return
        rs = readers.get(name, [])
        if rs and all(
            _is_convert(lg, r, SINGLE, HALF)
            or (r.kind in DATA_MOVEMENT and name in _data_inputs(r) and all(o in narrowed for o in r.outputs))
            for r in rs
        ):
            narrowed.add(name)

    # every reader comes after its value's producer: decide from the last node back, constants last
    for node in reversed(lg.nodes):
        for o in node.outputs:
            decide(o)
    for name, v in lg.values.items():
        if v.const is not None:
            decide(name)
    if not narrowed:
        return lg
    for name in narrowed:
        v = lg.values[name]
        prod = producer.get(name)
        if prod is not None and _is_convert(lg, prod, HALF, SINGLE):
            lg.replace_uses(name, prod.operands["input_id"])
        elif v.const is not None:
            v.const, v.half, v.dtype = np.asarray(v.const.astype(np.float16), order="C"), False, HALF
        else:
            v.dtype = HALF
    for node in lg.nodes:  # converts to fp16 that now read fp16: their readers read the input
        if (
            node.kind == "XNNConvert"
            and lg.values[node.operands["input_id"]].dtype == HALF
            and lg.values[node.outputs[0]].dtype == HALF
        ):
            lg.replace_uses(node.outputs[0], node.operands["input_id"])
    return lg
