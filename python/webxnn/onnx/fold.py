"""Constant folding: evaluate an ONNX node whose inputs are all known constants.

Shape-chain ops (Shape → Gather → Concat → Reshape, Range, ConstantOfShape, ...) take fast numpy paths;
anything else goes through onnx's reference evaluator for that single node at the model's opset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from .tensors import NP_OF_ONNX

# Never folded even with constant inputs: dequantizing constant weights must stay visible to lowering
# (QDQ), and these are stateful or random.
NO_FOLD = frozenset(
    {
        "DequantizeLinear",
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
        "If",
        "Loop",
        "Scan",
    }
)

FoldFn = Callable[[Any, list[Any], dict[str, Any], int], list[np.ndarray]]
_FAST: dict[str, FoldFn] = {}


def _fast(*ops: str) -> Callable[[FoldFn], FoldFn]:
    def deco(fn: FoldFn) -> FoldFn:
        for op in ops:
            _FAST[op] = fn
        return fn

    return deco


def _axes(attrs: dict[str, Any], args: list[Any], idx: int) -> list[int] | None:
    if len(args) > idx and args[idx] is not None:
        return [int(a) for a in np.asarray(args[idx]).reshape(-1)]
    a = attrs.get("axes")
    return None if a is None else [int(v) for v in a]


_BIN = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Equal": np.equal,
    "Less": np.less,
    "Greater": np.greater,
    "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
}


@_fast(*_BIN)
def _binary(node, args, attrs, opset):
    r = _BIN[node.op_type](args[0], args[1])
    if r.dtype != np.bool_:
        r = r.astype(np.result_type(args[0], args[1]), copy=False)
    return [r]


@_fast("Div")
def _div(node, args, attrs, opset):
    a, b = args
    if np.issubdtype(a.dtype, np.integer):
        return [np.trunc(a / b).astype(a.dtype)]  # ONNX integer Div truncates
    return [(a / b).astype(a.dtype, copy=False)]


@_fast("Shape")
def _shape(node, args, attrs, opset):
    dims = list(np.asarray(args[0]).shape)
    start, end = int(attrs.get("start", 0)), attrs.get("end")
    return [np.array(dims[start : None if end is None else int(end)], dtype=np.int64)]


@_fast("Size")
def _size(node, args, attrs, opset):
    return [np.array(np.asarray(args[0]).size, dtype=np.int64)]


@_fast("Identity")
def _identity(node, args, attrs, opset):
    return [args[0]]


@_fast("Cast")
def _cast(node, args, attrs, opset):
    dt = NP_OF_ONNX.get(int(attrs["to"]))
    if dt is None:
        raise UnsupportedError(f"Cast to type {attrs['to']}")
    return [np.asarray(args[0]).astype(dt)]


@_fast("Gather")
def _gather(node, args, attrs, opset):
    data, idx = args
    axis = int(attrs.get("axis", 0))
    return [np.take(data, np.asarray(idx, dtype=np.int64), axis=axis)]


@_fast("Concat")
def _concat(node, args, attrs, opset):
    return [np.concatenate([np.asarray(a) for a in args], axis=int(attrs["axis"]))]


@_fast("Unsqueeze")
def _unsqueeze(node, args, attrs, opset):
    x = np.asarray(args[0])
    axes = _axes(attrs, args, 1) or []
    rank = x.ndim + len(axes)
    shape = list(x.shape)
    for a in sorted(a % rank for a in axes):
        shape.insert(a, 1)
    return [x.reshape(shape)]


@_fast("Squeeze")
def _squeeze(node, args, attrs, opset):
    x = np.asarray(args[0])
    axes = _axes(attrs, args, 1)
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=tuple(a % x.ndim for a in axes))]


@_fast("Reshape")
def _reshape(node, args, attrs, opset):
    x = np.asarray(args[0])
    shape = [int(s) for s in np.asarray(args[1]).reshape(-1)]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [x.reshape(shape)]


@_fast("Range")
def _range(node, args, attrs, opset):
    start, limit, delta = (np.asarray(a).reshape(()) for a in args)
    return [np.arange(start, limit, delta, dtype=np.result_type(start, limit, delta))]


@_fast("ConstantOfShape")
def _constant_of_shape(node, args, attrs, opset):
    from onnx import numpy_helper

    value = attrs.get("value")
    fill = np.zeros((1,), np.float32) if value is None else numpy_helper.to_array(value).reshape(-1)
    shape = [int(s) for s in np.asarray(args[0]).reshape(-1)]
    return [np.full(shape, fill[0], dtype=fill.dtype)]


@_fast("Expand")
def _expand(node, args, attrs, opset):
    x = np.asarray(args[0])
    shape = [int(s) for s in np.asarray(args[1]).reshape(-1)]
    return [x * np.ones(shape, dtype=x.dtype)]


@_fast("Transpose")
def _transpose(node, args, attrs, opset):
    perm = attrs.get("perm")
    return [np.transpose(args[0], None if perm is None else [int(p) for p in perm])]


@_fast("Where")
def _where(node, args, attrs, opset):
    return [np.where(args[0], args[1], args[2])]


@_fast("Not")
def _not(node, args, attrs, opset):
    return [np.logical_not(args[0])]


@_fast("Neg", "Sqrt", "Abs", "Floor", "Ceil")
def _unary(node, args, attrs, opset):
    fn = {"Neg": np.negative, "Sqrt": np.sqrt, "Abs": np.abs, "Floor": np.floor, "Ceil": np.ceil}
    return [fn[node.op_type](args[0])]


def _reference(node: Any, args: list[Any], opset: int) -> list[np.ndarray]:
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"in{i}" if n else "" for i, n in enumerate(node.input)]
    feeds = {nm: a for nm, a in zip(names, args) if nm}
    ins = [
        helper.make_tensor_value_info(nm, helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype), None)
        for nm, a in feeds.items()
    ]
    outs = [f"out{i}" for i in range(len(node.output))]
    n2 = helper.make_node(node.op_type, names, outs, domain=node.domain)
    n2.attribute.extend(node.attribute)
    g = helper.make_graph([n2], "fold", ins, [helper.make_tensor_value_info(o, 0, None) for o in outs])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    outs = ReferenceEvaluator(model).run(None, {k: np.asarray(v) for k, v in feeds.items()})
    return [np.asarray(r) for r in outs]


def fold_node(node: Any, args: list[Any], attrs: dict[str, Any], opset: int) -> list[np.ndarray]:
    """Outputs of `node` for constant inputs `args` (None for an absent optional input). Raises
    UnsupportedError when the op cannot be evaluated."""
    fast = _FAST.get(node.op_type)
    if fast is not None:
        return fast(node, args, attrs, opset)
    try:
        return _reference(node, args, opset)
    except Exception as e:  # the reference evaluator lacks this op or these types
        raise UnsupportedError(f"cannot fold {node.op_type}: {e}") from None
