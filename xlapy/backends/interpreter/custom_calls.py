"""Interpreter semantics of the LAPACK custom-calls JAX emits on CPU (``lapack_?xxxx_ffi``).

Each target is a jaxlib FFI kernel that runs one LAPACK routine per matrix over the
leading batch dimensions. Its operands and results carry column-major layouts
(``{0,1}`` for rank 2, ``{1,2,0}`` for rank 3 ...), so the LAPACK matrix *is* the
logical array: element ``[..., i, j]`` is row i, column j. Here each kernel calls the
same routine through ``scipy.linalg.lapack`` (jaxlib takes its LAPACK from SciPy too),
so results agree with XLA's up to differences between LAPACK builds.

Scalar attributes come from ``backend_config={uplo = 76 : ui8, ...}``: character codes
such as ``uplo`` (``L``=76 / ``U``=85), ``side``, ``trans_x`` (``N``/``T``/``C``),
``diag`` (``N``/``U``) and ``mode``; integer ``low``/``high`` for gehrd.
Pivots are 1-based int32 and ``info`` is LAPACK's int32 status per matrix.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...errors import InvalidArgumentError, UnimplementedError
from ...hlo.ir import HloInstruction
from ...hlo.shape import Shape
from ...hlo.shape_inference.custom_calls import backend_config_fields
from .evaluator import Evaluator, custom_call, describe
from .linalg import triangular_solve

_PREFIX_DTYPE = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}
_REAL = {"s": np.float32, "d": np.float64, "c": np.float32, "z": np.float64}


def _char(instr: HloInstruction, cfg: dict[str, Any], name: str, default: str,
          allowed: str) -> str:
    """A character-code attribute (stored as its ASCII value) checked against ``allowed``."""
    value = cfg.get(name)
    ch = default if value is None else chr(int(value)) if isinstance(value, int) else str(value)
    if ch not in allowed:
        raise InvalidArgumentError(f"{describe(instr)}: backend_config {name}={ch!r}, expected one "
                                   f"of {', '.join(allowed)}")
    return ch


def _check_column_major(instr: HloInstruction) -> None:
    """LAPACK kernels read column-major matrices; other physical layouts are not modelled.

    Only the matrices are checked: the buffers of the call's largest rank. Batched vector
    results (pivots, eigenvalues, ``info``) have one dimension less and JAX lays them out
    row-major."""
    shapes: list[Shape] = list(instr.attr("operand_layout_constraints") or ())
    shapes += instr.shape.tuple_shapes if instr.shape.is_tuple else [instr.shape]
    shapes = [s for s in shapes if isinstance(s, Shape) and s.is_array]
    top = max((s.rank for s in shapes), default=0)
    for s in shapes:
        if s.layout is None or s.rank < 2 or s.rank < top:
            continue
        m2m = s.layout.minor_to_major
        if m2m[0] != s.rank - 2 or m2m[1] != s.rank - 1:
            raise UnimplementedError(f"{describe(instr)}: LAPACK custom-call with non column-major "
                                     f"layout {s}")


def _matrices(x: np.ndarray, dtype) -> np.ndarray:
    """A writable [batch, rows, cols] copy in ``dtype``."""
    x = np.asarray(x)
    return np.array(x.reshape((int(np.prod(x.shape[:-2])),) + x.shape[-2:]), dtype=dtype)


def _each(a: np.ndarray) -> range:
    """Batch indices to run LAPACK on (none for empty matrices, which LAPACK rejects)."""
    return range(len(a)) if a.shape[-1] and a.shape[-2] else range(0)


def _batch(x: np.ndarray) -> tuple[int, ...]:
    return tuple(np.shape(x)[:-2])


def _fn(prefix: str, name: str) -> Callable:
    import scipy.linalg.lapack   # imported on first use: scipy.linalg is slow to load
    return getattr(scipy.linalg.lapack, prefix + name)


def _results(instr: HloInstruction, values: list[np.ndarray]) -> tuple:
    """Reshape/cast kernel outputs to the custom-call's tuple result shapes."""
    shapes = instr.shape.tuple_shapes
    if len(shapes) != len(values):
        raise InvalidArgumentError(f"{describe(instr)}: expected a {len(values)}-tuple result, "
                                   f"shape is {instr.shape}")
    return tuple(np.asarray(v).reshape(s.dims).astype(s.dtype) for v, s in zip(values, shapes))


def _single(instr: HloInstruction, value: np.ndarray) -> Any:
    shape = instr.shape.tuple_shapes[0] if instr.shape.is_tuple else instr.shape
    out = np.asarray(value).reshape(shape.dims).astype(shape.dtype)
    return (out,) if instr.shape.is_tuple else out


def _register(name: str, prefixes: str = "sdcz", complex_name: str | None = None):
    """Register ``fn(ev, instr, operands, prefix)`` for ``lapack_<p><name>_ffi`` targets."""
    def wrap(fn):
        for p in prefixes:
            routine = complex_name if complex_name and p in "cz" else name
            target = f"lapack_{p}{routine}_ffi"

            def run(ev: Evaluator, instr: HloInstruction, operands: list, _p: str = p) -> Any:
                _check_column_major(instr)
                return fn(instr, operands, _p, backend_config_fields(instr))
            custom_call(target)(run)
        return fn
    return wrap


# --------------------------------------------------------------------------------------------
# factorizations

@_register("potrf")
def _potrf(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """Cholesky: (factor in the ``uplo`` triangle, other triangle unchanged; info)."""
    lower = _char(instr, cfg, "uplo", "L", "LU") == "L"
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    info = np.zeros(len(a), np.int32)
    for i in _each(a):
        a[i], info[i] = _fn(p, "potrf")(a[i], lower=int(lower), clean=0)
    return _results(instr, [a, info.reshape(_batch(operands[0]))])


@_register("getrf")
def _getrf(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """LU with partial pivoting: (packed L\\U, 1-based pivots, info)."""
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    k = min(a.shape[1:])
    piv = np.zeros((len(a), k), np.int32)
    info = np.zeros(len(a), np.int32)
    for i in _each(a):
        a[i], pv, info[i] = _fn(p, "getrf")(a[i])
        piv[i] = pv[:k] + 1
    batch = _batch(operands[0])
    return _results(instr, [a, piv.reshape(batch + (k,)), info.reshape(batch)])


@_register("geqrf")
def _geqrf(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """QR: (R above the diagonal and Householder vectors below, tau)."""
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    k = min(a.shape[1:])
    tau = np.zeros((len(a), k), a.dtype)
    for i in _each(a):
        a[i], tau[i], _, _ = _fn(p, "geqrf")(a[i])
    return _results(instr, [a, tau.reshape(_batch(operands[0]) + (k,))])


@_register("geqp3")
def _geqp3(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """QR with column pivoting: (packed QR, 1-based column permutation, tau)."""
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    jpvt_in = np.asarray(operands[1]).reshape(len(a), a.shape[-1])
    if np.any(jpvt_in != 0):
        raise UnimplementedError(f"{describe(instr)}: geqp3 with pre-fixed pivot columns "
                                 "(nonzero jpvt input) is not supported")
    k = min(a.shape[1:])
    jpvt = np.zeros(jpvt_in.shape, np.int32)
    tau = np.zeros((len(a), k), a.dtype)
    for i in _each(a):
        a[i], jpvt[i], tau[i], _, _ = _fn(p, "geqp3")(a[i])
    batch = _batch(operands[0])
    return _results(instr, [a, jpvt.reshape(np.shape(operands[1])), tau.reshape(batch + (k,))])


@_register("orgqr", complex_name="ungqr")
def _orgqr(instr: HloInstruction, operands: list, p: str, cfg: dict) -> Any:
    """The first n columns of Q from geqrf's Householder vectors and tau."""
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    tau = np.asarray(operands[1]).reshape(len(a), np.shape(operands[1])[-1]).astype(a.dtype)
    name = "ungqr" if p in "cz" else "orgqr"
    for i in _each(a):
        a[i], _, _ = _fn(p, name)(a[i], tau[i])
    return _single(instr, a)


# --------------------------------------------------------------------------------------------
# eigen- and singular value problems

@_register("syevd", complex_name="heevd")
def _syevd(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """Symmetric/Hermitian eigensolver: (eigenvectors as columns, ascending eigenvalues, info)."""
    lower = _char(instr, cfg, "uplo", "L", "LU") == "L"
    vectors = _char(instr, cfg, "mode", "V", "VN") == "V"
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    n = a.shape[-1]
    w = np.zeros((len(a), n), _REAL[p])
    info = np.zeros(len(a), np.int32)
    name = "heevd" if p in "cz" else "syevd"
    for i in _each(a):
        w[i], v, info[i] = _fn(p, name)(a[i], compute_v=int(vectors), lower=int(lower))
        if vectors:
            a[i] = v
    batch = _batch(operands[0])
    return _results(instr, [a, w.reshape(batch + (n,)), info.reshape(batch)])


def _svd(instr: HloInstruction, operands: list, p: str, cfg: dict, routine: str) -> tuple:
    mode = _char(instr, cfg, "mode", "A", "ASNO")
    if mode == "O":
        raise UnimplementedError(f"{describe(instr)}: SVD mode 'O' (overwrite x) is not "
                                 "supported by the LAPACK kernels")
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    shapes = instr.shape.tuple_shapes
    s_out = np.zeros((len(a),) + shapes[1].dims[-1:], _REAL[p])
    u_out = np.zeros((len(a),) + shapes[2].dims[-2:], a.dtype)
    vt_out = np.zeros((len(a),) + shapes[3].dims[-2:], a.dtype)
    info = np.zeros(len(a), np.int32)
    for i in _each(a):
        m = np.asfortranarray(a[i])
        u, s, vt, info[i] = _fn(p, routine)(m, compute_uv=int(mode != "N"),
                                            full_matrices=int(mode == "A"), overwrite_a=1)
        a[i] = m
        s_out[i] = s
        if mode != "N":
            u_out[i], vt_out[i] = u, vt
    return _results(instr, [a, s_out, u_out, vt_out, info.reshape(_batch(operands[0]))])


@_register("gesdd")
def _gesdd(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """SVD, divide and conquer: (overwritten x, singular values, u, vt, info)."""
    return _svd(instr, operands, p, cfg, "gesdd")


@_register("gesvd")
def _gesvd(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """SVD, QR iteration: (overwritten x, singular values, u, vt, info)."""
    return _svd(instr, operands, p, cfg, "gesvd")


def _unpack_real_eigenvectors(v: np.ndarray, wi: np.ndarray) -> np.ndarray:
    """LAPACK's real packing of complex-conjugate eigenvector pairs -> complex columns."""
    out = v.astype(np.result_type(v.dtype, np.complex64))
    j = 0
    n = len(wi)
    while j < n:
        if wi[j] != 0 and j + 1 < n:
            re, im = v[:, j], v[:, j + 1]
            out[:, j] = re + 1j * im
            out[:, j + 1] = re - 1j * im
            j += 2
        else:
            j += 1
    return out


@_register("geev")
def _geev(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """General eigensolver. Real: (wr, wi, vl, vr, info); complex: (w, vl, vr, info).

    Non-finite input gives info = -4 (the kernel skips LAPACK), eigenvalues NaN.
    """
    left = _char(instr, cfg, "compute_left", "N", "VN") == "V"
    right = _char(instr, cfg, "compute_right", "V", "VN") == "V"
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    b, n = len(a), a.shape[-1]
    cdtype = np.complex64 if p in "sc" else np.complex128
    w: np.ndarray = np.full((b, n), np.nan, cdtype)
    vl = np.zeros((b, n, n), cdtype)
    vr = np.zeros((b, n, n), cdtype)
    info = np.zeros(b, np.int32)
    for i in _each(a):
        if not np.all(np.isfinite(a[i])):
            info[i] = -4
            continue
        if p in "sd":
            wr, wi, l_, r_, info[i] = _fn(p, "geev")(a[i], compute_vl=int(left),
                                                    compute_vr=int(right))
            w[i] = wr + 1j * wi
            if info[i] == 0:
                if left:
                    vl[i] = _unpack_real_eigenvectors(l_, wi)
                if right:
                    vr[i] = _unpack_real_eigenvectors(r_, wi)
        else:
            w[i], l_, r_, info[i] = _fn(p, "geev")(a[i], compute_vl=int(left),
                                                  compute_vr=int(right))
            if left:
                vl[i] = l_
            if right:
                vr[i] = r_
    batch = _batch(operands[0])
    w = w.reshape(batch + (n,))
    vecs = [vl.reshape(batch + (n, n)), vr.reshape(batch + (n, n)), info.reshape(batch)]
    if p in "sd":
        return _results(instr, [w.real, w.imag, *vecs])
    return _results(instr, [w, *vecs])


@_register("gees")
def _gees(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """Schur form. Real: (T, Schur vectors, wr, wi, sdim, info); complex: (T, Z, w, sdim, info)."""
    vectors = _char(instr, cfg, "mode", "V", "VN") == "V"
    if _char(instr, cfg, "sort", "N", "NS") != "N":
        raise UnimplementedError(f"{describe(instr)}: gees with eigenvalue sorting is not "
                                 "supported (the jaxlib kernel rejects it too)")
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    b, n = len(a), a.shape[-1]
    vs = np.zeros_like(a)
    w: np.ndarray = np.zeros((b, n), np.complex128)
    sdim = np.zeros(b, np.int32)
    info = np.zeros(b, np.int32)
    for i in _each(a):
        res = _fn(p, "gees")(lambda *args: None, a[i], compute_v=int(vectors), sort_t=0)
        if p in "sd":
            a[i], sdim[i], wr, wi, v, _, info[i] = res
            w[i] = wr + 1j * wi
        else:
            a[i], sdim[i], w[i], v, _, info[i] = res
        if vectors:
            vs[i] = v
    batch = _batch(operands[0])
    w = w.reshape(batch + (n,))
    head = [a, vs]
    tail = [sdim.reshape(batch), info.reshape(batch)]
    if p in "sd":
        return _results(instr, head + [w.real, w.imag] + tail)
    return _results(instr, head + [w] + tail)


@_register("gehrd")
def _gehrd(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """Hessenberg reduction of rows/columns ``low..high`` (1-based): (packed H, tau, info)."""
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    n = a.shape[-1]
    low, high = int(cfg.get("low", 1)), int(cfg.get("high", n))
    tau = np.zeros((len(a), max(n - 1, 0)), a.dtype)
    info = np.zeros(len(a), np.int32)
    for i in _each(a):
        a[i], t, info[i] = _fn(p, "gehrd")(a[i], lo=low - 1, hi=high - 1)
        tau[i] = t[:n - 1]
    batch = _batch(operands[0])
    return _results(instr, [a, tau.reshape(batch + (max(n - 1, 0),)), info.reshape(batch)])


@_register("sytrd", complex_name="hetrd")
def _sytrd(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """Tridiagonal reduction: (packed reflectors, diagonal, off-diagonal, tau, info)."""
    lower = _char(instr, cfg, "uplo", "L", "LU") == "L"
    a = _matrices(operands[0], _PREFIX_DTYPE[p])
    b, n = len(a), a.shape[-1]
    d = np.zeros((b, n), _REAL[p])
    e = np.zeros((b, max(n - 1, 0)), _REAL[p])
    tau = np.zeros((b, max(n - 1, 0)), a.dtype)
    info = np.zeros(b, np.int32)
    name = "hetrd" if p in "cz" else "sytrd"
    for i in _each(a):
        a[i], d[i], e[i], tau[i], info[i] = _fn(p, name)(a[i], lower=int(lower))
    batch = _batch(operands[0])
    m1 = (max(n - 1, 0),)
    return _results(instr, [a, d.reshape(batch + (n,)), e.reshape(batch + m1),
                            tau.reshape(batch + m1), info.reshape(batch)])


# --------------------------------------------------------------------------------------------
# solvers

_TRANS = {"N": 0, "T": 1, "C": 2}


@_register("trsm")
def _trsm(instr: HloInstruction, operands: list, p: str, cfg: dict) -> Any:
    """Triangular solve op(a) x = alpha b (side L) or x op(a) = alpha b (side R); alpha = 1
    unless a third scalar operand gives it."""
    left = _char(instr, cfg, "side", "L", "LR") == "L"
    lower = _char(instr, cfg, "uplo", "L", "LU") == "L"
    trans = _TRANS[_char(instr, cfg, "trans_x", "N", "NTC")]
    unit = _char(instr, cfg, "diag", "N", "NU") == "U"
    dtype = _PREFIX_DTYPE[p]
    a = np.asarray(operands[0]).astype(dtype)
    b = np.asarray(operands[1]).astype(dtype)
    alpha = np.asarray(operands[2]).astype(dtype).item() if len(operands) > 2 else 1.0
    return _single(instr, triangular_solve(a, b, left, lower, unit, trans, alpha))


@_register("gtsv")
def _gtsv(instr: HloInstruction, operands: list, p: str, cfg: dict) -> tuple:
    """Tridiagonal solve; dl[..., 0] and du[..., n-1] are unused padding.

    Returns (dl, d, du as LAPACK leaves them, solution, info).
    """
    dtype = _PREFIX_DTYPE[p]
    rhs = _matrices(operands[3], dtype)
    dl, d, du = (np.array(np.asarray(o).reshape(len(rhs), np.shape(o)[-1]), dtype=dtype)
                 for o in operands[:3])
    info = np.zeros(len(rhs), np.int32)
    for i in _each(rhs):
        dl2, d[i], du2, rhs[i], info[i] = _fn(p, "gtsv")(dl[i, 1:], d[i], du[i, :-1], rhs[i])
        dl[i, 1:], du[i, :-1] = dl2, du2
    return _results(instr, [dl, d, du, rhs, info.reshape(_batch(operands[3]))])


@custom_call("Sharding")
def _sharding_annotation(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    """A sharding annotation (``with_sharding_constraint``) on an unpartitioned program is
    the identity, as after XLA's sharding remover: the interpreter runs programs whole."""
    return operands[0]
