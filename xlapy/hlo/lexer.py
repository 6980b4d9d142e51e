"""Low-level reading of HLO text: a position-tracking scanner and readers for small values.

:class:`Scanner` walks the text with compiled regular expressions anchored at the
current position, skipping whitespace and ``/* */`` / ``//`` comments between
tokens. Readers for shapes, layouts, integer trees, windows, slices, paddings and
shape indices live here because they are lexical: each consumes one token group.
Every failure raises :class:`~xlapy.errors.HloParseError` with a 1-based
``line:column`` of the offending token.

Fast paths: XLA and xlapy print most constructs one canonical way (``f32[2,3]{1,0}``,
``dimensions={0,1}``), so hot readers first try one regular expression (a ``*_FAST``
pattern) for that spelling. A fast path reads exactly what the general reader would, with
the same result, or gives up; the general reader then goes on from the same place and
reports every error. Shapes and metadata (immutable) are cached by their text.
``Scanner(text, fast=False)`` turns fast paths off; ``tests/test_hlo_parse_fast.py``
checks that both ways give the same modules and the same errors.
"""
from __future__ import annotations

import bisect
import re
from typing import Any, Callable, Iterator, NoReturn

from ..errors import HloParseError
from . import types as T
from .attrs import (ALIASING, BACKEND_CONFIG, BOOL, BOOL_LIST, COMPUTATION, COMPUTATION_LIST,
                    DICT, DIM_LABELS, ENUM, ENUM_LIST, FLOAT, INT_TREE, METADATA, PADDING,
                    REPLICA_GROUPS, SHAPE_LIST, SHARDING, SLICE, STRING, WINDOW,
                    ConvDimensionNumbers, OpMetadata, RawAttr, Window)
from .attrs import INT as INT_KIND
from .literal import unescape_string
from .replica_groups import parse_replica_groups
from .sharding import HloSharding, ShardingParseError, parse_sharding
from .shape import UNBOUNDED, Layout, Shape

_WS = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)
_WS_LINE = re.compile(r"(?:[ \t\r]+|/\*[^\n]*?\*/|//[^\n]*)*")
# Names may contain '-' but not '->'; loops are unrolled ("a*(?:b a*)*"), which re runs fast.
NAME_BODY = r"[A-Za-z_$][\w.$]*(?:-(?!>)[\w.$]*)*"
ATTR_NAME_BODY = r"[A-Za-z_][\w.]*(?:-(?!>)[\w.]*)*"
STRING_BODY = r'[^"\\\n]*(?:\\.[^"\\\n]*)*'              # between quotes, C escapes
NAME = re.compile(rf"%?({NAME_BODY})")
ATTR_NAME = re.compile(ATTR_NAME_BODY)
INT = re.compile(r"[-+]?\d+")
_STRING = re.compile(rf'"({STRING_BODY})"')
_ELEM = re.compile(r"([A-Za-z][A-Za-z0-9]*)\[")
_DIM = re.compile(r"\s*(?:<=\s*(\d+)|(\d+)|(\?))\s*")
_LAYOUT = re.compile(r"\{\s*((?:\d+\s*(?:,\s*\d+\s*)*)?)(?::([^{}\n]*))?\}")
_TOKEN_TEXT = re.compile(r"[A-Za-z0-9_%.\-]+|\S")
_DXD = re.compile(r"\d+(?:x\d+)*")
_PAD = re.compile(r"-?\d+_-?\d+(?:_-?\d+)?(?:x-?\d+_-?\d+(?:_-?\d+)?)*")
_ENUM = re.compile(r"[A-Za-z_][\w.\-]*")
_FLOAT = re.compile(r"[-+]?(?:inf|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_DIM_LABELS = re.compile(r"[\w?]+_[\w?]+->[\w?]+")
_BARE = re.compile(r"[^\s,{}()\"]+")
_DICT_KEY = re.compile(r"[\w.\-/:]+")
_SLICE_RANGE = re.compile(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\]")

# Fast paths (see the module docstring). Shape texts they find are read by the general
# reader the first time (cached_shape), so shape patterns may be loose about validity.
ARRAY_SHAPE = r"[a-z][a-z0-9]{0,15}\[[\d,]*\](?:\{[\d,]*\})?"     # (element types are short)
_FLAT_TUPLE = r"\([^()\n]*\)"
#: A shape followed by something that cannot continue it (such as a space and a name).
SHAPE_LOOSE = rf"(?:{ARRAY_SHAPE}|{_FLAT_TUPLE})"
# A shape anywhere: no layout is followed by nothing read_layout could take for one.
_SHAPE_FAST = re.compile(rf"[a-z][a-z0-9]{{0,15}}\[[\d,]*\](?:\{{[\d,]*\}}"
                         rf"|(?![ \t\r]*(?:/|\{{\s*[\d:}}])))|{_FLAT_TUPLE}")
_INT_LIST_FAST = re.compile(r"\{((?:[-+]?\d+(?:,[-+]?\d+)*)?)\}")
# Metadata: quoted or integer values, one space between fields.
_META_FIELD = re.compile(rf'([A-Za-z_][\w.]*)=(?:"({STRING_BODY})"|(-?\d+))')
_METADATA_FAST = re.compile(rf"\{{(?:{_META_FIELD.pattern}(?= |\}})(?: (?=[A-Za-z_]))?)*\}}")


class Scanner:
    """A cursor over HLO text (``pos`` is a character offset)."""

    def __init__(self, text: str, fast: bool = True) -> None:
        self.text = text
        self.pos = 0
        self.fast = fast                            # try the *_FAST patterns first
        self.shapes: dict[str, Shape] = {}          # see cached_shape
        self.metadata: dict[str, OpMetadata] = {}   # text read by _METADATA_FAST -> value
        self._line_starts: list[int] | None = None

    # ----- positions and errors
    def line_col(self, pos: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_right(self._line_starts, pos)
        return line, pos - self._line_starts[line - 1] + 1

    def error(self, message: str, pos: int | None = None, expected: str = "") -> HloParseError:
        pos = self.pos if pos is None else pos
        line, col = self.line_col(pos)
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        source = self.text[start:end if end >= 0 else len(self.text)].rstrip("\r")
        return HloParseError(message, line, col, source, expected)

    def fail(self, message: str, pos: int | None = None, expected: str = "") -> NoReturn:
        raise self.error(message, pos, expected)

    def describe(self, pos: int | None = None) -> str:
        """The token at ``pos`` for messages (``'foo'`` or ``end of input``)."""
        pos = self.pos if pos is None else pos
        m = _TOKEN_TEXT.match(self.text, pos)
        return f"'{m.group(0)}'" if m else "end of input"

    # ----- cursor
    def skip(self) -> int:
        """Skip whitespace and comments; return the new position."""
        p = self.pos
        c = self.text[p:p + 1]
        if c == "/" or c.isspace():     # str.isspace is what the regex's \s matches
            p = self.pos = _WS.match(self.text, p).end()
        return p

    def skip_in_line(self) -> int:
        """Skip spaces and comments but stop at a newline."""
        self.pos = _WS_LINE.match(self.text, self.pos).end()
        return self.pos

    def at_end(self) -> bool:
        return self.skip() >= len(self.text)

    def peek(self) -> str:
        """The next non-blank character ('' at the end)."""
        p = self.skip()
        return self.text[p:p + 1]

    def at(self, s: str) -> bool:
        """Whether punctuation ``s`` comes next (``s`` never starts with a blank or '/')."""
        return self.text.startswith(s, self.pos) or self.text.startswith(s, self.skip())

    def accept(self, s: str) -> bool:
        """Move past punctuation ``s`` if it comes next (``s`` as for :meth:`at`)."""
        if self.text.startswith(s, self.pos) or self.text.startswith(s, self.skip()):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, context: str = "") -> None:
        if not self.accept(s):
            where = f" {context}" if context else ""
            self.fail(f"expected '{s}'{where}, found {self.describe()}", expected=s)

    def match(self, regex: re.Pattern) -> re.Match | None:
        m = regex.match(self.text, self.skip())
        if m:
            self.pos = m.end()
        return m

    # ----- tokens
    def name(self, what: str = "a name") -> tuple[str, int]:
        """An identifier with optional ``%``; returns (name without %, position)."""
        p = self.skip()
        m = NAME.match(self.text, p)
        if not m:
            self.fail(f"expected {what}, found {self.describe()}", expected=what)
        self.pos = m.end()
        return m.group(1), p

    def integer(self, what: str = "an integer") -> int:
        m = self.match(INT)
        if not m:
            self.fail(f"expected {what}, found {self.describe()}", expected=what)
        return int(m.group(0))

    def string(self) -> str:
        """A double-quoted string with C escapes."""
        p = self.skip()
        if not self.text.startswith('"', p):
            self.fail(f"expected a quoted string, found {self.describe()}", expected="string")
        m = _STRING.match(self.text, p)
        if not m:
            self.fail("unterminated string", p, expected='"')
        self.pos = m.end()
        try:
            return unescape_string(m.group(1))
        except ValueError as e:
            self.fail(f"bad string: {e}", p)

    def balanced(self, what: str = "a value", single: bool = False) -> str:
        """Verbatim text of one value, brackets and quotes balanced.

        The value ends at a top-level ',', at the end of the line (a value never spans
        lines), or (``single``) right after the first complete bracketed group.
        """
        text, start = self.text, self.skip()
        stack: list[str] = []
        closers = {"{": "}", "[": "]", "(": ")"}
        i, n = start, len(text)
        while i < n:
            c = text[i]
            if c == '"':
                m = _STRING.match(text, i)
                if not m:
                    self.fail("unterminated string", i, expected='"')
                i = m.end()
                continue
            if c in closers:
                stack.append(closers[c])
            elif c in "}])":
                if not stack:
                    break
                if stack.pop() != c:
                    self.fail(f"unbalanced '{c}' in {what}", i)
                if single and not stack:
                    i += 1
                    break
            elif c == "\n" or (not stack and c == ","):
                break
            i += 1
        if stack:
            self.fail(f"unbalanced brackets in {what}: missing '{stack[-1]}'", start,
                      expected=stack[-1])
        value = text[start:i].rstrip()
        if not value:
            self.fail(f"expected {what}, found {self.describe(start)}", start, expected=what)
        self.pos = start + len(value)
        return value


# ----------------------------------------------------------------------------- shapes
def cached_shape(sc: Scanner, key: str, p: int) -> Shape:
    """The shape whose text ``key`` (a fast pattern's match) starts at ``p``; moves past it.

    The first time a text is seen the general reader reads it (and reports any error);
    its result is kept only when it read exactly ``key``. (Whatever follows ``key`` where
    it is looked up again must not be read as its layout.)
    """
    shape = sc.shapes.get(key)
    if shape is not None:
        sc.pos = p + len(key)
        return shape
    sc.pos = p
    shape = read_shape(sc, fast=False)
    if sc.pos == p + len(key):
        sc.shapes[key] = shape
    return shape


def read_shape(sc: Scanner, fast: bool = True) -> Shape:
    """A shape: ``f32[2,3]{1,0}``, ``(s32[], f32[4])``, ``token[]``, ``f32[<=4]``, ``f32[?]``.

    ``fast=False``: no fast path for this shape (its tuple elements may still take one).
    """
    p = sc.skip()
    text = sc.text
    if fast and sc.fast:
        m = _SHAPE_FAST.match(text, p)
        if m:
            return cached_shape(sc, m.group(), p)
    if text.startswith("(", p):
        sc.pos = p + 1
        if sc.accept(")"):
            return Shape.tuple(())
        parts = [read_shape(sc)]
        while sc.accept(","):
            parts.append(read_shape(sc))
        sc.expect(")", "to close the tuple shape")
        return Shape.tuple(parts)
    m = _ELEM.match(text, p)
    if not m:
        sc.fail(f"expected a shape, found {sc.describe()}", expected="shape")
    et = T.BY_NAME.get(m.group(1))
    if et is None:
        sc.fail(f"unknown element type '{m.group(1)}'", p, expected="element type")
    sc.pos = m.end()
    dims: list[int] = []
    dynamic: list[bool] = []
    if not sc.accept("]"):
        while True:
            dm = _DIM.match(text, sc.pos)
            if not dm or dm.end() == sc.pos:
                sc.fail(f"expected a dimension size, found {sc.describe(sc.skip())}",
                        expected="dimension")
            sc.pos = dm.end()
            if dm.group(3):
                dims.append(UNBOUNDED)
                dynamic.append(True)
            else:
                dims.append(int(dm.group(1) or dm.group(2)))
                dynamic.append(dm.group(1) is not None)
            if sc.accept("]"):
                break
            sc.expect(",", "between dimensions")
    if et is T.TOKEN:
        if dims:
            sc.fail("a token shape has no dimensions", p)
        return Shape.token()
    layout = read_layout(sc, len(dims))
    return Shape(et, tuple(dims), tuple(dynamic), layout)


def read_layout(sc: Scanner, rank: int) -> Layout | None:
    """An optional layout right after the dims; a '{' that is not a layout is left alone."""
    p = _WS_LINE.match(sc.text, sc.pos).end()
    m = _LAYOUT.match(sc.text, p)
    if not m:
        return None
    m2m = tuple(int(x) for x in m.group(1).split(",")) if m.group(1).strip() else ()
    if m2m and sorted(m2m) != list(range(rank)):
        sc.fail(f"layout {{{m.group(1)}}} is not a permutation of the {rank} dimensions", p)
    sc.pos = m.end()
    return Layout(m2m, (m.group(2) or "").strip())


# ----------------------------------------------------------------------------- small values
def read_int_tree(sc: Scanner) -> tuple:
    """``{1,2}`` or ``{{0,1},{2}}`` -> nested tuples of ints; ``{}`` -> ()."""
    if sc.fast:
        m = _INT_LIST_FAST.match(sc.text, sc.skip())
        if m:
            sc.pos = m.end()
            return tuple(int(x) for x in m.group(1).split(",")) if m.group(1) else ()
    sc.expect("{")
    items: list = []
    if sc.accept("}"):
        return ()
    while True:
        items.append(read_int_tree(sc) if sc.peek() == "{" else sc.integer())
        if sc.accept("}"):
            return tuple(items)
        sc.expect(",", "or '}' in the integer list")


def read_bool_list(sc: Scanner) -> tuple[bool, ...]:
    sc.expect("{")
    out: list[bool] = []
    if sc.accept("}"):
        return ()
    while True:
        out.append(read_bool(sc))
        if sc.accept("}"):
            return tuple(out)
        sc.expect(",", "or '}' in the bool list")


def read_bool(sc: Scanner) -> bool:
    p = sc.skip()
    for word, value in (("true", True), ("false", False)):
        if sc.text.startswith(word, p) and not sc.text[p + len(word):p + len(word) + 1].isalnum():
            sc.pos = p + len(word)
            return value
    sc.fail(f"expected true or false, found {sc.describe()}", expected="bool")


def read_shape_index(sc: Scanner) -> tuple[int, ...]:
    """``{}`` or ``{0,1}`` (a flat ShapeIndex)."""
    p = sc.skip()
    tree = read_int_tree(sc)
    if any(isinstance(x, tuple) for x in tree):
        sc.fail("a shape index is a flat list of integers", p)
    return tree


def read_window(sc: Scanner) -> Window:
    """``{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=1x0}``."""
    sc.expect("{")
    fields: dict[str, list] = {}
    while not sc.accept("}"):
        key, kp = sc.name("a window field")
        if key not in ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
            sc.fail(f"unknown window field '{key}'", kp)
        sc.expect("=", f"after window field '{key}'")
        if key == "pad":
            m = sc.match(_PAD)
            if not m:
                sc.fail(f"expected padding like 1_1x0_0, found {sc.describe()}")
            fields[key] = [tuple(int(v) for v in d.split("_")[:2]) for d in m.group(0).split("x")]
        else:
            m = sc.match(_DXD)
            if not m:
                sc.fail(f"expected sizes like 3x3, found {sc.describe()}")
            fields[key] = [int(v) for v in m.group(0).split("x")]
    if not fields:
        return Window(())
    if "size" not in fields:
        sc.fail("window needs size=")
    n = len(fields["size"])
    for k, v in fields.items():
        if len(v) != n:
            sc.fail(f"window field {k} has {len(v)} dims but size has {n}")
    return Window.make(fields["size"], fields.get("stride"), fields.get("pad"),
                       fields.get("lhs_dilate"), fields.get("rhs_dilate"),
                       [bool(x) for x in fields["rhs_reversal"]] if "rhs_reversal" in fields
                       else None)


def read_slice(sc: Scanner) -> tuple[tuple[int, int, int], ...]:
    """``{[0:3:1], [0:4]}`` -> ((0, 3, 1), (0, 4, 1))."""
    sc.expect("{")
    out = []
    if sc.accept("}"):
        return ()
    while True:
        m = sc.match(_SLICE_RANGE)
        if not m:
            sc.fail(f"expected [start:limit:stride], found {sc.describe()}")
        out.append((int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)))
        if sc.accept("}"):
            return tuple(out)
        sc.expect(",", "or '}' in slice")


def read_padding(sc: Scanner) -> tuple[tuple[int, int, int], ...]:
    """``0_0_0x2_2_1`` -> ((0, 0, 0), (2, 2, 1)); ``{}`` for rank 0."""
    if sc.accept("{"):
        sc.expect("}", "(only an empty padding may be written in braces)")
        return ()
    m = sc.match(_PAD)
    if not m:
        sc.fail(f"expected padding like 0_0x1_1_0, found {sc.describe()}", expected="padding")
    out = []
    for d in m.group(0).split("x"):
        v = [int(x) for x in d.split("_")]
        out.append((v[0], v[1], v[2] if len(v) > 2 else 0))
    return tuple(out)


class CompRef:
    """A computation name read from an attribute; the parser resolves it when the module is done."""

    __slots__ = ("name", "pos")

    def __init__(self, name: str, pos: int) -> None:
        self.name, self.pos = name, pos


# ----------------------------------------------------------------------------- attribute values
def read_attr_name(sc: Scanner) -> tuple[str, int]:
    """``name =``; returns (name, position of the name)."""
    p = sc.skip()
    m = ATTR_NAME.match(sc.text, p)
    if not m:
        sc.fail(f"expected an attribute name, found {sc.describe()}", expected="attribute")
    sc.pos = m.end()
    sc.expect("=", f"after attribute name '{m.group(0)}'")
    return m.group(0), p


def read_typed_value(sc: Scanner, kind: str, key: str) -> Any:
    """The value of attribute ``key`` whose kind (:mod:`xlapy.hlo.attrs`) is ``kind``."""
    reader = _READERS.get(kind)
    return reader(sc, key) if reader else RawAttr(sc.balanced(f"attribute '{key}'"))


def _read_float(sc: Scanner, key: str) -> float:
    m = sc.match(_FLOAT)
    if not m:
        sc.fail(f"expected a number for '{key}', found {sc.describe()}")
    return float(m.group(0))


def _read_dim_labels(sc: Scanner, key: str) -> ConvDimensionNumbers:
    p = sc.skip()
    m = sc.match(_DIM_LABELS)
    if not m:
        sc.fail(f"expected dim_labels like b01f_01io->b01f, found {sc.describe()}")
    try:
        return ConvDimensionNumbers.from_string(m.group(0))
    except ValueError as e:
        sc.fail(str(e), p)


def _read_backend_config(sc: Scanner, key: str) -> str | RawAttr:
    if sc.text.startswith('"', sc.skip()):
        return sc.string()
    return RawAttr(sc.balanced(f"attribute '{key}'"))


def _read_replica_groups(sc: Scanner, key: str) -> Any:
    """``{{0,1},{2,3}}`` or ``[2,4]<=[8]T(1,0)`` as :class:`ReplicaGroups`; the mesh-axes form
    (``mesh['a'=2] {'a'}``) is kept verbatim."""
    p = sc.skip()
    text = sc.balanced(f"attribute '{key}'")
    if text.startswith("mesh"):
        return RawAttr(text)
    try:
        return parse_replica_groups(text)
    except ValueError as e:
        sc.fail(str(e), p)


def _read_sharding(sc: Scanner, key: str) -> HloSharding:
    """``sharding={...}`` as :class:`HloSharding`; errors point into the text."""
    p = sc.skip()
    text = sc.balanced(f"attribute '{key}'", single=True)
    try:
        return parse_sharding(text)
    except ShardingParseError as e:
        sc.fail(str(e), p + e.offset)


def _read_aliasing(sc: Scanner, key: str) -> tuple:
    out = []
    for _ in braced_items(sc, key):
        out_index = read_shape_index(sc)
        sc.expect(":", f"in '{key}'")
        sc.expect("(", f"in '{key}'")
        operand = sc.integer("an operand number")
        sc.expect(",", f"in '{key}'")
        operand_index = read_shape_index(sc)
        sc.expect(")", f"in '{key}'")
        out.append((out_index, operand, operand_index))
    return tuple(out)


#: The reader of each attribute kind: ``reader(scanner, attribute name) -> value``.
_READERS: dict[str, Callable[[Scanner, str], Any]] = {
    METADATA: lambda sc, key: read_metadata(sc),
    INT_KIND: lambda sc, key: sc.integer(f"an integer for '{key}'"),
    BOOL: lambda sc, key: read_bool(sc),
    FLOAT: _read_float,
    STRING: lambda sc, key: sc.string(),
    ENUM: lambda sc, key: read_enum(sc, key),
    INT_TREE: lambda sc, key: read_int_tree(sc),
    BOOL_LIST: lambda sc, key: read_bool_list(sc),
    COMPUTATION: lambda sc, key: CompRef(*sc.name(f"a computation name for '{key}'")),
    COMPUTATION_LIST: lambda sc, key: tuple(CompRef(*sc.name("a computation name"))
                                            for _ in braced_items(sc, key)),
    WINDOW: lambda sc, key: read_window(sc),
    SLICE: lambda sc, key: read_slice(sc),
    PADDING: lambda sc, key: read_padding(sc),
    DIM_LABELS: _read_dim_labels,
    ENUM_LIST: lambda sc, key: tuple(read_enum(sc, key) for _ in braced_items(sc, key)),
    DICT: lambda sc, key: read_dict(sc, key),
    BACKEND_CONFIG: _read_backend_config,
    SHAPE_LIST: lambda sc, key: tuple(read_shape(sc) for _ in braced_items(sc, key)),
    ALIASING: _read_aliasing,
    REPLICA_GROUPS: _read_replica_groups,
    SHARDING: _read_sharding,
}


def braced_items(sc: Scanner, key: str) -> Iterator[None]:
    """Iterate over the items of ``{a, b, ...}``; the caller reads each item."""
    sc.expect("{", f"to open '{key}'")
    if sc.accept("}"):
        return
    while True:
        yield
        if sc.accept("}"):
            return
        sc.expect(",", f"or '}}' in '{key}'")


def read_enum(sc: Scanner, key: str) -> str:
    m = sc.match(_ENUM)
    if not m:
        sc.fail(f"expected a value for '{key}', found {sc.describe()}")
    return m.group(0)


def read_metadata(sc: Scanner) -> OpMetadata:
    """``{op_type="add" op_name="jit(f)/add" source_line=3}``: fields in text order."""
    metadata = _read_metadata_fast(sc) if sc.fast else None
    if metadata is not None:
        return metadata
    sc.expect("{", "to open metadata")
    fields: list[tuple[str, Any]] = []
    while not sc.accept("}"):
        key, _ = read_attr_name(sc)
        p = sc.skip()
        c = sc.text[p:p + 1]
        if c == '"':
            fields.append((key, sc.string()))
        elif c in "{[(":
            fields.append((key, RawAttr(sc.balanced(f"metadata field '{key}'", single=True))))
        else:
            m = sc.match(_BARE)
            if not m:
                sc.fail(f"expected a value for metadata field '{key}', found "
                        f"{sc.describe()}")
            v = m.group(0)
            fields.append((key, int(v) if re.fullmatch(r"-?\d+", v) else RawAttr(v)))
        sc.accept(",")
    return OpMetadata(tuple(fields))


def _read_metadata_fast(sc: Scanner) -> OpMetadata | None:
    """Metadata spelled as ``_METADATA_FAST`` matches, else None. Such a block ends at its
    first '}' (others are in strings): a text up to a '}' found in the cache is one."""
    p = sc.skip()
    end = sc.text.find("}", p) + 1
    metadata = sc.metadata.get(sc.text[p:end]) if end else None
    if metadata is None:
        m = _METADATA_FAST.match(sc.text, p)
        if m is None:
            return None
        fields: list[tuple[str, Any]] = []
        for f in _META_FIELD.finditer(m.group()):
            key, string, number = f.groups()
            try:
                fields.append((key, int(number) if string is None else unescape_string(string)))
            except ValueError:
                return None             # a bad escape: the general reader reports it
        metadata = sc.metadata[m.group()] = OpMetadata(tuple(fields))
        end = m.end()
    sc.pos = end
    return metadata


def read_dict(sc: Scanner, key: str) -> dict[str, Any]:
    """``{key="value", k2=v2}``; values may be quoted or bare; a braced value (Shardy's
    ``xla.sdy.meshes={mesh = #sdy.mesh<...>}``) is kept verbatim as :class:`RawAttr`."""
    out: dict[str, Any] = {}
    for _ in braced_items(sc, key):
        if sc.peek() == '"':
            k = sc.string()
        else:
            m = sc.match(_DICT_KEY)
            if not m:
                sc.fail(f"expected a key in '{key}', found {sc.describe()}")
            k = m.group(0)
        sc.expect("=", f"after key '{k}' in '{key}'")
        if sc.peek() == '"':
            out[k] = sc.string()
        elif sc.peek() == "{":
            out[k] = RawAttr(sc.balanced(f"the value of '{k}' in '{key}'", single=True))
        else:
            m = sc.match(_BARE)
            if not m:
                sc.fail(f"expected a value for '{k}' in '{key}', found {sc.describe()}")
            out[k] = m.group(0)
    return out
