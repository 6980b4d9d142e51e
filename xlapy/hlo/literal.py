"""Literal values in HLO text: string quoting, ``constant(...)`` payloads, NumPy conversion.

A literal for an array shape is a NumPy array with the shape's dtype and dims (0-d for
scalars); a literal for a tuple shape is a Python tuple of literals. Text follows XLA's
printer: floats use the shortest of ``%.{digits10}g`` / ``%.{max_digits10}g`` that reads
back to the same bits, NaNs print as ``nan`` / ``-nan`` (or ``nan(0x<payload>)`` when the
payload is not the canonical one), predicates in arrays print as ``1``/``0``. A constant
whose value was elided by XLA's printer (``constant({...})``) has ``literal = None``; the
printer writes ``{...}`` back for it and no backend can run it.
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Sequence

import ml_dtypes
import numpy as np

from . import types as T
from .shape import Shape

if TYPE_CHECKING:
    from .lexer import Scanner

ELIDED = "{...}"

# ----------------------------------------------------------------------------- strings
_UNESCAPES = {"n": 10, "r": 13, "t": 9, '"': 34, "'": 39, "\\": 92, "?": 63, "a": 7, "b": 8,
              "f": 12, "v": 11}


def unescape_string(body: str) -> str:
    """Undo C escapes in the text between quotes; raises ValueError on a bad escape."""
    if "\\" not in body:
        return body
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        if i + 1 >= n:
            raise ValueError("string ends with a lone backslash")
        e = body[i + 1]
        if e in _UNESCAPES:
            out.append(_UNESCAPES[e])
            i += 2
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        elif e == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])
            if not m:
                raise ValueError("\\x escape needs hex digits")
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        else:
            raise ValueError(f"unknown escape sequence '\\{e}'")
    return out.decode("utf-8", errors="surrogateescape")


# ----------------------------------------------------------------------------- scalars
def _float_info(dtype: np.dtype) -> tuple[int, int, int]:
    """(digits10, max_digits10, mantissa bits) of a floating dtype."""
    nmant = int(ml_dtypes.finfo(dtype).nmant)
    return (max(1, math.floor(nmant * math.log10(2))),
            math.ceil(1 + (nmant + 1) * math.log10(2)), nmant)


def _uint_view(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _nan_bits(dtype: np.dtype) -> tuple[int, int]:
    """Bits of the canonical NaN of ``dtype`` and of its negation."""
    with np.errstate(invalid="ignore"):
        pos = int(_uint_view(np.array([np.nan]).astype(dtype))[0])
        neg = int(_uint_view(np.array([-np.nan]).astype(dtype))[0])
    return pos, neg


def _format_floats(a: np.ndarray) -> list[str]:
    """XLA-style text of each element of a 1-d float array (reads back to the same bits).

    f32/f64 use ``%.{digits10}g`` when that round-trips, else ``%.{max_digits10}g``;
    narrower types always use ``%.{max_digits10}g`` (as XLA's ``RoundTripFpToString``).
    """
    d10, dmax, nmant = _float_info(a.dtype)
    if a.dtype.itemsize < 4:        # XLA prints narrow floats with max_digits10 directly
        d10 = dmax
    with np.errstate(all="ignore"):
        wide = a.astype(np.float64)
    out: list[str] = [f"%.{d10}g" % v for v in wide.tolist()]
    bits = _uint_view(a)
    finite = np.isfinite(wide)
    with np.errstate(all="ignore"):
        back = np.array([float(s) for s in out], dtype=np.float64).astype(a.dtype)
    bad = np.nonzero(finite & (_uint_view(back) != bits))[0]
    for i in bad.tolist():
        s = f"%.{dmax}g" % wide[i]
        with np.errstate(all="ignore"):
            again = np.array([float(s)]).astype(a.dtype).view(bits.dtype)[0]
        if again != bits[i]:
            s = repr(float(wide[i]))
        out[i] = s
    special = np.nonzero(~finite)[0]
    if special.size:
        pos_nan, neg_nan = _nan_bits(a.dtype)
        nbits = a.dtype.itemsize * 8
        for i in special.tolist():
            v = wide[i]
            if math.isinf(v):
                out[i] = "inf" if v > 0 else "-inf"
                continue
            b = int(bits[i])
            if b == pos_nan:
                out[i] = "nan"
            elif b == neg_nan:
                out[i] = "-nan"
            else:
                has_sign = a.dtype != np.dtype(ml_dtypes.float8_e8m0fnu)
                sign = "-" if has_sign and (b >> (nbits - 1)) & 1 else ""
                out[i] = f"{sign}nan(0x{b & ((1 << nmant) - 1):x})"
    return out


def format_scalars(flat: np.ndarray, et: T.ElementType, pred_as_int: bool) -> list[str]:
    """Text of every element of a 1-d array of element type ``et``."""
    if et.is_pred:
        if pred_as_int:
            return ["1" if v else "0" for v in flat.tolist()]
        return ["true" if v else "false" for v in flat.tolist()]
    if et.is_integral:
        return [str(int(v)) for v in flat.astype(object if et.bits == 64 else np.int64).tolist()]
    if et.is_complex:
        part = np.float32 if et is T.C64 else np.float64
        re_s = _format_floats(np.ascontiguousarray(flat.real.astype(part)))
        im_s = _format_floats(np.ascontiguousarray(flat.imag.astype(part)))
        return [f"({r}, {i})" for r, i in zip(re_s, im_s)]
    return _format_floats(np.ascontiguousarray(flat))


_NAN_PAYLOAD = re.compile(r"([-+]?)nan\(0x([0-9a-fA-F]+)\)$")


def _floats_from_text(tokens: Sequence[str], dtype: np.dtype) -> np.ndarray:
    """Convert float texts to ``dtype``; raises ValueError(index, message) on a bad token."""
    vals = np.empty(len(tokens), dtype=np.float64)
    payloads: list[tuple[int, int, int]] = []
    for i, t in enumerate(tokens):
        m = _NAN_PAYLOAD.match(t) if "(" in t else None
        if m:
            payloads.append((i, int(m.group(2), 16), m.group(1) == "-"))
            vals[i] = math.nan
            continue
        try:
            vals[i] = float(t)
        except ValueError:
            raise ValueError(i, f"'{t}' is not a floating-point number") from None
    with np.errstate(all="ignore"):
        out = vals.astype(dtype)
    if payloads:
        _d10, _dmax, nmant = _float_info(dtype)
        pos_nan, _neg = _nan_bits(dtype)
        nbits = dtype.itemsize * 8
        exp_bits = pos_nan & ~((1 << nmant) - 1) & ~(1 << (nbits - 1))
        view = _uint_view(out)
        for i, payload, neg in payloads:
            if not 0 < payload < (1 << nmant):
                raise ValueError(i, f"NaN payload 0x{payload:x} does not fit {nmant} mantissa bits")
            view[i] = exp_bits | payload | ((1 << (nbits - 1)) if neg else 0)
    return out


def scalars_from_text(tokens: Sequence[Any], et: T.ElementType) -> np.ndarray:
    """A 1-d array of ``et`` from element texts (complex elements are (re, im) text pairs).

    Raises ``ValueError(index, message)`` naming the first bad element.
    """
    if et.is_pred:
        table = {"true": True, "false": False, "1": True, "0": False}
        try:
            return np.array([table[t] for t in tokens], dtype=np.bool_)
        except KeyError:
            bad = next(i for i, t in enumerate(tokens) if t not in table)
            raise ValueError(bad, f"'{tokens[bad]}' is not a pred value (true/false/1/0)") from None
    if et.is_integral:
        info = ml_dtypes.iinfo(et.dtype)
        vals = []
        for i, t in enumerate(tokens):
            try:
                v = int(t, 0) if t[:2].lower() in ("0x", "0b", "0o") else int(t)
            except (ValueError, TypeError):
                raise ValueError(i, f"'{t}' is not an integer") from None
            if not info.min <= v <= info.max:
                raise ValueError(i, f"{v} is out of range for {et.name} "
                                    f"[{info.min}, {info.max}]")
            vals.append(v)
        return np.array(vals, dtype=np.int64 if et.bits < 64 else object).astype(et.dtype)
    if et.is_complex:
        part = np.dtype(np.float32 if et is T.C64 else np.float64)
        for i, t in enumerate(tokens):
            if not isinstance(t, tuple):
                raise ValueError(i, f"complex element must be written (real, imag), got '{t}'")
        out = np.empty(len(tokens), dtype=et.dtype)
        out.real = _floats_from_text([t[0] for t in tokens], part)
        out.imag = _floats_from_text([t[1] for t in tokens], part)
        return out
    for i, t in enumerate(tokens):
        if isinstance(t, tuple):
            raise ValueError(i, f"{et.name} element cannot be a complex pair")
    return _floats_from_text(tokens, et.dtype)


# ----------------------------------------------------------------------------- printing
def _format_array(flat: list[str], dims: Sequence[int]) -> str:
    """XLA's one-line nested-brace text of an array whose elements are already formatted."""
    rank = len(dims)
    if rank == 1:
        return "{" + ", ".join(flat) + "}"
    strides = [1] * rank
    for d in range(rank - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    parts: list[str] = []

    def rec(level: int, offset: int, acc: list[int]) -> None:
        n = dims[level]
        if level == rank - 1:
            inner = ", ".join(flat[offset:offset + n])
            parts.append("{" + inner + "}" if n <= 1 else "{ " + inner + " }")
            return
        if rank > 3 and acc:
            parts.append(f"{{ /*i{len(acc) - 1}={acc[-1]}*/ ")
        else:
            parts.append("{ ")
        for i in range(n):
            if i:
                parts.append(", ")
            rec(level + 1, offset + i * strides[level], acc + [i])
        parts.append(" }")

    rec(0, 0, [])
    return "".join(parts)


def format_literal(value: Any, shape: Shape) -> str:
    """The text inside ``constant(...)`` for ``value`` of ``shape`` (``{...}`` for None)."""
    if value is None:
        return ELIDED
    if shape.is_tuple:
        if not isinstance(value, tuple) or len(value) != len(shape.tuple_shapes):
            raise ValueError(f"tuple literal does not match shape {shape.to_text()}")
        items = (format_literal(v, s) for v, s in zip(value, shape.tuple_shapes))
        return "( " + ", ".join(items) + " )"
    a = np.asarray(value)
    if a.dtype != shape.dtype:
        a = a.astype(shape.dtype)
    if shape.rank == 0:
        return format_scalars(a.reshape(1), shape.element_type, pred_as_int=False)[0]
    return _format_array(format_scalars(a.reshape(-1), shape.element_type, pred_as_int=True),
                         shape.dims)


# ----------------------------------------------------------------------------- NumPy side
def to_literal(value: Any, shape: Shape) -> Any:
    """``value`` (scalar, nested list, NumPy array, or tuple for tuple shapes) as a literal
    of ``shape``."""
    from ..errors import InvalidArgumentError
    if shape.is_tuple:
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
            raise InvalidArgumentError(f"a literal of shape {shape.to_text()} needs a tuple of "
                                       f"{len(shape.tuple_shapes)} values")
        return tuple(to_literal(v, s) for v, s in zip(value, shape.tuple_shapes))
    if shape.is_token:
        raise InvalidArgumentError("a token has no literal value")
    a = np.asarray(value)
    if a.shape != shape.dims:
        if a.size == shape.num_elements and a.ndim == 0:
            a = np.broadcast_to(a, shape.dims)
        else:
            raise InvalidArgumentError(f"value of shape {a.shape} does not fit {shape.to_text()}")
    return np.array(a, dtype=shape.dtype)


def literal_shape(value: Any) -> Shape:
    """The (row-major) shape of a literal; tuples give tuple shapes."""
    from .shape import shape_of_array
    if isinstance(value, tuple):
        return Shape.tuple(literal_shape(v) for v in value)
    return shape_of_array(value)


# ----------------------------------------------------------------------------- parsing
_LIT_TOKEN = re.compile(r"/\*.*?\*/|[-+]?nan\(0x[0-9a-fA-F]+\)|[{}(),]|[^\s{}(),/]+|/", re.S)
_SCALAR = re.compile(r"[-+]?(?:nan\(0x[0-9a-fA-F]+\)|0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)"
                     r"(?:[eE][-+]?\d+)?|[A-Za-z_]\w*)")


def is_elided(literal: Any) -> bool:
    """Whether a constant's literal (or part of a tuple literal) was elided (``{...}``)."""
    if isinstance(literal, tuple):
        return any(is_elided(v) for v in literal)
    return literal is None


def fill_elided(literal: Any, shape: Shape) -> Any:
    """``literal`` with every elided part (None) replaced by zeros of its shape."""
    if shape.is_tuple:
        parts = literal if isinstance(literal, tuple) else (None,) * len(shape.tuple_shapes)
        return tuple(fill_elided(v, s) for v, s in zip(parts, shape.tuple_shapes))
    if literal is None:
        return np.zeros(shape.dims, dtype=shape.dtype)
    return literal


def read_literal(sc: Any, shape: Shape) -> Any:
    """Read the payload of ``constant(...)`` for ``shape`` from scanner ``sc``.

    Returns a literal (see module doc), or None for an elided ``{...}``.
    """
    p = sc.skip()
    if sc.text.startswith(ELIDED, p):
        sc.pos = p + len(ELIDED)
        return None
    if shape.is_tuple:
        sc.expect("(", "to open the tuple literal")
        values = []
        for i, sub in enumerate(shape.tuple_shapes):
            if i:
                sc.expect(",", f"between tuple literal elements (shape {shape.to_text()})")
            values.append(read_literal(sc, sub))
        sc.expect(")", f"to close the tuple literal of shape {shape.to_text()}")
        return tuple(values)
    if shape.is_token:
        sc.fail("a token cannot be a constant", p)
    if shape.rank == 0:
        return _read_scalar(sc, shape)
    if not sc.text.startswith("{", p):
        sc.fail(f"expected '{{' to open the literal of shape {shape.to_text()}, found "
                f"{sc.describe()}", p, expected="{")
    return _read_array(sc, shape, p)


def _read_scalar(sc: Scanner, shape: Shape) -> np.ndarray:
    p = sc.skip()
    et = shape.element_type
    if sc.accept("("):
        m1 = sc.match(_SCALAR)
        sc.expect(",", "in the complex literal (real, imag)")
        m2 = sc.match(_SCALAR)
        if not (m1 and m2):
            sc.fail("expected a complex literal (real, imag)", p)
        sc.expect(")", "to close the complex literal")
        token: Any = (m1.group(0), m2.group(0))
    else:
        m = sc.match(_SCALAR)
        if not m:
            sc.fail(f"expected a {et.name} literal, found {sc.describe()}", p)
        token = m.group(0)
    try:
        return scalars_from_text([token], et).reshape(())
    except ValueError as e:
        sc.fail(f"bad {et.name} literal: {e.args[-1]}", p)


_BRACE_OR_COMMENT = re.compile(r"/\*.*?\*/|[{}]", re.S)


def _find_close(sc: Scanner, start: int) -> int:
    """Offset just past the '}' matching the '{' at ``start``."""
    depth = 0
    for m in _BRACE_OR_COMMENT.finditer(sc.text, start):
        c = m.group(0)
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return m.end()
    sc.fail("unbalanced '{' in literal: missing '}'", start, expected="}")


def _read_array(sc: Any, shape: Shape, start: int) -> np.ndarray:
    end = _find_close(sc, start)
    toks = [m for m in _LIT_TOKEN.finditer(sc.text, start, end) if not m.group(0).startswith("/*")]
    texts = [m.group(0) for m in toks]
    n = len(texts)

    def bad(i: int, msg: str):
        sc.fail(msg, toks[min(i, n - 1)].start())

    flat: list = []
    dims = shape.dims
    rank = len(dims)

    def is_group(x: Any) -> bool:
        return isinstance(x, list)

    def check(node: list, level: int) -> None:
        open_idx, children = node
        if level == rank - 1 or (level == 0 and rank > 1 and children
                                 and not any(map(is_group, children))
                                 and len(children) == shape.num_elements):
            if any(map(is_group, children)):
                bad(open_idx, f"literal of shape {shape.to_text()} is nested deeper than its rank")
            want = dims[level] if level == rank - 1 else shape.num_elements
            if len(children) != want:
                bad(open_idx, f"literal of shape {shape.to_text()} has {len(children)} elements "
                              f"in dimension {level}, expected {want}")
            flat.extend(children)
            return
        if len(children) != dims[level] or not all(map(is_group, children)):
            bad(open_idx, f"literal of shape {shape.to_text()} has {len(children)} "
                          f"{'entries' if all(map(is_group, children)) else 'scalars'} in "
                          f"dimension {level}, expected {dims[level]} nested lists")
        for c in children:
            check(c, level + 1)

    def count_scalars(node: list) -> int:
        return sum(count_scalars(c) if is_group(c) else 1 for c in node[1])

    def group(i: int) -> tuple[list, int]:
        """Parse '{ ... }' at token i -> ([open index, children], next index)."""
        open_idx = i
        children: list = []
        child: Any                  # a group, a (real, imag) index pair or a scalar index
        i += 1
        while i < n and texts[i] != "}":
            t = texts[i]
            if t == "{":
                child, i = group(i)
            elif t == "(":
                if i + 4 >= n or texts[i + 2] != "," or texts[i + 4] != ")":
                    bad(i, "expected a complex element (real, imag)")
                child, i = (i + 1, i + 3), i + 5
            elif t in ",)":
                bad(i, f"unexpected '{t}' in literal")
            else:
                child, i = i, i + 1
            children.append(child)
            if i < n and texts[i] == ",":
                i += 1
                if i < n and texts[i] == "}":
                    bad(i, "expected an element after ','")
            elif i < n and texts[i] != "}":
                bad(i, f"expected ',' or '}}' in literal, found '{texts[i]}'")
        return [open_idx, children], i + 1

    root, _ = group(0)
    if shape.num_elements == 0:
        if count_scalars(root):
            bad(0, f"literal of shape {shape.to_text()} must be empty")
        sc.pos = end
        return np.zeros(shape.dims, dtype=shape.dtype)
    check(root, 0)
    tokens = [(texts[c[0]], texts[c[1]]) if isinstance(c, tuple) else texts[c] for c in flat]
    try:
        values = scalars_from_text(tokens, shape.element_type)
    except ValueError as e:
        idx, msg = e.args if len(e.args) == 2 else (0, str(e))
        c = flat[idx]
        bad(c[0] if isinstance(c, tuple) else c, f"bad {shape.element_type.name} literal: {msg}")
    sc.pos = end
    return values.reshape(shape.dims)
