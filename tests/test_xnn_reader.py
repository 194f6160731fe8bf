"""The reader on foreign and hostile input: ExecuTorch >= 0.6 payloads (named data, scale_buffer_idx), bare
flatbuffers with in-buffer constants, .pte extraction, truncation and random corruption."""

from __future__ import annotations

import pathlib
import random
import struct

import flatbuffers
import numpy as np
import pytest
from webxnn.xnn._schema import (
    Buffer,
    ConstantDataOffset,
    PerChannelQuant,
    XNNGraph,
    XNNQuantizedTensorValue,
    XNNTensorValue,
    XNode,
    XValue,
    _XNNNode2x1,
)

from webxnn.errors import FormatError
from webxnn.xnn import describe, reader, writer
from webxnn.xnn.ir import INVALID_ID, Datatype, Metadata, Node, Value, XnnGraph
from webxnn.xnn.writer import InvalidIRError

CONFORMANCE = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "conformance"
ET_V05 = CONFORMANCE / "executorch" / "conv_relu_nchw_v05.xnn"

W = np.array([1.5, -2.0], dtype="<f4").tobytes()
Q = np.array([[1, -1], [2, -2]], dtype="i1").tobytes()
QS = np.array([0.5, 0.25], dtype="<f4").tobytes()


# ---------------------------------------------------------------------------------------------------------
# hand-built foreign payloads (what ExecuTorch writes, not what we write)


def _vec_u32(b: flatbuffers.Builder, xs: list[int]) -> int:
    return b.CreateNumpyVector(np.array(xs, dtype="<u4"))


def _offsets(b: flatbuffers.Builder, offs: list[int]) -> int:
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def _tensor(b, dt, dims, idx, ext, flags, id_out) -> int:
    d = _vec_u32(b, dims)
    XNNTensorValue.Start(b)
    XNNTensorValue.AddDatatype(b, dt)
    XNNTensorValue.AddNumDims(b, len(dims))
    XNNTensorValue.AddDims(b, d)
    XNNTensorValue.AddConstantBufferIdx(b, idx)
    XNNTensorValue.AddExternalId(b, ext)
    XNNTensorValue.AddFlags(b, flags)
    XNNTensorValue.AddIdOut(b, id_out)
    return XNNTensorValue.End(b)


def _xvalue(b, utype, body) -> int:
    XValue.Start(b)
    XValue.AddXvalueUnionType(b, utype)
    XValue.AddXvalueUnion(b, body)
    return XValue.End(b)


def foreign_payload(style: str, identifier: bytes = b"XN01") -> bytes:
    """style "named": ExecuTorch >= 0.7 (header, empty segment, named_key everywhere, scale_buffer_idx);
    style "bare": no XH00 header, constants in the deprecated constant_buffer."""
    b = flatbuffers.Builder(1024)
    vals = [
        _xvalue(b, 1, _tensor(b, 1, [2], 0, 0, 1, 0)),
        _xvalue(b, 1, _tensor(b, 1, [2], 1, INVALID_ID, 0, 1)),
        _xvalue(b, 1, _tensor(b, 1, [2], 0, 1, 2, 2)),
    ]
    qt = _tensor(b, 6, [2, 2], 2, INVALID_ID, 0, 3)
    scale = b.CreateNumpyVector(np.zeros(0, "<f4"))
    PerChannelQuant.Start(b)
    PerChannelQuant.AddScale(b, scale)
    PerChannelQuant.AddChannelDim(b, 0)
    PerChannelQuant.AddScaleBufferIdx(b, 3)
    PerChannelQuant.AddNumScales(b, 2)
    pcq = PerChannelQuant.End(b)
    XNNQuantizedTensorValue.Start(b)
    XNNQuantizedTensorValue.AddTensorValue(b, qt)
    XNNQuantizedTensorValue.AddQuantParamsType(b, 1)
    XNNQuantizedTensorValue.AddQuantParams(b, pcq)
    vals.append(_xvalue(b, 2, XNNQuantizedTensorValue.End(b)))
    _XNNNode2x1.Start(b)
    _XNNNode2x1.AddInput1Id(b, 0)
    _XNNNode2x1.AddInput2Id(b, 1)
    _XNNNode2x1.AddOutputId(b, 2)
    add = _XNNNode2x1.End(b)
    XNode.Start(b)
    XNode.AddXnodeUnionType(b, 1)
    XNode.AddXnodeUnion(b, add)
    node = XNode.End(b)
    datas = [b"", W, Q, QS]
    if style == "named":
        keys = [b.CreateString(k) for k in ("", "w", "q", "scale_q")]
        entries = []
        for k, d in zip(keys, datas):
            ConstantDataOffset.Start(b)
            ConstantDataOffset.AddOffset(b, 2**64 - 1 if d else 0)
            ConstantDataOffset.AddSize(b, len(d))
            ConstantDataOffset.AddNamedKey(b, k)
            entries.append(ConstantDataOffset.End(b))
        cd = _offsets(b, entries)
    else:
        bufs = []
        for d in datas:
            s = b.CreateByteVector(d)
            Buffer.Start(b)
            Buffer.AddStorage(b, s)
            bufs.append(Buffer.End(b))
        cb = _offsets(b, bufs)
    xv, xn = _offsets(b, vals), _offsets(b, [node])
    ins, outs = _vec_u32(b, [0]), _vec_u32(b, [2])
    ver = b.CreateString("0")
    XNNGraph.Start(b)
    XNNGraph.AddVersion(b, ver)
    XNNGraph.AddXnodes(b, xn)
    XNNGraph.AddXvalues(b, xv)
    XNNGraph.AddNumExterns(b, 2)
    XNNGraph.AddInputIds(b, ins)
    XNNGraph.AddOutputIds(b, outs)
    if style == "named":
        XNNGraph.AddConstantData(b, cd)
    else:
        XNNGraph.AddConstantBuffer(b, cb)
    b.Finish(XNNGraph.End(b), file_identifier=identifier)
    fb = bytes(b.Output())
    if style == "bare":
        return fb
    c_off = 32 + (len(fb) + 15) // 16 * 16
    return writer.encode_header(32, len(fb), c_off, 0) + b"\0\0" + fb + bytes(c_off - 32 - len(fb))


def test_executorch_named_data_payload():
    blob = foreign_payload("named")
    g = reader.read(blob)
    assert g.identifier == "XN01"
    assert g.constants[1] is None and g.constant_refs[1].named_key == "w"
    assert g.constant_refs[0].named_key == ""
    assert g.values[3].quant.scale_buffer_idx == 3 and g.values[3].quant.num_scales == 2
    assert "named" in describe.describe(g, len(blob))
    with pytest.raises(InvalidIRError, match="no data"):
        writer.serialize(g)  # cannot write what we do not have
    named = {"w": W, "q": Q, "scale_q": QS, "unused": b"x"}
    g = reader.read(blob, named)
    assert [bytes(c) for c in g.constants] == [b"", W, Q, QS]
    # now it is complete: re-serialize as a webxnn blob (offsets, no named_key) and read it back
    g2 = reader.read(writer.serialize(g))
    assert [bytes(c) for c in g2.constants] == [b"", W, Q, QS]
    assert all(r.named_key is None for r in g2.constant_refs)
    with pytest.raises(FormatError, match="named data 'w' has 1 bytes"):
        reader.read(blob, {"w": b"x"})


@pytest.mark.parametrize("ident", [b"XN00", b"XN01"])
def test_bare_flatbuffer_with_constant_buffer(ident):
    fb = foreign_payload("bare", ident)
    g = reader.read(fb)
    assert not g.has_header and g.header is None and g.identifier == ident.decode()
    assert [bytes(c) for c in g.constants] == [b"", W, Q, QS]
    assert g.constants[1].obj is fb  # a view, not a copy
    assert "bare flatbuffer" in describe.describe(g, len(fb))


def test_bare_flatbuffer_without_constants_but_offsets_is_an_error():
    g = XnnGraph(
        values=[
            Value(0, Datatype.FP32, [2], external_id=0, flags=1),
            Value(1, Datatype.FP32, [2], constant_buffer_idx=1),
            Value(2, Datatype.FP32, [2], external_id=1, flags=2),
        ],
        nodes=[Node("XNNAdd", {"input1_id": 0, "input2_id": 1, "output_id": 2, "flags": 0})],
        constants=[b"", W],
        num_externs=2,
        input_ids=[0],
        output_ids=[2],
    )
    blob = writer.serialize(g)
    fb_size = struct.unpack_from("<I", blob, 14)[0]
    with pytest.raises(FormatError, match="no XH00 header"):
        reader.read(blob[32 : 32 + fb_size])


def test_bad_magic_identifier_and_header_fields():
    blob = bytearray(writer.serialize(sample_graph()))
    with pytest.raises(FormatError, match="too short"):
        reader.read(b"\0\0\0\0XH0")
    bad = bytearray(blob)
    bad[36:40] = b"ZZ99"
    with pytest.raises(FormatError, match="identifier at byte 36"):
        reader.read(bad)
    with pytest.raises(FormatError, match="identifier"):
        reader.read(b"\0" * 64)
    for pos, val, msg in [
        (10, 8, "overlaps the 30-byte header"),
        (14, 4, "smaller than 8"),
        (14, 10**6, "runs past"),
        (18, 40, "overlaps the flatbuffer"),
        (22, 10**6, "runs past"),
    ]:
        bad = bytearray(blob)
        struct.pack_into("<I", bad, pos, val)
        with pytest.raises(FormatError, match=msg):
            reader.read(bad)


def test_constant_offset_outside_segment():
    g = sample_graph()
    blob = bytearray(writer.serialize(g))
    c_off = struct.unpack_from("<I", blob, 18)[0]
    # shrink the segment: the last constant no longer fits
    struct.pack_into("<Q", blob, 22, 8)
    with pytest.raises(FormatError, match=r"constant_data\[\d\]: offset \d+ \+ size \d+ is past"):
        reader.read(bytes(blob[: c_off + 8]))


# ---------------------------------------------------------------------------------------------------------
# hostile input


def sample_graph() -> XnnGraph:
    g = XnnGraph(version="1")
    w = g.add_constant(np.arange(12, dtype="<f4"))
    b = g.add_constant(np.arange(3, dtype="<f4"))
    g.values = [
        Value(0, Datatype.FP32, [1, 4], external_id=0, flags=1),
        Value(1, Datatype.FP32, [3, 4], constant_buffer_idx=w),
        Value(2, Datatype.FP32, [3], constant_buffer_idx=b),
        Value(3, Datatype.FP32, [1, 3]),
        Value(4, Datatype.FP32, [3, 1], external_id=1, flags=2),
    ]
    g.nodes = [
        Node(
            "XNNFullyConnected",
            {"input1_id": 0, "filter_id": 1, "bias_id": 2, "output_id": 3, "flags": 0},
            output_min_max=(0.0, 6.0),
        ),
        Node("XNNStaticReshape", {"new_shape": [3, 1], "input_id": 3, "output_id": 4, "flags": 0}),
    ]
    g.num_externs, g.input_ids, g.output_ids = 2, [0], [4]
    g.metadata = Metadata("webxnn test", ["x"], ["y"], ["fc:linear", "r:reshape"])
    return g


def _read_or_format_error(data: bytes) -> None:
    try:
        g = reader.read(data)
    except FormatError:
        return
    # whatever reads must also describe and (re)serialize without a non-webxnn exception
    describe.describe(g, len(data))
    describe.summary_dict(g, len(data))
    try:
        writer.serialize(g)
    except FormatError:
        pass


def _blobs() -> list[bytes]:
    blob = writer.serialize(sample_graph())
    fb_size = struct.unpack_from("<I", blob, 14)[0]
    out = [blob, blob[32 : 32 + fb_size], foreign_payload("named"), foreign_payload("bare")]
    if ET_V05.exists():
        out.append(ET_V05.read_bytes())
    return out


def test_every_truncation_is_a_format_error():
    for blob in _blobs():
        for n in range(len(blob)):
            _read_or_format_error(blob[:n])
            if not blob.startswith(b"\0\0\0\0XH00"):
                continue
            # keep a consistent header but cut the flatbuffer: exercises the table walker
            fb_size = struct.unpack_from("<I", blob, 14)[0]
            if 8 <= n - 32 < fb_size:
                cut = bytearray(blob[:n])
                struct.pack_into("<IIIQ", cut, 10, 32, n - 32, n, 0)
                _read_or_format_error(bytes(cut))


def test_random_mutations_are_format_errors():
    rng = random.Random(1234)
    blobs = _blobs()
    for i in range(500):
        data = bytearray(blobs[i % len(blobs)])
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(data))
            flip = data[pos] ^ (1 << rng.randrange(8))
            data[pos] = rng.choice([0, 0xFF, 0x80, 0x7F, rng.randrange(256), flip])
        _read_or_format_error(bytes(data))


def test_shared_vectors_cannot_blow_up():
    """Many values pointing at one huge dims vector: the work budget stops the walk."""
    b = flatbuffers.Builder(1 << 20)
    dims = _vec_u32(b, list(range(60000)))
    tvs = []
    for i in range(200):
        XNNTensorValue.Start(b)
        XNNTensorValue.AddDatatype(b, 1)
        XNNTensorValue.AddDims(b, dims)
        XNNTensorValue.AddIdOut(b, i)
        tvs.append(_xvalue(b, 1, XNNTensorValue.End(b)))
    xv = _offsets(b, tvs)
    XNNGraph.Start(b)
    XNNGraph.AddXvalues(b, xv)
    b.Finish(XNNGraph.End(b), file_identifier=b"XN00")
    with pytest.raises(FormatError, match="references far more data"):
        reader.read(bytes(b.Output()))


def test_non_bytes_input():
    with pytest.raises(FormatError):
        reader.read(12345)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# .pte extraction


def build_pte(payload: bytes, named: dict[str, bytes], inline: bool, extended_header: bool = True) -> bytes:
    b = flatbuffers.Builder(1024)
    seg_datas = ([] if inline else [payload]) + list(named.values())
    offs, pos = [], 0
    for d in seg_datas:
        offs.append(pos)
        pos += (len(d) + 127) // 128 * 128
    segs = []
    for off, d in zip(offs, seg_datas):
        b.StartObject(2)
        b.PrependUint64Slot(0, off, 0)
        b.PrependUint64Slot(1, len(d), 0)
        segs.append(b.EndObject())
    seg_vec = _offsets(b, segs)
    nds = []
    for i, key in enumerate(named):
        k = b.CreateString(key)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, k, 0)
        b.PrependUint32Slot(1, i + (0 if inline else 1), 0)
        nds.append(b.EndObject())
    nd_vec = _offsets(b, nds)
    inline_vec = None
    if inline:
        data = b.CreateByteVector(payload)
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(0, data, 0)
        inline_vec = _offsets(b, [b.EndObject()])
    dele_id = b.CreateString("XnnpackBackend")
    other_id = b.CreateString("OtherBackend")
    b.StartObject(2)
    b.PrependInt8Slot(0, 0 if inline else 1, 0)
    b.PrependUint32Slot(1, 0, 0)
    ref = b.EndObject()
    b.StartObject(2)
    b.PrependInt8Slot(0, 0, 0)
    b.PrependUint32Slot(1, 7, 0)
    other_ref = b.EndObject()
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, other_id, 0)
    b.PrependUOffsetTRelativeSlot(1, other_ref, 0)
    other = b.EndObject()
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, dele_id, 0)
    b.PrependUOffsetTRelativeSlot(1, ref, 0)
    dele = b.EndObject()
    delegates = _offsets(b, [other, dele])
    b.StartObject(8)
    b.PrependUOffsetTRelativeSlot(7, delegates, 0)
    plan = b.EndObject()
    plans = _offsets(b, [plan])
    b.StartObject(8)
    b.PrependUint32Slot(0, 0, 0)
    b.PrependUOffsetTRelativeSlot(1, plans, 0)
    if inline_vec is not None:
        b.PrependUOffsetTRelativeSlot(3, inline_vec, 0)
    b.PrependUOffsetTRelativeSlot(4, seg_vec, 0)
    b.PrependUOffsetTRelativeSlot(7, nd_vec, 0)
    b.Finish(b.EndObject(), file_identifier=b"ET12")
    fb = bytes(b.Output())
    if not extended_header:
        return fb
    # ExecuTorch puts the 32-byte extended header right after the identifier; everything after moves by 32,
    # so only the root offset needs adjusting (all other offsets are relative)
    root = struct.unpack_from("<I", fb, 0)[0] + 32
    program_size = len(fb) + 32
    base = (program_size + 127) // 128 * 128
    eh = b"eh00" + struct.pack("<IQQQ", 32, program_size, base, pos)
    prog = struct.pack("<I", root) + fb[4:8] + eh + fb[8:]
    out = bytearray(prog + bytes(base - program_size))
    for off, d in zip(offs, seg_datas):
        out += bytes(base + off - len(out)) + d
    return bytes(out)


@pytest.mark.parametrize("inline", [False, True])
def test_extract_from_pte(inline):
    payload = foreign_payload("named")
    named = {"w": W, "q": Q, "scale_q": QS}
    pte = build_pte(payload, named, inline)
    got, got_named = reader.extract_from_pte(pte)
    assert got == payload
    assert got_named == named
    g = reader.read(got, got_named)
    assert [bytes(c) for c in g.constants] == [b"", W, Q, QS]


def test_extract_from_pte_without_extended_header():
    payload = writer.serialize(sample_graph())
    got, named = reader.extract_from_pte(build_pte(payload, {}, inline=True, extended_header=False))
    assert got == payload and named == {}
    with pytest.raises(FormatError, match="no extended header"):
        reader.extract_from_pte(build_pte(payload, {}, inline=False, extended_header=False))


def test_extract_from_pte_errors():
    with pytest.raises(FormatError, match="ET12"):
        reader.extract_from_pte(writer.serialize(sample_graph()))
    pte = build_pte(writer.serialize(sample_graph()), {"k": b"abc"}, inline=False)
    with pytest.raises(FormatError, match="asked for #1"):
        reader.extract_from_pte(pte, delegate_index=1)
    rng = random.Random(7)
    for n in range(0, len(pte), 7):
        try:
            reader.extract_from_pte(pte[:n])
        except FormatError:
            pass
    for _ in range(200):
        data = bytearray(pte)
        data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            reader.extract_from_pte(bytes(data))
        except FormatError:
            pass


def test_describe_fused_clamp_and_names():
    g = sample_graph()
    blob = writer.serialize(g)
    back = reader.read(blob)
    text = describe.describe(back, len(blob))
    assert "producer webxnn test" in text
    assert "x" in text and "y" in text
    assert "clamp=[0, 6]" in text and "new_shape=[3,1]" in text and "<fc:linear>" in text
    d = describe.summary_dict(back, len(blob))
    assert d["inputs"][0]["name"] == "x" and d["outputs"][0]["dims"] == [3, 1]
    assert d["constants"]["count"] == 2 and d["constants"]["total_bytes"] == 60
    assert d["totals"]["overhead_bytes"] == len(blob) - 60
    assert d["nodes"][0]["clamp"] == [0.0, 6.0]
