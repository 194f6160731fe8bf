"""The `executorch` profile's rewrites: what ExecuTorch's XNNPACK delegate needs beyond upstream node types.

ExecuTorch defines each XNNPACK convolution with its filter and bias as static weights, so a filter that is a
graph input (or computed at run time) fails when the delegate initialises ("Failed to create convolution
node"). webxnn stores fp16 weights as an fp16 constant plus an XNNConvert to fp32, which the webxnn runtime
folds at load but ExecuTorch does not; this profile does that conversion at compile time instead, for the
filters and biases of convolutions. Every node also gets `debug_handle` = its index, so ExecuTorch's error
messages ("... node 12 ...") point at a node `webxnn inspect` lists.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import UnsupportedError
from ..xnn.ir import Datatype, Node, XnnGraph

# nodes whose weights ExecuTorch's delegate defines as static: (kind, weight fields)
STATIC_WEIGHTS = {
    "XNNConv2d": ("filter_id", "bias_id"),
    "XNNDepthwiseConv2d": ("filter_id", "bias_id"),
    "XNNConvTranspose2d": ("filter_id", "bias_id"),
}
_NO_VALUE = 0xFFFFFFFF


def apply(xg: XnnGraph) -> XnnGraph:
    """Rewrite `xg` in place for ExecuTorch (see the module doc); UnsupportedError naming every op whose
    weights cannot be made static."""
    sources = xg.metadata.node_sources if xg.metadata else []
    by_id = {v.id: v for v in xg.values}
    producer = {o: k for k, n in enumerate(xg.nodes) for o in n.output_ids()}
    folded: set[int] = set()  # XNNConvert nodes whose output became a constant
    bad: list[str] = []
    for k, n in enumerate(xg.nodes):
        for fname in STATIC_WEIGHTS.get(n.kind, ()):
            vid = n.fields.get(fname, _NO_VALUE)
            if vid == _NO_VALUE or by_id[vid].constant_buffer_idx:
                continue
            p = producer.get(vid)
            if p is not None and _fold_half_constant(xg, xg.nodes[p], by_id):
                folded.add(p)
                continue
            where = sources[k] if k < len(sources) else f"node {k}"
            bad.append(f"{where} → {n.kind}: {fname[:-3]} (value {vid}) {_origin(xg, vid, producer, by_id)}")
    if bad:
        raise UnsupportedError(
            "profile 'executorch': ExecuTorch's XNNPACK delegate needs static convolution weights: "
            + "; ".join(bad)
        )
    if folded:
        keep = [k for k in range(len(xg.nodes)) if k not in folded]
        xg.nodes = [xg.nodes[k] for k in keep]
        if xg.metadata is not None and len(sources) == len(keep) + len(folded):
            xg.metadata.node_sources = [sources[k] for k in keep]
    _compact_constants(xg)
    for k, n in enumerate(xg.nodes):
        n.debug_handle = k
    return xg


def _origin(xg: XnnGraph, vid: int, producer: dict[int, int], by_id: dict) -> str:
    """Where a run-time value comes from: a graph input (through layout nodes such as the OIHW → OHWI
    transpose), or other computation."""
    seen = set()
    while vid in producer and vid not in seen:
        seen.add(vid)
        ins = xg.nodes[producer[vid]].input_ids()
        if len(ins) != 1:
            break
        vid = ins[0]
    v = by_id[vid]
    if v.flags & 1:
        names = xg.metadata.input_names if xg.metadata else []
        ext = sorted(w.external_id for w in xg.values if w.flags & 1).index(v.external_id)
        return f"comes from graph input {names[ext]!r}" if ext < len(names) else "comes from a graph input"
    return "is computed at run time"


def _fold_half_constant(xg: XnnGraph, node: Node, by_id: dict) -> bool:
    """`node` is XNNConvert fp16 constant → fp32: its output becomes that constant in fp32. True if done."""
    if node.kind != "XNNConvert":
        return False
    src, dst = by_id[node.fields["input_id"]], by_id[node.fields["output_id"]]
    if not src.constant_buffer_idx or src.datatype != Datatype.FP16 or dst.datatype != Datatype.FP32:
        return False
    half = np.frombuffer(memoryview(xg.constants[src.constant_buffer_idx]).cast("B"), dtype="<f2")
    dst.constant_buffer_idx = xg.add_constant(np.ascontiguousarray(half.astype("<f4")))
    return True


def _compact_constants(xg: XnnGraph) -> None:
    """Remove constant values no node reads any more, and store byte-identical constants once (ExecuTorch's
    exporter does the same with its named data, e.g. for the all-zero biases of freshly initialised convs)."""
    used = {i for n in xg.nodes for i in n.input_ids()}
    xg.values = [v for v in xg.values if not v.constant_buffer_idx or v.id in used]
    refs = sorted(
        {v.constant_buffer_idx for v in xg.values if v.constant_buffer_idx}
        | {getattr(v.quant, "scale_buffer_idx", 0) for v in xg.values} - {0}
    )
    first: dict[tuple[bytes, int], int] = {}  # (sha256, size) of the data → its new index
    remap: dict[int, int] = {}
    constants = [xg.constants[0]]
    for i in refs:
        raw = _raw(xg.constants[i])
        key = (hashlib.sha256(raw).digest(), raw.nbytes)
        if key not in first:
            first[key] = len(constants)
            constants.append(xg.constants[i])
        remap[i] = first[key]
    xg.constants = constants
    for v in xg.values:
        if v.constant_buffer_idx:
            v.constant_buffer_idx = remap[v.constant_buffer_idx]
        if getattr(v.quant, "scale_buffer_idx", 0):
            v.quant.scale_buffer_idx = remap[v.quant.scale_buffer_idx]  # type: ignore[union-attr]


def _raw(data: object) -> memoryview:
    """The bytes of constant data (bytes-like or a numpy array) without copying a contiguous array."""
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data)
    return memoryview(data).cast("B")  # type: ignore[arg-type]
