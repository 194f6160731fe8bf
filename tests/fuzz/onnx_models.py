"""Malformed ONNX models: small models built with onnx.helper, then 1-3 structure-aware mutations each
(attribute types and values, node inputs and outputs, node order, op types, initializer dims, types and
raw_data, external data fields and locations, graph input types, the opset), now and then byte damage to the
serialized file. A case is written to its own folder (model + external data) and imported from the path, so
the memory-mapped reader and external data are exercised; what imports is compiled, loaded and run."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TP_FLOAT, TP_INT64, TP_INT8, TP_UINT8 = 1, 7, 3, 2


@dataclass
class Case:
    model: bytes
    files: dict[str, bytes | Path] = field(default_factory=dict)  # name -> bytes, or a symlink's target


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _seeds() -> list[tuple[Any, dict[str, bytes]]]:
    """(ModelProto, external files) of each seed model; every one imports, compiles and runs."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    vi = helper.make_tensor_value_info
    t = numpy_helper.from_array
    out: list[tuple[Any, dict[str, bytes]]] = []

    def model(nodes: list[Any], ins: list[Any], outs: list[Any], inits: list[Any]) -> Any:
        g = helper.make_graph(nodes, "fuzz", ins, outs, inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

    out.append(
        (
            model(
                [
                    helper.make_node(
                        "Conv",
                        ["x", "w", "b"],
                        ["c"],
                        pads=[1, 1, 1, 1],
                        strides=[1, 1],
                        kernel_shape=[3, 3],
                        name="conv",
                    ),
                    helper.make_node("Relu", ["c"], ["r"]),
                    helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                    helper.make_node("Flatten", ["p"], ["f"], axis=1),
                    helper.make_node("Gemm", ["f", "w2", "b2"], ["g"], transB=1, alpha=1.0),
                    helper.make_node("Softmax", ["g"], ["y"], axis=1),
                ],
                [vi("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                [vi("y", TensorProto.FLOAT, [1, 10])],
                [
                    t(_f32(rng, 4, 3, 3, 3), "w"),
                    t(_f32(rng, 4), "b"),
                    t(_f32(rng, 10, 64), "w2"),
                    t(_f32(rng, 10), "b2"),
                ],
            ),
            {},
        )
    )

    out.append(
        (
            model(
                [
                    helper.make_node("MatMul", ["x", "w"], ["m"]),
                    helper.make_node("Add", ["m", "b"], ["a"]),
                    helper.make_node("LayerNormalization", ["a", "s", "bb"], ["n"], axis=-1, epsilon=1e-5),
                    helper.make_node("Shape", ["n"], ["sh"]),
                    helper.make_node("Gather", ["sh", "i0"], ["d0"], axis=0),
                    helper.make_node("Unsqueeze", ["d0", "ax0"], ["d0u"]),
                    helper.make_node("Concat", ["d0u", "m1"], ["ns"], axis=0),
                    helper.make_node("Reshape", ["n", "ns"], ["rs"]),
                    helper.make_node("Transpose", ["rs"], ["tr"], perm=[1, 0]),
                    helper.make_node("Sigmoid", ["tr"], ["y"]),
                ],
                [vi("x", TensorProto.FLOAT, [1, 4, 8])],
                [vi("y", TensorProto.FLOAT, None)],
                [
                    t(_f32(rng, 8, 8), "w"),
                    t(_f32(rng, 8), "b"),
                    t(np.ones(8, np.float32), "s"),
                    t(np.zeros(8, np.float32), "bb"),
                    t(np.int64(0), "i0"),
                    t(np.int64([0]), "ax0"),
                    t(np.int64([-1]), "m1"),
                ],
            ),
            {},
        )
    )

    out.append(
        (
            model(
                [
                    helper.make_node("Pad", ["x", "pads"], ["pd"], mode="constant"),
                    helper.make_node("AveragePool", ["pd"], ["ap"], kernel_shape=[3, 3], strides=[1, 1]),
                    helper.make_node(
                        "BatchNormalization", ["ap", "sc", "bi", "mu", "var"], ["bn"], epsilon=1e-5
                    ),
                    helper.make_node("LeakyRelu", ["bn"], ["lr"], alpha=0.1),
                    helper.make_node("Clip", ["lr", "lo", "hi"], ["cl"]),
                    helper.make_node("GlobalAveragePool", ["cl"], ["gp"]),
                    helper.make_node("Squeeze", ["gp", "sq"], ["sqz"]),
                    helper.make_node("ReduceMean", ["sqz"], ["rm"], axes=[1], keepdims=1),
                    helper.make_node("Cast", ["rm"], ["y"], to=TensorProto.FLOAT),
                ],
                [vi("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                [vi("y", TensorProto.FLOAT, None)],
                [
                    t(np.int64([0, 0, 1, 1, 0, 0, 1, 1]), "pads"),
                    t(np.ones(2, np.float32), "sc"),
                    t(np.zeros(2, np.float32), "bi"),
                    t(np.zeros(2, np.float32), "mu"),
                    t(np.ones(2, np.float32), "var"),
                    t(np.float32(-1), "lo"),
                    t(np.float32(1), "hi"),
                    t(np.int64([2, 3]), "sq"),
                ],
            ),
            {},
        )
    )

    # weights in an external file beside the model
    w = _f32(rng, 16, 8)
    b = _f32(rng, 8)
    blob = w.tobytes() + b.tobytes()
    inits = []
    for name, arr, off in (("w", w, 0), ("b", b, w.nbytes)):
        ti = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=arr.shape)
        ti.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "w.bin"), ("offset", str(off)), ("length", str(arr.nbytes))):
            e = ti.external_data.add()
            e.key, e.value = k, v
        inits.append(ti)
    out.append(
        (
            model(
                [
                    helper.make_node("MatMul", ["x", "w"], ["m"]),
                    helper.make_node("Add", ["m", "b"], ["a"]),
                    helper.make_node("Split", ["a"], ["s0", "s1"], axis=1, num_outputs=2),
                    helper.make_node("Mul", ["s0", "s1"], ["y"]),
                ],
                [vi("x", TensorProto.FLOAT, [2, 16])],
                [vi("y", TensorProto.FLOAT, None)],
                inits,
            ),
            {"w.bin": blob},
        )
    )

    # token ids → embedding, quantize / dequantize, slice, concat, expand
    out.append(
        (
            model(
                [
                    helper.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
                    helper.make_node("QuantizeLinear", ["e", "qs", "qz"], ["q"]),
                    helper.make_node("DequantizeLinear", ["q", "qs", "qz"], ["dq"]),
                    helper.make_node("Slice", ["dq", "st", "en", "ax"], ["sl"]),
                    helper.make_node("Concat", ["sl", "sl"], ["cc"], axis=-1),
                    helper.make_node("Expand", ["cc", "es"], ["ex"]),
                    helper.make_node("ReduceSum", ["ex", "rax"], ["y"], keepdims=0),
                ],
                [vi("ids", TensorProto.INT64, [1, 5])],
                [vi("y", TensorProto.FLOAT, None)],
                [
                    t(_f32(rng, 32, 8), "emb"),
                    t(np.float32(0.05), "qs"),
                    t(np.uint8(128), "qz"),
                    t(np.int64([1]), "st"),
                    t(np.int64([4]), "en"),
                    t(np.int64([2]), "ax"),
                    t(np.int64([2, 1, 5, 6]), "es"),
                    t(np.int64([0]), "rax"),
                ],
            ),
            {},
        )
    )
    return out


_SEEDS: list[tuple[Any, dict[str, bytes]]] | None = None

_OPS = [
    "Relu",
    "Conv",
    "Gemm",
    "MatMul",
    "Softmax",
    "Reshape",
    "Transpose",
    "Concat",
    "Gather",
    "Slice",
    "Pad",
    "Resize",
    "Split",
    "Squeeze",
    "Unsqueeze",
    "Expand",
    "Tile",
    "Cast",
    "Clip",
    "ReduceMean",
    "TopK",
    "LSTM",
    "ConvTranspose",
    "BatchNormalization",
    "Einsum",
    "CumSum",
    "OneHot",
    "ScatterND",
    "DepthToSpace",
    "GatherElements",
    "Where",
    "Range",
    "ConstantOfShape",
    "Shape",
    "Trilu",
    "Mod",
    "QuantizeLinear",
    "DequantizeLinear",
    "LayerNormalization",
    "InstanceNormalization",
    "Flatten",
    "ArgMax",
    "Hardmax",
    "GRU",
    "DFT",
    "If",
    "Loop",
    "Constant",
    "Identity",
    "Dropout",
    "Attention",
    "Upsample",
    "GlobalMaxPool",
    "LpPool",
    "MaxUnpool",
    "RoiAlign",
    "GridSample",
    "NotAnOp",
]
_INTS = [
    -(1 << 62),
    -(1 << 31),
    -9,
    -2,
    -1,
    0,
    1,
    2,
    3,
    7,
    255,
    1 << 20,
    (1 << 31) - 1,
    1 << 40,
    (1 << 63) - 1,
]
_FLOATS = [float("nan"), float("inf"), -float("inf"), 1e300, -1e39, 1e39, 0.0, -1.0, 0.5, 1.5, 1e-45]
_STRINGS = [b"", b"NOTSET", b"SAME_UPPER", b"\xff\xfe\x80", b"linear", b"x" * 300, b"a\x00b", b"ij,jk->ik"]
_LOCATIONS = [
    "/etc/passwd",
    "../../../../etc/passwd",
    "../outside.bin",
    "nope.bin",
    "sub/../w.bin",
    "",
    "w.bin\x00x",
    "link.bin",
    ".",
    "w.bin/",
    "%s" % ("x" * 300),
    "\udcff.bin",
    "C:\\w.bin",
]


def _pick(rng: np.random.Generator, seq: list[Any]) -> Any:
    return seq[int(rng.integers(0, len(seq)))]


def _declared_attrs(m: Any, n: Any) -> list[tuple[str, str]]:
    """(name, type name) of the attributes the schema of node n's op declares at the model's opset."""
    import onnx.defs

    opset = next((o.version for o in m.opset_import if o.domain == (n.domain or "")), 17)
    try:
        schema = onnx.defs.get_schema(n.op_type, max(1, min(opset, 23)), n.domain or "")
    except Exception:  # noqa: BLE001 - unknown op or domain (SchemaError), or an opset before the op
        return []
    have = {a.name for a in n.attribute}
    return sorted((k, a.type.name) for k, a in schema.attributes.items() if k not in have)


def _small_int(rng: np.random.Generator) -> int:
    """An int attribute value: mostly a plausible one (so the model may run), sometimes an extreme."""
    return _pick(rng, [-1, 0, 1, 2, 3]) if rng.random() < 0.7 else _pick(rng, _INTS)


def _mutate_attr(rng: np.random.Generator, m: Any) -> None:
    from onnx import AttributeProto, helper

    nodes = [n for n in m.graph.node]
    n = _pick(rng, nodes)
    kind = int(rng.integers(0, 5))
    if kind == 0 or not n.attribute:  # add an attribute the op's schema declares, mostly of its type
        declared = _declared_attrs(m, n)
        if not declared:  # an op no schema knows: any attribute would only be refused as undeclared
            return
        name, attr_type = _pick(rng, declared)
        typed = {"INT": _small_int(rng), "INTS": [_small_int(rng) for _ in range(int(rng.integers(1, 5)))]}
        typed |= {"FLOAT": _pick(rng, _FLOATS), "FLOATS": [_pick(rng, _FLOATS) for _ in range(2)]}
        typed |= {"STRING": _pick(rng, _STRINGS), "STRINGS": [_pick(rng, _STRINGS)]}
        own_type = attr_type in typed and rng.random() < 0.8
        val = typed[attr_type] if own_type else _pick(rng, list(typed.values()))
        n.attribute.append(helper.make_attribute(name, val))
        return
    a = _pick(rng, list(n.attribute))
    if kind == 1:  # delete it
        n.attribute.remove(a)
    elif kind == 2:  # same name, another type
        new_t = _pick(
            rng,
            [
                AttributeProto.INT,
                AttributeProto.INTS,
                AttributeProto.FLOAT,
                AttributeProto.FLOATS,
                AttributeProto.STRING,
                AttributeProto.TENSOR,
                0,
                99,
            ],
        )
        a.type = new_t
        if new_t == AttributeProto.INT:
            a.i = _pick(rng, _INTS)
        elif new_t == AttributeProto.INTS:
            del a.ints[:]
            a.ints.extend(_pick(rng, _INTS) for _ in range(int(rng.integers(0, 5))))
        elif new_t == AttributeProto.FLOAT:
            a.f = _pick(rng, _FLOATS)
        elif new_t == AttributeProto.FLOATS:
            a.floats.extend([_pick(rng, _FLOATS)])
        elif new_t == AttributeProto.STRING:
            a.s = _pick(rng, _STRINGS)
    else:  # same type, extreme value
        if a.type == AttributeProto.INT:
            a.i = _pick(rng, _INTS)
        elif a.type == AttributeProto.INTS:
            if a.ints and rng.random() < 0.6:
                a.ints[int(rng.integers(0, len(a.ints)))] = _pick(rng, _INTS)
            else:
                del a.ints[int(rng.integers(0, len(a.ints) + 1)) :]
                a.ints.extend(_pick(rng, _INTS) for _ in range(int(rng.integers(0, 3))))
        elif a.type == AttributeProto.FLOAT:
            a.f = _pick(rng, _FLOATS)
        elif a.type == AttributeProto.STRING:
            a.s = _pick(rng, _STRINGS)
        elif a.type == AttributeProto.TENSOR:
            a.t.dims.extend([_pick(rng, _INTS)])


def _mutate_edges(rng: np.random.Generator, m: Any) -> None:
    nodes = list(m.graph.node)
    i = int(rng.integers(0, len(nodes)))
    n = nodes[i]
    kind = int(rng.integers(0, 9))
    if kind == 0 and n.input:  # drop inputs from the end
        del n.input[int(rng.integers(0, len(n.input))) :]
    elif kind == 1 and n.input:  # blank one
        n.input[int(rng.integers(0, len(n.input)))] = ""
    elif kind == 2 and n.input:  # an undefined name
        n.input[int(rng.integers(0, len(n.input)))] = "ghost"
    elif kind == 3 and n.input:  # a later node's output: a cycle or a use before definition
        later = [o for nd in nodes[i:] for o in nd.output]
        n.input[int(rng.integers(0, len(n.input)))] = _pick(rng, later)
    elif kind == 4:  # extra inputs
        names = [x for nd in nodes for x in nd.input if x] or ["x"]
        n.input.extend(_pick(rng, names) for _ in range(int(rng.integers(1, 3))))
    elif kind == 5:  # outputs: drop, duplicate another node's, add
        if rng.random() < 0.4 and len(n.output) > 0:
            del n.output[int(rng.integers(0, len(n.output))) :]
        elif rng.random() < 0.5 and len(n.output):
            n.output[0] = _pick(rng, [o for nd in nodes for o in nd.output])
        else:
            n.output.append(f"extra{int(rng.integers(0, 3))}")
    elif kind == 6 and len(nodes) > 1:  # node order
        j = int(rng.integers(0, len(nodes)))
        a, b = m.graph.node[i], m.graph.node[j]
        ca, cb = type(a)(), type(b)()
        ca.CopyFrom(a)
        cb.CopyFrom(b)
        m.graph.node[i].CopyFrom(cb)
        m.graph.node[j].CopyFrom(ca)
    elif kind == 7:  # another op type
        n.op_type = _pick(rng, _OPS)
        if rng.random() < 0.1:
            n.domain = _pick(rng, ["com.microsoft", "ai.onnx.ml", "x"])
    else:  # graph outputs
        o = _pick(rng, list(m.graph.output))
        if rng.random() < 0.5:
            o.name = _pick(rng, ["ghost", "x", *[x for nd in nodes for x in nd.input if x]])
        else:
            o.type.tensor_type.elem_type = int(rng.integers(0, 26))


def _mutate_init(rng: np.random.Generator, m: Any) -> None:
    from onnx import TensorProto

    inits = list(m.graph.initializer)
    if not inits:
        return
    t = _pick(rng, inits)
    kind = int(rng.integers(0, 7))
    if kind == 0:  # dims
        dims = list(t.dims)
        op = int(rng.integers(0, 4))
        if op == 0:
            dims.append(_pick(rng, [1, 2, 0]))
        elif op == 1 and dims:
            dims.pop()
        elif dims:
            dims[int(rng.integers(0, len(dims)))] = _pick(rng, [0, -1, 2, 1 << 20, 1 << 40, (1 << 63) - 1])
        del t.dims[:]
        t.dims.extend(dims)
    elif kind == 1:  # element type
        t.data_type = int(rng.integers(0, 26))
    elif kind == 2 and t.data_location != TensorProto.EXTERNAL:  # raw bytes: cut, grow, garbage
        raw = bytearray(t.raw_data)
        op = int(rng.integers(0, 3))
        if op == 0:
            del raw[int(rng.integers(0, len(raw) + 1)) :]
        elif op == 1:
            raw += bytes(int(rng.integers(1, 9)))
        else:
            for _ in range(4):
                if raw:
                    raw[int(rng.integers(0, len(raw)))] = int(rng.integers(0, 256))
        t.raw_data = bytes(raw)
    elif kind == 3:  # typed data fields instead of raw, of the wrong length
        t.ClearField("raw_data")
        t.float_data.extend([1.0] * int(rng.integers(0, 3)))
        t.int64_data.extend([1] * int(rng.integers(0, 3)))
    elif kind == 4:  # external data with odd fields
        if t.data_location != TensorProto.EXTERNAL:
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        fields = {
            "location": _pick(rng, _LOCATIONS + ["w.bin"] * 4),
            "offset": _pick(rng, ["0", "-8", "abc", "1.5", str(1 << 70), "16", "", "0x10"]),
            "length": _pick(rng, ["", "64", "-1", "abc", str(1 << 62), "512", "4"]),
        }
        for k, v in fields.items():
            if v != "" or rng.random() < 0.5:
                e = t.external_data.add()
                e.key, e.value = k, v
        if rng.random() < 0.2:
            e = t.external_data.add()
            e.key, e.value = _pick(rng, ["checksum", "location", "basepath"]), "w.bin"
    elif kind == 5:
        t.name = _pick(rng, ["", "x", "ghost", t.name + "2"])
    else:
        t.data_location = int(rng.integers(0, 3))


def _mutate_io(rng: np.random.Generator, m: Any) -> None:
    vi = _pick(rng, list(m.graph.input))
    tt = vi.type.tensor_type
    kind = int(rng.integers(0, 4))
    if kind == 0:
        tt.elem_type = int(rng.integers(0, 26))
    elif kind == 1 and tt.HasField("shape") and tt.shape.dim:
        d = tt.shape.dim[int(rng.integers(0, len(tt.shape.dim)))]
        if rng.random() < 0.7:
            d.dim_value = _pick(rng, [0, -5, 1, 3, 1 << 20, 1 << 32, (1 << 63) - 1])
        else:
            d.dim_param = _pick(rng, ["batch", "", "x y", "\u00e9"])
    elif kind == 2:
        tt.ClearField("shape") if rng.random() < 0.5 else tt.shape.dim.add()
    else:
        vi.type.ClearField("tensor_type") if rng.random() < 0.3 else None
        vi.name = _pick(rng, [vi.name, "", "w", "ghost"])


def _mutate_model(rng: np.random.Generator, m: Any) -> None:
    if rng.random() < 0.5:
        del m.opset_import[:]
        if rng.random() < 0.9:
            op = m.opset_import.add()
            op.domain, op.version = "", _pick(rng, [1, 6, 7, 9, 11, 13, 17, 21, 23, 99, -1])
    else:
        m.ir_version = _pick(rng, [0, 3, 99, -1])


_MUTATORS = [(_mutate_attr, 5), (_mutate_edges, 5), (_mutate_init, 4), (_mutate_io, 2), (_mutate_model, 1)]


def make(seed: int, k: int) -> Case:
    """Case k of campaign `seed`: a seed model with 1-3 mutations (deterministic in seed and k)."""
    from onnx import ModelProto

    global _SEEDS
    if _SEEDS is None:
        _SEEDS = _seeds()
    rng = np.random.default_rng([seed, k])
    base, files = _SEEDS[k % len(_SEEDS)]
    m = ModelProto()
    m.CopyFrom(base)
    weights = np.array([w for _, w in _MUTATORS], float)
    for _ in range(int(rng.integers(1, 4))):
        fn = _MUTATORS[int(rng.choice(len(_MUTATORS), p=weights / weights.sum()))][0]
        try:
            fn(rng, m)
        except (ValueError, TypeError, IndexError):  # protobuf refuses the value, or nothing left to pick
            pass
    try:
        data = m.SerializeToString()
    except Exception:  # noqa: BLE001 - a mutation protobuf cannot write (e.g. lone surrogates): use the seed
        data = base.SerializeToString()
    if rng.random() < 0.08:  # byte damage to the file itself
        b = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        if rng.random() < 0.3:
            del b[int(rng.integers(0, len(b))) :]
        data = bytes(b)
    out: dict[str, bytes | Path] = dict(files)
    if rng.random() < 0.2:
        out["link.bin"] = Path("../outside.bin")
    return Case(data, out)


class Workdir:
    """One scratch folder reused case after case: <root>/case/ holds the model and its files,
    <root>/outside.bin is a file outside it that no import may read."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="webxnn-fuzz-"))
        (self.root / "outside.bin").write_bytes(bytes(range(256)) * 64)
        self.case = self.root / "case"

    def write(self, c: Case) -> Path:
        if self.case.exists():
            shutil.rmtree(self.case)
        self.case.mkdir()
        for name, content in c.files.items():
            if isinstance(content, Path):
                os.symlink(content, self.case / name)
            else:
                (self.case / name).write_bytes(content)
        path = self.case / "m.onnx"
        path.write_bytes(c.model)
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def check(path: Path) -> None:
    """Import, compile, load and (when small) run the model at `path`."""
    import webxnn

    from .run_graph import compile_and_run

    g = webxnn.from_onnx(path)
    compile_and_run(g)
