"""A node against its ONNX op schema, before any translator reads it: input and output counts, required
inputs present, attribute types as the schema declares them and required attributes there.

Translators index `node.input[i]` and convert attributes with `int()` / `float()` / list comprehensions; those
are only safe on a node that has the shape its schema promises, so the converter checks that once, here, and
a malformed node is a ValidationError naming the node and what is wrong with it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ..errors import ValidationError

_TYPE_NAMES = {
    0: "UNDEFINED",
    1: "FLOAT",
    2: "INT",
    3: "STRING",
    4: "TENSOR",
    5: "GRAPH",
    6: "FLOATS",
    7: "INTS",
    8: "STRINGS",
    9: "TENSORS",
    10: "GRAPHS",
    11: "SPARSE_TENSOR",
    12: "SPARSE_TENSORS",
    13: "TYPE_PROTO",
    14: "TYPE_PROTOS",
}


def node_where(node: Any) -> str:
    """'Gemm node 'name'' for messages, whatever is missing from the node."""
    label = node.name or (node.output[0] if len(node.output) and node.output[0] else "") or "(unnamed)"
    return f"{node.op_type} node {label!r}"


@cache
def _schema(op_type: str, domain: str, opset: int) -> Any:
    from onnx import defs

    dom = "" if domain == "ai.onnx" else domain
    try:
        return defs.get_schema(op_type, max(opset, 1), dom)
    except Exception:  # noqa: BLE001 - not in that opset (or unknown): the newest, if any
        try:
            return defs.get_schema(op_type, dom)
        except Exception:  # noqa: BLE001 - an op onnx does not define (custom domain, local function)
            return None


@cache
def _attr_types_any_version() -> dict[tuple[str, str, str], int]:
    """{(domain, op, attribute): type} over every version of every op: translators read attributes of older
    opsets too (Split's `split`, ReduceMean's `axes`) that the model's opset may not declare."""
    from onnx import defs

    out: dict[tuple[str, str, str], int] = {}
    for sc in defs.get_all_schemas_with_history():
        for name, spec in sc.attributes.items():
            out.setdefault((sc.domain, sc.name, name), int(spec.type))
    return out


def check_node(node: Any, opset: int) -> None:
    """Raise ValidationError when `node` does not have the inputs, outputs and attributes its schema
    requires (nodes of ops onnx does not know are only checked for well-formed attributes)."""
    at = node_where(node)
    for a in node.attribute:
        if a.type not in _TYPE_NAMES or a.type == 0:
            raise ValidationError(f"{at}: attribute {a.name!r} has no valid type ({a.type})")
    if not len(node.output):
        raise ValidationError(f"{at}: the node has no outputs")
    schema = _schema(node.op_type, node.domain, opset)
    if schema is None:
        return
    n_in = len(node.input)
    while n_in and not node.input[n_in - 1]:  # trailing empty names are absent optional inputs
        n_in -= 1
    if n_in < schema.min_input or n_in > schema.max_input:
        want = (
            str(schema.min_input)
            if schema.min_input == schema.max_input
            else (
                f"{schema.min_input}..{schema.max_input}"
                if schema.max_input < 1 << 20
                else f">= {schema.min_input}"
            )
        )
        raise ValidationError(f"{at}: has {n_in} input(s), but {node.op_type} takes {want}")
    single = type(schema.inputs[0].option).Single if schema.inputs else None
    for k, formal in enumerate(schema.inputs[:n_in]):
        if formal.option == single and not node.input[k]:
            raise ValidationError(f"{at}: required input {k} ({formal.name}) is missing")
    if len(node.output) > schema.max_output:
        raise ValidationError(
            f"{at}: has {len(node.output)} outputs, but {node.op_type} has at most {schema.max_output}"
        )
    if not node.output[0] and schema.min_output:
        raise ValidationError(f"{at}: output 0 has no name")
    declared = schema.attributes
    given = set()
    for a in node.attribute:
        given.add(a.name)
        spec = declared.get(a.name)
        want = (
            int(spec.type)
            if spec is not None
            else _attr_types_any_version().get((schema.domain, node.op_type, a.name))
        )
        if want is None:  # as onnx.checker does: no version of the op has it (translators read names blindly)
            raise ValidationError(f"{at}: {node.op_type} has no attribute {a.name!r}")
        if want != a.type:
            raise ValidationError(
                f"{at}: attribute {a.name!r} is {_TYPE_NAMES[a.type]}, but {node.op_type} takes "
                f"{_TYPE_NAMES.get(want, want)}"
            )
    for name, spec in declared.items():
        if spec.required and name not in given:
            raise ValidationError(f"{at}: required attribute {name!r} is missing")


def check_strings(msg: Any, path: str = "model") -> None:
    """Raise ValidationError naming the first string field of `msg` (names, op types, domains, external data
    keys, ...) that is not valid UTF-8: protobuf hands such a field over as bytes, which every later use of a
    name (a dict key, a message, a sort) would trip over."""
    from google.protobuf.descriptor import FieldDescriptor as F

    for fd, value in msg.ListFields():
        if fd.type == F.TYPE_MESSAGE:
            if _is_repeated(fd):
                for k, sub in enumerate(value):
                    check_strings(sub, f"{path}.{fd.name}[{k}]")
            else:
                check_strings(value, f"{path}.{fd.name}")
        elif fd.type == F.TYPE_STRING:
            items = list(value) if _is_repeated(fd) else [value]
            for k, v in enumerate(items):
                if not isinstance(v, str):
                    at = f"{path}.{fd.name}" + (f"[{k}]" if _is_repeated(fd) else "")
                    shown = bytes(v).decode("utf-8", "backslashreplace")
                    raise ValidationError(f"ONNX model: {at} is not valid UTF-8 ({shown!r})")


def _is_repeated(fd: Any) -> bool:
    rep = getattr(fd, "is_repeated", None)  # protobuf >= 5.28; `label` is deprecated there
    return bool(rep) if rep is not None else fd.label == fd.LABEL_REPEATED
