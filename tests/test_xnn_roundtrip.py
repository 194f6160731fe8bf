"""Round trips IR → .xnn bytes → IR for every node type and quantization kind; byte-level layout checks."""

from __future__ import annotations

import math
import pathlib
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webxnn.errors import FormatError
from webxnn.xnn import _layout as L
from webxnn.xnn import describe, reader, writer
from webxnn.xnn.ir import (
    CHECKED_GATHER_KINDS,
    FLAG_CHECKED_INDICES,
    FLAG_INDICES_WRAP,
    INVALID_ID,
    ConstantRef,
    Datatype,
    Metadata,
    Node,
    PerChannelGroupQuant,
    PerChannelQuant,
    PerTensorQuant,
    PerTokenDynamicQuant,
    Value,
    XnnGraph,
)
from webxnn.xnn.writer import InvalidIRError

CONFORMANCE = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance"
ET_V05 = CONFORMANCE / "executorch" / "conv_relu_nchw_v05.xnn"


# ---------------------------------------------------------------------------------------------------------
# helpers


def full_fields(n: Node) -> dict:
    """The node's fields as the reader returns them: every table field, absent ones at their defaults."""
    spec = L.node_table(n.kind)
    out = {}
    for f in spec.fields:
        if f.name in n.fields:
            v = n.fields[f.name]
            if isinstance(v, str):
                v = L.enum_values(L.field_enum(spec.name, f.name))[v]
            out[f.name] = list(v) if f.kind == "vector" else v
        elif f.name in ("bias_id", "input3_id", "input4_id", "input5_id"):
            out[f.name] = INVALID_ID
        elif f.name == "num_dims":
            vec = next(x for x in spec.fields if x.kind == "vector")
            out[f.name] = len(n.fields.get(vec.name, []))
        else:
            out[f.name] = [] if f.kind == "vector" else f.default
    return out


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_floats(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_floats(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or f32(a) == b
    return a == b


def assert_same_graph(want: XnnGraph, got: XnnGraph) -> None:
    assert got.version == want.version
    assert got.num_externs == want.num_externs
    assert list(got.input_ids) == list(want.input_ids)
    assert list(got.output_ids) == list(want.output_ids)
    assert len(got.values) == len(want.values)
    for a, b in zip(want.values, got.values):

        def key(v: Value) -> tuple:
            return (
                v.id,
                v.datatype,
                list(v.dims),
                v.constant_buffer_idx,
                v.external_id,
                v.flags,
                v.dq_datatype,
            )

        assert key(b) == key(a)
        assert type(b.quant) is type(a.quant)
        if a.quant is not None:
            for k, v in vars(a.quant).items():
                assert same_floats(v if not isinstance(v, tuple) else list(v), getattr(b.quant, k)), (a.id, k)
    assert len(got.nodes) == len(want.nodes)
    for a, b in zip(want.nodes, got.nodes):
        assert b.kind == a.kind
        exp = full_fields(a)
        assert list(b.fields) == list(exp)
        for k in exp:
            assert same_floats(exp[k], b.fields[k]), (a.kind, k, exp[k], b.fields[k])
        assert b.debug_handle == a.debug_handle
        if a.output_min_max is None:
            assert b.output_min_max is None
        else:
            assert same_floats(list(a.output_min_max), list(b.output_min_max))
    want_consts = [
        bytes(np.ascontiguousarray(c).tobytes()) if isinstance(c, np.ndarray) else bytes(c)
        for c in want.constants
    ]
    assert [bytes(c) for c in got.constants] == want_consts
    if want.metadata is None:
        assert got.metadata is None
    else:
        assert got.metadata == want.metadata


def roundtrip(g: XnnGraph) -> tuple[bytes, XnnGraph]:
    blob = writer.serialize(g)
    back = reader.read(blob)
    assert_same_graph(g, back)
    return blob, back


def sample_value(spec: L.FieldSpec, table: str):
    """A non-default value for a node field of this type."""
    enum = L.field_enum(table, spec.name)
    if enum:
        return max(L.enum_values(enum).values())
    if spec.kind == "vector":
        return [3, 1, 2]
    return {"<f": -2.5, "<?": True}.get(spec.fmt, 5 + spec.slot)


def graph_for_node(kind: str) -> XnnGraph:
    """One node of `kind`, every field set to a non-default value, its inputs graph inputs and its outputs
    graph outputs."""
    spec = L.node_table(kind)
    fields: dict = {}
    ins, outs = [], []
    n_cat = int(kind[14:]) if kind.startswith("XNNConcatenate") else None
    for f in spec.fields:
        if f.name.endswith("_id"):
            if f.name.startswith("output"):
                outs.append(f.name)
            elif n_cat is not None and f.name.startswith("input") and int(f.name[5]) > n_cat:
                fields[f.name] = INVALID_ID
                continue
            else:
                ins.append(f.name)
            fields[f.name] = None
        elif f.name == "num_dims":
            fields[f.name] = 3  # len of the vectors sample_value makes
        else:
            fields[f.name] = sample_value(f, spec.name)
    if kind in CHECKED_GATHER_KINDS:  # the only non-zero flags a gather may carry
        fields["flags"] = FLAG_CHECKED_INDICES | FLAG_INDICES_WRAP
    values = []
    for k, name in enumerate(ins):
        values.append(Value(id=10 + k, datatype=Datatype.FP32, dims=[1, 2], external_id=k, flags=1))
        fields[name] = 10 + k
    for k, name in enumerate(outs):
        values.append(Value(id=20 + k, datatype=Datatype.FP32, dims=[2], external_id=len(ins) + k, flags=2))
        fields[name] = 20 + k
    node = Node(kind=kind, fields=fields, output_min_max=(-1.0, 6.0), debug_handle=7)
    return XnnGraph(
        values=values,
        nodes=[node],
        num_externs=len(ins) + len(outs),
        input_ids=[10 + k for k in range(len(ins))],
        output_ids=[20 + k for k in range(len(outs))],
        metadata=Metadata(
            producer="test",
            input_names=[f"in{k}" for k in range(len(ins))],
            output_names=[f"out{k}" for k in range(len(outs))],
            node_sources=[f"n0:{kind}"],
        ),
    )


def quant_graph() -> XnnGraph:
    """Every quantization kind: dynamic qdint8, blockwise qbint4, per-tensor qint8, per-channel qcint8/qcint32
    with inline scales, and per-channel with scales in a constant (scale_buffer_idx + num_scales)."""
    g = XnnGraph(version="1")
    rng = np.random.default_rng(0)
    w4 = g.add_constant(rng.integers(0, 255, size=(3, 32), dtype=np.uint8))  # qbint4 [3, 64]
    w8 = g.add_constant(rng.integers(-127, 127, size=(3, 3), dtype=np.int8))
    b32 = g.add_constant(np.array([1, -2, 3], dtype=np.int32))
    w8b = g.add_constant(rng.integers(-127, 127, size=(3, 3), dtype=np.int8).tobytes())
    scales = g.add_constant(np.array([0.5, 0.25, 0.125], dtype=np.float32))
    g.values = [
        Value(0, Datatype.FP32, [1, 64], external_id=0, flags=1),
        Value(1, Datatype.QDINT8, [1, 64], quant=PerTokenDynamicQuant(1)),
        Value(
            2,
            Datatype.QBINT4,
            [3, 64],
            constant_buffer_idx=w4,
            quant=PerChannelGroupQuant(scale=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], channel_dim=0, group_size=32),
        ),
        Value(3, Datatype.FP32, [1, 3]),
        Value(4, Datatype.QINT8, [1, 3], quant=PerTensorQuant(0.1, -2)),
        Value(5, Datatype.QCINT8, [3, 3], constant_buffer_idx=w8, quant=PerChannelQuant([0.1, 0.2, 0.3], 0)),
        Value(
            6, Datatype.QCINT32, [3], constant_buffer_idx=b32, quant=PerChannelQuant([0.01, 0.02, 0.03], 0)
        ),
        Value(7, Datatype.QINT8, [1, 3], quant=PerTensorQuant(0.05, 3)),
        Value(
            8,
            Datatype.QCINT8,
            [3, 3],
            constant_buffer_idx=w8b,
            quant=PerChannelQuant([], 0, scale_buffer_idx=scales, num_scales=3),
        ),
        Value(9, Datatype.QINT8, [1, 3], external_id=1, flags=2, quant=PerTensorQuant(0.2, 0)),
    ]
    fc = {"bias_id": INVALID_ID, "flags": 0}
    g.nodes = [
        Node("XNNConvert", {"input_id": 0, "output_id": 1, "flags": 0}),
        Node("XNNFullyConnected", {"input1_id": 1, "filter_id": 2, "output_id": 3, **fc}),
        Node("XNNConvert", {"input_id": 3, "output_id": 4, "flags": 0}),
        Node(
            "XNNFullyConnected",
            {"input1_id": 4, "filter_id": 5, "output_id": 7, **fc, "bias_id": 6},
            output_min_max=(0.0, math.inf),
        ),
        Node("XNNFullyConnected", {"input1_id": 7, "filter_id": 8, "output_id": 9, **fc}),
    ]
    g.num_externs, g.input_ids, g.output_ids = 2, [0], [9]
    return g


# ---------------------------------------------------------------------------------------------------------
# round trips


ALL_KINDS = sorted(L.union_members(L.NODE_UNION), key=lambda k: L.union_members(L.NODE_UNION)[k])


def test_union_is_complete():
    members = L.union_members(L.NODE_UNION)
    assert len([k for k, v in members.items() if v < 128]) == 47
    assert {"WXUnary", "WXBinary", "WXReduce"} <= set(members)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_node_roundtrip(kind):
    g = graph_for_node(kind)
    blob, back = roundtrip(g)
    assert back.nodes[0].kind == kind
    text = describe.describe(back, len(blob))
    assert kind in text


def test_quantization_roundtrip():
    g = quant_graph()
    blob, back = roundtrip(g)
    q = {v.id: v.quant for v in back.values}
    assert isinstance(q[1], PerTokenDynamicQuant) and q[1].num_nonbatch_dims == 1
    assert isinstance(q[2], PerChannelGroupQuant) and q[2].group_size == 32 and len(q[2].scale) == 6
    assert isinstance(q[4], PerTensorQuant) and q[4].zero_point == -2
    assert isinstance(q[5], PerChannelQuant) and len(q[5].scale) == 3
    assert isinstance(q[8], PerChannelQuant) and q[8].scale == [] and q[8].scale_buffer_idx == 5
    assert q[8].num_scales == 3
    assert np.frombuffer(back.constants[5], "<f4").tolist() == [0.5, 0.25, 0.125]
    text = describe.describe(back, len(blob))
    for word in ("zp=-2", "per-channel", "per-channel-group", "dynamic per-token", "qbint4"):
        assert word in text


def test_per_channel_empty_scale_vector_is_written():
    """The runtime dereferences PerChannelQuant.scale unconditionally: it must be present even when empty."""
    from webxnn.xnn._schema.PerChannelQuant import PerChannelQuant as FbPCQ
    from webxnn.xnn._schema.XNNGraph import XNNGraph as FbGraph
    from webxnn.xnn._schema.XNNQuantizedTensorValue import XNNQuantizedTensorValue as FbQTV

    blob = writer.serialize(quant_graph())
    fb_off, fb_size = struct.unpack_from("<II", blob, 10)
    root = FbGraph.GetRootAs(blob[fb_off : fb_off + fb_size], 0)
    xv = root.Xvalues(8)
    qtv = FbQTV()
    qtv.Init(xv.XvalueUnion().Bytes, xv.XvalueUnion().Pos)
    pcq = FbPCQ()
    pcq.Init(qtv.QuantParams().Bytes, qtv.QuantParams().Pos)
    assert not pcq.ScaleIsNone() and pcq.ScaleLength() == 0


# ---------------------------------------------------------------------------------------------------------
# bytes


def test_header_test_vector():
    h = writer.encode_header(0x11223344, 0x55667788, 0x6688AACC, 0x99AABBCC99AABBCC)
    assert h == bytes.fromhex("00000000") + b"XH00" + bytes.fromhex(
        "1E004433221188776655CCAA8866CCBBAA99CCBBAA99"
    )
    assert len(h) == 30


def test_blob_layout():
    g = quant_graph()
    g.metadata = Metadata("webxnn test", ["x"], ["y"], [f"n{i}" for i in range(len(g.nodes))])
    blob = writer.serialize(g)
    assert blob[0:4] == b"\0\0\0\0" and blob[4:8] == b"XH00"
    hlen, fb_off, fb_size, c_off, c_size = struct.unpack_from("<HIIIQ", blob, 8)
    assert (hlen, fb_off) == (30, 32)
    assert blob[30:32] == b"\0\0"
    assert blob[fb_off + 4 : fb_off + 8] == b"XN00"
    assert c_off == 32 + (fb_size + 15) // 16 * 16
    assert blob[fb_off + fb_size : c_off] == bytes(c_off - fb_off - fb_size)
    assert c_off + c_size == len(blob)
    back = reader.read(blob)
    assert back.constant_refs[0] == ConstantRef(0, 0, None)
    seg = blob[c_off:]
    end = 0
    for i, ref in enumerate(back.constant_refs[1:], 1):
        assert ref.offset % 16 == 0, i
        assert ref.named_key is None
        assert ref.offset >= end
        assert seg[end : ref.offset] == bytes(ref.offset - end)  # zero padding
        assert bytes(seg[ref.offset : ref.offset + ref.size]) == bytes(back.constants[i])
        end = ref.offset + ref.size
    assert c_size == (end + 15) // 16 * 16
    # constants are views into the blob, not copies
    assert back.constants[1].obj is blob


def test_no_named_key_and_explicit_invalid_external_id():
    from webxnn.xnn._schema.XNNGraph import XNNGraph as FbGraph
    from webxnn.xnn._schema.XNNTensorValue import XNNTensorValue as FbTV

    g = quant_graph()
    blob = writer.serialize(g)
    fb_off, fb_size = struct.unpack_from("<II", blob, 10)
    root = FbGraph.GetRootAs(blob[fb_off : fb_off + fb_size], 0)
    assert root.ConstantDataLength() == len(g.constants)
    for i in range(root.ConstantDataLength()):
        cdo = root.ConstantData(i)
        assert cdo.NamedKey() is None
        assert cdo._tab.Offset(8) == 0  # vtable slot 2 (named_key) absent
    for i in range(root.XvaluesLength()):
        xv = root.Xvalues(i)
        u = xv.XvalueUnion()
        tv = FbTV()
        if xv.XvalueUnionType() == 2:  # quantized: its tensor_value
            from webxnn.xnn._schema.XNNQuantizedTensorValue import XNNQuantizedTensorValue as FbQTV

            q = FbQTV()
            q.Init(u.Bytes, u.Pos)
            tv = q.TensorValue()
        else:
            tv.Init(u.Bytes, u.Pos)
        if tv.Flags() == 0:
            assert tv._tab.Offset(12) != 0  # external_id present in the vtable
            assert tv.ExternalId() == INVALID_ID
        assert tv.NumDims() == tv.DimsLength()
    assert all(v.external_id == INVALID_ID for v in reader.read(blob).values if v.flags == 0)


def test_rank0_is_empty_dims():
    g = XnnGraph(
        values=[
            Value(0, Datatype.FP32, [], external_id=0, flags=1),
            Value(1, Datatype.FP32, [], external_id=1, flags=2),
        ],
        nodes=[Node("XNNAbs", {"input_id": 0, "output_id": 1, "flags": 0})],
        num_externs=2,
        input_ids=[0],
        output_ids=[1],
    )
    _, back = roundtrip(g)
    assert back.values[0].dims == []


def test_serialize_to_file_matches(tmp_path):
    g = quant_graph()
    path = tmp_path / "m.xnn"
    n = writer.serialize_to_file(g, path)
    assert path.read_bytes() == writer.serialize(g)
    assert n == path.stat().st_size


def test_numpy_constants_little_endian_c_order():
    big = np.arange(6, dtype=">i4").reshape(2, 3)
    fortran = np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3))
    g = XnnGraph(
        values=[
            Value(0, Datatype.FP32, [2, 3], external_id=0, flags=1),
            Value(1, Datatype.INT32, [2, 3], constant_buffer_idx=1),
            Value(2, Datatype.FP32, [2, 3], constant_buffer_idx=2),
            Value(3, Datatype.FP32, [2, 3], external_id=1, flags=2),
        ],
        nodes=[Node("XNNAdd", {"input1_id": 0, "input2_id": 2, "output_id": 3, "flags": 0})],
        constants=[b"", big, fortran],
        num_externs=2,
        input_ids=[0],
        output_ids=[3],
    )
    back = reader.read(writer.serialize(g))
    assert np.frombuffer(back.constants[1], "<i4").tolist() == list(range(6))
    assert np.frombuffer(back.constants[2], "<f4").tolist() == list(range(6))


# ---------------------------------------------------------------------------------------------------------
# the ExecuTorch 0.5 vector


def test_read_executorch_v05():
    if not ET_V05.exists():
        pytest.skip("conformance data not present")
    blob = ET_V05.read_bytes()
    g = reader.read(blob)
    assert g.identifier == "XN01" and g.has_header
    assert [n.kind for n in g.nodes] == ["XNNStaticTranspose", "XNNConv2d", "XNNStaticTranspose"]
    assert len(g.values) == 6
    assert g.nodes[1].output_min_max == (0.0, math.inf)
    assert g.nodes[0].fields["perm"] == [0, 2, 3, 1] and g.nodes[2].fields["perm"] == [0, 3, 1, 2]
    assert [len(c) for c in g.constants[1:]] == [96, 12]
    assert g.metadata is None and g.num_externs == 2
    ins = [v for v in g.values if v.flags == 1]
    assert ins[0].dims == [1, 2, 3, 3] and ins[0].external_id == 0
    text = describe.describe(g, len(blob))
    for k in ("XNNStaticTranspose", "XNNConv2d", "clamp=[0, inf]", "perm=[0,2,3,1]", "kernel=2x2"):
        assert k in text
    blob2 = writer.serialize(g)
    g2 = reader.read(blob2)
    assert g2.identifier == "XN00"
    assert_same_graph(g, g2)
    assert writer.serialize(g2) == blob2  # stable


# ---------------------------------------------------------------------------------------------------------
# the writer as a checker


def _chk(g: XnnGraph, match: str) -> None:
    with pytest.raises(InvalidIRError, match=match):
        writer.serialize(g)
    # it is both a webxnn error and a ValueError
    assert issubclass(InvalidIRError, FormatError) and issubclass(InvalidIRError, ValueError)


def test_writer_rejects_inconsistent_ir():
    g = quant_graph()
    g.num_externs = 3
    _chk(g, "num_externs")
    g = quant_graph()
    g.values[3].external_id = 0
    _chk(g, "internal value has external_id")
    g = quant_graph()
    g.values[0].flags = 4
    _chk(g, "flags")
    g = quant_graph()
    g.input_ids = []
    _chk(g, "input_ids")
    g = quant_graph()
    g.values[9].external_id = 0
    _chk(g, "external ids")
    g = quant_graph()
    g.nodes[0].fields["bogus"] = 1
    _chk(g, "no field 'bogus'")
    g = quant_graph()
    g.nodes[0].kind = "XNNFancy"
    _chk(g, "unknown node kind")
    g = quant_graph()
    del g.nodes[0].fields["input_id"]
    _chk(g, "missing field 'input_id'")
    g = quant_graph()
    g.nodes[0].fields["input_id"] = 99
    _chk(g, "unknown value 99")
    g = quant_graph()
    g.nodes[0], g.nodes[1] = g.nodes[1], g.nodes[0]
    _chk(g, "before any node produces it")
    g = quant_graph()
    g.constants[3] = b"\0" * 8
    _chk(g, "has 8 bytes")
    g = quant_graph()
    g.values[5].quant = PerChannelQuant([0.1], 0)
    _chk(g, "1 scales for 3 channels")
    g = quant_graph()
    g.values[4].quant = None
    _chk(g, "needs PerTensorQuant")
    g = quant_graph()
    g.values[3].quant = PerTensorQuant(1.0)
    _chk(g, "takes no quantization")
    g = quant_graph()
    g.nodes[0].fields["flags"] = -1
    _chk(g, "uint32|not fit")
    g = quant_graph()
    g.constants[0] = b"x"
    _chk(g, "reserved")
    g = quant_graph()
    g.metadata = Metadata("p", ["a", "b"], ["c"])
    _chk(g, "names")
    g = graph_for_node("XNNStaticTranspose")
    g.nodes[0].fields["num_dims"] = 2
    _chk(g, "num_dims")
    g = graph_for_node("WXUnary")
    g.nodes[0].fields["op"] = "no_such_op"
    _chk(g, "WXUnaryOp")


def test_writer_fills_num_dims_optional_ids_and_enum_names():
    g = XnnGraph(
        values=[
            Value(0, Datatype.FP32, [2, 3], external_id=0, flags=1),
            Value(1, Datatype.FP32, [3, 2], external_id=1, flags=2),
        ],
        nodes=[Node("XNNStaticTranspose", {"perm": [1, 0], "input_id": 0, "output_id": 1})],
        num_externs=2,
        input_ids=[0],
        output_ids=[1],
    )
    back = reader.read(writer.serialize(g))
    assert back.nodes[0].fields["num_dims"] == 2
    g.nodes = [Node("WXUnary", {"op": "erf", "input_id": 0, "output_id": 1})]
    back = reader.read(writer.serialize(g))
    assert back.nodes[0].fields["op"] == L.enum_values("WXUnaryOp")["erf"]
    assert "op=erf" in describe.describe(back)


# ---------------------------------------------------------------------------------------------------------
# property: random small graphs


_FLOATS = st.floats(allow_nan=False, width=32)


@st.composite
def small_graphs(draw) -> XnnGraph:
    g = XnnGraph(version=draw(st.sampled_from(["0", "1", "webxnn"])))
    n_in = draw(st.integers(1, 3))
    dims = st.lists(st.integers(0, 9), min_size=0, max_size=4)
    ids = iter(draw(st.permutations(list(range(40)))))
    live = []
    for k in range(n_in):
        v = Value(
            next(ids),
            draw(st.sampled_from([Datatype.FP32, Datatype.FP16, Datatype.INT32])),
            draw(dims),
            external_id=k,
            flags=1,
        )
        g.values.append(v)
        live.append(v.id)
    for _ in range(draw(st.integers(0, 3))):  # constants
        d = draw(dims)
        dt = draw(st.sampled_from([Datatype.FP32, Datatype.FP16, Datatype.WX_INT64, Datatype.WX_UINT8]))
        size = (
            int(np.prod(d, dtype=np.int64))
            * {Datatype.FP32: 4, Datatype.FP16: 2, Datatype.WX_INT64: 8, Datatype.WX_UINT8: 1}[dt]
        )
        arr = np.frombuffer(draw(st.binary(min_size=size, max_size=size)), np.uint8)
        idx = g.add_constant(arr if draw(st.booleans()) else arr.tobytes())
        v = Value(next(ids), dt, d, constant_buffer_idx=idx)
        g.values.append(v)
        live.append(v.id)
    kinds = [
        "XNNAdd",
        "XNNSigmoid",
        "XNNStaticTranspose",
        "XNNConcatenate3",
        "WXReduce",
        "XNNConv2d",
        "XNNStaticConstantPad",
        "XNNLeakyReLU",
    ]
    produced = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        spec = L.node_table(kind)
        fields = {}
        out_id = next(ids)
        for f in spec.fields:
            if f.name == "output_id":
                fields[f.name] = out_id
            elif f.name.endswith("_id"):
                optional = f.name in ("bias_id", "input3_id")
                fields[f.name] = draw(st.sampled_from(live + ([INVALID_ID] if optional else [])))
            elif f.name == "num_dims":
                continue
            elif f.kind == "vector":
                fields[f.name] = draw(st.lists(st.integers(0, 2**32 - 1), max_size=5))
            elif f.fmt == "<f":
                fields[f.name] = draw(_FLOATS)
            elif f.fmt == "<?":
                fields[f.name] = draw(st.booleans())
            elif f.fmt == "<H":
                fields[f.name] = draw(st.integers(0, 11))
            else:
                fields[f.name] = draw(st.integers(0, 2**32 - 1))
        omm = draw(st.none() | st.tuples(_FLOATS | st.just(-math.inf), _FLOATS | st.just(math.inf)))
        g.nodes.append(Node(kind, fields, output_min_max=omm, debug_handle=draw(st.integers(0, 2**32 - 1))))
        g.values.append(Value(out_id, Datatype.FP32, draw(dims)))
        live.append(out_id)
        produced.append(g.values[-1])
    n_out = draw(st.integers(1, len(produced)))
    for k, v in enumerate(produced[-n_out:]):
        v.flags, v.external_id = 2, n_in + k
    g.num_externs = n_in + n_out
    g.input_ids = [v.id for v in g.values if v.flags == 1]
    g.output_ids = [v.id for v in produced[-n_out:]]
    if draw(st.booleans()):
        names = st.text(max_size=8)
        g.metadata = Metadata(
            draw(names),
            [draw(names) for _ in range(n_in)],
            [draw(names) for _ in range(n_out)],
            draw(st.sampled_from([[], [f"s{i}" for i in range(len(g.nodes))]])),
        )
    return g


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_graphs())
def test_random_graphs_roundtrip(g):
    blob, back = roundtrip(g)
    for i, ref in enumerate(back.constant_refs[1:], 1):
        assert ref.offset % 16 == 0 and ref.size == len(back.constants[i])
    describe.describe(back, len(blob))
    describe.summary_dict(back, len(blob))
