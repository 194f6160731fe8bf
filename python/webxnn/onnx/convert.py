"""The ONNX → WebNN converter: walks the ONNX graph once, folding constants and translating the rest.

Every ONNX value is either a known constant (numpy array: initializers, Constant nodes, folded results,
Shape of a static value) or a graph value (a WebNN identifier with a dtype and shape). Constants become
graph consts only when a translated op consumes them, so shape chains and unused initializers vanish.
Each emitted WebNN node is bound through the op registry, which both checks what we write and gives the
output shapes that later translations need.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import MAX_DIM, MAX_TENSOR_BYTES
from ..errors import UnsupportedError, ValidationError, WebxnnError, WebxnnWarning, WeightsError
from ..graph import Const, ConstInit, Dim, DynDim, Graph, Node, Operand
from ..ops.base import TensorType
from .checks import check_node, node_where
from .fold import NO_FOLD, fold_node
from .functions import MAX_DEPTH, expand, function_of, function_opset
from .names import Namer
from .refusals import NON_TENSOR, RUN_TIME_PARAMETER, ZERO_SIZED, op_reason, type_reason
from .registry import CONTRIB_TRANSLATORS, TRANSLATORS
from .tensors import NP_OF_ONNX, WEBNN_OF_ONNX, as_webnn_array, to_array, webnn_dtype, webnn_dtype_of_array

# The bound of a symbolic dim that neither override_dims nor dyn_max names: it stays dynamic, 1..64 at run
# time (onnxruntime takes any size; a blob needs an upper bound). 64 covers batch sizes without large
# buffers at the bound; a longer dim (a sequence) needs dyn_max / --dim-max.
DEFAULT_DIM_MAX = 64

# A last resort: an exception that is not a WebxnnError escaping a node's translation becomes a
# ValidationError naming that node. The checks at the entry points (attributes, inputs, tensors) should make
# it unreachable; the fuzz harness turns it off so that anything reaching it shows up as a finding.
SAFETY_NET = True


@dataclass
class Val:
    """A graph value: WebNN identifier, dtype and shape."""

    name: str
    dtype: str
    shape: tuple[Dim, ...]


class Attrs(dict):  # type: ignore[type-arg]
    """A node's attributes by name; asking for one that is absent is a ValidationError naming the node."""

    def __init__(self, node: Any, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.node = node

    def __missing__(self, key: str) -> Any:
        raise ValidationError(f"{where(self.node)}: attribute {key!r} is missing")


def attrs_of(node: Any) -> Attrs:
    """The attributes of `node` (checked against its schema's types by `checks.check_node` first)."""
    from onnx import helper

    values = {}
    for a in node.attribute:
        try:
            values[a.name] = helper.get_attribute_value(a)
        except Exception as e:  # noqa: BLE001 - onnx refuses the attribute's type
            raise ValidationError(f"{where(node)}: attribute {a.name!r} cannot be read ({e})") from None
    return Attrs(node, values)


def text(v: Any) -> str:
    """A string attribute's value as str (onnx gives bytes; bytes that are not UTF-8 come out escaped, so a
    message can quote them and no mode or name matches them)."""
    return v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)


where = node_where


def _empty_array(tensor_type: Any) -> np.ndarray | None:
    """The empty array an input declared empty (static dims, one of them 0) stands for, or None. None too
    when a dim is negative or beyond uint32, or the other dims together exceed the runtime's tensor limit
    (numpy cannot make such an empty array): _dims then refuses the input, naming the dim."""
    declared = tensor_type.shape.dim
    if not all(d.HasField("dim_value") for d in declared):
        return None
    dims = [int(d.dim_value) for d in declared]
    if 0 not in dims or not all(0 <= v <= MAX_DIM for v in dims):
        return None
    dtype = np.dtype(NP_OF_ONNX[tensor_type.elem_type])
    if math.prod(v for v in dims if v) * dtype.itemsize > MAX_TENSOR_BYTES:
        return None
    return np.zeros(dims, dtype)


class Converter:
    def __init__(
        self,
        model: Any,
        override_dims: dict[str, int] | None,
        base: Path | None,
        dyn_max: int | Mapping[str, int] | None = None,
        mapped: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.model = model
        self.base = base
        self.mapped = mapped or {}  # initializers already viewed from the memory-mapped file
        self.opset = 1
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = int(imp.version)
        self.override = dict(override_dims or {})
        # upper bounds of the symbolic dims left dynamic: one for all (an int) or per dim name (a mapping)
        self.dyn_max = dyn_max
        self.used_bounds: set[str] = set()
        self.dynamic = False  # some input dim stays dynamic: the graph is a version-2 graph
        self.used_overrides: set[str] = set()
        self.namer = Namer()
        self.consts: dict[str, np.ndarray] = {}
        self.vals: dict[str, Val] = {}
        self.materialized: dict[str, str] = {}
        self.derived: dict[tuple[str, str], str] = {}  # (onnx const, how) -> const made from it
        self.types: dict[str, TensorType] = {}
        self.poisoned: set[str] = set()
        self.problems: list[tuple[str, str, str]] = []  # (op_type, node name, reason)
        self.defaulted: set[str] = set()  # symbolic dims given DEFAULT_DIM_MAX
        self.graph = Graph(name=model.graph.name or "model", version=1)
        self.node: Any = None  # the ONNX node being translated, for messages
        self._elem_types: dict[str, int] | None = None  # ONNX element types by value, when asked for
        self.local_functions = {(f.domain, f.name): f for f in getattr(model, "functions", [])}
        self.depth = 0  # function expansions we are inside of
        # values matched but not emitted yet (a chain of ops that becomes one WebNN node when it completes,
        # e.g. ops_dynquant's dynamic quantization): name -> what it is; read only by `deferred_reader`
        self.deferred: dict[str, Any] = {}

    # ------------------------------------------------------------------ values
    def is_const(self, name: str) -> bool:
        return name in self.consts

    def const(self, name: str) -> np.ndarray:
        return self.consts[name]

    def has(self, node: Any, i: int) -> bool:
        return len(node.input) > i and node.input[i] != ""

    def const_input(self, node: Any, i: int, what: str) -> np.ndarray:
        name = node.input[i]
        if name not in self.consts:
            raise UnsupportedError(
                f"input {i} ({what}, {name!r}) must be a constant or computable from "
                f"static shapes, but it is computed at run time: {RUN_TIME_PARAMETER}"
            )
        return self.consts[name]

    def const_ints(self, node: Any, i: int, what: str) -> list[int]:
        """Constant input `i` as a list of ints (shapes, axes, pads, starts, ...): integer values only."""
        arr = np.asarray(self.const_input(node, i, what)).reshape(-1)
        if arr.dtype.kind not in "iub":
            ok = (
                arr.dtype.kind == "f"
                and bool(np.all(np.isfinite(arr)))
                and bool(np.all(arr == np.trunc(arr)))
            )
            if not ok or (arr.size and np.abs(arr).max() >= 2.0**63):
                raise ValidationError(
                    f"{where(node)}: input {i} ({what}) must hold integers, not {arr.dtype}"
                )
        return [int(v) for v in arr]

    def const_scalar(self, node: Any, i: int, what: str) -> Any:
        """Constant input `i` that must hold exactly one value, as a Python number."""
        arr = np.asarray(self.const_input(node, i, what))
        if arr.size != 1:
            raise ValidationError(f"{where(node)}: input {i} ({what}) must be one value, not {arr.size}")
        return arr.reshape(-1)[0].item()

    def opt_const(self, node: Any, i: int, what: str) -> np.ndarray | None:
        return self.const_input(node, i, what) if self.has(node, i) else None

    def shape(self, name: str) -> tuple[Dim, ...]:
        if name in self.consts:
            return tuple(int(d) for d in self.consts[name].shape)
        return self.vals[name].shape

    def static_shape(self, name: str, why: str) -> tuple[int, ...]:
        """The shape of `name` as ints; an UnsupportedError naming the unresolved dim otherwise."""
        shp = self.shape(name)
        for d in shp:
            if isinstance(d, DynDim):
                raise UnsupportedError(
                    f"{why} needs the static shape of {name!r}, but its dim {d.name!r} is symbolic: pass "
                    f"override_dims={{{d.name!r}: N}} (CLI: --override-dim {d.name}=N)"
                )
        return tuple(int(d) for d in shp)

    def elem_type(self, name: str) -> int:
        """The ONNX element type of value `name` (CastLike needs it: WebNN's uint8 also stands for bool)."""
        if name in self.consts:
            arr = np.asarray(self.consts[name])
            got = next((t for t, d in NP_OF_ONNX.items() if d == arr.dtype), None)
            if got is not None:
                return got
        if name in self.vals and self.vals[name].dtype != "uint8":  # only uint8 is two ONNX types
            return next(t for t, d in WEBNN_OF_ONNX.items() if d == self.vals[name].dtype)
        if self._elem_types is None:
            self._elem_types = _elem_types(self.model)
        if name not in self._elem_types:
            raise UnsupportedError(
                f"the ONNX element type of {name!r} is unknown (shape inference cannot tell)"
            )
        return self._elem_types[name]

    def rank(self, name: str) -> int:
        return len(self.shape(name))

    def dtype(self, name: str) -> str:
        if name in self.consts:
            dt = webnn_dtype_of_array(as_webnn_array(self.consts[name]))
            assert dt is not None
            return dt
        return self.vals[name].dtype

    def x(self, node: Any, i: int) -> str:
        """The WebNN operand for input `i` of `node` (materializing a constant as a graph const)."""
        return self.operand(node.input[i])

    def operand(self, onnx_name: str) -> str:
        if onnx_name in self.vals:
            return self.vals[onnx_name].name
        if onnx_name in self.materialized:
            return self.materialized[onnx_name]
        if onnx_name in self.consts:
            ident = self.new_const(self.namer.of(onnx_name), self.consts[onnx_name], exact=True)
            self.materialized[onnx_name] = ident
            return ident
        raise ValidationError(f"{where(self.node)}: value {onnx_name!r} is not defined before use")

    def new_const(self, hint: str, arr: np.ndarray, exact: bool = False) -> str:
        """Add `arr` as a weights const; returns its identifier (`hint` itself when `exact`)."""
        arr = as_webnn_array(np.asarray(arr))
        if arr.size == 0:
            raise UnsupportedError(f"{hint!r} is empty: {ZERO_SIZED}")
        ident = hint if exact else self.namer.fresh(hint)
        dt = webnn_dtype_of_array(arr)
        assert dt is not None
        shape = [int(d) for d in arr.shape]
        self.graph.consts[ident] = Const(ident, dt, shape, ConstInit("weights", ref=ident))
        self.graph.weights[ident] = arr
        self.types[ident] = TensorType(dt, tuple(int(d) for d in arr.shape))
        return ident

    def derived_const(self, onnx_name: str, how: str, make: Any) -> str:
        """A const computed from ONNX constant `onnx_name` by `make(array)`, made once per (name, how)."""
        key = (onnx_name, how)
        if key not in self.derived:
            arr = make(self.consts[onnx_name])
            self.derived[key] = self.new_const(f"{self.namer.of(onnx_name)}/{how}", arr)
        return self.derived[key]

    # ------------------------------------------------------------------ emitting
    def emit(
        self,
        op: str,
        inputs: list[str],
        options: dict[str, Any] | None = None,
        out: str | list[str] | None = None,
        hint: str | None = None,
    ) -> str:
        """Append a WebNN node. `out` is the ONNX output name(s) it defines; without it the node defines a
        fresh helper value named after `hint`. Returns the (first) WebNN output identifier."""
        outs_onnx = [out] if isinstance(out, str) else list(out or [])
        if outs_onnx:
            idents = [self.namer.of(o) for o in outs_onnx]
        else:
            base = hint or (f"{self.namer.of(self.node.output[0])}/{op}" if self.node is not None else op)
            idents = [self.namer.fresh(base)]
        n = Node(
            id=idents[0],
            op=op,
            inputs=list(inputs),
            options=dict(options or {}),
            outputs=idents,
            multi_assign=len(idents) > 1,
        )
        from ..ops.registry import bind

        try:
            bound = bind(n, self.types, self.graph)
        except WebxnnError as e:
            raise ValidationError(
                f"{where(self.node)}: the WebNN {op} node it became is invalid: {e}"
            ) from None
        self.graph.nodes.append(n)
        for k, (ident, tt) in enumerate(bound.outputs):
            self.types[ident] = tt
            if k < len(outs_onnx):
                self.vals[outs_onnx[k]] = Val(ident, tt.dtype, tuple(tt.shape))
        return idents[0]

    def alias(self, onnx_out: str, onnx_in: str) -> None:
        """`onnx_out` is the same value as `onnx_in` (Identity, Dropout, no-op reshapes)."""
        if onnx_in in self.consts:
            self.consts[onnx_out] = self.consts[onnx_in]
        else:
            self.vals[onnx_out] = self.vals[onnx_in]

    def set_const(self, onnx_out: str, arr: np.ndarray) -> None:
        self.consts[onnx_out] = np.asarray(arr)

    # ------------------------------------------------------------------ the walk
    def _dims(self, vi: Any) -> list[Dim]:
        dims: list[Dim] = []
        t = vi.type.tensor_type
        for k, d in enumerate(t.shape.dim):
            if d.HasField("dim_value") and d.dim_value > MAX_DIM:  # graphcheck's limit, before rules use it
                raise ValidationError(
                    f"model input {vi.name!r}: dimension {d.dim_value} in dim {k} is larger than {MAX_DIM}, "
                    "the largest a blob can hold (uint32)"
                )
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
                continue
            name = d.dim_param if d.HasField("dim_param") and d.dim_param else f"{vi.name}_dim{k}"
            if name in self.override:
                self.used_overrides.add(name)
                dims.append(int(self.override[name]))
            elif d.HasField("dim_value") and d.dim_value == 0:
                raise UnsupportedError(f"model input {vi.name!r} dim {k}: {ZERO_SIZED}")
            elif (bound := self._bound(name)) is not None:
                dims.append(DynDim(name, bound))
                self.dynamic = True
            else:  # dynamic up to the default bound
                self.defaulted.add(name)
                dims.append(DynDim(name, DEFAULT_DIM_MAX))
                self.dynamic = True
        return dims

    def _keep_name(self, ident: str, name: str) -> None:
        """The blob and the Program keep the model's name of an input or output (a blob name may be any
        text but empty or holding NUL: those keep the identifier)."""
        if ident != name and name and "\0" not in name:
            self.graph.io_names[ident] = name

    def _bound(self, dim: str) -> int | None:
        """The upper bound `dyn_max` gives symbolic dim `dim`, or None."""
        if isinstance(self.dyn_max, Mapping):
            got = self.dyn_max.get(dim)
            if got is not None:
                self.used_bounds.add(dim)
            return got
        return self.dyn_max

    def _inputs(self) -> None:
        g = self.model.graph
        for t in g.initializer:
            got = self.mapped.get(t.name)
            self.consts[t.name] = got if got is not None else to_array(t, self.base)
        for t in getattr(g, "sparse_initializer", []):
            from onnx import numpy_helper

            try:
                self.consts[t.values.name] = numpy_helper.to_array(t)  # rare; dense copy
            except Exception as e:  # noqa: BLE001 - corrupt indices or values
                raise WeightsError(f"sparse initializer {t.values.name!r}: cannot decode ({e})") from None
        for o in g.output:  # outputs get their own names first, so they stay readable
            self.namer.of(o.name)
        for vi in g.input:
            if vi.name in self.consts:
                continue  # an old-style model listing initializers as inputs: they are constants
            if not vi.type.HasField("tensor_type"):
                raise UnsupportedError(f"model input {vi.name!r}: {NON_TENSOR}")
            dt = webnn_dtype(vi.type.tensor_type.elem_type, f"model input {vi.name!r}")
            if not vi.type.tensor_type.HasField("shape"):
                raise UnsupportedError(f"model input {vi.name!r} has no shape")
            empty = _empty_array(vi.type.tensor_type)
            if empty is not None:
                # an input declared empty holds nothing but its type: a constant (the compiled program has no
                # such input), which ops that accept empty tensors (reductions, CastLike's target) fold away
                self.consts[vi.name] = empty
                continue
            shape = self._dims(vi)
            ident = self.namer.of(vi.name)
            self._keep_name(ident, vi.name)
            self.graph.inputs[ident] = Operand(ident, dt, shape)
            self.types[ident] = TensorType(dt, tuple(shape))
            self.vals[vi.name] = Val(ident, dt, tuple(shape))

    def _guarded_node(self, node: Any) -> None:
        try:
            self._node(node)
        except (WebxnnError, RecursionError):
            raise
        except Exception as e:
            if not SAFETY_NET:
                raise
            raise ValidationError(f"{where(node)}: cannot convert it ({type(e).__name__}: {e})") from e

    def _node(self, node: Any) -> None:
        self.node = node
        op = node.op_type
        custom = node.domain not in ("", "ai.onnx")
        contrib = CONTRIB_TRANSLATORS.get((node.domain, op)) if custom else None
        if custom and contrib is None and (node.domain, op) not in self.local_functions:
            # ONNX's own other domains (ai.onnx.preview: FlexAttention, ...) may define the op as a function
            onnx_own = node.domain.startswith("ai.onnx.") and not op_reason(op, node.domain)
            why = self._expand(node) if onnx_own else None
            if why != "":
                self._problem(node, op_reason(op, node.domain) or why or f"custom domain {node.domain!r}")
            return
        ins = [i for i in node.input if i]
        if any(i in self.poisoned for i in ins):
            self.poisoned.update(node.output)
            if op not in TRANSLATORS:
                self._problem(node, op_reason(op) or "")
            return
        check_node(node, self.opset)
        for k, name in enumerate(node.input):
            known = name in self.consts or name in self.vals or name in self.deferred
            if name and not known:
                raise ValidationError(
                    f"{where(node)}: input {k} {name!r} is not defined before this node (no graph input, "
                    "initializer or earlier node has it: undefined, a cycle, or nodes out of order)"
                )
        # onnxruntime's contrib ops, and the readers of values deferred by a chain being matched
        special = contrib or (deferred_reader if any(i in self.deferred for i in ins) else None)
        if special is not None:
            try:
                special(self, node)
            except UnsupportedError as e:
                self._problem(node, str(e))
            return
        self._translate(node)

    def _translate(self, node: Any) -> None:
        """The usual way a node goes: a Constant, folded, refused by design, its translator, its function."""
        op = node.op_type
        custom = node.domain not in ("", "ai.onnx")
        ins = [i for i in node.input if i]
        if op == "Constant":
            self.set_const(node.output[0], _constant_value(node))
            return
        if ins and all(i in self.consts for i in ins) and op not in NO_FOLD and not custom:
            args = [self.consts[i] if i else None for i in node.input]
            try:
                outs = fold_node(node, args, attrs_of(node), self.opset)
            except UnsupportedError:
                outs = None
            except Exception as e:  # numpy refuses the data: a broken model
                raise ValidationError(f"{where(node)}: constant folding failed: {e}") from None
            if outs is not None:
                for name, arr in zip(node.output, outs):
                    if name:
                        self.set_const(name, arr)
                return
        static = None if custom else static_control_flow(self, node)
        if static is not None:
            try:
                static(self, node)
            except UnsupportedError as e:
                self._problem(node, str(e))
            return
        by_design = op_reason(op, node.domain)
        if by_design:
            self._problem(node, by_design)
            return
        fn = None if custom else TRANSLATORS.get(op)
        reason = ""
        if fn is not None:
            try:
                fn(self, node)
                return
            except UnsupportedError as e:
                reason = str(e)
            if any(o in self.vals for o in node.output):  # half translated: no second attempt
                self._problem(node, reason)
                return
        why = self._expand(node)
        if why != "":  # None (no function) as well as a reason
            self._problem(node, reason or why or "")

    def _expand(self, node: Any) -> str | None:
        """Translate `node` as the body of the ONNX function it calls. '' when that worked, why not when it
        did not, None when the op has no function."""
        if self.depth >= MAX_DEPTH:
            return None
        got = function_of(node, self.opset, self.local_functions, self._input_types(node))
        if got is None:
            return None
        fp, full = got
        body = expand(full, fp, f"{node.output[0] or node.name}/{node.op_type}/")
        if body is None:
            return "its ONNX function body holds subgraphs"
        opset = self.opset
        self.opset, self.depth = function_opset(fp, opset), self.depth + 1
        try:
            failed = self._run_body(node, body)
        finally:
            self.opset, self.depth = opset, self.depth - 1
        if not failed:
            return ""
        self.poisoned.update(o for o in node.output if o)
        return "its ONNX function body needs " + failed

    def _run_body(self, node: Any, body: list[Any]) -> str:
        """Translate the ONNX nodes `body` standing for `node`, taking the problems they raise back out of
        `self.problems`: '' when none, else the first two as 'op: why; op: why'."""
        first = len(self.problems)
        try:
            for sub in body:
                self._node(sub)
        finally:
            self.node = node
        failed = self.problems[first:]
        del self.problems[first:]
        return "; ".join(f"{op}: {why or 'not supported'}" for op, _, why in failed[:2])

    def translate_as(self, node: Any, body: list[Any]) -> None:
        """Translate `node` as the ONNX nodes `body` (written by its translator, as a function body is: they
        read `node`'s inputs and define its outputs). UnsupportedError naming what failed, if anything."""
        failed = self._run_body(node, body)
        if failed:
            raise UnsupportedError(failed)

    def _input_types(self, node: Any) -> list[Any] | None:
        """TypeProtos of `node`'s inputs (context-dependent functions are built for them), or None."""
        from onnx import TypeProto, helper

        types = []
        for name in node.input:
            if not name:
                types.append(TypeProto())
                continue
            try:
                elem = self.elem_type(name)
            except (UnsupportedError, KeyError):
                return None
            dims = [d.name if isinstance(d, DynDim) else int(d) for d in self.shape(name)]
            try:
                types.append(helper.make_tensor_type_proto(elem, dims))
            except ValueError:  # a dim protobuf cannot hold (beyond int64): no types, as when unknown
                return None
        return types

    def _problem(self, node: Any, reason: str) -> None:
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        self.problems.append((op, node.name or (node.output[0] if len(node.output) else ""), reason))
        self.poisoned.update(o for o in node.output if o)

    def run(self) -> Graph:
        self._inputs()
        for node in self.model.graph.node:
            self._guarded_node(node)
        self.node = None
        self._report_problems()
        self._outputs()
        self._prune()
        self._finish()
        return self.graph

    def _report_problems(self) -> None:
        if not self.problems:
            return
        by_op: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for op, name, reason in self.problems:
            by_op[op].append((name, reason))
        lines = []
        for op, items in sorted(by_op.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            names = ", ".join(repr(n) for n, _ in items[:8]) + (", ..." if len(items) > 8 else "")
            reasons = sorted({r for _, r in items if r})
            head = f"  {op} ×{len(items)}: {names}"
            if op not in TRANSLATORS and not reasons:
                head += " (op not supported)"
            lines.append(head)
            lines.extend(f"      {r}" for r in reasons[:5])
        total = len(self.problems)
        raise UnsupportedError(
            f"cannot import ONNX model: {total} node(s) in {len(by_op)} op type(s) cannot "
            "be converted to WebNN:\n" + "\n".join(lines)
        )

    def _outputs(self) -> None:
        if not self.model.graph.output:  # e.g. an empty file parses as an empty ModelProto
            raise ValidationError("the ONNX model has no graph outputs (an empty file, or not ONNX?)")
        for o in self.model.graph.output:
            _check_output_type(o)
            ident = self.namer.of(o.name)
            self._keep_name(ident, o.name)
            if o.name in self.consts:
                if o.name not in self.materialized:
                    self.materialized[o.name] = self.new_const(ident, self.consts[o.name], exact=True)
                ref = self.materialized[o.name]
            elif o.name in self.deferred or o.name in self.vals:
                if o.name in self.deferred:
                    deferred_reader(self, None, o.name)
                ref = self.vals[o.name].name
            else:
                raise ValidationError(f"model output {o.name!r} is never computed")
            if ref != ident:  # an elided Identity etc.: the text format cannot rename, so copy
                self.node = None
                self.emit("identity", [ref], out=o.name)
                ref = ident
            self.graph.outputs[ident] = ref

    def _prune(self) -> None:
        """Drop nodes and consts no output depends on (dead branches left by folding)."""
        live = set(self.graph.outputs.values())
        keep: list[Node] = []
        for n in reversed(self.graph.nodes):
            if any(o in live for o in n.outputs):
                keep.append(n)
                live.update(n.inputs)
                live.update(v for v in n.options.values() if isinstance(v, str))
        self.graph.nodes = keep[::-1]
        for name in [c for c in self.graph.consts if c not in live]:
            del self.graph.consts[name]
            self.graph.weights.pop(name, None)

    def _finish(self) -> None:
        bounded = set(self.dyn_max) if isinstance(self.dyn_max, Mapping) else set()
        for what, names, used in (
            ("override_dims", set(self.override), self.used_overrides),
            ("dyn_max", bounded, self.used_bounds | self.used_overrides),
        ):
            unknown = sorted(names - used)
            if unknown:
                # a warning, not an error: one command line (--override-dim batch_size=1) serves a folder of
                # models, some of which have no such dim
                known = sorted(self._all_dim_params())
                listed = ", ".join(repr(u) for u in unknown)
                warnings.warn(
                    f"{what} names {listed}, which no model input uses (ignored); symbolic dims are: "
                    f"{', '.join(known) or '(none)'}",
                    WebxnnWarning,
                    stacklevel=3,
                )
        if self.dynamic:
            self.graph.version = 2

    def _all_dim_params(self) -> set[str]:
        out = set()
        for vi in self.model.graph.input:
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_param") and d.dim_param:
                    out.add(d.dim_param)
        return out


def static_control_flow(ctx: Converter, node: Any) -> Any:
    """The translator of an If or Scan that a static graph can express (see unroll.py), or None."""
    from .unroll import static_translator

    return static_translator(ctx, node)


def deferred_reader(ctx: Converter, node: Any, output: str | None = None) -> None:
    """`node` reads a deferred value (or model output `output` is one): the module that deferred it continues
    its chain, or gives the value a graph value after all, or refuses."""
    from .ops_dynquant import consume_deferred, materialize

    if node is None:
        materialize(ctx, output or "", f"model output {output!r}")
    else:
        consume_deferred(ctx, node)


def _elem_types(model: Any) -> dict[str, int]:
    """{value name: ONNX element type} for the model's inputs, outputs and what shape inference finds."""
    import onnx

    try:
        graph = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - inference is best effort: fall back to the declared types
        graph = model.graph
    out = {}
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            out[vi.name] = int(vi.type.tensor_type.elem_type)
    return out


def _check_output_type(vi: Any) -> None:
    """Refuse a model output declared with a type WebNN lacks (a constant would silently change type)."""
    if vi.type.WhichOneof("value") not in (None, "tensor_type"):
        raise UnsupportedError(f"model output {vi.name!r}: {NON_TENSOR}")
    why = type_reason(vi.type.tensor_type.elem_type)
    if why:
        raise UnsupportedError(f"model output {vi.name!r}: {why}")


def _constant_value(node: Any) -> np.ndarray:
    for a in node.attribute:
        if a.name == "value":
            if a.t.data_location == 1:  # external data in a Constant: onnx itself refuses that
                raise ValidationError(f"{where(node)}: a Constant's value cannot be external data")
            return to_array(a.t)
        if a.name == "value_float":
            return np.array(a.f, np.float32)
        if a.name == "value_floats":
            return np.array(list(a.floats), np.float32)
        if a.name == "value_int":
            return np.array(a.i, np.int64)
        if a.name == "value_ints":
            return np.array(list(a.ints), np.int64)
    raise UnsupportedError(f"{where(node)}: Constant without a supported value attribute")
