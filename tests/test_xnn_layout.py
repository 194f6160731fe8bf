"""The table layouts `_layout` reads off the generated modules agree with schema/xnngraph.fbs itself."""

from __future__ import annotations

import pathlib
import re

import pytest

from webxnn.xnn import _layout as L

SCHEMA = pathlib.Path(__file__).resolve().parents[1] / "schema" / "xnngraph.fbs"


def _schema_text() -> str:
    if not SCHEMA.exists():
        pytest.skip("schema/xnngraph.fbs not found")
    return re.sub(r"//[^\n]*", "", SCHEMA.read_text())


def _blocks(kind: str) -> dict[str, str]:
    return {
        m.group(1): m.group(2)
        for m in re.finditer(kind + r"\s+(\w+)\s*(?::\s*\w+\s*)?\{(.*?)\}", _schema_text(), re.S)
    }


def test_node_union_aliases_match_schema():
    body = _blocks("union")["XNodeUnion"]
    members = [m.strip() for m in body.split(",") if m.strip()]
    assert len(members) == len(L.union_members(L.NODE_UNION))
    for m in members:
        name, _, rest = m.partition(":")
        name = name.strip()
        table = rest.split("=")[0].strip() or name
        assert L.node_table(name).name == table, name


def test_tables_fields_and_slots_match_schema():
    unions = set(_blocks("union"))
    for tname, body in _blocks("table").items():
        expected = []
        slot = 0
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            fname, _, ftype = decl.partition(":")
            fname, ftype = fname.strip(), ftype.strip()
            base = ftype.split()[0].split("=")[0].strip()
            if base in unions:
                expected += [(fname + "_type", slot), (fname, slot + 1)]
                slot += 2
                continue
            if "(deprecated)" not in ftype:
                expected.append((fname, slot))
            slot += 1
        spec = L.table(tname)
        assert [(f.name, f.slot) for f in spec.fields] == expected, tname
        assert spec.num_slots == slot, tname


def test_field_kinds():
    t = L.table("XNNTensorValue")
    assert t.by_name["datatype"].fmt == "<h" and t.by_name["dims"].kind == "vector"
    assert L.table("PerChannelQuant").by_name["scale"].fmt == "<f"
    assert L.table("WXReduce").by_name["keep_dims"].fmt == "<?"
    assert L.table("WXMetadata").by_name["input_names"].kind == "strings"
    assert L.table("XNode").by_name["output_min_max"].table == "OutputMinMax"
    assert L.table("XNNGraph").by_name["xnodes"].table == "XNode"
    assert L.table("ConstantDataOffset").by_name["size"].fmt == "<Q"
    assert L.field_enum("WXBinary", "op") == "WXBinaryOp"


def test_field_enums_match_schema():
    """Every enum-typed field of a node table is known to `field_enum` (the writer and `describe` need it)."""
    enums = set(_blocks("enum"))
    node_tables = {L.node_table(m).name for m in L.union_members(L.NODE_UNION)}
    for tname, body in _blocks("table").items():
        if tname not in node_tables:
            continue
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            fname, _, ftype = decl.partition(":")
            base = ftype.strip().split()[0].split("=")[0].strip() if ftype.strip() else ""
            if base in enums:
                assert L.field_enum(tname, fname.strip()) == base, f"{tname}.{fname.strip()}"
