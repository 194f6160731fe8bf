"""WebNN op semantics: the registry (`REGISTRY`, `get`, `bind`), whole-graph `validate`/`infer`/`bind_all`,
and shared shape helpers (`auto_pad`, output-size formulas) for `lower`."""

from __future__ import annotations

from . import defs_dynquant, defs_elementwise, defs_misc, defs_nn, defs_shape  # noqa: F401  (register ops)
from .base import ANNOTATION_KEYS, REQUIRED, BoundNode, OpSpec, TensorType
from .graphcheck import bind_all, infer, validate
from .registry import REGISTRY, bind, get
from .shapes import auto_pad, auto_pad_transpose, conv_out_size, conv_transpose_out_size, pool_out_size

# Method parameters that are not operands, per the MLGraphBuilder IDL (see OpSpec.method_params).
_METHOD_PARAMS = {
    "softmax": ["axis"],
    "concat": ["axis"],
    "reshape": ["newShape"],
    "expand": ["newShape"],
    "slice": ["starts", "sizes"],
    "split": ["splits"],
    "pad": ["beginningPadding", "endingPadding"],
    "cast": ["type"],
    "tile": ["repetitions"],
    "argMin": ["axis"],
    "argMax": ["axis"],
    "cumulativeSum": ["axis"],
    "lstm": ["steps", "hiddenSize"],
    "gru": ["steps", "hiddenSize"],
    "lstmCell": ["hiddenSize"],
    "gruCell": ["hiddenSize"],
}
for _op, _params in _METHOD_PARAMS.items():
    REGISTRY[_op].method_params = list(_params)

__all__ = [
    "REGISTRY",
    "get",
    "bind",
    "validate",
    "infer",
    "bind_all",
    "OpSpec",
    "BoundNode",
    "TensorType",
    "REQUIRED",
    "ANNOTATION_KEYS",
    "auto_pad",
    "auto_pad_transpose",
    "conv_out_size",
    "conv_transpose_out_size",
    "pool_out_size",
]
