"""Operand and result shapes of the custom-call targets xlapy implements.

A custom call's result is whatever its target produces, so the general rule only returns
the declared shape. For the targets the backends run (JAX's CPU LAPACK kernels
``lapack_<p><routine>_ffi``, ``TopK``, and XLA's own ``Qr``,
``ProductOfElementaryHouseholderReflectors`` and ``Eigh``) the operands and the declared result are
checked here, as jaxlib's FFI kernels check their buffers, so a mismatched module is a
verification error with its line:column instead of an error deep inside LAPACK.
``operand_layout_constraints`` (any target) must name each operand's type and dims.

LAPACK conventions (those of jaxlib's kernels): the matrix operand is ``[batch..., m, n]``
in the routine's type (``s`` f32, ``d`` f64, ``c`` c64, ``z`` c128); per-matrix vectors
are ``[batch..., len]``; ``info`` (and pivots) are s32; ``k = min(m, n)``.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from .. import types as T
from ..attrs import RawAttr
from ..shape import Shape
from ..types import ElementType
from . import Ctx, array_shape, same_type_and_dims, shape_text

_FIELD = re.compile(r'([A-Za-z_][\w.]*)\s*=\s*("(?:[^"\\]|\\.)*"|true|false|-?\d+)')


def backend_config_fields(attrs: Any) -> dict[str, Any]:
    """The ``name = value : type`` fields of a dict-form ``backend_config`` (ints, bools,
    strings); ``attrs`` is an instruction or its attribute mapping."""
    cfg = (attrs.attr("backend_config") if hasattr(attrs, "attr")
           else attrs.get("backend_config"))
    if cfg is None:
        return {}
    if isinstance(cfg, dict):
        return dict(cfg)
    text = cfg.text if isinstance(cfg, RawAttr) else str(cfg)
    fields: dict[str, Any] = {}
    for name, value in _FIELD.findall(text):
        if value in ("true", "false"):
            fields[name] = value == "true"
        elif value.startswith('"'):
            fields[name] = value[1:-1]
        else:
            fields[name] = int(value)
    return fields


_ELEMENT = {"s": T.F32, "d": T.F64, "c": T.C64, "z": T.C128}
_REAL = {"s": T.F32, "d": T.F64, "c": T.F32, "z": T.F64}
_COMPLEX = {"s": T.C64, "d": T.C128, "c": T.C64, "z": T.C128}
_LAPACK = re.compile(r"lapack_([sdcz])([a-z0-9]+)_ffi$")

Leaf = tuple[ElementType, Sequence[int]]


class _Lapack:
    """What one LAPACK target's check sees: the context, the type prefix and helpers."""

    def __init__(self, ctx: Ctx, target: str, prefix: str) -> None:
        self.ctx, self.target, self.p = ctx, target, prefix
        self.elem, self.real, self.complex = _ELEMENT[prefix], _REAL[prefix], _COMPLEX[prefix]
        self.config = backend_config_fields(ctx.attrs)

    def check(self, cond: bool, message: str) -> None:
        self.ctx.check(cond, f"{self.target}: {message}")

    def operands(self, *counts: int) -> None:
        n = len(self.ctx.operands)
        self.check(n in counts, f"takes {' or '.join(map(str, counts))} operands, got {n}")

    def array(self, i: int, et: ElementType, min_rank: int) -> Shape:
        s = self.ctx.operands[i]
        self.check(s.is_array and s.element_type == et and s.rank >= min_rank,
                   f"operand {i} {shape_text(s)} must be a {et} array of rank >= {min_rank}")
        return s

    def matrix(self, i: int = 0, square: bool = False) -> tuple[tuple[int, ...], int, int]:
        """``(batch dims, rows, columns)`` of operand ``i``."""
        s = self.array(i, self.elem, 2)
        m, n = s.dims[-2:]
        self.check(not square or m == n,
                   f"operand {i} {shape_text(s)} must be a batch of square matrices")
        return s.dims[:-2], m, n

    def vector(self, i: int, et: ElementType, dims: Sequence[int], what: str) -> None:
        s = self.ctx.operands[i]
        self.check(s.is_array and s.element_type == et and s.dims == tuple(dims),
                   f"operand {i} ({what}) {shape_text(s)} must be "
                   f"{shape_text(array_shape(et, dims))}")

    def char(self, name: str, default: str, allowed: str) -> str:
        value = self.config.get(name)
        ch = default if value is None else (chr(value) if isinstance(value, int) and
                                            0 <= value < 0x110000 else str(value))
        self.check(ch in allowed, f"backend_config {name}={ch!r}, expected one of "
                                  f"{', '.join(allowed)}")
        return ch

    def results(self, declared: Shape, leaves: Sequence[Leaf], single: bool = False) -> None:
        """The declared result is the tuple of ``leaves`` (or, with ``single``, that one
        array, bare or in a 1-tuple)."""
        want = [array_shape(et, dims) for et, dims in leaves]
        if single and not declared.is_tuple:
            got = [declared]
        else:
            got = list(declared.tuple_shapes) if declared.is_tuple else [declared]
        text = ", ".join(shape_text(w) for w in want)
        self.check(len(got) == len(want) and all(same_type_and_dims(g, w)
                                                  for g, w in zip(got, want)),
                   f"result {shape_text(declared)} must be ({text})")


def _factor(lp: _Lapack, declared: Shape, routine: str) -> None:
    """potrf, getrf, geqrf, geqp3, syevd/heevd, gehrd, sytrd/hetrd."""
    square = routine in ("potrf", "syevd", "heevd", "gehrd", "sytrd", "hetrd")
    lp.operands(2 if routine == "geqp3" else 1)
    b, m, n = lp.matrix(0, square)
    k, a, s32, e, r = min(m, n), (lp.elem, b + (m, n)), T.S32, lp.elem, lp.real
    if routine == "potrf":
        lp.char("uplo", "L", "LU")
        leaves = [a, (s32, b)]
    elif routine == "getrf":
        leaves = [a, (s32, b + (k,)), (s32, b)]
    elif routine == "geqrf":
        leaves = [a, (e, b + (k,))]
    elif routine == "geqp3":
        lp.vector(1, s32, b + (n,), "jpvt")
        leaves = [a, (s32, b + (n,)), (e, b + (k,))]
    elif routine in ("syevd", "heevd"):
        lp.char("uplo", "L", "LU")
        lp.char("mode", "V", "VN")
        leaves = [a, (r, b + (n,)), (s32, b)]
    elif routine == "gehrd":
        low, high = lp.config.get("low", 1), lp.config.get("high", n)
        ok = isinstance(low, int) and isinstance(high, int)
        lp.check(ok and (1 <= low <= high <= n if n else (low, high) == (1, 0)),
                 f"backend_config low={low}, high={high} must satisfy 1 <= low <= high <= {n}")
        leaves = [a, (e, b + (max(n - 1, 0),)), (s32, b)]
    else:                                   # sytrd / hetrd
        lp.char("uplo", "L", "LU")
        m1 = b + (max(n - 1, 0),)
        leaves = [a, (r, b + (n,)), (r, m1), (e, m1), (s32, b)]
    lp.results(declared, leaves)


def _orgqr(lp: _Lapack, declared: Shape, routine: str) -> None:
    """Q's first n columns from geqrf's reflectors: LAPACK needs m >= n >= len(tau)."""
    lp.operands(2)
    b, m, n = lp.matrix(0)
    tau = lp.array(1, lp.elem, 1)
    lp.check(tau.dims[:-1] == b and tau.dims[-1] <= n <= m,
             f"operands {shape_text(lp.ctx.operands[0])} and tau {shape_text(tau)} must "
             f"have the same batch dims and rows >= columns >= len(tau)")
    lp.results(declared, [(lp.elem, b + (m, n))], single=True)


def _svd(lp: _Lapack, declared: Shape, routine: str) -> None:
    lp.operands(1)
    b, m, n = lp.matrix(0)
    k = min(m, n)
    mode = lp.char("mode", "A", "ASNO")
    tuple_shapes = declared.tuple_shapes if declared.is_tuple else ()
    u: tuple[int, ...]
    vt: tuple[int, ...]
    if mode == "A":
        u, vt = (m, m), (n, n)
    elif mode == "S":
        u, vt = (m, k), (k, n)
    else:                   # not computed: jaxlib still returns the buffers, of any size
        u = tuple_shapes[2].dims[-2:] if len(tuple_shapes) == 5 else (m, m)
        vt = tuple_shapes[3].dims[-2:] if len(tuple_shapes) == 5 else (n, n)
        if len(u) != 2 or len(vt) != 2:
            u, vt = (m, m), (n, n)
    lp.results(declared, [(lp.elem, b + (m, n)), (lp.real, b + (k,)), (lp.elem, b + tuple(u)),
                          (lp.elem, b + tuple(vt)), (T.S32, b)])


def _geev(lp: _Lapack, declared: Shape, routine: str) -> None:
    lp.operands(1)
    b, _, n = lp.matrix(0, square=True)
    lp.char("compute_left", "N", "VN")
    lp.char("compute_right", "V", "VN")
    vecs = [(lp.complex, b + (n, n)), (lp.complex, b + (n, n)), (T.S32, b)]
    values = ([(lp.real, b + (n,)), (lp.real, b + (n,))] if lp.p in "sd"
              else [(lp.complex, b + (n,))])
    lp.results(declared, values + vecs)


def _gees(lp: _Lapack, declared: Shape, routine: str) -> None:
    lp.operands(1)
    b, _, n = lp.matrix(0, square=True)
    lp.char("mode", "V", "VN")
    lp.char("sort", "N", "NS")
    a = (lp.elem, b + (n, n))
    values = ([(lp.real, b + (n,)), (lp.real, b + (n,))] if lp.p in "sd"
              else [(lp.elem, b + (n,))])
    lp.results(declared, [a, a] + values + [(T.S32, b), (T.S32, b)])


def _trsm(lp: _Lapack, declared: Shape, routine: str) -> None:
    """op(a) x = alpha b (side L: a is m x m) or x op(a) = alpha b (side R: n x n)."""
    lp.operands(2, 3)
    left = lp.char("side", "L", "LR") == "L"
    lp.char("uplo", "L", "LU")
    lp.char("trans_x", "N", "NTC")
    lp.char("diag", "N", "NU")
    ba, ka, _ = lp.matrix(0, square=True)
    bb, m, n = lp.matrix(1)
    lp.check(ba == bb and ka == (m if left else n),
             f"triangular matrix {shape_text(lp.ctx.operands[0])} does not fit right-hand "
             f"sides {shape_text(lp.ctx.operands[1])} on side {'L' if left else 'R'}")
    if len(lp.ctx.operands) == 3:
        lp.vector(2, lp.elem, (), "alpha")
    lp.results(declared, [(lp.elem, bb + (m, n))], single=True)


def _gtsv(lp: _Lapack, declared: Shape, routine: str) -> None:
    lp.operands(4)
    b, n, nrhs = lp.matrix(3)
    for i, what in enumerate(("dl", "d", "du")):
        lp.vector(i, lp.elem, b + (n,), what)
    diag = (lp.elem, b + (n,))
    lp.results(declared, [diag, diag, diag, (lp.elem, b + (n, nrhs)), (T.S32, b)])


_ROUTINES: dict[str, Callable[[_Lapack, Shape, str], None]] = {
    **{r: _factor for r in ("potrf", "getrf", "geqrf", "geqp3", "gehrd")},
    **{r: _factor for r in ("syevd", "heevd", "sytrd", "hetrd")},
    "orgqr": _orgqr, "ungqr": _orgqr, "gesdd": _svd, "gesvd": _svd, "geev": _geev,
    "gees": _gees, "trsm": _trsm, "gtsv": _gtsv,
}
_COMPLEX_ONLY = {"ungqr", "heevd", "hetrd"}
_REAL_ONLY = {"orgqr", "syevd", "sytrd"}


def _topk(ctx: Ctx, declared: Shape) -> None:
    """JAX's TopK: ``[..., n]`` -> (values, s32 indices) ``[..., k]`` with ``k <= n``."""
    ctx.check(len(ctx.operands) == 1, f"TopK takes 1 operand, got {len(ctx.operands)}")
    x = ctx.operands[0]
    ctx.check(x.is_array and x.rank >= 1, f"TopK operand {shape_text(x)} must be an array of "
                                          "rank >= 1")
    leaves = declared.tuple_shapes if declared.is_tuple else ()
    k = leaves[0].dims[-1] if len(leaves) == 2 and leaves[0].is_array and leaves[0].rank else -1
    ok = (0 <= k <= x.dims[-1]
          and same_type_and_dims(leaves[0], array_shape(x.element_type, x.dims[:-1] + (k,)))
          and same_type_and_dims(leaves[1], array_shape(T.S32, x.dims[:-1] + (k,))))
    ctx.check(ok, f"TopK result {shape_text(declared)} must be (values, s32 indices) of the "
                  f"operand's batch dims and k <= {x.dims[-1]} for operand {shape_text(x)}")


# XLA's own linear-algebra custom-calls (``xla/hlo/builder/lib``: what TensorFlow's
# ``stage="hlo"`` shows for tf.linalg.qr / inv / eigh / lu, expanded later by XLA's
# QrExpander and EighExpander, LU on TPU; QrDecomposition from older releases): operand
# [..., m, n] of a floating or complex type.
XLA_LINALG_TARGETS = ("Qr", "ProductOfElementaryHouseholderReflectors", "Eigh",
                      "LuDecomposition", "QrDecomposition")


def _xla_linalg(ctx: Ctx, declared: Shape, target: str) -> None:
    ops = ctx.operands
    want_ops = 2 if target == "ProductOfElementaryHouseholderReflectors" else 1
    ctx.check(len(ops) == want_ops, f"{target} takes {want_ops} operand(s), got {len(ops)}")
    a = ops[0]
    et = a.element_type if a.is_array else None
    ctx.check(a.is_array and a.rank >= 2 and (et.is_floating or et.is_complex),
              f"{target} operand {shape_text(a)} must be a floating or complex array of "
              "rank >= 2")
    batch, (m, n) = a.dims[:-2], a.dims[-2:]
    if target == "Qr":
        want = Shape.tuple([array_shape(et, a.dims), array_shape(et, batch + (min(m, n),))])
    elif target == "QrDecomposition":
        want = Shape.tuple([array_shape(et, batch + (m, m)), array_shape(et, a.dims)])
    elif target == "LuDecomposition":
        want = Shape.tuple([array_shape(et, a.dims), array_shape(T.S32, batch + (min(m, n),)),
                            array_shape(T.S32, batch + (m,))])
    elif target == "Eigh":
        ctx.check(m == n, f"Eigh operand {shape_text(a)} must be a batch of square matrices")
        real = T.F64 if et in (T.F64, T.C128) else T.F32 if et.is_complex else et
        want = Shape.tuple([array_shape(et, a.dims), array_shape(real, batch + (n,))])
    else:
        taus = ops[1]
        ok = (taus.is_array and taus.element_type == et and taus.rank == a.rank - 1
              and taus.dims[:-1] == batch and taus.dims[-1] <= n and m >= n)
        ctx.check(ok, f"{target} needs a [..., m, n] with m >= n and taus [..., k] of the "
                      f"same type and batch with k <= n, got {shape_text(a)} and "
                      f"{shape_text(taus)}")
        want = array_shape(et, a.dims)
    got = declared
    ok = (got.is_tuple == want.is_tuple and
          (all(same_type_and_dims(g, w) for g, w in zip(got.tuple_shapes, want.tuple_shapes))
           and len(got.tuple_shapes) == len(want.tuple_shapes) if want.is_tuple
           else same_type_and_dims(got, want)))
    ctx.check(ok, f"{target} result {shape_text(declared)} must be {shape_text(want)}")


def _check_layout_constraints(ctx: Ctx) -> None:
    constraints = ctx.attrs.get("operand_layout_constraints")
    if constraints is None:
        return
    constraints = list(constraints)
    ctx.check(len(constraints) == len(ctx.operands),
              f"operand_layout_constraints has {len(constraints)} shapes for "
              f"{len(ctx.operands)} operands")
    for i, (c, s) in enumerate(zip(constraints, ctx.operands)):
        ctx.check(isinstance(c, Shape) and same_type_and_dims(c, s),
                  f"operand_layout_constraints entry {i} {c} does not match operand {i} "
                  f"{shape_text(s)} (a constraint changes only the layout)")


def check_custom_call(ctx: Ctx, declared: Shape) -> None:
    """The checks above for ``ctx``'s target (nothing for targets xlapy does not run)."""
    _check_layout_constraints(ctx)
    target = str(ctx.attrs.get("custom_call_target", ""))
    if target == "TopK":
        _topk(ctx, declared)
        return
    if target in XLA_LINALG_TARGETS:
        _xla_linalg(ctx, declared, target)
        return
    m = _LAPACK.match(target)
    if m is None or m.group(2) not in _ROUTINES:
        return
    prefix, routine = m.groups()
    if (routine in _COMPLEX_ONLY and prefix in "sd") or (routine in _REAL_ONLY and prefix in "cz"):
        return                              # not a target the backends implement
    _ROUTINES[routine](_Lapack(ctx, target, prefix), declared, routine)


__all__ = ["backend_config_fields", "check_custom_call", "XLA_LINALG_TARGETS"]
