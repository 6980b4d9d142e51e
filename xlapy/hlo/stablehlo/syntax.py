"""Reading MLIR text (the ``stablehlo``, ``chlo``, ``func`` dialects as JAX prints them).

The text becomes a small tree: :class:`MlirModule` holds :class:`Func` s, a function's
body and every op's regions are :class:`Region` s of :class:`Block` s of :class:`Op` s.
Types become xlapy :class:`~xlapy.hlo.shape.Shape` s; attribute values become plain data
(ints, floats, bools, strings, lists, dicts) or the small classes below. Ops in the
generic form (``"stablehlo.sort"(%a) <{...}> ({...}) : (...) -> ...``) and in the custom
forms of the ops (``stablehlo.add %a, %b : tensor<4xf32>``, ``stablehlo.reduce(...)
applies ...``) are read here; ``pretty.py`` has the op-specific custom forms. Every error
is an :class:`~xlapy.errors.HloParseError` with the ``line:column`` of the offending text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .. import types as T
from ..lexer import Scanner
from ..shape import UNBOUNDED, Shape

IDENT = re.compile(r"[A-Za-z_][\w$.]*")
VALUE = re.compile(r"%([\w$.-]+)(?:#(\d+))?")
RESULT = re.compile(r"%([\w$.-]+)(?::(\d+))?")
SYMBOL = re.compile(r'@([\w$.-]+|"[^"]*")')
NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|(?:\d+\.?\d*(?:[eE][-+]?\d+)?)|inf|nan)")
SCALAR_TYPE = re.compile(r"(?:[su]?i\d+|f\d+\w*|bf16|tf32|index|none)\b")
BLOCK_LABEL = re.compile(r"\^[\w$.-]+")
DIM = re.compile(r"(\d+|\?)x")

ELEMENT_TYPES = {"i1": T.PRED, "f16": T.F16, "bf16": T.BF16, "f32": T.F32, "f64": T.F64,
                 "index": T.S64, "complex<f32>": T.C64, "complex<f64>": T.C128}
for _bits in (2, 4, 8, 16, 32, 64):
    ELEMENT_TYPES[f"i{_bits}"] = ELEMENT_TYPES[f"si{_bits}"] = T.BY_NAME[f"s{_bits}"]
    ELEMENT_TYPES[f"ui{_bits}"] = T.BY_NAME[f"u{_bits}"]
for _t in T.ALL_TYPES:
    if _t.name.startswith(("f8", "f4")):       # f8E4M3FN -> f8e4m3fn
        ELEMENT_TYPES.setdefault(_t.name, _t)


def element_type(name: str) -> T.ElementType | None:
    """The xlapy element type of an MLIR element type name (``ui8``, ``f8E4M3FN``)."""
    return ELEMENT_TYPES.get(name) or ELEMENT_TYPES.get(name.lower())


# ------------------------------------------------------------------------ attribute values
@dataclass(frozen=True)
class Dense:
    """``dense<...> : tensor<...>``: ``content`` is a nested list of numbers/bools, a
    ``0x...`` hex string, or [] for ``dense<>``; ``shape`` the tensor type."""
    content: Any
    shape: Shape
    hex: bool = False


@dataclass(frozen=True)
class Enum:
    """``#stablehlo<precision DEFAULT>`` -> Enum("precision", "DEFAULT")."""
    kind: str
    value: str


@dataclass(frozen=True)
class Struct:
    """``#stablehlo.gather<offset_dims = [0], ...>`` -> Struct("gather", {...})."""
    kind: str
    fields: dict


@dataclass(frozen=True)
class Symbol:
    name: str


@dataclass(frozen=True)
class Opaque:
    """An attribute kept as text (``#sdy.sharding<...>``, ``affine_map<...>``)."""
    text: str


@dataclass(frozen=True)
class Loc:
    """A location: ``name`` of a NameLoc, ``file:line:col`` of a FileLineColLoc, or the
    ``#loc`` alias it refers to."""
    name: str = ""
    file: str = ""
    line: int = 0
    column: int = 0
    alias: str = ""


# ---------------------------------------------------------------------------- the tree
@dataclass
class Block:
    args: list[tuple[str, Shape]] = field(default_factory=list)
    ops: list["Op"] = field(default_factory=list)


@dataclass
class Region:
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Op:
    """One operation. Values are keys ``name#index`` (``%0#2`` -> ``0#2``, ``%x`` -> ``x#0``)."""
    name: str
    pos: int
    results: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)        # attribute -> its source text
    positional: list[Any] = field(default_factory=list)      # custom-form bare values
    regions: list[Region] = field(default_factory=list)
    operand_types: list[Shape] | None = None
    result_types: list[Shape] = field(default_factory=list)
    loc: Loc | None = None


@dataclass
class Func:
    name: str
    pos: int
    visibility: str
    args: list[tuple[str, Shape, dict]]
    results: list[tuple[Shape, dict]]
    body: Region
    loc: Loc | None = None


@dataclass
class MlirModule:
    name: str
    attrs: dict[str, Any]
    funcs: dict[str, Func]
    loc_aliases: dict[str, Loc]
    scanner: Scanner
    meshes: dict[str, list[tuple[str, int]]] = field(default_factory=dict)   # sdy.mesh axes


def parse_int(text: str) -> int:
    """An MLIR integer literal: decimal (leading zeros allowed) or ``0x`` hex."""
    body = text.lstrip("+-")
    value = int(body, 16) if body[:2].lower() == "0x" else int(body, 10)
    return -value if text.startswith("-") else value


def value_key(name: str, index: str | int | None) -> str:
    return f"{name}#{index or 0}"


class MlirReader:
    """Recursive-descent reader over one text; see the module docstring."""

    def __init__(self, text: str) -> None:
        self.sc = Scanner(text)

    # ----- small tokens
    def fail(self, message: str, pos: int | None = None) -> NoReturn:
        raise self.sc.error(message, pos)

    def keyword(self, word: str) -> bool:
        """Move past identifier ``word`` if it comes next (a whole word)."""
        p = self.sc.skip()
        m = IDENT.match(self.sc.text, p)
        if m and m.group(0) == word:
            self.sc.pos = m.end()
            return True
        return False

    def ident(self, what: str = "an identifier") -> str:
        m = self.sc.match(IDENT)
        if not m:
            self.fail(f"expected {what}, found {self.sc.describe()}")
        return m.group(0)

    def value(self) -> str:
        m = self.sc.match(VALUE)
        if not m:
            self.fail(f"expected a value (%name), found {self.sc.describe()}")
        return value_key(m.group(1), m.group(2))

    def symbol(self) -> str:
        m = self.sc.match(SYMBOL)
        if not m:
            self.fail(f"expected a symbol (@name), found {self.sc.describe()}")
        return m.group(1).strip('"')

    def integer(self) -> int:
        p = self.sc.skip()
        m = self.sc.match(NUMBER)
        if not m:
            self.fail(f"expected an integer, found {self.sc.describe()}", p)
        try:
            return parse_int(m.group(0))
        except ValueError:
            self.fail(f"expected an integer, found '{m.group(0)}'", p)

    def same_line(self) -> bool:
        """Whether the next token is on the current line."""
        p = self.sc.pos
        self.sc.skip_in_line()
        at = self.sc.pos
        self.sc.pos = p
        return at < len(self.sc.text) and self.sc.text[at] != "\n"

    # ----- types
    def type(self) -> Shape:
        sc = self.sc
        p = sc.skip()
        if self.keyword("tensor"):
            sc.expect("<", "after 'tensor'")
            dims: list[int] = []
            dynamic: list[bool] = []
            while True:
                m = sc.match(DIM)
                if not m:
                    break
                dims.append(UNBOUNDED if m.group(1) == "?" else int(m.group(1)))
                dynamic.append(m.group(1) == "?")
            et = self.element_type()
            if sc.accept(","):             # encoding: #stablehlo.bounds<8, ?>
                enc = self.attr()
                if isinstance(enc, Struct) and enc.kind == "bounds":
                    bounds = enc.fields.get("", [])
                    for i, b in enumerate(bounds):
                        if isinstance(b, int) and i < len(dims) and dynamic[i]:
                            dims[i] = b
            sc.expect(">", "closing the tensor type")
            return Shape.array(et, dims, dynamic=dynamic)
        if self.keyword("tuple"):
            sc.expect("<", "after 'tuple'")
            parts = [] if sc.at(">") else self.type_list()
            sc.expect(">", "closing the tuple type")
            return Shape.tuple(parts)
        if sc.accept("!stablehlo.token") or sc.accept("!mhlo.token"):
            return Shape.token()
        if sc.at("!"):
            self.fail(f"unsupported type {sc.describe()}", p)
        et = self.element_type()            # a bare scalar type: a rank-0 tensor
        return Shape.array(et, ())

    def element_type(self) -> T.ElementType:
        p = self.sc.skip()
        name = self.ident("an element type")
        if name == "complex":
            self.sc.expect("<", "after 'complex'")
            name = f"complex<{self.ident('an element type')}>"
            self.sc.expect(">", "closing the complex type")
        et = element_type(name)
        if et is None:
            self.fail(f"unsupported element type '{name}'", p)
        return et

    def type_list(self) -> list[Shape]:
        out = [self.type()]
        while self.sc.accept(","):
            out.append(self.type())
        return out

    def result_types(self) -> list[Shape]:
        """``T`` or ``(T, ...)`` (results may carry attribute dicts, which are skipped)."""
        if self.sc.accept("("):
            out: list[Shape] = []
            while not self.sc.accept(")"):
                out.append(self.type())
                if self.sc.at("{"):
                    self.attr_dict()
                if not self.sc.accept(","):
                    self.sc.expect(")", "closing the result types")
                    break
            return out
        return [self.type()]

    def signature(self, op: Op) -> None:
        """``: (A, B) -> R``, ``: A, B -> R`` or ``: T`` / ``: A, B`` (all the same type)."""
        sc = self.sc
        if sc.accept("("):
            op.operand_types = [] if sc.at(")") else self.type_list()
            sc.expect(")", "closing the operand types")
            sc.expect("->", "in the op's function type")
            op.result_types = self.result_types()
            return
        types = self.type_list()
        if sc.accept("->"):
            op.operand_types, op.result_types = types, self.result_types()
        else:
            op.positional.append(("types", types))
            op.result_types = types if len(types) == len(op.results) else [types[-1]]

    # ----- attributes
    def attr(self) -> Any:
        sc = self.sc
        p = sc.skip()
        c = sc.text[p:p + 1]
        if c == "[":
            sc.pos += 1
            items: list[Any] = []
            while not sc.accept("]"):
                item = self.attr()
                if isinstance(item, int) and sc.accept(":"):        # slice a:b[:c]
                    rng = [item, self.integer()]
                    if sc.accept(":"):
                        rng.append(self.integer())
                    item = tuple(rng)
                items.append(item)
                if not sc.accept(","):
                    sc.expect("]", "closing the list")
                    break
            if self.keyword("x"):                  # [1] x [0]: a pair of lists
                return ("x", items, self.attr())
            return items
        if c == "{":
            return self.attr_dict()
        if c == '"':
            return sc.string()
        if c == "@":
            return Symbol(self.symbol())
        if c == "#":
            return self.hash_attr()
        if c == "<":
            return Opaque(self.balanced_angle())
        if c == "(":                                # (re, im) of a complex number
            sc.pos += 1
            re_ = self.attr()
            sc.expect(",", "in a complex number")
            im = self.attr()
            sc.expect(")", "closing a complex number")
            return complex(float(re_), float(im))
        m = NUMBER.match(sc.text, p)
        if m and (c in "-+0123456789" or m.group(0) in ("inf", "nan")):
            sc.pos = m.end()
            text = m.group(0)
            number: Any
            if re.fullmatch(r"[-+]?(0x[0-9A-Fa-f]+|\d+)", text):
                number = parse_int(text)
            else:
                number = float(text)
            self._typed_suffix()
            return number
        word = self.ident("an attribute value")
        if word in ("true", "false"):
            self._typed_suffix()
            return word == "true"
        if word == "unit":
            return True
        if word == "dense":
            return self.dense()
        if word == "array":
            return self.array()
        if word == "loc":
            return self.loc()
        if word in ("tensor", "tuple", "complex"):
            sc.pos = p
            return self.type()
        if sc.at("<"):
            return Opaque(word + self.balanced_angle())
        return word

    def _typed_suffix(self) -> bool:
        """Skip ``: i32`` after a scalar attribute (not an op's ``: tensor<..>``)."""
        sc = self.sc
        save = sc.pos
        if sc.accept(":"):
            m = SCALAR_TYPE.match(sc.text, sc.skip())
            if m:
                sc.pos = m.end()
                return True
        sc.pos = save
        return False

    def attr_dict(self) -> dict:
        sc = self.sc
        sc.expect("{", "opening an attribute dictionary")
        out: dict[str, Any] = {}
        raw: dict[str, str] = {}
        while not sc.accept("}"):
            p = sc.skip()
            key = sc.string() if sc.text.startswith('"', p) else self.ident("an attribute name")
            if sc.accept("="):
                start = sc.skip()
                out[key] = self.attr()
                raw[key] = sc.text[start:sc.pos]
            else:
                out[key] = True
            if not sc.accept(","):
                sc.expect("}", "closing the attribute dictionary")
                break
        self.last_raw = raw
        return out

    def balanced_angle(self) -> str:
        """Verbatim ``<...>`` with nested brackets and strings."""
        sc = self.sc
        start = sc.skip()
        depth, i, text = 0, start, sc.text
        pairs = {"<": ">", "(": ")", "[": "]", "{": "}"}
        stack: list[str] = []
        while i < len(text):
            ch = text[i]
            if ch == '"':
                end = text.find('"', i + 1)
                while end > 0 and text[end - 1] == "\\":
                    end = text.find('"', end + 1)
                if end < 0:
                    self.fail("unterminated string", i)
                i = end + 1
                continue
            if ch == "-" and text.startswith("->", i):
                i += 2
                continue
            if ch in pairs:
                stack.append(pairs[ch])
            elif ch in ">)]}":
                if not stack or stack.pop() != ch:
                    self.fail(f"unbalanced '{ch}'", i)
                if not stack:
                    sc.pos = i + 1
                    return text[start:i + 1]
            i += 1
            depth += 1
        self.fail("unterminated '<'", start)

    def hash_attr(self) -> Any:
        sc = self.sc
        p = sc.skip()
        m = re.compile(r"#([\w$.-]+)").match(sc.text, p)
        if not m:
            self.fail(f"bad attribute {sc.describe()}", p)
        name = m.group(1)
        sc.pos = m.end()
        if not sc.at("<"):
            return Loc(alias=name) if name.startswith("loc") else Opaque("#" + name)
        if name == "stablehlo" or name == "chlo" or name == "mhlo":     # #stablehlo<kind VALUE>
            sc.expect("<")
            kind = self.ident("an enum kind")
            value = self.ident("an enum value")
            sc.expect(">", "closing the enum attribute")
            return Enum(kind, value)
        if name in ("stablehlo.conv", "mhlo.conv"):   # <[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
            end = sc.text.find(">", sc.text.find("->", sc.pos) + 2)
            if end < 0 or sc.text.find("->", sc.pos) < 0:
                self.fail(f"expected '[..]x[..]->[..]>' closing #{name}<...>", sc.pos)
            text, sc.pos = sc.text[sc.pos:end + 1], end + 1
            return Opaque(text)
        if name.startswith(("stablehlo.", "mhlo.", "chlo.")):
            kind = name.split(".", 1)[1]
            sc.expect("<")
            fields: dict[str, Any] = {}
            positional: list[Any] = []
            while not sc.accept(">"):
                save = sc.pos
                key = sc.match(IDENT)
                if key and sc.accept("="):
                    fields[key.group(0)] = self.attr()
                else:
                    sc.pos = save
                    positional.append(self.attr() if not sc.at("?") else sc.accept("?") and "?")
                if not sc.accept(","):
                    sc.expect(">", f"closing #{name}<...>")
                    break
            if positional:
                fields[""] = positional
            return Struct(kind, fields)
        return Opaque("#" + name + self.balanced_angle())

    def dense(self) -> Dense:
        sc = self.sc
        sc.expect("<", "after 'dense'")
        hex_ = False
        if sc.accept(">"):
            content: Any = []
        else:
            p = sc.skip()
            if sc.text.startswith('"', p):
                content, hex_ = sc.string(), True
            else:
                content = self.dense_items()
            sc.expect(">", "closing dense<...>")
        sc.expect(":", "before the type of a dense attribute")
        return Dense(content, self.type(), hex_)

    def dense_items(self) -> Any:
        sc = self.sc
        if sc.accept("["):
            items = []
            while not sc.accept("]"):
                items.append(self.dense_items())
                if not sc.accept(","):
                    sc.expect("]", "closing the list")
                    break
            return items
        if sc.accept("("):
            re_ = self.dense_items()
            sc.expect(",", "in a complex number")
            im = self.dense_items()
            sc.expect(")", "closing a complex number")
            return (re_, im)
        p = sc.skip()
        for word, val in (("true", True), ("false", False)):
            if self.keyword(word):
                return val
        m = sc.match(NUMBER)
        if not m:
            self.fail(f"expected a number, found {sc.describe()}", p)
        return m.group(0)

    def array(self) -> tuple:
        sc = self.sc
        sc.expect("<", "after 'array'")
        self.element_type()
        items: list[Any] = []
        if sc.accept(":"):
            while True:
                v = self.attr()
                items.append(v)
                if not sc.accept(","):
                    break
        sc.expect(">", "closing array<...>")
        return tuple(items)

    def loc(self) -> Loc:
        """``loc(...)`` after the word ``loc``: a NameLoc's name, a file position, or the
        ``#loc`` alias it refers to (the first of each inside callsite/fused locations)."""
        sc = self.sc
        p = sc.skip()
        sc.expect("(", "after 'loc'")
        self.balanced_to(")")
        return loc_from_text(sc.text[p:sc.pos])

    def balanced_to(self, closer: str) -> None:
        """Skip to just past the ``closer`` that closes the current group."""
        sc = self.sc
        depth = 0
        i = sc.pos
        text = sc.text
        while i < len(text):
            ch = text[i]
            if ch == '"':
                i = text.find('"', i + 1) + 1
                if i == 0:
                    self.fail("unterminated string", sc.pos)
                continue
            if ch in "([{<":
                depth += 1
            elif ch in ")]}>":
                if depth == 0:
                    if ch != closer:
                        self.fail(f"expected '{closer}', found '{ch}'", i)
                    sc.pos = i + 1
                    return
                depth -= 1
            i += 1
        self.fail(f"missing '{closer}'", sc.pos)


_LOC_NAME = re.compile(r'"((?:[^"\\]|\\.)*)"(?::(\d+)(?::(\d+))?)?')
_LOC_ALIAS = re.compile(r"#(loc[\w$.-]*)")


def loc_from_text(text: str) -> Loc:
    """A :class:`Loc` from the text of ``(...)`` after ``loc``."""
    name = file = alias = ""
    line = column = 0
    for m in _LOC_NAME.finditer(text):
        if m.group(2):
            if not file:
                file, line, column = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        elif not name:
            name = m.group(1)
    m = _LOC_ALIAS.search(text)
    if m:
        alias = m.group(1)
    return Loc(name, file, line, column, alias)
