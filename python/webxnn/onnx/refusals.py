"""What the ONNX importer refuses by design, each category with the one-line reason users see.

These are not gaps to fill later: WebNN has no such types or ops, or a compiled graph cannot express them
(it is deterministic, static-shaped and free of control flow). Everything else that is refused is an op or
attribute the importer has not learned yet.
"""

from __future__ import annotations

# ONNX element type number -> why WebNN cannot hold such a tensor
_TYPE_REASONS: dict[int, str] = {
    11: "float64 tensors: WebNN has no float64; convert the model to float32",
    5: "int16 tensors: WebNN has no 16-bit integers; convert the model to int32 (or float16)",
    4: "uint16 tensors: WebNN has no 16-bit integers; convert the model to int32 (or float16)",
    16: "bfloat16 tensors: WebNN has no bfloat16; convert the model to float16 or float32",
    8: "string tensors: WebNN tensors are numeric; do string processing outside the model",
    14: "complex64 tensors: WebNN has no complex types",
    15: "complex128 tensors: WebNN has no complex types",
}
_NARROW = {
    17: "float8e4m3fn",
    18: "float8e4m3fnuz",
    19: "float8e5m2",
    20: "float8e5m2fnuz",
    21: "uint4",
    22: "int4",
    23: "float4e2m1",
    24: "float8e8m0",
    25: "uint2",
    26: "int2",
    27: "float6e2m3",
    28: "float6e3m2",
}
NARROW_HEAD = "float8/float6/float4 and sub-byte integer (int4, uint4, int2, uint2) tensors"
_NARROW_WHY = "WebNN has none of these; dequantize to float16/float32 or use int8/uint8 QDQ"
for _t, _name in _NARROW.items():
    _TYPE_REASONS[_t] = f"{_name} tensors: {_NARROW_WHY}"

DATA_SHAPED = "WebNN shapes are fixed when the graph is built"
DATA_SHAPED_WHY = f"output shape depends on the data: {DATA_SHAPED}"
ZERO_SIZED = "zero-sized tensors: WebNN has none (every dim must be >= 1)"
LARGE_SCATTER = (
    "a scatter-add too large for a constant matrix: WebNN has no scatter-add, and the 0/1 matrix that writes "
    "it as a matmul would exceed 64 MB"
)
RUN_TIME_PARAMETER = (
    "a parameter computed at run time: WebNN takes axes, pads, shapes, counts and lengths as options when "
    "the graph is built"
)
BIT_REINTERPRET = (
    "bit reinterpretation between float and integer: WebNN has no bitcast; reinterpret outside the model"
)
FLOAT_MOD = (
    "floating-point Mod: WebNN has no fused multiply-add, so x - floor(x / y) * y can be off by a whole |y| "
    "next to multiples of y (6 mod 0.1 gives 0, not 0.0999999); compute it outside the model"
)
CONV_3D = (
    "3-D convolutions: WebNN has 2-D conv2d/convTranspose2d only (1-D ones are reshaped onto them); export "
    "the model with 2-D convolutions"
)
NON_TENSOR = "sequence/optional/map values: WebNN graphs hold tensors only; keep sequences outside the model"


def type_reason(elem_type: int) -> str | None:
    """The by-design reason an ONNX element type has no WebNN tensor, or None when it has one (or is
    merely unknown)."""
    return _TYPE_REASONS.get(int(elem_type))


_OP_CATEGORIES: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "random ops: a compiled WebNN graph is deterministic; generate random tensors outside the model",
        frozenset(
            {
                "RandomNormal",
                "RandomUniform",
                "RandomNormalLike",
                "RandomUniformLike",
                "Multinomial",
                "Bernoulli",
            }
        ),
    ),
    (
        "data-dependent control flow: WebNN graphs have no If/Loop/Scan (an If on a constant condition and a "
        "Scan of static length are unrolled, a Loop or a run-time condition cannot be); export it unrolled",
        frozenset({"If", "Loop", "Scan"}),
    ),
    (
        "sequence/optional ops: WebNN graphs hold tensors only; keep sequences outside the model",
        frozenset(
            {
                "SequenceConstruct",
                "SequenceAt",
                "SequenceInsert",
                "SequenceErase",
                "SequenceLength",
                "SequenceEmpty",
                "SplitToSequence",
                "ConcatFromSequence",
                "SequenceMap",
                "Optional",
                "OptionalGetElement",
                "OptionalHasElement",
            }
        ),
    ),
    (
        "string ops: WebNN tensors are numeric; do string processing outside the model",
        frozenset({"StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "TfIdfVectorizer"}),
    ),
    (
        DATA_SHAPED_WHY,
        frozenset({"NonZero", "Unique", "NonMaxSuppression"}),
    ),
    (
        "training ops: webxnn compiles inference graphs",
        frozenset({"Gradient", "Momentum", "Adagrad", "Adam"}),
    ),
    (
        "image decoding: WebNN graphs compute on tensors, not encoded files; decode JPEG/PNG/... before the "
        "model",
        frozenset({"ImageDecoder"}),
    ),
)
OP_REASONS: dict[str, str] = {op: why for why, ops in _OP_CATEGORIES for op in ops}
_DOMAIN_REASONS = {"ai.onnx.preview.training": "training ops: webxnn compiles inference graphs"}
TREE_ENSEMBLE = (
    "ai.onnx.ml tree ensembles: these are not neural-network graphs (WebNN has no tree traversal); run them "
    "with onnxruntime"
)
_ML_REASONS = dict.fromkeys(
    ("TreeEnsemble", "TreeEnsembleClassifier", "TreeEnsembleRegressor"), TREE_ENSEMBLE
)

TRAINING_MODE = "training mode: webxnn compiles inference graphs (training_mode must be a constant 0)"
RANDOM_DROPOUT = (
    "random ops: Dropout in training mode with a ratio > 0 is random; a compiled WebNN graph is deterministic"
)


def op_reason(op_type: str, domain: str = "") -> str | None:
    """The by-design reason an ONNX op cannot become WebNN, or None."""
    if domain in _DOMAIN_REASONS:
        return _DOMAIN_REASONS[domain]
    if domain == "ai.onnx.ml":
        return _ML_REASONS.get(op_type)
    return OP_REASONS.get(op_type) if domain in ("", "ai.onnx") else None


def categories() -> list[tuple[str, str]]:
    """Every by-design refusal category as (what, why), for documentation and tests."""
    reasons = [why for t, why in _TYPE_REASONS.items() if t not in _NARROW]
    reasons += [f"{NARROW_HEAD}: {_NARROW_WHY}", NON_TENSOR, ZERO_SIZED, TRAINING_MODE, LARGE_SCATTER]
    reasons += [BIT_REINTERPRET, FLOAT_MOD, RUN_TIME_PARAMETER, CONV_3D, TREE_ENSEMBLE]
    reasons += [why for why, _ in _OP_CATEGORIES]
    out: list[tuple[str, str]] = []
    for r in reasons:
        what, why = r.split(": ", 1)
        if (what, why) not in out:
            out.append((what, why))
    return out
