"""Linear-algebra primitives: ``dot_general`` (HLO ``dot``) and the factorizations,
lowered as JAX lowers them on CPU: jaxlib's LAPACK FFI custom-calls
(``lapack_<s|c>potrf_ffi`` ...), with their gradient rules.

Each custom-call is written the way JAX 0.10 writes it (see the conformance cases
``misc_custom_call_*``): matrices in column-major layouts (``{1,2,0}`` for a batch of
matrices) in ``operand_layout_constraints`` and the result shape, a dict-form
``backend_config`` of ASCII character codes (``uplo = 76 : ui8`` is ``L``), and
``num_batch_dims`` in the frontend attributes. A failed factorization (LAPACK's ``info``)
gives NaNs, as in JAX.

============================  ==========================  ====================================
primitive                     targets                     result
============================  ==========================  ====================================
``cholesky(a)``               ``potrf``                   lower factor ``L`` (reads ``a``'s
                                                          lower triangle), zeros above
``triangular_solve(a, b)``    ``trsm`` (side L)           ``op(A)^-1 b``; ``A`` the ``lower`` or
                                                          upper triangle of ``a``
``lu(a)``                     ``getrf`` + a ``while``     ``(lu, pivots, permutation)``:
                                                          ``a[perm] = L U`` (0-based, int32)
``qr(a)``                     ``geqrf`` + ``orgqr``       ``(q, r)``
``eigh(a)``                   ``syevd`` / ``heevd``       ``(v, w)``: ascending eigenvalues
                                                          (reads the lower triangle)
``svd(a)``                    ``gesdd``                   ``(s, u, vh)``, or ``(s,)``
============================  ==========================  ====================================

Gradient rules (reverse mode, written with ``lax`` ops and these primitives, so they trace
and compose): ``cholesky``, ``triangular_solve``, ``lu`` (square), ``eigh``, ``qr`` (tall or
square, reduced) and ``svd`` (real, reduced; singular values only for complex input) follow
the standard matrix-calculus identities (Murray 2016, Seeger et al. 2017, Townsend 2016).
Where a rule reads only one triangle of its operand, the cotangent is that of the triangle
actually read. Cases without a rule raise a "not differentiable" error, never a wrong
gradient.

Batching rules (``vmap``): ``dot_general`` makes the batch axis a dot batch dimension
when both operands have it, else a free dimension (JAX's rule); the factorizations take
a leading batch of matrices, so the batch axis goes first.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.attrs import RawAttr
from ..hlo.builder import as_element_type
from ..hlo.ir import HloInstruction
from ..hlo.shape import Shape
from . import dtypes, lax
from . import lax_composite
from .batching import bdim_first, moveaxis, shift_axis
from .core import Array, LoweringContext, bind, primitive

I = HloInstruction
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


# ------------------------------------------------------------------------------- dot_general
dot_general_p = primitive("dot_general")


@dot_general_p.def_lowering
def _dot_general(ctx: LoweringContext, a: I, b: I, *, contracting, batch,
                 preferred_element_type) -> I:
    return ctx.b.dot_general(a, b, contracting, batch, preferred_element_type)


def _ranges_like(*lists: Sequence[int]) -> list[list[int]]:
    out, start = [], 0
    for lst in lists:
        out.append(list(range(start, start + len(lst))))
        start += len(lst)
    return out


def _dot_transpose_lhs(g: Array, x: Array, y: Array, contracting, batch,
                       swap_ans: bool = False) -> Array:
    (x_contract, y_contract), (x_batch, y_batch) = contracting, batch
    x_kept = [i for i in range(x.ndim) if i not in x_contract and i not in x_batch]
    y_kept = [i for i in range(y.ndim) if i not in y_contract and i not in y_batch]
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    if g.dtype != y.dtype:
        g = lax.convert_element_type(g, y.dtype)
    dims = ((ans_y, y_kept), (ans_batch, list(y_batch)))
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_by_y)
    return lax.transpose(lax.dot_general(g, y, dims), tuple(int(i) for i in out_axes))


def _dot_general_vjp(g: Array, ans: Array, x: Array, y: Array, *, contracting, batch,
                     preferred_element_type) -> tuple:
    (xc, yc), (xb, yb) = contracting, batch
    g_x = _dot_transpose_lhs(g, x, y, (xc, yc), (xb, yb))
    g_y = _dot_transpose_lhs(g, y, x, (yc, xc), (yb, xb), swap_ans=True)
    return g_x, g_y


dot_general_p.def_vjp(_dot_general_vjp)


# ------------------------------------------------------------------------ lowering helpers
def _lapack_shape(dtype: Any, dims: Sequence[int], matrix: bool = True) -> Shape:
    """JAX's layout for LAPACK buffers: a matrix (the last two dims) column-major with the
    batch dims major; vectors of values, pivots or ``info`` (``matrix=False``) row-major."""
    dims = tuple(dims)
    r = len(dims)
    et = as_element_type(dtype)
    if r < 2 or not matrix:
        return Shape.array(et, dims).with_default_layout()
    return Shape.array(et, dims, layout=(r - 2, r - 1, *range(r - 3, -1, -1)))


# As JAX does, one custom-call covers a whole batch of matrices; its vector results
# (eigenvalues, pivots, tau, info) are row-major, the matrices column-major.
def _lapack(ctx: LoweringContext, routine: str, operands: Sequence[I],
            results: Sequence[tuple[Any, Sequence[int]]], nb: int,
            config: dict[str, str] | None = None) -> list[I]:
    """One ``lapack_<p><routine>_ffi`` custom-call; ``results`` are (dtype, dims) pairs.
    Operands and results with ``nb + 2`` dims are matrices, the others vectors."""
    dtype = operands[0].shape.dtype
    p = _PREFIX[np.dtype(dtype)]
    if p in "cz":
        routine = {"syevd": "heevd", "orgqr": "ungqr"}.get(routine, routine)
    shapes = [_lapack_shape(dt, dims, len(dims) == nb + 2) for dt, dims in results]
    shape = shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)
    cfg = ", ".join(f"{k} = {ord(v)} : ui8" for k, v in sorted((config or {}).items()))
    cc = ctx.b.custom_call(
        f"lapack_{p}{routine}_ffi", list(operands), shape,
        operand_layout_constraints=tuple(
            _lapack_shape(o.shape.dtype, o.shape.dims, len(o.shape.dims) == nb + 2)
            for o in operands),
        api_version="API_VERSION_TYPED_FFI",
        frontend_attributes={"num_batch_dims": str(nb)},
        backend_config=RawAttr("{" + cfg + "}"))
    cc.shape = shape                  # the builder drops layouts; LAPACK needs these
    if len(shapes) == 1:
        return [cc]
    outs = []
    for i, s in enumerate(shapes):
        g = ctx.b.get_tuple_element(cc, i)
        g.shape = s
        outs.append(g)
    return outs


def _nan_unless(ctx: LoweringContext, ok: I, x: I, nb: int) -> I:
    """``x`` where the batch entry's ``ok`` holds, NaN elsewhere."""
    b = ctx.b
    dims = x.shape.dims
    okb = b.broadcast_in_dim(ok, dims, tuple(range(nb)))
    real = np.dtype(x.shape.dtype)
    nan = b.broadcast_in_dim(b.constant(np.array(np.nan, real)), dims, ())
    return b.select(okb, x, nan)


def _info_ok(ctx: LoweringContext, info: I, direction: str = "EQ") -> I:
    zero = ctx.b.broadcast_in_dim(ctx.b.constant(np.int32(0)), info.shape.dims, ())
    return ctx.b.compare(info, zero, direction)


def _triangle(ctx: LoweringContext, x: I, lower: bool, k: int = 0) -> I:
    """``x``'s lower (``col <= row + k``) or upper (``col >= row + k``) part, zeros elsewhere."""
    b = ctx.b
    dims = x.shape.dims
    r = len(dims)
    rows = b.iota((np.int32, dims), r - 2)
    cols = b.iota((np.int32, dims), r - 1)
    if k:
        rows = b.add(rows, b.broadcast_in_dim(b.constant(np.int32(k)), dims, ()))
    mask = b.compare(cols, rows, "LE" if lower else "GE")
    zero = b.broadcast_in_dim(b.constant(np.zeros((), x.shape.dtype)), dims, ())
    return b.select(mask, x, zero)


# ------------------------------------------------------------------------------- lowerings
def _cholesky_lower(ctx: LoweringContext, a: I) -> I:
    dims = a.shape.dims
    nb = len(dims) - 2
    factor, info = _lapack(ctx, "potrf", [a], [(a.shape.dtype, dims), (np.int32, dims[:nb])],
                           nb, {"uplo": "L"})
    return _triangle(ctx, _nan_unless(ctx, _info_ok(ctx, info), factor, nb), True)


def _trsm_lower(ctx: LoweringContext, a: I, x: I, *, lower: bool, transpose_a: str,
                unit_diagonal: bool) -> I:
    nb = len(x.shape.dims) - 2
    (out,) = _lapack(ctx, "trsm", [a, x], [(x.shape.dtype, x.shape.dims)], nb,
                     {"side": "L", "uplo": "L" if lower else "U", "trans_x": transpose_a,
                      "diag": "U" if unit_diagonal else "N"})
    return out


def _pivots_to_permutation(ctx: LoweringContext, pivots: I, m: int) -> I:
    """The row permutation made by LAPACK's sequential swaps (a ``while`` loop, as JAX)."""
    b = ctx.b
    batch = tuple(pivots.shape.dims[:-1])
    k = pivots.shape.dims[-1]
    nb = len(batch)
    s32 = as_element_type(np.int32)
    pshape = Shape.array(s32, batch + (m,))
    state = Shape.tuple([Shape.scalar(s32), pshape, pivots.shape.without_layout()])
    cb = ctx.sub_builder("lu_pivots_to_permutation_cond")
    i = cb.get_tuple_element(cb.parameter(state), 0)
    cond = cb.build(cb.compare(i, cb.constant(np.int32(k)), "LT"))
    bb = ctx.sub_builder("lu_pivots_to_permutation_body")
    st = bb.parameter(state)
    i, perm, piv = (bb.get_tuple_element(st, j) for j in range(3))
    zero = bb.constant(np.int32(0))
    j = bb.reshape(bb.dynamic_slice(piv, [zero] * nb + [i], batch + (1,)), batch)
    pi = bb.reshape(bb.dynamic_slice(perm, [zero] * nb + [i], batch + (1,)), batch)
    iota = bb.iota((np.int32, batch + (m,)), nb)
    jb = bb.broadcast_in_dim(j, batch + (m,), tuple(range(nb)))
    at_j = bb.compare(iota, jb, "EQ")
    zeros = bb.broadcast_in_dim(zero, batch + (m,), ())
    add = ctx.scalar_computation("add", np.int32)
    pj = bb.reduce(bb.select(at_j, perm, zeros), zero, add, [nb])
    at_i = bb.compare(iota, bb.broadcast_in_dim(i, batch + (m,), ()), "EQ")
    swapped = bb.select(at_i, bb.broadcast_in_dim(pj, batch + (m,), tuple(range(nb))),
                        bb.select(at_j, bb.broadcast_in_dim(pi, batch + (m,), tuple(range(nb))),
                                  perm))
    one = bb.constant(np.int32(1))
    body = bb.build(bb.tuple([bb.add(i, one), swapped, piv]))
    init = b.tuple([b.constant(np.int32(0)), b.iota((np.int32, batch + (m,)), nb), pivots])
    return b.get_tuple_element(b.while_loop(cond, body, init), 1)


def _lu_lower(ctx: LoweringContext, a: I) -> list[I]:
    dims = a.shape.dims
    nb, (m, n) = len(dims) - 2, dims[-2:]
    k = min(m, n)
    lu, ipiv, info = _lapack(ctx, "getrf", [a], [(a.shape.dtype, dims),
                                                (np.int32, dims[:nb] + (k,)),
                                                (np.int32, dims[:nb])], nb)
    lu = _nan_unless(ctx, _info_ok(ctx, info, "GE"), lu, nb)
    one = ctx.b.broadcast_in_dim(ctx.b.constant(np.int32(1)), ipiv.shape.dims, ())
    pivots = ctx.b.subtract(ipiv, one)
    return [lu, pivots, _pivots_to_permutation(ctx, pivots, m)]


def _qr_lower(ctx: LoweringContext, a: I, *, full_matrices: bool) -> list[I]:
    b = ctx.b
    dims = a.shape.dims
    nb, (m, n) = len(dims) - 2, dims[-2:]
    k = min(m, n)
    batch = tuple(dims[:nb])
    packed, tau = _lapack(ctx, "geqrf", [a], [(a.shape.dtype, dims),
                                              (a.shape.dtype, batch + (k,))], nb)
    if m < n:
        q_in = b.slice(packed, [0] * len(dims), batch + (m, m), [1] * len(dims))
    elif m > n and full_matrices:
        zero = b.constant(np.zeros((), a.shape.dtype))
        q_in = b.pad(packed, zero, [(0, 0, 0)] * nb + [(0, 0, 0), (0, m - n, 0)])
    else:
        q_in = packed
    (q,) = _lapack(ctx, "orgqr", [q_in, tau], [(a.shape.dtype, q_in.shape.dims)], nb)
    r = packed
    if m > n and not full_matrices:
        r = b.slice(packed, [0] * len(dims), batch + (n, n), [1] * len(dims))
    return [q, _triangle(ctx, r, False)]


def _eigh_lower(ctx: LoweringContext, a: I) -> list[I]:
    dims = a.shape.dims
    nb, n = len(dims) - 2, dims[-1]
    real = np.zeros((), a.shape.dtype).real.dtype
    v, w, info = _lapack(ctx, "syevd", [a], [(a.shape.dtype, dims), (real, dims[:nb] + (n,)),
                                             (np.int32, dims[:nb])], nb,
                         {"mode": "V", "uplo": "L"})
    ok = _info_ok(ctx, info)
    return [_nan_unless(ctx, ok, v, nb), _nan_unless(ctx, ok, w, nb)]


def _svd_lower(ctx: LoweringContext, a: I, *, full_matrices: bool,
               compute_uv: bool) -> list[I]:
    dims = a.shape.dims
    nb, (m, n) = len(dims) - 2, dims[-2:]
    k = min(m, n)
    batch = tuple(dims[:nb])
    real = np.zeros((), a.shape.dtype).real.dtype
    mode = "N" if not compute_uv else "A" if full_matrices else "S"
    ucols, vrows = (k, k) if mode == "S" else (m, n)
    _, s, u, vt, info = _lapack(
        ctx, "gesdd", [a], [(a.shape.dtype, dims), (real, batch + (k,)),
                            (a.shape.dtype, batch + (m, ucols)),
                            (a.shape.dtype, batch + (vrows, n)), (np.int32, batch)], nb,
        {"mode": mode})
    ok = _info_ok(ctx, info)
    outs = [_nan_unless(ctx, ok, s, nb)]
    if compute_uv:
        outs += [_nan_unless(ctx, ok, u, nb), _nan_unless(ctx, ok, vt, nb)]
    return outs


cholesky_p = primitive("cholesky")
cholesky_p.def_lowering(_cholesky_lower)
triangular_solve_p = primitive("triangular_solve", weak=lambda args, params: args[1].weak_type)
triangular_solve_p.def_lowering(_trsm_lower)
lu_p = primitive("lu", multiple_results=True)
lu_p.def_lowering(_lu_lower)
qr_p = primitive("qr", multiple_results=True)
qr_p.def_lowering(_qr_lower)
eigh_p = primitive("eigh", multiple_results=True)
eigh_p.def_lowering(_eigh_lower)
svd_p = primitive("svd", multiple_results=True)
svd_p.def_lowering(_svd_lower)


# --------------------------------------------------------------------------- binding API
_SUPPORTED = (np.dtype(np.float32), np.dtype(np.complex64))


def _check_matrix(name: str, a: Array, square: bool = True) -> None:
    if a.dtype not in _SUPPORTED:
        raise InvalidArgumentError(f"{name}: LAPACK kernels take float32 or complex64 "
                                   f"matrices, got {a.type_text()}")
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        raise InvalidArgumentError(f"{name}: expected a {'square ' if square else ''}matrix "
                                   f"(or a batch of them), got {a.type_text()}")


def cholesky(a: Array) -> Array:
    """The lower Cholesky factor of ``a``'s lower triangle (NaN if not positive definite)."""
    _check_matrix("cholesky", a)
    return bind(cholesky_p, a)


def triangular_solve(a: Array, b: Array, *, left_side: bool = True, lower: bool = True,
                     transpose_a: str = "N", unit_diagonal: bool = False) -> Array:
    """``op(A) x = b`` (``left_side``) or ``x op(A) = b`` for the triangle ``A`` of ``a``;
    ``transpose_a`` is ``N``, ``T`` or ``C``. Batch dimensions must match."""
    _check_matrix("triangular_solve", a)
    if transpose_a not in ("N", "T", "C"):
        raise InvalidArgumentError(f"triangular_solve: transpose_a must be N, T or C, got "
                                   f"{transpose_a!r}")
    if not left_side:
        t = lambda x: lax.transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))  # noqa
        if transpose_a == "C":
            return t(triangular_solve(_conj(a), t(b), lower=lower, transpose_a="N",
                                      unit_diagonal=unit_diagonal))
        flip = {"N": "T", "T": "N"}[transpose_a]
        return t(triangular_solve(a, t(b), lower=lower, transpose_a=flip,
                                  unit_diagonal=unit_diagonal))
    if b.dtype != a.dtype or b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] \
            or b.shape[-2] != a.shape[-1]:
        raise InvalidArgumentError(f"triangular_solve: cannot solve {a.type_text()} with "
                                   f"right-hand side {b.type_text()}")
    return bind(triangular_solve_p, a, b, lower=bool(lower), transpose_a=transpose_a,
                unit_diagonal=bool(unit_diagonal))


def lu(a: Array) -> tuple[Array, Array, Array]:
    """``(lu, pivots, permutation)`` of ``a`` with partial pivoting: ``a[..., perm, :] = L U``."""
    _check_matrix("lu", a, square=False)
    return tuple(bind(lu_p, a))


def qr(a: Array, full_matrices: bool = False) -> tuple[Array, Array]:
    """``(q, r)`` (Householder QR)."""
    _check_matrix("qr", a, square=False)
    return tuple(bind(qr_p, a, full_matrices=bool(full_matrices)))


def eigh(a: Array) -> tuple[Array, Array]:
    """``(v, w)`` of the Hermitian matrix in ``a``'s lower triangle, ascending ``w``."""
    _check_matrix("eigh", a)
    return tuple(bind(eigh_p, a))


def svd(a: Array, full_matrices: bool = False, compute_uv: bool = True) -> Any:
    """``(s, u, vh)`` (or ``s`` alone), singular values descending."""
    _check_matrix("svd", a, square=False)
    outs = bind(svd_p, a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return tuple(outs) if compute_uv else outs[0]


# ----------------------------------------------------------------------- gradient helpers
def _conj(x: Array) -> Array:
    return lax.complex(lax.real(x), lax.neg(lax.imag(x))) if dtypes.is_complex(x.dtype) else x


def _mT(x: Array) -> Array:
    return lax.transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _H(x: Array) -> Array:
    return _conj(_mT(x))


def _mm(x: Array, y: Array) -> Array:
    nb = x.ndim - 2
    batch = tuple(range(nb))
    return lax.dot_general(x, y, (((x.ndim - 1,), (nb,)), (batch, batch)))


def _tri(x: Array, lower: bool, k: int = 0) -> Array:
    rows = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 2)
    cols = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    rows = lax.add(rows, lax.full_like(rows, k))
    return lax.select(lax.le(cols, rows) if lower else lax.ge(cols, rows), x, lax.full_like(x, 0))


def _eye_like(x: Array) -> Array:
    rows = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 2)
    cols = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    return lax.convert_element_type(lax.eq(rows, cols), x.dtype)


def _as(x: Array, like: Array) -> Array:
    """A real ``x`` as ``like``'s (possibly complex) dtype."""
    if dtypes.is_complex(like.dtype) and not dtypes.is_complex(x.dtype):
        return lax.complex(x, lax.full_like(x, 0))
    return x


def _read_lower(g: Array) -> Array:
    """The cotangent of an operand only read through its lower triangle, as the Hermitian
    matrix ``tril(a) + tril(a, -1)^H``: ``tril(g) + tril(g^H, -1)``."""
    return lax.add(_tri(g, True), _tri(_H(g), True, -1))


def _not_differentiable(what: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"{what} is not differentiable (no gradient rule); wrap the "
                                "value in xlapy.lax.stop_gradient if no gradient is needed")


# ------------------------------------------------------------------------- gradient rules
def _cholesky_vjp(g: Array, ell: Array, a: Array) -> tuple:
    # dL = L phi(L^-1 dA L^-H), phi = lower triangle with half the diagonal.
    m = _mm(_H(ell), g)
    phi = lax.sub(_tri(m, True), lax.mul(lax.full_like(m, 0.5), lax.mul(m, _eye_like(m))))
    y = triangular_solve(ell, phi, lower=True, transpose_a="C")           # L^-H phi
    gmat = _H(triangular_solve(ell, _H(y), lower=True, transpose_a="C"))   # ... L^-1
    return (_read_lower(gmat),)


def _trsm_vjp(g: Array, x: Array, a: Array, b: Array, *, lower: bool, transpose_a: str,
              unit_diagonal: bool) -> tuple:
    back = {"N": "C", "C": "N", "T": "N"}[transpose_a]
    gb = triangular_solve(_conj(a) if transpose_a == "T" else a, g, lower=lower,
                          transpose_a=back, unit_diagonal=unit_diagonal)
    if transpose_a == "N":
        ga = lax.neg(_mm(gb, _H(x)))
    elif transpose_a == "C":
        ga = lax.neg(_mm(x, _H(gb)))
    else:
        ga = lax.neg(_mm(_conj(x), _mT(gb)))
    ga = _tri(ga, lower, (-1 if lower else 1) if unit_diagonal else 0)
    return ga, gb


def _lu_vjp(cts: list, outs: list, a: Array) -> tuple:
    g, lu_, perm = cts[0], outs[0], outs[2]
    m, n = a.shape[-2:]
    if m != n:
        raise _not_differentiable(f"lu of a non-square {a.type_text()} matrix")
    ell = lax.add(_tri(lu_, True, -1), _eye_like(lu_))
    mid = lax.add(_tri(_mm(_H(ell), _tri(g, True, -1)), True, -1),
                  _tri(_mm(_tri(g, False), _H(_tri(lu_, False))), False))
    x = triangular_solve(lu_, mid, lower=True, transpose_a="C", unit_diagonal=True)
    ga_perm = _H(triangular_solve(lu_, _H(x), lower=False, transpose_a="N"))
    iota = lax.broadcasted_iota(np.int32, perm.shape, perm.ndim - 1)
    inverse = lax.sort([perm, iota], perm.ndim - 1, is_stable=True)[1]
    idx = lax.broadcast_in_dim(inverse, a.shape, tuple(range(perm.ndim)))
    return (lax_composite.take_along_axis(ga_perm, idx, a.ndim - 2),)


def _qr_vjp(cts: list, outs: list, a: Array, *, full_matrices: bool) -> tuple:
    gq, gr = cts
    q, r = outs
    m, n = a.shape[-2:]
    if m < n or (full_matrices and m != n):
        raise _not_differentiable(f"qr of a {m}x{n} matrix (full_matrices={full_matrices}); "
                                  "only square or tall matrices with reduced Q are")
    mmat = lax.sub(_mm(r, _H(gr)), _mm(_H(gq), q))
    copyltu = lax.add(_tri(mmat, True), _H(_tri(mmat, True, -1)))
    lhs = lax.add(gq, _mm(q, copyltu))
    return (_H(triangular_solve(r, _H(lhs), lower=False, transpose_a="N")),)


def _eigh_vjp(cts: list, outs: list, a: Array) -> tuple:
    gv, gw = cts
    v, w = outs
    diff = lax.sub(lax.broadcast_in_dim(w, w.shape + w.shape[-1:], tuple(range(w.ndim - 1))
                                        + (w.ndim,)),
                   lax.broadcast_in_dim(w, w.shape + w.shape[-1:], tuple(range(w.ndim))))
    eye = _eye_like(diff)
    f = lax.sub(lax.div(lax.full_like(diff, 1), lax.add(diff, eye)), eye)    # 1/(w_j - w_i)
    inner = lax.add(_as(lax.mul(eye, lax.broadcast_in_dim(gw, diff.shape, tuple(range(gw.ndim)))),
                        v), lax.mul(_as(f, v), _mm(_H(v), gv)))
    return (_read_lower(_mm(_mm(v, inner), _H(v))),)


def _svd_vjp(cts: list, outs: list, a: Array, *, full_matrices: bool,
             compute_uv: bool) -> tuple:
    m, n = a.shape[-2:]
    k = min(m, n)
    gs = cts[0]
    if not compute_uv:
        s, u, vh = svd(a, full_matrices=False)
        return (_mm(lax.mul(u, _as(_row(gs, u.shape), u)), vh),)
    if dtypes.is_complex(a.dtype) or (full_matrices and m != n):
        raise _not_differentiable("svd with singular vectors of a complex or (with "
                                  "full_matrices) non-square matrix")
    s, u, vh = outs
    gu, gvh = cts[1], cts[2]
    v, gv = _mT(vh), _mT(gvh)
    s2 = lax.mul(s, s)
    col = lax.broadcast_in_dim(s2, s.shape + (k,), tuple(range(s.ndim - 1)) + (s.ndim,))
    row_ = lax.broadcast_in_dim(s2, s.shape + (k,), tuple(range(s.ndim)))
    diff = lax.sub(col, row_)                                                 # s_j^2 - s_i^2
    eye = _eye_like(diff)
    f = lax.sub(lax.div(lax.full_like(diff, 1), lax.add(diff, eye)), eye)
    utgu, vtgv = _mm(_mT(u), gu), _mm(_mT(v), gv)
    j = lax.mul(f, lax.sub(utgu, _mT(utgu)))
    kk = lax.mul(f, lax.sub(vtgv, _mT(vtgv)))
    srow, scol = _row(s, diff.shape), _col(s, diff.shape)
    inner = lax.add(lax.add(lax.mul(j, srow), lax.mul(eye, _row(gs, diff.shape))),
                    lax.mul(scol, kk))
    ga = _mm(_mm(u, inner), vh)
    inv_s = lax.div(lax.full_like(s, 1), s)
    if m > k:
        proj = lax.sub(gu, _mm(u, utgu))
        ga = lax.add(ga, _mm(lax.mul(proj, _row(inv_s, proj.shape)), vh))
    if n > k:
        proj = lax.sub(_mT(gv), _mm(_mT(gv), _mm(v, vh)))
        ga = lax.add(ga, _mm(lax.mul(u, _row(inv_s, u.shape)), proj))
    return (ga,)


def _row(x: Array, shape: tuple) -> Array:
    """A vector (batched) broadcast along the rows of ``shape``: ``out[..., i, j] = x[..., j]``."""
    return lax.broadcast_in_dim(x, shape, tuple(range(x.ndim - 1)) + (len(shape) - 1,))


def _col(x: Array, shape: tuple) -> Array:
    return lax.broadcast_in_dim(x, shape, tuple(range(x.ndim - 1)) + (len(shape) - 2,))


def _jax_convention(rule: Any, multiple: bool) -> Any:
    """The rules above are written for Frobenius gradients (``df = Re tr(G^H dA)``);
    xlapy's cotangents follow JAX (``df = Re sum(ct * dA)``, ``ct = conj(G)``): for complex
    operands conjugate the cotangents going in and coming out."""
    def wrapped(cts: Any, outs: Any, *args: Array, **params: Any) -> tuple:
        if not any(dtypes.is_complex(x.dtype) for x in args):
            return rule(cts, outs, *args, **params)
        cts = [_conj(c) for c in cts] if multiple else _conj(cts)
        return tuple(None if c is None else _conj(c) for c in rule(cts, outs, *args, **params))
    return wrapped


cholesky_p.def_vjp(_jax_convention(_cholesky_vjp, False))
triangular_solve_p.def_vjp(_jax_convention(_trsm_vjp, False))
lu_p.def_vjp(_jax_convention(_lu_vjp, True))
qr_p.def_vjp(_jax_convention(_qr_vjp, True))
eigh_p.def_vjp(_jax_convention(_eigh_vjp, True))
svd_p.def_vjp(_jax_convention(_svd_vjp, True))

__all__ = ["dot_general_p", "cholesky_p", "triangular_solve_p", "lu_p", "qr_p", "eigh_p", "svd_p",
           "cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"]


# ----------------------------------------------------------------------------- batching rules
@dot_general_p.def_batching
def _dot_general_batch(vals, dims, *, contracting, batch, preferred_element_type):
    (x, y), (dx, dy) = vals, dims
    (lc, rc), (lb, rb) = contracting, batch
    if dx is not None and dy is not None:
        x, y = moveaxis(x, dx, 0), moveaxis(y, dy, 0)
        plus = lambda t: tuple(a + 1 for a in t)  # noqa: E731
        out = lax.dot_general(x, y, ((plus(lc), plus(rc)), ((0,) + plus(lb), (0,) + plus(rb))),
                              preferred_element_type)
        return out, 0
    if dx is not None:
        lc2, lb2 = tuple(shift_axis(a, dx) for a in lc), tuple(shift_axis(a, dx) for a in lb)
        free = [a for a in range(x.ndim) if a not in lc2 and a not in lb2]
        out = lax.dot_general(x, y, ((lc2, rc), (lb2, rb)), preferred_element_type)
        return out, len(lb) + free.index(dx)
    rc2, rb2 = tuple(shift_axis(a, dy) for a in rc), tuple(shift_axis(a, dy) for a in rb)
    free = [a for a in range(y.ndim) if a not in rc2 and a not in rb2]
    n_lhs_free = x.ndim - len(lc) - len(lb)
    out = lax.dot_general(x, y, ((lc, rc2), (lb, rb2)), preferred_element_type)
    return out, len(lb) + n_lhs_free + free.index(dy)


def _leading_batch(prim: Any) -> Any:
    """The rule of an op on a leading batch of matrices: the batch axis goes first."""
    def rule(vals, dims, **params):
        out = bind(prim, *bdim_first(vals, dims), **params)
        if prim.multiple_results:
            return list(out), [0] * len(out)
        return out, 0
    return rule


for _p in (cholesky_p, triangular_solve_p, lu_p, qr_p, eigh_p, svd_p):
    _p.def_batching(_leading_batch(_p))
