"""The op registry's contract: what every op entry provides, and what `lower` consumes.

An `OpSpec` describes one WebNN op (an `MLGraphBuilder` method): its operand inputs by role (positional,
some optional, some also accepted as operand-valued options such as `bias=b`), its non-operand options with
defaults, and its dtype/shape inference. `OpSpec.bind(node, types)` resolves a parsed `graph.Node` into a
`BoundNode`: operands by role, every option present with its default filled in, output types inferred.
Everything past `bind` (lowering, emit-js) works on `BoundNode`s, never on raw `Node.options`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..graph import Dim, Node


@dataclass(frozen=True)
class TensorType:
    dtype: str  # WebNN dtype name: "float32", "int64", ...
    shape: tuple[Dim, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class BoundNode:
    """A node after binding: `operands` maps role name ("input", "filter", "bias", "a", "b", "c", "scale",
    "inputs" for variadic concat, ...) to a value name, a list of names (variadic), or None when an optional
    operand is absent. `options` has every option of the op with defaults filled in (annotations `label` and
    `metadata` removed). `outputs` lists (value name, TensorType)."""

    node: Node
    op: str
    operands: dict[str, Any]
    options: dict[str, Any]
    outputs: list[tuple[str, TensorType]]

    @property
    def id(self) -> str:
        return self.node.id


@dataclass
class OpSpec:
    """One registry entry. `inputs` lists operand roles in positional order; `variadic` makes the first role
    take every positional input (concat). `operand_options` are roles that may be given positionally or as an
    option naming an operand. `options` maps option key to its default (`REQUIRED` when it has none).
    `infer(operand_types, options) -> list[TensorType]` and `check(operand_types, options)` raise
    ValidationError with a clear message; `doc` cites the spec section."""

    name: str
    inputs: list[str]
    optional_inputs: list[str] = field(default_factory=list)
    operand_options: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    variadic: bool = False
    # non-operand parameters the MLGraphBuilder method takes positionally, in IDL order (softmax's `axis`,
    # reshape's `newShape`); the DSL writes them as named options, emitted JS passes them positionally
    method_params: list[str] = field(default_factory=list)
    num_outputs: int | Callable[[dict[str, Any]], int] = 1
    infer: Callable[..., list[TensorType]] | None = None
    aliases: list[str] = field(default_factory=list)
    doc: str = ""
    # --- additive (ops engineer) ---
    # option key -> value kind ("int", "float", "number", "bool", "ints", "floats", "shape", "str", "dtype",
    # "int|ints", "any", or a tuple of allowed strings for an enum); checked and coerced by `bind`.
    option_types: dict[str, Any] = field(default_factory=dict)
    # extra option keys accepted for converter forms (e.g. slice `ends`); `normalize` must consume them.
    accepts: frozenset[str] = frozenset()
    # normalize(ctx, operand_types, options) -> options: rewrite converter forms into the spec form before
    # option types are checked (cast `to="Int64"`, ONNX slice, `triangular(k=)`...).
    normalize: Callable[..., dict[str, Any]] | None = None

    def bind(self, node: Node, types: dict[str, TensorType], graph: Any = None) -> BoundNode:
        """Resolve `node` (whose op is this spec or an alias) against the known value types."""
        from ..errors import ValidationError
        from .registry import bind, get

        if get(node.op) is not self:
            raise ValidationError(f"node {node.id!r} has op {node.op!r}, not {self.name!r}")
        return bind(node, types, graph)


REQUIRED = object()
ANNOTATION_KEYS = frozenset({"label", "metadata"})
