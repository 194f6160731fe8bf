"""The WebNN graph AST: what the `.webnn` text and its JSON form say, nothing more.

Small, stable dataclasses. Parsing lives in `dsl`, const data in `constants` (below this module), op semantics
in `ops`, lowering in `lower`.
Shapes may hold `DynDim` entries (input shapes only). Dtype names are WebNN's: "float32", "float16",
"int4", "uint4", "int8", "uint8", "int32", "uint32", "int64", "uint64".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .constants import const_array
from .dtypes import DTYPES as DTYPES  # re-exported: most modules take the dtype table from here


@dataclass(frozen=True)
class DynDim:
    """A dynamic input dimension `dyn("name", max)`: any size from 1 to `max_size`."""

    name: str
    max_size: int


Dim = int | DynDim


@dataclass
class Operand:
    """A typed value declaration (graph input or const)."""

    name: str
    dtype: str
    shape: list[Dim]


@dataclass
class ConstInit:
    """Where a const's data comes from: kind is "weights" (ref = manifest key), "scalar" (value) or
    "bytes" (data: raw little-endian bytes)."""

    kind: str
    ref: str | None = None
    value: float | int | None = None
    data: bytes | None = None


@dataclass
class Const(Operand):
    init: ConstInit = field(default_factory=lambda: ConstInit("weights"))


@dataclass
class Node:
    """One op call. `inputs` are operand names in order; `options` maps option keys to JSON-like values
    (operand-valued options hold the operand's name as a string); `outputs` lists the value names it defines
    (a single-output node has outputs == [id])."""

    id: str
    op: str
    inputs: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    # (line, col) in the source text, for error messages; None when built in code or from JSON.
    loc: tuple[int, int] | None = field(default=None, compare=False)
    # True when written `[a, ...] = op(...)` in text, i.e. JSON `outputs` is a list rather than null.
    # Only affects serialization (0.3 keeps the distinction); `outputs` is always the full list.
    multi_assign: bool = False

    def __post_init__(self) -> None:
        if not self.outputs:
            self.outputs = [self.id]


@dataclass
class Graph:
    """A parsed WebNN graph. `inputs` and `consts` keep declaration order; `outputs` maps output name to the
    value it refers to (text always maps a name to itself; JSON may rename). `weights` maps a const's name
    to its array once resolved (memory-mapped where possible); use `const_array(name)` to read any const."""

    name: str = ""
    version: int = 1
    quantized: bool = False
    inputs: dict[str, Operand] = field(default_factory=dict)
    consts: dict[str, Const] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    # Not part of equality: arrays do not compare to a bool, and where a graph was read from is not its
    # content.
    weights: dict[str, np.ndarray] = field(default_factory=dict, compare=False)
    source: str | None = field(default=None, compare=False)  # file path the graph was read from, for messages
    # The model's own names of inputs and outputs whose identifiers had to differ (an ONNX "0", "logits:0"):
    # identifier -> name. A compiled blob and its Program use these names; the text and JSON forms cannot.
    io_names: dict[str, str] = field(default_factory=dict, compare=False)
    # Ids of gather / gatherElements / gatherND nodes whose indices follow ONNX's rule: an id outside
    # [-n, n-1] is an error (checked at run time where the ids are a graph input), where WebNN clamps it.
    # Not WebNN (its gather has no such option), so the text and JSON forms leave it out and clamp.
    onnx_indices: set[str] = field(default_factory=set, compare=False)

    def to_text(self) -> str:
        from .dsl.printer import to_text

        return to_text(self)

    def to_json(self) -> str:
        from .dsl.json_codec import to_json

        return to_json(self)

    def const_array(self, name: str) -> np.ndarray:
        """The data of const `name` as an array of its declared dtype and shape."""
        return const_array(self, name)
