"""Elementwise primitives: lowering, gradient and batching rules, side by side.

Unary and binary ops are rows of :data:`UNARY` and :data:`BINARY`: the HLO opcode and the
reverse-mode rule (``None``: the op takes no gradient, e.g. integer and boolean ops). A
row is the whole front-end story of a unary op: its primitive (named after the row), its
lowering (one HLO instruction), its vjp and its batching rule (shared by every
same-shape op). ``lax.py`` binds it by name, ``xlapy.numpy`` gives it its NumPy name.

Vjp rules are ``rule(ct, ans, *args, **params) -> one cotangent per operand`` written
with ``lax`` ops (so they trace under ``jit`` and differentiate again); the formulas
follow JAX's ``jax/_src/lax/lax.py``. ``max``/``min`` split the gradient evenly among ties.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..hlo.ir import HloInstruction
from . import dtypes, lax
from .core import Array, LoweringContext, Primitive, bind, primitive

I = HloInstruction
Rule = Callable[..., Any]


# ----------------------------------------------------------------------------- helpers
def _zeros(like: Array) -> Array:
    return lax.full_like(like, 0)


_f = lax.full_like      # ``_f(x, v)``: the scalar ``v`` with ``x``'s shape and dtype


def _bool_to(x: Array, like: Array) -> Array:
    return lax.convert_element_type(x, like.dtype)


def _never_weak(args: Sequence[Array], params: dict) -> bool:
    return False


def _single(fn: Rule) -> Rule:
    """A unary vjp written as ``fn(ct, ans, x) -> ct_x`` as a rule returning a tuple."""
    return lambda g, ans, x: (fn(g, ans, x),)


def _no_gradient(g: Array, ans: Array, *args: Array, **params: Any) -> tuple:
    return (None,) * len(args)


def batch_same_shape(prim: Primitive) -> Rule:
    """The batching rule of an op on operands of one shape: every batched operand gets its
    batch dimension first, unbatched ones are broadcast along it, the result is batched
    along dimension 0."""
    def rule(args: Sequence[Array], dims: Sequence[int | None], **params: Any) -> tuple:
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        moved = []
        for a, d in zip(args, dims):
            if d is None:
                a = lax.broadcast_in_dim(a, (size,) + a.shape, tuple(range(1, a.ndim + 1)))
            elif d != 0:
                a = lax.transpose(a, (d,) + tuple(i for i in range(a.ndim) if i != d))
            moved.append(a)
        return bind(prim, *moved, **params), 0
    return rule


def _elementwise_primitive(name: str, opcode: str, vjp: Rule | None, **kw: Any) -> Primitive:
    p = primitive(name, **kw)
    p.def_lowering(lambda ctx, *xs: ctx.b.add_instruction(opcode, list(xs)))
    p.def_vjp(vjp if vjp is not None else _no_gradient)
    p.def_batching(batch_same_shape(p))
    return p


# ------------------------------------------------------------------------------- unary
def _abs_vjp(g: Array, ans: Array, x: Array) -> tuple:
    if np.dtype(x.dtype).kind == "c":
        safe = lax.select(lax.eq(ans, _zeros(ans)), _f(ans, 1), ans)
        conj = lax.complex(lax.real(x), lax.neg(lax.imag(x)))
        unit = lax.div(conj, lax.complex(safe, _zeros(safe)))
        return (lax.mul(lax.complex(g, _zeros(g)), unit),)
    return (lax.mul(g, lax.sign(x)),)


def _zero_vjp(g: Array, ans: Array, x: Array) -> tuple:
    return (_zeros(x),)


#: name -> (HLO opcode, vjp rule or None when the op takes no gradient).
UNARY: dict[str, tuple[str, Rule | None]] = {
    "neg": ("negate", _single(lambda g, ans, x: lax.neg(g))),
    "abs": ("abs", _abs_vjp),
    "sign": ("sign", _zero_vjp),
    "exp": ("exponential", _single(lambda g, ans, x: lax.mul(g, ans))),
    "expm1": ("exponential-minus-one",
              _single(lambda g, ans, x: lax.mul(g, lax.add(ans, _f(ans, 1))))),
    "log": ("log", _single(lambda g, ans, x: lax.div(g, x))),
    "log1p": ("log-plus-one", _single(lambda g, ans, x: lax.div(g, lax.add(x, _f(x, 1))))),
    "sqrt": ("sqrt", _single(lambda g, ans, x: lax.div(g, lax.mul(_f(ans, 2), ans)))),
    "rsqrt": ("rsqrt",
              _single(lambda g, ans, x: lax.mul(g, lax.mul(_f(x, -0.5), lax.div(ans, x))))),
    "cbrt": ("cbrt",
             _single(lambda g, ans, x: lax.div(g, lax.mul(_f(ans, 3), lax.mul(ans, ans))))),
    "floor": ("floor", _zero_vjp),
    "ceil": ("ceil", _zero_vjp),
    "round": ("round-nearest-afz", _zero_vjp),
    "round_even": ("round-nearest-even", _zero_vjp),
    "tanh": ("tanh",
             _single(lambda g, ans, x: lax.mul(g, lax.sub(_f(ans, 1), lax.mul(ans, ans))))),
    "sin": ("sine", _single(lambda g, ans, x: lax.mul(g, lax.cos(x)))),
    "cos": ("cosine", _single(lambda g, ans, x: lax.neg(lax.mul(g, lax.sin(x))))),
    "tan": ("tan",
            _single(lambda g, ans, x: lax.mul(g, lax.add(_f(ans, 1), lax.mul(ans, ans))))),
    "logistic": ("logistic",
                 _single(lambda g, ans, x: lax.mul(g, lax.mul(ans, lax.sub(_f(ans, 1), ans))))),
    "not": ("not", None),
    "is_finite": ("is-finite", None),
    "real": ("real", _single(lambda g, ans, x: lax.complex(g, _zeros(g)))),
    "imag": ("imag", _single(lambda g, ans, x: lax.complex(_zeros(g), lax.neg(g)))),
    "erf": ("erf", _single(lambda g, ans, x: lax.mul(g, lax.mul(
        _f(x, 2 / np.sqrt(np.pi)), lax.exp(lax.neg(lax.mul(x, x))))))),
    "population_count": ("popcnt", None),
    "clz": ("count-leading-zeros", None),
}
_NOT_WEAK = {"is_finite"}

unary_p: dict[str, Primitive] = {
    name: _elementwise_primitive(name, opcode, vjp,
                                 weak=_never_weak if name in _NOT_WEAK else None)
    for name, (opcode, vjp) in UNARY.items()}


# ------------------------------------------------------------------------------ binary
def _div_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    return lax.div(g, y), lax.neg(lax.mul(g, lax.div(x, lax.mul(y, y))))


def _rem_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    q = lax.div(x, y)
    return g, lax.mul(lax.neg(g), lax.mul(lax.sign(q), lax.floor(lax.abs(q))))


def _pow_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    zero_y = lax.eq(y, _zeros(y))
    # d/dx x^y = y * x^(y-1), defined as 0 where y == 0 (also at x == 0).
    dx = lax.select(zero_y, _zeros(x), lax.mul(y, lax.pow(x, lax.sub(y, _f(y, 1)))))
    # d/dy x^y = log(x) * x^y, defined as 0 where x == 0.
    zero_x = lax.eq(x, _zeros(x))
    safe_x = lax.select(zero_x, _f(x, 1), x)
    dy = lax.select(zero_x, _zeros(y), lax.mul(lax.log(safe_x), ans))
    return lax.mul(g, dx), lax.mul(g, dy)


def _minmax_vjp(pick_x: str) -> Rule:
    def rule(g: Array, ans: Array, x: Array, y: Array) -> tuple:
        cmp = lax.gt if pick_x == "gt" else lax.lt
        wx = lax.add(_bool_to(cmp(x, y), g), lax.mul(_f(g, 0.5), _bool_to(lax.eq(x, y), g)))
        return lax.mul(g, wx), lax.mul(g, lax.sub(_f(g, 1), wx))
    return rule


def _atan2_vjp(g: Array, ans: Array, x: Array, y: Array) -> tuple:
    denom = lax.add(lax.mul(x, x), lax.mul(y, y))
    return lax.mul(g, lax.div(y, denom)), lax.neg(lax.mul(g, lax.div(x, denom)))


BINARY: dict[str, tuple[str, Rule | None]] = {
    "add": ("add", lambda g, ans, x, y: (g, g)),
    "sub": ("subtract", lambda g, ans, x, y: (g, lax.neg(g))),
    "mul": ("multiply", lambda g, ans, x, y: (lax.mul(g, y), lax.mul(g, x))),
    "div": ("divide", _div_vjp),
    "rem": ("remainder", _rem_vjp),
    "pow": ("power", _pow_vjp),
    "max": ("maximum", _minmax_vjp("gt")),
    "min": ("minimum", _minmax_vjp("lt")),
    "atan2": ("atan2", _atan2_vjp),
    "and": ("and", None),
    "or": ("or", None),
    "xor": ("xor", None),
    "complex": ("complex", lambda g, ans, x, y: (lax.real(g), lax.imag(lax.neg(g)))),
    "shift_left": ("shift-left", None),
    "shift_right_arithmetic": ("shift-right-arithmetic", None),
    "shift_right_logical": ("shift-right-logical", None),
}

binary_p: dict[str, Primitive] = {
    name: _elementwise_primitive(name, opcode, vjp) for name, (opcode, vjp) in BINARY.items()}


# --------------------------------------------------------------- compare, select, clamp
compare_p = primitive("compare", weak=_never_weak)
compare_p.def_lowering(lambda ctx, a, b, *, direction: ctx.b.compare(a, b, direction))
compare_p.def_vjp(_no_gradient)
compare_p.def_batching(batch_same_shape(compare_p))

select_p = primitive("select", weak=lambda args, params: args[1].weak_type and args[2].weak_type)
select_p.def_lowering(lambda ctx, p, t, f: ctx.b.select(p, t, f))
select_p.def_vjp(lambda g, ans, p, t, f: (None, lax.select(p, g, _zeros(g)),
                                          lax.select(p, _zeros(g), g)))


clamp_p = primitive("clamp", weak=lambda args, params: args[1].weak_type)
clamp_p.def_lowering(lambda ctx, lo, x, hi: ctx.b.clamp(lo, x, hi))


@clamp_p.def_vjp
def _clamp_vjp(g: Array, ans: Array, lo: Array, x: Array, hi: Array) -> tuple:
    lo_b = lax.broadcast_in_dim(lo, x.shape, ()) if lo.shape != x.shape else lo
    hi_b = lax.broadcast_in_dim(hi, x.shape, ()) if hi.shape != x.shape else hi
    # Exactly one operand is the result: x inside [lo, hi], else lo below, else hi.
    z = _zeros(g)
    x_wins = lax.bitwise_and(lax.le(lo_b, x), lax.le(x, hi_b))
    hi_wins = lax.lt(hi_b, lax.max(x, lo_b))
    lo_wins = lax.bitwise_and(lax.bitwise_not(x_wins), lax.bitwise_not(hi_wins))

    def fit(c: Array, like: Array) -> Array:
        return lax.reduce_sum(c, tuple(range(c.ndim))) if like.shape != c.shape else c
    return (fit(lax.select(lo_wins, g, z), lo), lax.select(x_wins, g, z),
            fit(lax.select(hi_wins, g, z), hi))


def _to_full_shape(v: Array, d: int | None, shape: tuple, n: int, keep_scalar: bool) -> Array:
    """An operand of select/clamp (batched along ``d``, or unmapped) batched along axis 0
    with the per-example ``shape`` of the main operand; an unmapped scalar stays a scalar
    when ``keep_scalar`` (the op takes a scalar there)."""
    if d is None:
        if v.ndim == 0 and keep_scalar:
            return v
        return lax.broadcast_in_dim(v, (n,) + shape, tuple(range(1, v.ndim + 1)))
    if v.ndim == 1 and shape:                 # a scalar per example
        return lax.broadcast_in_dim(v, (n,) + shape, (0,))
    return lax.transpose(v, (d,) + tuple(i for i in range(v.ndim) if i != d))


def _batch_with_scalars(prim: Primitive, scalar_ok: tuple[int, ...]) -> Rule:
    """The batching rule of select and clamp: operand 1 is the main one, the operands in
    ``scalar_ok`` may be scalars per example."""
    def rule(vals: Sequence[Array], dims: Sequence[int | None]) -> tuple:
        n = next(v.shape[d] for v, d in zip(vals, dims) if d is not None)
        m, dm = vals[1], dims[1]
        shape = m.shape if dm is None else m.shape[:dm] + m.shape[dm + 1:]
        moved = [_to_full_shape(v, d, shape, n, k in scalar_ok and bool(shape))
                 for k, (v, d) in enumerate(zip(vals, dims))]
        return bind(prim, *moved), 0
    return rule


select_p.def_batching(_batch_with_scalars(select_p, (0,)))
clamp_p.def_batching(_batch_with_scalars(clamp_p, (0, 2)))


# ------------------------------------------------------------------------- conversions
convert_element_type_p = primitive("convert_element_type",
                                   weak=lambda args, params: params["weak_type"])
convert_element_type_p.def_lowering(
    lambda ctx, x, *, new_dtype, weak_type: ctx.b.convert(x, new_dtype))
convert_element_type_p.def_batching(batch_same_shape(convert_element_type_p))


@convert_element_type_p.def_vjp
def _convert_vjp(g: Array, ans: Array, x: Array, *, new_dtype: Any, weak_type: bool) -> tuple:
    if not (dtypes.is_float(x.dtype) or np.dtype(x.dtype).kind == "c"):
        return (None,)
    if np.dtype(g.dtype).kind == "c" and np.dtype(x.dtype).kind != "c":
        g = lax.real(g)
    return (lax.convert_element_type(g, x.dtype, x.weak_type),)


bitcast_convert_type_p = primitive("bitcast_convert_type", weak=_never_weak)
bitcast_convert_type_p.def_lowering(
    lambda ctx, x, *, new_dtype: ctx.b.bitcast_convert(x, new_dtype))
bitcast_convert_type_p.def_vjp(_no_gradient)
bitcast_convert_type_p.def_batching(batch_same_shape(bitcast_convert_type_p))


# ------------------------------------------------------------------------------ erf_inv
# Giles' single-precision coefficients, highest degree first, as in XLA's chlo lowering.
_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)

erf_inv_p = primitive("erf_inv", weak=_never_weak)


@erf_inv_p.def_lowering
def _erf_inv_lower(ctx: LoweringContext, x: I) -> I:
    """XLA's chlo expansion: a degree-8 polynomial in ``w = -log1p(-x*x)`` (shifted),
    one coefficient set for ``w < 5`` and one for the tails; ``+-inf`` at ``+-1``."""
    b = ctx.b
    dtype = x.shape.dtype
    if dtype != np.float32:
        x = b.convert(x, np.float32)
    dims = x.shape.dims

    def c(v: float) -> I:
        return b.broadcast_in_dim(b.constant(np.float32(v)), dims, ())

    w = b.negate(b.log_plus_one(b.multiply(x, b.negate(x))))
    small = b.compare(w, c(5.0), "LT")
    w = b.select(small, b.subtract(w, c(2.5)), b.subtract(b.sqrt(w), c(3.0)))
    p = b.select(small, c(_ERFINV_SMALL[0]), c(_ERFINV_LARGE[0]))
    for lo, hi in zip(_ERFINV_SMALL[1:], _ERFINV_LARGE[1:]):
        p = b.add(b.select(small, c(lo), c(hi)), b.multiply(p, w))
    at_one = b.compare(b.abs(x), c(1.0), "EQ")
    out = b.select(at_one, b.multiply(x, c(np.inf)), b.multiply(p, x))
    return out if dtype == np.float32 else b.convert(out, dtype)


# d/dx erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)**2)
erf_inv_p.def_vjp(_single(lambda g, ans, x: lax.mul(g, lax.mul(
    _f(ans, np.sqrt(np.pi) / 2), lax.exp(lax.mul(ans, ans))))))
erf_inv_p.def_batching(batch_same_shape(erf_inv_p))

__all__ = ["UNARY", "BINARY", "unary_p", "binary_p", "compare_p", "select_p", "clamp_p",
           "convert_element_type_p", "bitcast_convert_type_p", "erf_inv_p", "batch_same_shape"]
