"""One webxnn graph for a whole ExecuTorch method: its XnnpackBackend delegates' XNNGraphs and the portable
operators ExecuTorch runs between them, joined into a single `.xnn` graph the runtime plans and runs at once.

Each delegate call's graph is copied in with its values renumbered (its external inputs and outputs become the
method's values that the call names); each kernel call becomes the webxnn node that computes the same thing
(`_KERNELS`). Operators without a mapping are refused by name (UnsupportedError), and so is any use of an
output webxnn does not compute (layer norm's mean and rstd)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import FormatError, UnsupportedError
from ..xnn.ir import (
    FLAG_CHECKED_INDICES,
    FLAG_EXTERNAL_INPUT,
    FLAG_EXTERNAL_OUTPUT,
    INVALID_ID,
    Datatype,
    Node,
    PerChannelGroupQuant,
    PerChannelQuant,
    Value,
    XnnGraph,
)
from ..xnn.reader import PteFile, read
from .program import Call, Method, Tensor

_DATATYPES = {
    np.dtype("<f4"): Datatype.FP32,
    np.dtype("<i4"): Datatype.INT32,
    np.dtype("<i8"): Datatype.WX_INT64,
}


class _Merger:
    def __init__(self, method: Method, where: str) -> None:
        self.m, self.where = method, where
        self.g = XnnGraph(version="0")
        self.ids: dict[int, int] = {}  # method value index → merged value id
        # outputs webxnn does not compute → the instruction that "wrote" them
        self.unused: dict[int, str] = {}
        n_in = len(method.inputs)
        self.external = {v: k for k, v in enumerate(method.inputs)}
        self.external.update({v: n_in + k for k, v in enumerate(method.outputs)})

    # ---- values
    def new_value(self, t: Tensor | None, datatype: Datatype, dims: list[int], **kw: Any) -> int:
        vid = len(self.g.values)
        val = Value(id=vid, datatype=datatype, dims=list(dims), **kw)
        if t is not None and t.index in self.external:
            k = self.external[t.index]
            val.external_id = k
            val.flags |= FLAG_EXTERNAL_INPUT if k < len(self.m.inputs) else FLAG_EXTERNAL_OUTPUT
        self.g.values.append(val)
        return vid

    @staticmethod
    def datatype(t: Tensor) -> Datatype:
        return _DATATYPES[t.dtype]  # program.SCALAR_TYPES: the dtypes a method's tensors may have here

    def read_id(self, i: int, what: str) -> int:
        """The merged id of method value `i`, read by an instruction: it must exist by now."""
        if i in self.ids:
            return self.ids[i]
        if i in self.unused:
            raise UnsupportedError(f"{what} reads value {i}, {self.unused[i]}, which webxnn does not compute")
        t = self.m.tensor(i, what)
        if t.data is not None:  # a constant of the program
            vid = self.new_value(t, self.datatype(t), t.sizes)
            self.g.values[vid].constant_buffer_idx = self.g.add_constant(t.data)
        elif i in self.external and self.external[i] < len(self.m.inputs):
            vid = self.new_value(t, self.datatype(t), t.sizes)
        else:
            raise FormatError(f"{what} reads {t.describe()} before anything writes it")
        self.ids[i] = vid
        return vid

    def write_id(
        self, i: int, what: str, datatype: Datatype | None = None, dims: list[int] | None = None
    ) -> int:
        """A new merged value for method value `i`, written by an instruction (each value written once)."""
        t = self.m.tensor(i, what)
        if (
            i in self.ids
            or t.data is not None
            or (i in self.external and self.external[i] < len(self.m.inputs))
        ):
            raise UnsupportedError(f"{what} writes {t.describe()} again (values are written once here)")
        dt = self.datatype(t)
        if datatype is not None and datatype != dt:
            raise FormatError(f"{what} writes {t.describe()} as {datatype.name}")
        if dims is not None and list(dims) != list(t.sizes):
            raise FormatError(f"{what} writes {t.describe()} with dims {dims}")
        self.ids[i] = vid = self.new_value(t, dt, t.sizes)
        return vid

    def node(self, kind: str, **fields: Any) -> None:
        fields.setdefault("flags", 0)
        self.g.nodes.append(Node(kind, fields, debug_handle=len(self.g.nodes)))

    # ---- delegate calls
    def delegate(self, call: Call, f: PteFile, named: dict[str, bytes]) -> None:
        what = f"{self.where}: {call.describe()}"
        backend, table = self.m.delegates[call.delegate]
        if "xnnpack" not in backend.lower():
            raise UnsupportedError(f"{what}: delegate {backend!r} (webxnn runs XnnpackBackend delegates)")
        sub = read(f.delegate_payload(table, what), named)
        missing = [r.named_key for r, c in zip(sub.constant_refs, sub.constants) if r.named_key and c is None]
        if missing:
            raise UnsupportedError(f"{what}: constants {missing[:5]} are not in the program's named data")
        ext = sorted((v for v in sub.values if v.external_id != INVALID_ID), key=lambda v: v.external_id)
        ins = [v for v in ext if v.flags & FLAG_EXTERNAL_INPUT]
        outs = [v for v in ext if v.flags & FLAG_EXTERNAL_OUTPUT and not v.flags & FLAG_EXTERNAL_INPUT]
        if len(ins) + len(outs) != len(call.args):
            raise FormatError(
                f"{what}: {len(call.args)} arguments for a delegate with {len(ins)} inputs and "
                f"{len(outs)} outputs"
            )
        remap: dict[int, int] = {}
        cmap: dict[int, int] = {0: 0}

        def constant(idx: int) -> int:
            if idx not in cmap:
                cmap[idx] = self.g.add_constant(sub.constants[idx])
            return cmap[idx]

        for v, arg in zip(ins, call.args):
            t = self.m.tensor(arg, what)
            if math.prod(v.dims) != math.prod(t.sizes) or v.datatype != self.datatype(t):
                raise FormatError(
                    f"{what}: input {v.external_id} is {v.datatype.name}{v.dims}, given {t.describe()}"
                )
            src = self.read_id(arg, what)
            if list(v.dims) == list(t.sizes):
                remap[v.id] = src
            elif t.data is not None:  # a scalar constant the delegate reads as [1]: the same bytes
                remap[v.id] = self.new_value(None, v.datatype, v.dims)
                self.g.values[remap[v.id]].constant_buffer_idx = self.g.values[src].constant_buffer_idx
            else:
                remap[v.id] = self.new_value(None, v.datatype, v.dims)
                self.node(
                    "XNNStaticReshape",
                    new_shape=list(v.dims),
                    input_id=src,
                    output_id=remap[v.id],
                    num_dims=len(v.dims),
                )
        for v, arg in zip(outs, call.args[len(ins) :]):
            t = self.m.tensor(arg, what)
            if list(v.dims) != list(t.sizes):
                raise FormatError(
                    f"{what}: output {v.external_id} is {v.datatype.name}{v.dims}, given {t.describe()}"
                )
            remap[v.id] = self.write_id(arg, what, v.datatype)
        for v in sub.values:
            if v.id in remap:
                continue
            quant = v.quant
            if isinstance(quant, (PerChannelQuant, PerChannelGroupQuant)) and quant.scale_buffer_idx:
                quant = dataclasses.replace(quant, scale_buffer_idx=constant(quant.scale_buffer_idx))
            remap[v.id] = self.new_value(
                None,
                v.datatype,
                v.dims,
                constant_buffer_idx=constant(v.constant_buffer_idx),
                quant=quant,
                dq_datatype=v.dq_datatype,
            )
        for nd in sub.nodes:
            fields = dict(nd.fields)
            for k in [*nd.input_ids(), *nd.output_ids()]:
                if k not in remap:
                    raise FormatError(
                        f"{what}: a {nd.kind} node names value {k}, which the delegate does not have"
                    )
            for key, val in nd.fields.items():
                if key.endswith("_id") and val in remap and (val in nd.input_ids() or val in nd.output_ids()):
                    fields[key] = remap[val]
            self.g.nodes.append(Node(nd.kind, fields, nd.output_min_max, debug_handle=len(self.g.nodes)))

    # ---- kernel calls
    def kernel(self, call: Call) -> None:
        fn = _KERNELS.get(call.op or "")
        if fn is None:
            raise UnsupportedError(
                f"{self.where}: {call.describe()}: operator {call.op} is not supported outside the delegate "
                f"(webxnn maps {', '.join(sorted(_KERNELS))})"
            )
        fn(self, call, f"{self.where}: {call.describe()}")

    def args(self, call: Call, n: int, what: str) -> list[int]:
        if len(call.args) < n:
            raise FormatError(f"{what}: {len(call.args)} arguments, the operator takes {n}")
        return call.args


def _layer_norm(mg: _Merger, call: Call, what: str) -> None:
    """native_layer_norm.out(input, normalized_shape, weight?, bias?, eps, out, mean, rstd): WXNormalize over
    the trailing dims; mean and rstd are not computed (refused if anything reads them)."""
    x, shape, w, b, eps, out, mean, rstd = mg.args(call, 8, what)[:8]
    t = mg.m.tensor(x, what)
    dims = mg.m.ints(shape, what)
    rank = len(t.sizes)
    if not dims or len(dims) > rank or t.sizes[rank - len(dims) :] != dims:
        raise FormatError(f"{what}: normalized_shape {dims} is not the trailing dims of {t.describe()}")
    operands = []
    for k in (w, b):
        if mg.m.values[k] is None:
            operands.append(INVALID_ID)
            continue
        p = mg.m.tensor(k, what)
        if p.sizes != dims or p.dtype != t.dtype:
            raise FormatError(f"{what}: weight/bias {p.describe()} is not {t.dtype.name}{dims}")
        operands.append(mg.read_id(k, what))
    epsilon = mg.m.scalar(eps, float, what)
    if not np.isfinite(epsilon) or epsilon < 0:
        raise FormatError(f"{what}: epsilon {epsilon} is not a finite value >= 0")
    if t.dtype != np.float32:
        raise UnsupportedError(f"{what}: layer norm of {t.describe()} (float32 only)")
    xid = mg.read_id(x, what)
    for k in (mean, rstd):
        mg.m.tensor(k, what)
        mg.unused[k] = f"the mean/rstd of {call.describe()}"
    mg.node(
        "WXNormalize",
        axes=list(range(rank - len(dims), rank)),
        epsilon=float(epsilon),
        input_id=xid,
        scale_id=operands[0],
        bias_id=operands[1],
        output_id=mg.write_id(out, what, Datatype.FP32, t.sizes),
    )


def _expand(mg: _Merger, call: Call, what: str) -> None:
    """expand_copy.out(input, sizes, implicit, out): WXExpand to the out tensor's sizes (numpy rules)."""
    x, sizes, _, out = mg.args(call, 4, what)[:4]
    t, o = mg.m.tensor(x, what), mg.m.tensor(out, what)
    want = mg.m.ints(sizes, what)
    src = [1] * (len(o.sizes) - len(t.sizes)) + t.sizes
    ok = (
        len(want) == len(o.sizes) >= len(t.sizes)
        and all(w in (-1, s) if s != 1 else w in (-1, od) for w, s, od in zip(want, src, o.sizes))
        and all(s in (1, od) for s, od in zip(src, o.sizes))
        and t.dtype == o.dtype
    )
    if not ok:
        raise FormatError(f"{what}: cannot expand {t.describe()} to {want} into {o.describe()}")
    xid = mg.read_id(x, what)
    mg.node("WXExpand", input_id=xid, output_id=mg.write_id(out, what))


def _embedding(mg: _Merger, call: Call, what: str) -> None:
    """embedding.out(weight, indices, padding_idx, scale_grad_by_freq, sparse, out): WXGather on axis 0,
    int64 ids as they are; ids from a graph input are checked at run (0..rows-1), like ExecuTorch does."""
    w, idx, _, _, _, out = mg.args(call, 6, what)[:6]
    wt, it, o = mg.m.tensor(w, what), mg.m.tensor(idx, what), mg.m.tensor(out, what)
    if (
        len(wt.sizes) != 2
        or it.dtype.kind != "i"
        or o.sizes != it.sizes + wt.sizes[1:]
        or o.dtype != wt.dtype
    ):
        raise FormatError(f"{what}: embedding of {wt.describe()} by {it.describe()} into {o.describe()}")
    mg.node(
        "WXGather",
        axis=0,
        input_id=mg.read_id(w, what),
        indices_id=mg.read_id(idx, what),
        output_id=mg.write_id(out, what),
        flags=FLAG_CHECKED_INDICES,  # ids out of range: an InputError, as ExecuTorch refuses them
    )


_KERNELS: dict[str, Callable[[_Merger, Call, str], None]] = {
    "aten::native_layer_norm.out": _layer_norm,
    "aten::expand_copy.out": _expand,
    "aten::embedding.out": _embedding,
}


def merge(f: PteFile, method: Method, where: str) -> XnnGraph:
    """One XnnGraph computing `method` (delegates and kernel calls), its inputs and outputs in the method's
    order."""
    if not method.outputs:
        raise UnsupportedError(f"{where}: method {method.name!r} has no outputs")
    mg = _Merger(method, where)
    named = f.named_data() if any(c.op is None for c in method.calls) else {}
    for i in method.inputs:
        mg.read_id(i, f"{where}: method input")
    for call in method.calls:
        if call.op is None:
            mg.delegate(call, f, named)
        else:
            mg.kernel(call)
    outs = []
    for k, i in enumerate(method.outputs):
        what = f"{where}: method output {k}"
        if i not in mg.ids:
            t = method.tensor(i, what)
            raise UnsupportedError(
                f"{what} is {t.describe()}, which the method does not compute (an input or constant?)"
            )
        outs.append(mg.ids[i])
    if len(set(method.inputs + method.outputs)) != len(method.inputs) + len(method.outputs):
        raise UnsupportedError(f"{where}: a value is both a method input and an output, or listed twice")
    g = mg.g
    g.num_externs = len(method.inputs) + len(method.outputs)
    g.input_ids = [mg.ids[i] for i in method.inputs]
    g.output_ids = outs
    return g


__all__ = ["merge"]
