"""ONNX ops defined as functions, expanded into the ops of their body.

Many ONNX ops (NegativeLogLikelihoodLoss, Attention, GroupNormalization, LayerNormalization with its extra
outputs, ...) come with a function body in their schema — sometimes one built for the node's attributes and
input types (a context-dependent function) — and models may carry their own local functions. When the
importer has no translator for such a node (or its translator refuses), the converter translates the body
instead, node by node, at the function's opset. Nothing here evaluates anything: it only rewrites names.
"""

from __future__ import annotations

from typing import Any

# Expansion depth limit: a body op may itself be a function, but not endlessly
MAX_DEPTH = 4


def _schema_function(node: Any, opset: int, input_types: list[Any] | None) -> tuple[Any, Any] | None:
    """(the FunctionProto the ONNX schema of `node` defines for `opset`, `node` with the schema's default
    attributes filled in), or None."""
    from onnx import FunctionProto, defs

    try:
        schema = defs.get_schema(node.op_type, opset, domain=node.domain or "")
    except Exception:  # noqa: BLE001 - no such op at this opset: nothing to expand
        return None
    static = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if not static and not dependent:
        return None
    fp = FunctionProto()
    full = _with_defaults(node, schema)
    if dependent and (not static or max(dependent) >= max(static)):
        if input_types is None:
            return None
        try:
            raw = schema.get_context_dependent_function_with_opset_version(
                max(dependent), full.SerializeToString(), [t.SerializeToString() for t in input_types]
            )
        except Exception:  # noqa: BLE001 - the schema cannot build a body for these types
            return None
    else:
        raw = schema.get_function_with_opset_version(max(static))
    if not raw:
        return None
    fp.ParseFromString(raw)
    return fp, full


def _with_defaults(node: Any, schema: Any) -> Any:
    """A copy of `node` with the schema's default attribute values filled in."""
    full = type(node)()
    full.CopyFrom(node)
    have = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():
        if name not in have and attr.default_value.type:
            d = full.attribute.add()
            d.CopyFrom(attr.default_value)
            d.name = name
    return full


def function_of(
    node: Any, opset: int, local: dict[tuple[str, str], Any], input_types: list[Any] | None
) -> tuple[Any, Any] | None:
    """(the function `node` calls: a model-local one, or its schema's; the node with default attributes
    filled in), or None when it has none."""
    got = local.get((node.domain, node.op_type))
    if got is not None:
        return got, node
    if node.domain not in ("", "ai.onnx") and not node.domain.startswith("ai.onnx."):
        return None  # ONNX's schemas: its default domain and its others (ai.onnx.preview's FlexAttention)
    return _schema_function(node, opset, input_types)


def function_opset(fp: Any, default: int) -> int:
    for imp in fp.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return default


def expand(node: Any, fp: Any, prefix: str) -> list[Any] | None:
    """The nodes of function `fp` applied to `node`: formal inputs and outputs renamed to the node's,
    internal values prefixed with `prefix`, attribute references resolved; a subgraph (a Scan or If body)
    renamed alike. None when the body holds a list of subgraphs."""
    io: dict[str, str] = {}
    for i, name in enumerate(fp.input):
        io[name] = node.input[i] if i < len(node.input) else ""
    for i, name in enumerate(fp.output):
        if i < len(node.output) and node.output[i]:
            io[name] = node.output[i]
    given = {a.name: a for a in node.attribute}
    defaults = {a.name: a for a in fp.attribute_proto}

    def rename(name: str) -> str:
        if not name:
            return ""
        return io.get(name, prefix + name)

    out = []
    for sub in fp.node:
        new = type(node)()
        new.CopyFrom(sub)
        del new.input[:]
        del new.output[:]
        new.input.extend(rename(i) for i in sub.input)
        new.output.extend(rename(o) for o in sub.output)
        new.name = prefix + (sub.name or sub.output[0])
        del new.attribute[:]
        for a in sub.attribute:
            if len(a.graphs):
                return None
            if a.HasField("g"):  # a Scan/If body: its names (and the outer ones it reads) renamed alike
                r = new.attribute.add()
                r.CopyFrom(a)
                _rename_graph(r.g, rename)
            elif a.ref_attr_name:
                src = given.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                if src is None:
                    continue  # not given: the body op's own default applies
                r = new.attribute.add()
                r.CopyFrom(src)
                r.name = a.name
            else:
                new.attribute.add().CopyFrom(a)
        out.append(new)
    return out


def _rename_graph(g: Any, rename: Any) -> None:
    """Rename every value of subgraph `g` in place (nested subgraphs too)."""
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        vi.name = rename(vi.name)
    for t in g.initializer:
        t.name = rename(t.name)
    for n in g.node:
        ins, outs = [rename(i) for i in n.input], [rename(o) for o in n.output]
        del n.input[:]
        del n.output[:]
        n.input.extend(ins)
        n.output.extend(outs)
        for a in n.attribute:
            if a.HasField("g"):
                _rename_graph(a.g, rename)
            for sg in a.graphs:
                _rename_graph(sg, rename)
