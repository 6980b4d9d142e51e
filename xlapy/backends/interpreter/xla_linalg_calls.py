"""Interpreter semantics of XLA's own linear-algebra custom-calls, run on LAPACK.

XLA's client library emits these targets and its expander passes rewrite them into loops
of HLO before code generation, so they show in the HLO a front end hands over, e.g.
TensorFlow's ``experimental_get_compiler_ir(...)(stage="hlo")`` for ``tf.linalg.qr``,
``tf.linalg.inv`` (through QR) and ``tf.linalg.eigh``:

- ``Qr``: ``a[..., m, n]`` -> ``(a', taus[..., min(m, n)])``, the Householder QR in
  LAPACK's ``geqrf`` form (R on and above the diagonal, the reflectors' vectors below it
  with an implicit unit first element, ``H_i = I - tau_i v_i v_i^H``). XLA's
  ``QrExpander`` uses the same reflector convention as LAPACK's ``xLARFG``
  (``beta = -sign(alpha) * norm``; ``tau = 0`` when nothing is below the diagonal), so
  ``geqrf`` gives its result up to rounding;
- ``ProductOfElementaryHouseholderReflectors``: ``(a[..., m, n], taus[..., k])`` with
  ``m >= n >= k`` -> the first ``n`` columns of ``H_0 ... H_{k-1}`` (LAPACK's ``orgqr`` /
  ``ungqr``);
- ``LuDecomposition``: ``a[..., m, n]`` -> ``(lu, pivots s32[..., min(m, n)],
  permutation s32[..., m])``, LU with partial pivoting (LAPACK's ``getrf``): ``lu`` holds
  unit-lower ``L`` below the diagonal and ``U`` on and above it; 0-based pivots (row ``i``
  was swapped with row ``pivots[i]``) and the permutation with ``a[perm] = L @ U``, as
  JAX's ``lu`` returns them (TPU lowers this target; TensorFlow emits it for
  ``tf.linalg.lu``);
- ``QrDecomposition`` (older TensorFlow releases): ``a[..., m, n]`` -> ``(q[..., m, m],
  r[..., m, n])``, the complete QR;
- ``Eigh``: ``a[..., n, n]`` -> ``(eigenvectors as columns, real eigenvalues[..., n])``,
  reading the triangle the opaque ``backend_config="lower,sort,max_iter,tol"`` names
  (``syevd`` / ``heevd``). Eigenvalues come out ascending (XLA sorts them too when
  ``sort`` is 1; its Jacobi iteration leaves them unordered otherwise) and each
  eigenvector's sign (phase) is LAPACK's, which may differ from XLA's Jacobi result.

Matrices are logical arrays (any layout); 16-bit floats are computed in f32.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from ...hlo.attrs import RawAttr
from ...hlo.ir import HloInstruction
from .evaluator import Evaluator, custom_call, describe


def _lapack(dtype: np.dtype) -> tuple[str, np.dtype]:
    """The LAPACK prefix and working dtype for ``dtype``."""
    dt = np.dtype(dtype)
    if dt == np.float64:
        return "d", dt
    if dt == np.complex128:
        return "z", dt
    if dt == np.complex64:
        return "c", dt
    return "s", np.dtype(np.float32)


def _fn(prefix: str, name: str) -> Any:
    import scipy.linalg.lapack   # imported on first use: scipy.linalg is slow to load
    return getattr(scipy.linalg.lapack, prefix + name)


def _batched(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    x = np.asarray(x)
    return np.array(x.reshape((-1,) + x.shape[-2:]), dtype=dtype)


def _shape_of(instr: HloInstruction, index: int | None) -> Any:
    return instr.shape if index is None else instr.shape.tuple_shapes[index]


def _matrices(operands: list) -> tuple[str, np.dtype, np.ndarray, int, int]:
    """(LAPACK prefix, working dtype, writable [batch, m, n] copy, m, n) of operand 0."""
    x = np.asarray(operands[0])
    p, dt = _lapack(x.dtype)
    a = _batched(x, dt)
    return p, dt, a, a.shape[1], a.shape[2]


def _out(instr: HloInstruction, value: np.ndarray, index: int | None = None) -> np.ndarray:
    s = _shape_of(instr, index)
    return np.asarray(value).reshape(s.dims).astype(s.dtype)


@custom_call("Qr")
def _qr(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    p, dt, a, m, n = _matrices(operands)
    taus = np.zeros((len(a), min(m, n)), dt)
    if m and n:
        for i in range(len(a)):
            a[i], taus[i], _, info = _fn(p, "geqrf")(a[i])
            _check(info, instr, "geqrf")
    return (_out(instr, a, 0), _out(instr, taus, 1))


@custom_call("ProductOfElementaryHouseholderReflectors")
def _householder_product(ev: Evaluator, instr: HloInstruction, operands: list) -> np.ndarray:
    x, t = np.asarray(operands[0]), np.asarray(operands[1])
    p, dt = _lapack(x.dtype)
    a = _batched(x, dt)
    m, n = a.shape[1:]
    k = t.shape[-1]
    if m < n or k > n:
        raise InvalidArgumentError(f"{describe(instr)}: needs m >= n >= k, got a "
                                   f"{x.shape} and taus {t.shape}")
    taus = np.array(t.reshape(-1, k), dtype=dt)
    name = "ungqr" if p in "cz" else "orgqr"
    if k == 0:                  # no reflectors: the first n columns of the identity
        a[:] = np.eye(m, n, dtype=dt)
    elif n:
        for i in range(len(a)):
            a[i], _, info = _fn(p, name)(a[i], taus[i])
            _check(info, instr, name)
    return _out(instr, a)


@custom_call("LuDecomposition")
def _lu(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    p, dt, a, m, n = _matrices(operands)
    k = min(m, n)
    pivots = np.zeros((len(a), k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (len(a), 1))
    if m and n:
        for i in range(len(a)):
            a[i], piv, info = _fn(p, "getrf")(a[i])
            _check(info, instr, "getrf")
            pivots[i] = piv[:k]
            for j, q in enumerate(pivots[i]):       # apply the row swaps in order
                perm[i, j], perm[i, q] = perm[i, q], perm[i, j]
    return (_out(instr, a, 0), _out(instr, pivots, 1), _out(instr, perm, 2))


@custom_call("QrDecomposition")
def _qr_complete(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    p, dt, a, m, n = _matrices(operands)
    q = np.tile(np.eye(m, dtype=dt), (len(a), 1, 1))
    r = np.zeros_like(a)
    name = "ungqr" if p in "cz" else "orgqr"
    if m and n:
        for i in range(len(a)):
            packed, tau, _, info = _fn(p, "geqrf")(a[i])
            _check(info, instr, "geqrf")
            r[i] = np.triu(packed)
            full = np.zeros((m, m), dt)
            full[:, :min(m, n)] = packed[:, :min(m, n)]
            q[i], _, info = _fn(p, name)(full, tau)
            _check(info, instr, name)
    return (_out(instr, q, 0), _out(instr, r, 1))


def _eigh_options(instr: HloInstruction) -> tuple[bool, bool]:
    """(lower, sort) from the opaque ``backend_config="lower,sort,max_iter,tol"``."""
    cfg = instr.attrs.get("backend_config")
    text = cfg.text if isinstance(cfg, RawAttr) else ("" if cfg is None else str(cfg))
    fields = [f.strip() for f in text.strip().strip('"').split(",")]
    try:
        lower = bool(int(fields[0])) if fields[0] else True
        sort = bool(int(fields[1])) if len(fields) > 1 and fields[1] else True
    except ValueError:
        raise InvalidArgumentError(f"{describe(instr)}: backend_config {text!r} is not "
                                   "'lower,sort_eigenvalues,max_iter,tol'") from None
    return lower, sort


@custom_call("Eigh")
def _eigh(ev: Evaluator, instr: HloInstruction, operands: list) -> tuple:
    p, dt, a, _, n = _matrices(operands)
    lower, _ = _eigh_options(instr)
    w = np.zeros((len(a), n), np.float64 if p in "dz" else np.float32)
    name = "heevd" if p in "cz" else "syevd"
    if n:
        for i in range(len(a)):
            w[i], a[i], info = _fn(p, name)(a[i], compute_v=1, lower=int(lower))
            _check(info, instr, name)
    return (_out(instr, a, 0), _out(instr, w, 1))


def _check(info: int, instr: HloInstruction, routine: str) -> None:
    if info < 0:
        raise InvalidArgumentError(f"{describe(instr)}: LAPACK {routine} rejected argument "
                                   f"{-info}")


__all__: list[str] = []
