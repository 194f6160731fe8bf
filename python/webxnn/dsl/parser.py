"""Recursive-descent parser for the `.webnn` text dialect, as webnn-graph 0.3 implements it.

Grammar (see design/reference/webnn-graph-dsl.md for every quirk):
    file    = header block*            header = "webnn_graph" string "v" int ["@quantized"] "{"
    block   = "inputs" "{" decl* "}" | "consts" "{" decl annot* ... "}" | "nodes" "{" stmt* "}"
            | "outputs" "{" (ident ("," ident)* [";"])* "}" | "}"
The closing brace of the graph is just another block, so it may be missing or repeated, and blocks may
follow it. Where 0.3 silently drops or overwrites something, this parser raises ParseError instead
(positional literals, duplicate names and keys, `y = x;` aliases, out-of-range numbers, bad `@bytes`).
Everything is linear in the input: one pass over the token lists, no backtracking beyond one token.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from ..dtypes import I64_MAX, I64_MIN, MAX_DIM
from ..errors import ParseError
from ..graph import Const, ConstInit, Dim, DynDim, Graph, Node, Operand
from .lexer import Tokens, describe, tokenize, unescape
from .structure import TEXT_DTYPES, Key, check_graph

_LITERAL_WORDS = {"true": True, "false": False, "null": None}
_QUIRK_PREFIXES = ("true", "false", "null")
MAX_DEPTH = 64  # nesting of [..] / {..} in option values; keeps recursion bounded
_BLOCKS = ("inputs", "consts", "nodes", "outputs")
_DTYPE_LIST = ", ".join(TEXT_DTYPES)


class _Parser:
    def __init__(self, toks: Tokens) -> None:
        self.toks = toks
        self.k = toks.kinds
        self.t = toks.texts
        self.s = toks.starts
        self.i = 0
        # Positions for structural errors found after parsing (keys as in structure.Key).
        self.where: dict[Key, int] = {}
        self._last_input_at: list[int] = []

    # -- helpers -----------------------------------------------------------------------------------------

    def fail(self, message: str, at: int | None = None) -> NoReturn:
        i = self.i if at is None else at
        raise self.toks.error(message, self.s[i])

    def unexpected(self, expected: str, at: int | None = None) -> NoReturn:
        i = self.i if at is None else at
        self.fail(f"unexpected {describe(self.k[i], self.t[i])}; expected {expected}", i)

    def expect(self, kind: str, what: str | None = None) -> int:
        i = self.i
        if self.k[i] != kind:
            self.unexpected(what or f"'{kind}'")
        self.i = i + 1
        return i

    def expect_word(self, word: str) -> int:
        i = self.i
        if self.k[i] != "id" or self.t[i] != word:
            self.unexpected(f"'{word}'")
        self.i = i + 1
        return i

    def ident(self, what: str = "an identifier") -> str:
        i = self.i
        if self.k[i] != "id":
            self.unexpected(what)
        self.i = i + 1
        return self.t[i]

    def uint(self, what: str, limit: int) -> int:
        """An `int` token: digits only (no sign, point or exponent), at most `limit`."""
        i = self.i
        text = self.t[i]
        if self.k[i] != "num" or not text.isdigit():
            self.unexpected(f"{what} (a non-negative integer)")
        value = int(text)
        if value > limit:
            self.fail(f"{what} {text} is too large (at most {limit})", i)
        self.i = i + 1
        return value

    def number(self) -> int | float:
        i = self.i
        text = self.t[i]
        self.i = i + 1
        if "." not in text and "e" not in text and "E" not in text:
            v = int(text)
            if I64_MIN <= v <= I64_MAX:
                return v
            f = float(text)
            if math.isfinite(f) and int(f) != v:  # a double would silently change it
                self.fail(
                    f"integer {text} is outside the 64-bit signed range, where numbers are doubles, "
                    f"and has no exact double (the nearest is {int(f)})",
                    i,
                )
        f = float(text)
        if not math.isfinite(f):
            self.fail(f"number {text} is out of range (it is not a finite 64-bit float)", i)
        return f

    def string(self, what: str = "a string") -> str:
        i = self.expect("str", what)
        return unescape(self.t[i])

    # -- file structure ----------------------------------------------------------------------------------

    def parse_file(self) -> Graph:
        g = Graph()
        k, t = self.k, self.t
        if k[0] != "id" or t[0] != "webnn_graph":
            self.unexpected("'webnn_graph' (the header: webnn_graph \"name\" v1 {)")
        self.i = 1
        g.name = self.string("the graph name (a string)")
        self.parse_version(g)
        if k[self.i] == "at":
            if t[self.i] != "@quantized":
                self.unexpected("'@quantized' or '{'")
            g.quantized = True
            self.i += 1
        self.expect("{")
        self.where[("graph",)] = self.i
        while True:
            i = self.i
            kind = k[i]
            if kind == "eof":
                break
            if kind == "}":
                self.i = i + 1
                continue
            word = t[i]
            if kind != "id" or word not in _BLOCKS:
                self.unexpected("a block ('inputs', 'consts', 'nodes', 'outputs') or '}'")
            self.i = i + 1
            self.expect("{", f"'{{' after '{word}'")
            if word == "inputs":
                self.parse_decls(g, is_const=False)
            elif word == "consts":
                self.parse_decls(g, is_const=True)
            elif word == "nodes":
                self.parse_nodes(g)
            else:
                self.parse_outputs(g)
        self.where[("graph",)] = self.i
        return g

    def parse_version(self, g: Graph) -> None:
        i = self.i
        text = self.t[i]
        if self.k[i] == "id" and text == "v":
            self.i += 1
            j = self.i
            g.version = self.uint("version number", I64_MAX)
        elif self.k[i] == "id" and text.startswith("v") and text[1:].isdigit():
            # `v1` lexes as one identifier; 0.3 reads it as "v" followed by an int.
            j = i
            g.version = int(text[1:])
            self.i = i + 1
        else:
            self.unexpected("the version (v1 or v2)")
        if g.version not in (1, 2):
            self.fail(f"unsupported graph version v{g.version}; webnn-graph graphs are v1 or v2", j)

    def parse_type(self, is_const: bool) -> tuple[str, list[Dim]]:
        i = self.i
        if self.k[i] != "id" or self.t[i] not in TEXT_DTYPES:
            self.unexpected(f"a data type ({_DTYPE_LIST})")
        dtype = TEXT_DTYPES[self.t[i]]
        self.i = i + 1
        self.expect("[", "'[' (a shape like [1, 3])")
        shape: list[Dim] = []
        if self.k[self.i] != "]":
            while True:
                shape.append(self.parse_dim(is_const))
                if self.k[self.i] == ",":
                    self.i += 1
                    continue
                self.expect("]", "',' or ']'")
                break
        else:
            self.i += 1
        return dtype, shape

    def parse_dim(self, is_const: bool) -> Dim:
        i = self.i
        if self.k[i] == "id" and self.t[i] == "dyn":
            if is_const:
                self.fail("constant shapes must be static (dyn() is only allowed in input shapes)", i)
            self.i += 1
            self.expect("(", "'(' after dyn")
            name = self.string("the dimension name (a string)")
            self.expect(",", "','")
            j = self.i
            max_size = self.uint("dyn() max size", MAX_DIM)
            if max_size < 1:
                self.fail("dyn() max size must be at least 1", j)
            self.expect(")", "')'")
            return DynDim(name, max_size)
        if self.k[i] != "num":
            self.unexpected('a dimension (a non-negative integer or dyn("name", max))')
        return self.uint("dimension", MAX_DIM)

    def declare(self, g: Graph, name: str, at: int) -> None:
        if name in g.inputs or name in g.consts:
            kind = "an input" if name in g.inputs else "a const"
            # 0.3 silently keeps the last declaration; a second one is almost always a mistake.
            self.fail(f"'{name}' is already declared as {kind}", at)

    def parse_decls(self, g: Graph, is_const: bool) -> None:
        k = self.k
        while k[self.i] != "}":
            at = self.i
            if k[at] != "id":
                self.unexpected("a declaration (name: dtype[shape];) or '}'")
            name = self.t[at]
            self.i += 1
            self.expect(":", f"':' after '{name}'")
            dtype, shape = self.parse_type(is_const)
            self.declare(g, name, at)
            if is_const:
                init = ConstInit("weights", ref=name)  # no annotation means @weights("<name>")
                while k[self.i] == "at":
                    init = self.parse_annotation(dtype, shape)  # the last annotation wins, as in 0.3
                self.expect(";", "an annotation (@weights, @scalar, @bytes) or ';'")
                g.consts[name] = Const(name, dtype, shape, init)
                self.where[("const", name)] = at
            else:
                self.expect(";", "';'")
                g.inputs[name] = Operand(name, dtype, shape)
                self.where[("input", name)] = at
        self.i += 1

    def parse_annotation(self, dtype: str, shape: list[Dim]) -> ConstInit:
        i = self.i
        word = self.t[i]
        if word not in ("@weights", "@scalar", "@bytes"):
            self.unexpected('@weights("key"), @scalar(number) or @bytes([...])')
        self.i += 1
        self.expect("(", f"'(' after {word}")
        if word == "@weights":
            init = ConstInit("weights", ref=self.string("the weights key (a string)"))
        elif word == "@scalar":
            if self.k[self.i] != "num":
                self.unexpected("a number")
            init = ConstInit("scalar", value=self.number())
        else:
            self.expect("[", "'[' (a list of byte values)")
            data = bytearray()
            if self.k[self.i] != "]":
                while True:
                    data.append(self.uint("byte value", 255))
                    if self.k[self.i] == ",":
                        self.i += 1
                        continue
                    self.expect("]", "',' or ']'")
                    break
            else:
                self.i += 1
            init = ConstInit("bytes", data=bytes(data))
        self.expect(")", "')'")
        return init

    # -- nodes -------------------------------------------------------------------------------------------

    def parse_nodes(self, g: Graph) -> None:
        k = self.k
        while k[self.i] != "}":
            start = self.i
            multi = False
            if k[start] == "[":
                multi = True
                self.i += 1
                outs = [self.ident("an output name")]
                while k[self.i] == ",":
                    self.i += 1
                    outs.append(self.ident("an output name"))
                out_at = [start + 1 + 2 * j for j in range(len(outs))]
                self.expect("]", "',' or ']'")
            elif k[start] == "id":
                outs = [self.t[start]]
                out_at = [start]
                self.i += 1
            else:
                self.unexpected("a statement (name = op(...); or [a, b] = op(...);) or '}'")
            self.expect("=", "'='")
            node = self.parse_call(outs, multi)
            line, col = self.toks.line_col(self.s[start])
            node.loc = (line, col)
            self.expect(";", "';' after the statement")
            idx = len(g.nodes)
            g.nodes.append(node)
            self.where[("node", idx)] = start
            for j, at in enumerate(self._last_input_at):
                self.where[("node_input", idx, j)] = at
            for j, at in enumerate(out_at):
                self.where[("node_output", idx, j)] = at
        self.i += 1

    def parse_call(self, outs: list[str], multi: bool) -> Node:
        i = self.i
        k = self.k
        if k[i] != "id" or k[i + 1] != "(":
            target = outs[0] if not multi else "[" + ", ".join(outs) + "]"
            if k[i] == "id" and self.t[i] not in _LITERAL_WORDS:
                self.fail(
                    f"'{target} = {self.t[i]}' is an alias; aliases are not supported, "
                    f"use identity({self.t[i]})",
                    i,
                )
            if k[i] in ("id", "num", "str", "[", "{"):
                self.fail(
                    f"the right-hand side of '{target} = ...' must be an op call like op(x, ...); "
                    "a literal cannot define a value (declare a const, e.g. with @scalar(...))",
                    i,
                )
            self.unexpected("an op call like relu(x)")
        op = self.t[i]
        self.i = i + 2
        inputs: list[str] = []
        input_at: list[int] = []
        options: dict[str, Any] = {}
        if k[self.i] != ")":
            while True:
                a = self.i
                if k[a] == "id" and k[a + 1] == "=":
                    key = self.t[a]
                    self.i = a + 2
                    value = self.value()
                    if key in options:
                        # 0.3 keeps the last one silently.
                        self.fail(f"option '{key}' is given twice in {op}(...)", a)
                    options[key] = value
                else:
                    self.positional(inputs, input_at)
                if k[self.i] == ",":
                    self.i += 1
                    continue
                self.expect(")", "',' or ')'")
                break
        else:
            self.i += 1
        node = Node(outs[0], op, inputs, options, list(outs), multi_assign=multi)
        # Remember where each input came from, for unknown-reference errors (index fixed by the caller).
        self._last_input_at = input_at
        return node

    def positional(self, inputs: list[str], input_at: list[int]) -> None:
        """A positional argument: an operand name (ident or string), or a bracketed list of them, which 0.3
        flattens into the inputs (`concat([a, b], axis=0)`)."""
        a = self.i
        kind = self.k[a]
        if kind == "[":
            self.i += 1
            if self.k[self.i] == "]":
                self.i += 1
                return
            while True:
                b = self.i
                v = self.value()
                if not isinstance(v, str):
                    self.positional_literal(b, v, in_list=True)
                inputs.append(str(v))
                input_at.append(b)
                if self.k[self.i] == ",":
                    self.i += 1
                    continue
                self.expect("]", "',' or ']'")
                return
        v = self.value()
        if not isinstance(v, str):
            self.positional_literal(a, v, in_list=False)
        inputs.append(str(v))
        input_at.append(a)

    def positional_literal(self, at: int, value: Any, in_list: bool) -> NoReturn:
        last = self.i - 1
        text = self.toks.source[self.s[at] : self.s[last] + len(self.t[last])]
        if len(text) > 40:
            text = text[:37] + "..."
        where = "inside a positional list" if in_list else "as a positional argument"
        # webnn-graph 0.3 silently drops positional literals; the op would run without the option.
        self.fail(
            f"positional literal {text} {where} is not an operand (webnn-graph 0.3 would silently "
            f"drop it); pass it as a named option, e.g. axis={text}",
            at,
        )

    def value(self, depth: int = 0) -> Any:
        """literal | ident, with 0.3's ordered choice: literals first, so an identifier that merely starts
        with true/false/null is read by 0.3 as that literal followed by junk, i.e. a syntax error."""
        i = self.i
        kind = self.k[i]
        if depth > MAX_DEPTH:
            self.fail(f"values are nested more than {MAX_DEPTH} levels deep", i)
        if kind == "id":
            text = self.t[i]
            self.i = i + 1
            if text in _LITERAL_WORDS:
                return _LITERAL_WORDS[text]
            if text.startswith(_QUIRK_PREFIXES):
                prefix = next(p for p in _QUIRK_PREFIXES if text.startswith(p))
                self.fail(
                    f"identifier '{text}' cannot be used as a value: webnn-graph 0.3 reads its leading "
                    f"'{prefix}' as a literal; rename it or write it as a string \"{text}\"",
                    i,
                )
            return text  # an operand reference; stored as a plain str, as in 0.3's JSON
        if kind == "num":
            return self.number()
        if kind == "str":
            self.i = i + 1
            return unescape(self.t[i])
        if kind == "[":
            self.i = i + 1
            items: list[Any] = []
            if self.k[self.i] == "]":
                self.i += 1
                return items
            while True:
                items.append(self.value(depth + 1))
                if self.k[self.i] == ",":
                    self.i += 1
                    continue
                self.expect("]", "',' or ']'")
                return items
        if kind == "{":
            self.i = i + 1
            obj: dict[str, Any] = {}
            if self.k[self.i] == "}":
                self.i += 1
                return obj
            while True:
                a = self.i
                if self.k[a] == "str":
                    key = unescape(self.t[a])
                elif self.k[a] == "id":
                    key = self.t[a]
                else:
                    self.unexpected("an object key (identifier or string)")
                self.i = a + 1
                self.expect(":", "':' after the object key")
                v = self.value(depth + 1)
                if key in obj:
                    self.fail(f"key '{key}' appears twice in the object", a)
                obj[key] = v
                if self.k[self.i] == ",":
                    self.i += 1
                    continue
                self.expect("}", "',' or '}'")
                return obj
        self.unexpected("a value (identifier, number, string, true/false/null, [list] or {object})")

    # -- outputs -----------------------------------------------------------------------------------------

    def parse_outputs(self, g: Graph) -> None:
        k = self.k
        while k[self.i] != "}":
            while True:
                at = self.i
                name = self.ident("an output name or '}'")
                if name in g.outputs:
                    self.fail(f"output '{name}' is listed twice", at)
                g.outputs[name] = name
                self.where[("output", name)] = at
                if k[self.i] != ",":
                    break
                self.i += 1
            if k[self.i] == ";":
                self.i += 1
        self.i += 1


def parse(text: str, file: str | None = None) -> Graph:
    """Parse `.webnn` text into a Graph. Raises ParseError with file:line:col on any problem."""
    if not isinstance(text, str):
        raise ParseError(f"expected text (str), got {type(text).__name__}", file=file)
    toks = tokenize(text, file)
    p = _Parser(toks)
    g = p.parse_file()
    g.source = file

    def fail(message: str, key: Key) -> NoReturn:
        at = p.where.get(key)
        if at is None and key[0] == "node_input":
            at = p.where.get(("node", key[1]))
        if at is None:
            at = p.where.get(("graph",), len(toks.starts) - 1)
        raise toks.error(message, toks.starts[at])

    check_graph(g, fail)
    return g
