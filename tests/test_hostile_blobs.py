"""Hostile `.xnn` blobs: every one must come back as FormatError / UnsupportedError with a message that says
what is wrong, never as a crash, a hang or an out-of-bounds read.

(a) hand-made bad blobs with specific messages, (b) 1,000 seeded random mutations of valid blobs through the
Python module, (c) [slow] mutated blobs through an ASan/UBSan build of xnnrun.
"""

from __future__ import annotations

import os
import pathlib
import struct
import subprocess

import flatbuffers
import numpy as np
import pytest
from webxnn.xnn._schema import ConstantDataOffset as CDO
from webxnn.xnn._schema import XNNGraph as G
from webxnn.xnn._schema import XNNTensorValue as TV
from webxnn.xnn._schema import XNode, XValue
from webxnn.xnn._schema import _XNNNode1x1 as N11

from conftest import CONFORMANCE, conv_fields, pool_fields
from fuzz.blobs import mutate
from fuzz.run_graph import run_program
from sanitize_build import ASAN_ENV, ASAN_REPORTS, require_sanitized
from test_runtime_util import GraphBuilder, conv_chain_blob, mixed_chain_blob, simple_fc_blob, wx_chain_blob
from webxnn import runtime
from webxnn.errors import FormatError, InputError, UnsupportedError
from webxnn.xnn.ir import FLAG_CHECKED_INDICES, FLAG_INDICES_WRAP, Datatype

INVALID = 0xFFFFFFFF
ABS = 30  # XNodeUnion value of XNNAbs


# ---------------------------------------------------------------- a raw flatbuffer builder (no checks at all)


def raw_blob(
    values: list[tuple[int, int, list[int], int, int, int]],
    nodes: list[tuple[int, int, int]],
    consts: list[tuple[int, int, str | None]] | None = None,
    const_bytes: bytes = b"",
    num_externs: int = 2,
    ident: bytes = b"XN00",
    header: bool = True,
) -> bytes:
    """values: (id_out, datatype, dims, constant_buffer_idx, external_id, flags); nodes: (union type,
    input id, output id) written as _XNNNode1x1 tables whatever the type says; consts: (offset, size,
    named_key)."""
    b = flatbuffers.Builder(1024)

    def vec(start, items: list[int]) -> int:  # noqa: ANN001
        start(b, len(items))
        for o in reversed(items):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    xv = []
    for vid, dt, dims, cidx, ext, flags in values:
        TV.StartDimsVector(b, len(dims))
        for d in reversed(dims):
            b.PrependUint32(d)
        dv = b.EndVector()
        TV.Start(b)
        TV.AddDatatype(b, dt)
        TV.AddNumDims(b, len(dims))
        TV.AddDims(b, dv)
        TV.AddConstantBufferIdx(b, cidx)
        TV.AddExternalId(b, ext)
        TV.AddFlags(b, flags)
        TV.AddIdOut(b, vid)
        t = TV.End(b)
        XValue.Start(b)
        XValue.AddXvalueUnionType(b, 1)
        XValue.AddXvalueUnion(b, t)
        xv.append(XValue.End(b))
    xn = []
    for typ, in_id, out_id in nodes:
        N11.Start(b)
        N11.AddInputId(b, in_id)
        N11.AddOutputId(b, out_id)
        t = N11.End(b)
        XNode.Start(b)
        XNode.AddXnodeUnionType(b, typ)
        XNode.AddXnodeUnion(b, t)
        xn.append(XNode.End(b))
    cd = []
    for off, size, key in consts or [(0, 0, None)]:
        k = b.CreateString(key) if key is not None else None
        CDO.Start(b)
        CDO.AddOffset(b, off)
        CDO.AddSize(b, size)
        if k is not None:
            CDO.AddNamedKey(b, k)
        cd.append(CDO.End(b))
    xvv = vec(G.StartXvaluesVector, xv)
    xnv = vec(G.StartXnodesVector, xn)
    cdv = vec(G.StartConstantDataVector, cd)
    G.Start(b)
    G.AddXvalues(b, xvv)
    G.AddXnodes(b, xnv)
    G.AddConstantData(b, cdv)
    G.AddNumExterns(b, num_externs)
    b.Finish(G.End(b), file_identifier=ident)
    fb = bytes(b.Output())
    if not header:
        return fb
    pad = (-len(fb)) % 16
    c_off = 32 + len(fb) + pad
    return make_header(32, len(fb), c_off, len(const_bytes)) + fb + bytes(pad) + const_bytes


def make_header(fb_off: int, fb_size: int, c_off: int, c_size: int, hlen: int = 30) -> bytes:
    return b"\0\0\0\0XH00" + struct.pack("<HIIIQ", hlen, fb_off, fb_size, c_off, c_size) + b"\0\0"


def abs_graph(**over: object) -> bytes:
    """x[2,3] -> Abs -> y[2,3] as a raw blob; keyword overrides replace the value/node lists."""
    values = over.pop("values", [(0, 1, [2, 3], 0, 0, 1), (1, 1, [2, 3], 0, 1, 2)])
    nodes = over.pop("nodes", [(ABS, 0, 1)])
    return raw_blob(values, nodes, **over)  # type: ignore[arg-type]


def expect_format(blob: bytes, pattern: str) -> None:
    with pytest.raises(FormatError, match=pattern):
        runtime.load(blob)


def test_raw_builder_makes_a_valid_blob() -> None:
    p = runtime.load(abs_graph())
    x = np.float32([[-1, 2, -3], [4, -5, 6]])
    np.testing.assert_array_equal(p.run({"input0": x})["output0"], np.abs(x))
    # and the same without an XH00 header (bare flatbuffer)
    np.testing.assert_array_equal(runtime.load(abs_graph(header=False)).run([x])["output0"], np.abs(x))
    np.testing.assert_array_equal(runtime.load(abs_graph(ident=b"XN01")).run([x])["output0"], np.abs(x))


# ---------------------------------------------------------------- (a) specific hostile blobs


def test_truncated_at_every_header_boundary() -> None:
    blob = abs_graph()
    fb_size = struct.unpack_from("<I", blob, 14)[0]
    for n in (0, 1, 4, 7):
        expect_format(blob[:n], "too short")
    for n in (8, 10, 14, 18, 22, 29):
        expect_format(blob[:n], r"header: truncated.*needs 30 bytes")
    for n in (30, 32, 40, 32 + fb_size - 1):
        expect_format(blob[:n], r"header: the flatbuffer .* past the end")


def test_header_fields_out_of_range() -> None:
    blob = abs_graph()
    fb_size = struct.unpack_from("<I", blob, 14)[0]
    c_off = struct.unpack_from("<I", blob, 18)[0]
    body = blob[30:]
    expect_format(
        make_header(10**6, fb_size, c_off, 0) + body, r"flatbuffer_offset 1000000 at byte 10.*past the end"
    )
    expect_format(make_header(32, 2**32 - 1, c_off, 0) + body, "past the end")
    expect_format(make_header(32, fb_size, c_off, 2**63) + body, r"constant segment .* past the end")
    expect_format(make_header(32, fb_size, 2**32 - 1, 0) + body, "past the end")
    expect_format(make_header(8, fb_size, c_off, 0) + body, r"flatbuffer_offset at byte 10 is 8.*overlaps")
    expect_format(
        make_header(32, fb_size, 36, 0) + body,
        r"constant_data_offset at byte 18 is 36.*overlaps the flatbuffer",
    )
    expect_format(make_header(32, 4, c_off, 0) + body, "flatbuffer_size at byte 14 is 4")
    expect_format(make_header(32, fb_size, c_off, 0, hlen=3) + body, "header length at byte 8 is 3")


def test_bad_identifier_and_garbage_flatbuffer() -> None:
    expect_format(abs_graph(ident=b"ZZ99"), r"file identifier is 'ZZ99', expected 'XN00' or 'XN01'")
    blob = bytearray(abs_graph())
    blob[32:36] = b"\xff\xff\xff\x7f"  # root offset far past the end
    expect_format(bytes(blob), "failed flatbuffers verification")
    expect_format(b"\0\0\0\0XN00" + bytes(64), "failed flatbuffers verification")


def test_huge_dims() -> None:
    expect_format(
        abs_graph(values=[(0, 1, [65536] * 4, 0, 0, 1), (1, 1, [2, 3], 0, 1, 2)]),
        r"value 0: dims \[65536, 65536, 65536, 65536\] hold more than 2\^40 bytes",
    )
    expect_format(
        abs_graph(values=[(0, 1, [1 << 20, 1 << 20, 2], 0, 0, 1), (1, 1, [2, 3], 0, 1, 2)]),
        r"value 0: dims \[1048576, 1048576, 2\] hold more than 2\^40 bytes",
    )
    expect_format(
        abs_graph(values=[(0, 1, [1] * 9, 0, 0, 1), (1, 1, [2, 3], 0, 1, 2)]), "value 0: rank 9 exceeds"
    )


def test_undefined_values_and_cycles() -> None:
    expect_format(abs_graph(nodes=[(ABS, 99, 1)]), r"node 0 \(XNNAbs\): input_id 99 is not a value id")
    expect_format(abs_graph(nodes=[(ABS, INVALID, 1)]), r"node 0 \(XNNAbs\): required input_id is not set")
    # two nodes feeding each other: node 0 reads value 2 which node 1 writes later
    values = [(0, 1, [2, 3], 0, 0, 1), (1, 1, [2, 3], 0, 1, 2), (2, 1, [2, 3], INVALID, 0, 0)]
    values[2] = (2, 1, [2, 3], 0, INVALID, 0)
    expect_format(
        abs_graph(values=values, nodes=[(ABS, 2, 1), (ABS, 1, 2)]),
        r"node 0 \(XNNAbs\): reads value 2 before it is defined",
    )
    expect_format(
        abs_graph(nodes=[(ABS, 0, 1), (ABS, 0, 1)]),
        r"node 1 \(XNNAbs\): writes value 1, already produced by node 0",
    )
    expect_format(abs_graph(nodes=[(ABS, 1, 0)]), r"reads value 1 before it is defined")
    expect_format(abs_graph(nodes=[]), "graph output value 1 is never produced")


def test_bad_union_types() -> None:
    expect_format(abs_graph(nodes=[(99, 0, 1)]), r"node 0: unknown node type \(XNodeUnion value 99\)")
    expect_format(abs_graph(nodes=[(200, 0, 1)]), r"XNodeUnion value 200")
    expect_format(abs_graph(nodes=[(0, 0, 1)]), r"node 0: node has no operation")
    # a known type over the wrong table: fields read back as defaults (ids 0), so it is caught semantically
    with pytest.raises((FormatError, UnsupportedError), match=r"node 0 \(XNNConv2d\)"):
        runtime.load(abs_graph(nodes=[(7, 0, 1)]))


def test_bad_values() -> None:
    expect_format(
        abs_graph(values=[(0, 1, [2, 3], 0, 0, 1), (0, 1, [2, 3], 0, 1, 2)]),
        r"id_out 0 is used by xvalues\[0\] and xvalues\[1\]",
    )
    expect_format(abs_graph(values=[(0, 1, [2, 3], 0, 0, 5), (1, 1, [2, 3], 0, 1, 2)]), r"value 0: flags 0x5")
    expect_format(
        abs_graph(values=[(0, 77, [2, 3], 0, 0, 1), (1, 1, [2, 3], 0, 1, 2)]), "value 0: unknown datatype 77"
    )
    expect_format(
        abs_graph(values=[(0, 1, [2, 3], 0, 7, 1), (1, 1, [2, 3], 0, 1, 2)]),
        "value 0: external_id 7 is not below num_externs 2",
    )
    expect_format(
        abs_graph(values=[(0, 1, [2, 3], 0, 1, 1), (1, 1, [2, 3], 0, 1, 2)]), "external_id 1 is also used"
    )
    expect_format(abs_graph(num_externs=5000), "num_externs 5000 exceeds")
    expect_format(
        abs_graph(values=[(0, 1, [2, 3], 0, 0, 1), (1, 1, [3, 2], 0, 1, 2)]),
        r"node 0 \(XNNAbs\): output value 1 is declared \[3, 2\] but the node produces \[2, 3\]",
    )


def const_graph(
    consts: list[tuple[int, int, str | None]],
    const_bytes: bytes,
    cidx: int = 1,
    dims: list[int] | None = None,
) -> bytes:
    # y = x * c (Multiply = 15, written with a 1x1 table: input1_id, input2_id slots hold ids 0 and 2)
    values = [(0, 1, [4], 0, 0, 1), (1, 1, [4], 0, 1, 2), (2, 1, dims or [4], cidx, INVALID, 0)]
    return raw_blob(values, [(ABS, 2, 1)], consts=consts, const_bytes=const_bytes)


def test_bad_constants() -> None:
    good = const_graph([(0, 0, None), (0, 16, None)], bytes(16))
    np.testing.assert_array_equal(runtime.load(good).run([np.zeros(4, np.float32)])["output0"], np.zeros(4))
    expect_format(
        const_graph([(0, 0, None), (1000, 16, None)], bytes(16)),
        r"value 2: constant_data\[1\] \(offset 1000, size 16\) is outside the 16-byte constant segment",
    )
    expect_format(
        const_graph([(0, 0, None), (8, 16, None)], bytes(16)), "outside the 16-byte constant segment"
    )
    expect_format(const_graph([(0, 0, None), (2**64 - 8, 16, None)], bytes(16)), "outside the 16-byte")
    expect_format(
        const_graph([(0, 0, None), (0, 12, None)], bytes(16)),
        r"value 2: constant data has 12 bytes but fp32 \[4\] needs 16",
    )
    expect_format(
        const_graph([(0, 0, None), (0, 16, None)], bytes(16), cidx=5),
        r"value 2: constant_buffer_idx 5 is out of range \(constant_data has 2 entries\)",
    )
    with pytest.raises(
        UnsupportedError, match=r"value 2: constant data lives in a named-data map \(named_key 'abc'"
    ):
        runtime.load(const_graph([(0, 0, None), (2**64 - 1, 16, "abc")], b""))


def test_parameter_sanity() -> None:
    b = GraphBuilder()
    x = b.input("x", [2, 3])
    y = b.output(b.value([3, 2]), "y")
    b.node("XNNStaticTranspose", perm=[1, 1], input_id=x, output_id=y, flags=0)
    expect_format(b.build(), r"node 0 \(XNNStaticTranspose\): perm is not a permutation")

    b = GraphBuilder()
    x = b.input("x", [1, 4, 4, 2])
    y = b.output(b.value([1, 4, 4, 3]), "y")
    b.node(
        "XNNConv2d",
        **conv_fields((1, 1), stride=(0, 1), gic=2, goc=3),
        input1_id=x,
        filter_id=b.const(np.zeros((3, 1, 1, 2), np.float32)),
        bias_id=INVALID,
        output_id=y,
        flags=0,
    )
    expect_format(b.build(), r"node 0 \(XNNConv2d\): stride \(subsampling\) 0x1 must be > 0")

    b = GraphBuilder()
    x = b.input("x", [1, 4, 4, 2])
    y = b.output(b.value([1, 4, 4, 3]), "y")
    b.node(
        "XNNConv2d",
        **conv_fields((1, 1), gic=5, goc=3),
        input1_id=x,
        filter_id=b.const(np.zeros((3, 1, 1, 5), np.float32)),
        bias_id=INVALID,
        output_id=y,
        flags=0,
    )
    expect_format(
        b.build(),
        r"node 0 \(XNNConv2d\): input value 0 \[1, 4, 4, 2\] has 2 channels but groups x "
        r"group_input_channels = 5",
    )

    b = GraphBuilder()
    x = b.input("x", [2, 3])
    y = b.output(b.value([2, 4]), "y")
    b.node(
        "XNNFullyConnected",
        input1_id=x,
        filter_id=b.const(np.zeros((4, 5), np.float32)),
        bias_id=INVALID,
        output_id=y,
        flags=0,
    )
    expect_format(
        b.build(), r"node 0 \(XNNFullyConnected\): input value 0 \[2, 3\] has 3 input features but filter"
    )

    b = GraphBuilder()
    x = b.input("x", [2, 3])
    y = b.output(b.value([2, 3]), "y")
    b.node("XNNStaticSlice", offsets=[1, 2], sizes=[1, 2], input_id=x, output_id=y, flags=0)
    expect_format(b.build(), r"node 0 \(XNNStaticSlice\): slice \[2, 4\) of dim 1 is out of range")

    b = GraphBuilder()
    x = b.input("x", [2, 3])
    y = b.output(b.value([4, 2]), "y")
    b.node("XNNStaticReshape", new_shape=[4, 2], input_id=x, output_id=y, flags=0)
    expect_format(
        b.build(), r"node 0 \(XNNStaticReshape\): new_shape \[4, 2\] has 8 elements but input value 0"
    )

    b = GraphBuilder()
    x = b.input("x", [2, 3])
    x2 = b.input("x2", [2, 3])
    y = b.output(b.value([4, 3]), "y")
    b.node("XNNConcatenate2", axis=2, input1_id=x, input2_id=x2, output_id=y, flags=0)
    expect_format(b.build(), r"node 0 \(XNNConcatenate2\): axis 2 is out of range")


def _wx1(
    kind: str,
    in_dims: list[int],
    out_dims: list[int],
    dt: Datatype = Datatype.FP32,
    extra: dict[str, np.ndarray] | None = None,
    **fields: object,
) -> bytes:
    b = GraphBuilder()
    fields["input_id"] = b.input("x", in_dims, dt)
    for name, arr in (extra or {}).items():
        fields[name] = b.const(
            arr,
            {
                np.dtype("int64"): Datatype.WX_INT64,
                np.dtype("float32"): Datatype.FP32,
                np.dtype("int32"): Datatype.INT32,
            }[arr.dtype],
        )
    fields["output_id"] = b.output(b.value(out_dims, dt), "y")
    b.node(kind, flags=0, **fields)
    return b.build()


def test_wx_parameter_sanity() -> None:
    expect_format(
        _wx1("WXReduce", [2, 3], [2], op="sum", axes=[1, 1], keep_dims=False),
        r"node 0 \(WXReduce\): axes must be distinct",
    )
    expect_format(
        _wx1("WXReduce", [2, 3], [2], op="sum", axes=[7], keep_dims=False), r"axes must be distinct dims"
    )
    expect_format(
        _wx1("WXGather", [2, 3], [2], axis=2, extra={"indices_id": np.int64([0])}),
        r"node 0 \(WXGather\): axis 2 is out of range",
    )
    expect_format(
        _wx1("WXGatherND", [2, 3], [2], extra={"indices_id": np.zeros((2, 3), np.int64)}),
        r"the last dim of indices .* must be 1..2",
    )
    expect_format(
        _wx1("WXGatherElements", [2, 3], [3, 3], axis=1, extra={"indices_id": np.zeros((3, 3), np.int64)}),
        r"indices .* are larger than",
    )
    expect_format(_wx1("WXTile", [2, 3], [2, 3], repetitions=[1]), r"repetitions has 1 entries")
    expect_format(_wx1("WXTile", [2, 3], [2, 3], repetitions=[0xFFFFFFFF, 0xFFFFFFFF]), r"too large")
    expect_format(
        _wx1(
            "WXPad", [2, 3], [2, 9], mode="reflection", pre_paddings=[0, 3], post_paddings=[0, 3], value=0.0
        ),
        r"reflection padding of dim 1 must be smaller than its size 3",
    )
    expect_format(
        _wx1(
            "WXPad",
            [2, 3],
            [2, 3],
            mode="constant",
            pre_paddings=[0xFFFFFFFF] * 2,
            post_paddings=[0xFFFFFFFF] * 2,
            value=0.0,
        ),
        r"(too large|declared)",
    )
    expect_format(_wx1("WXSlice", [5], [3], starts=[1], strides=[0]), r"stride of dim 0 must be >= 1")
    expect_format(_wx1("WXSlice", [5], [3], starts=[0xFFFFFFFF], strides=[0xFFFFFFFF]), r"out of range")
    expect_format(
        _wx1("WXCumulativeSum", [5], [5], axis=1, exclusive=False, reversed=False), r"axis 1 is out of range"
    )
    expect_format(_wx1("WXTriangular", [5], [5], upper=True, diagonal=0), r"must have rank 2")
    expect_format(
        _wx1("WXResample2d", [1, 2, 2, 1], [1, 4, 4, 1], mode="linear", axes=[1, 1], scales=[2.0, 2.0]),
        r"axes must be two distinct dims",
    )
    expect_format(
        _wx1(
            "WXResample2d", [1, 2, 2, 1], [1, 4, 4, 1], mode="linear", axes=[1, 2], scales=[float("nan"), 2.0]
        ),
        r"scales must be finite",
    )
    expect_format(
        _wx1(
            "WXPool2d",
            [1, 4, 4, 1],
            [1, 9, 9, 1],
            op="max",
            **pool_fields((2, 2), (2, 2)),
        ),
        r"declared \[1, 9, 9, 1\]",
    )
    expect_format(
        _wx1(
            "WXQuantize",
            [4, 6],
            [4, 6],
            op="dequantize",
            zero_point_id=INVALID,
            extra={"scale_id": np.ones(4, np.float32)},
        ),
        r"neither broadcasts nor repeats block-wise",
    )
    expect_format(
        _wx1("WXNormalize", [2, 3], [2, 3], axes=[1], epsilon=-1.0, scale_id=INVALID, bias_id=INVALID),
        r"epsilon",
    )


def _gather_blob(flags: int, ids_from_input: bool, kind: str = "WXGather") -> bytes:
    b = GraphBuilder()
    ids = (
        b.input("ids", [3], Datatype.WX_INT64)
        if ids_from_input
        else b.const(np.array([7, -9, 1], np.int64), Datatype.WX_INT64)
    )
    x = b.input("x", [4, 2]) if not ids_from_input else b.const(np.arange(8, dtype=np.float32).reshape(4, 2))
    fields = {"input_id": x, "indices_id": ids, "output_id": b.output(b.value([3, 2]), "y"), "flags": flags}
    if kind != "WXGatherND":
        fields["axis"] = 0
    b.node(kind, **fields)
    return b.build()


def test_hostile_flags_are_a_format_error_and_the_flag_on_constant_ids_is_harmless(monkeypatch) -> None:
    from webxnn.xnn import writer

    monkeypatch.setattr(writer, "GATHER_FLAGS", range(1 << 32))  # the writer would refuse these blobs
    for flags in (2, 4, 5, 0x80000001):
        with pytest.raises(FormatError, match=rf"node 0 \(WXGather\): flags {flags} must be 0, 1"):
            runtime.load(_gather_blob(flags, True))
    for kind in ("WXGatherElements", "WXGatherND"):
        with pytest.raises(FormatError, match=rf"node 0 \({kind}\): flags 6 must be 0, 1"):
            runtime.load(_gather_blob(6, True, kind))
    # ids that are a constant: the flag checks nothing, the gather clamps
    p = runtime.load(_gather_blob(FLAG_CHECKED_INDICES | FLAG_INDICES_WRAP, False))
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(p.run({"x": x})["y"], x[[3, 0, 1]])


def test_the_writer_refuses_unknown_gather_flags() -> None:
    from webxnn.xnn.writer import InvalidIRError

    with pytest.raises(InvalidIRError, match=r"node 0 \(WXGather\): flags 2 must be one of \[0, 1, 3\]"):
        _gather_blob(FLAG_INDICES_WRAP, True)
    p = runtime.load(_gather_blob(FLAG_CHECKED_INDICES, True))  # ExecuTorch's: 0..n-1, no negatives
    with pytest.raises(InputError, match=r"element 0 is -1, outside 0\.\.3"):
        p.run({"ids": np.array([-1, 0, 1], np.int64)})


# ---------------------------------------------------------------- (b) random mutations


def valid_blobs() -> list[bytes]:
    """The seeds of the blob fuzzer (tests/fuzz/blobs.py) and of the mutation tests here."""
    blobs = [
        simple_fc_blob(),
        conv_chain_blob(),
        mixed_chain_blob(),
        abs_graph(),
        wx_chain_blob(),
        wx_chain_blob(),
    ]
    et = CONFORMANCE / "executorch" / "conv_relu_nchw_v05.xnn"
    if et.exists():
        blobs.append(et.read_bytes())
    return blobs


def test_mutated_blobs_fail_cleanly_or_run() -> None:
    rng = np.random.default_rng(20240611)
    blobs = valid_blobs()
    loaded = ran = 0
    for k in range(1000):
        blob = mutate(blobs[k % len(blobs)], rng)
        try:
            p = runtime.load(blob, threads=1)
        except (FormatError, UnsupportedError) as e:
            assert str(e), "error without a message"
            continue
        loaded += 1
        ran += run_program(p)
    assert ran > 0 and loaded >= ran


# ---------------------------------------------------------------- strings that are not UTF-8


def test_names_and_sources_that_are_not_utf8_come_out_escaped() -> None:
    """Value names and node sources are untrusted bytes: load(), inputs/outputs, run(), plan(), profile(),
    the Python reader and an error message quoting a node source show them escaped (\\xff), never raise
    UnicodeDecodeError."""
    import webxnn
    from webxnn.xnn.reader import read

    text = (
        'webnn_graph "t" v1 { inputs { xqq: f32[4]; } nodes { mqq = relu(xqq); yqq = sigmoid(mqq); } '
        "outputs { yqq; } }"
    )
    blob = webxnn.compile(webxnn.parse(text)).replace(b"xqq", b"x\xff\xfe").replace(b"mqq", b"m\xc3(")
    p = runtime.load(blob)
    assert p.inputs[0].name == "x\\xff\\xfe"
    x = np.float32([-1, 0, 1, 2])
    np.testing.assert_allclose(p.run([x])["yqq"], 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)
    assert p.plan()[0]["source"] == "m\\xc3(:relu"
    assert p.profile([x], 1)[0]["source"] == "m\\xc3(:relu"
    assert "x\\xff\\xfe" in repr(p)
    assert len(read(blob).values) == 3
    pat = b"\x01\x00\x00\x00\x04\x00\x00\x00"  # the dims [4] of value 1 (the relu's output) -> [5]
    at = [i for i in range(len(blob)) if blob.startswith(pat, i)][3]
    bad = blob[:at] + b"\x01\x00\x00\x00\x05\x00\x00\x00" + blob[at + 8 :]
    expect_format(bad, r"node 0 \(XNNClamp\) \[from m\\xc3\(:relu\]: output value 1 is declared \[5\]")


# ---------------------------------------------------------------- (c) sanitizers


@pytest.mark.slow
def test_mutated_blobs_under_sanitizers(tmp_path: pathlib.Path) -> None:
    exe = require_sanitized("asan", "WEBXNN_SANITIZE", "xnnrun")
    rng = np.random.default_rng(7)
    blobs = valid_blobs()
    env = dict(os.environ, **ASAN_ENV)
    for k in range(300):
        blob = blobs[k % len(blobs)] if k < len(blobs) else mutate(blobs[k % len(blobs)], rng)
        path = tmp_path / f"m{k}.xnn"
        path.write_bytes(blob)
        r = subprocess.run(
            [str(exe), str(path), "--threads", "2", "--quiet"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        report = any(what in r.stderr for what in ASAN_REPORTS)
        # 0 = ran, 2 = format error, 4 = unsupported (1 + wx_status); anything else is a crash or a sanitizer
        assert r.returncode in (0, 2, 4) and not report, (
            f"blob {k} ({path}): rc={r.returncode}\n{r.stderr[-3000:]}"
        )
