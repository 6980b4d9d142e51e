"""Dots through cuBLAS (ctypes on ``libcublas``, found at run time).

:func:`gemm_supported` accepts ``dot`` s that are one (optionally batched) matrix product of
row-major ``f32``/``f64`` arrays: the batch dimensions leading on both operands, one
contracting dimension each, first or last after the batch dimensions (so the other
dimensions of each operand are one contiguous block: ``m`` and ``n``), the output type the
operands' type.
The row-major product ``C = A B`` is computed as cuBLAS' column-major ``C^T = B^T A^T``
(``cublas<t>gemm_v2`` / ``cublas<t>gemmStridedBatched``), in full precision (the default
math mode: no TF32). The library is looked up as ``libcublas.so.13``/``.12``/``.11`` on the
loader path, then in the ``nvidia`` wheels of ``site-packages``; without it (and always on
the simulator) dots run in the host fallback.
"""
from __future__ import annotations

import ctypes
import glob
import logging
import os
import site
import sys
from math import prod
from typing import Any, NamedTuple

from ...errors import ExecutionError
from ...hlo.ir import HloInstruction
from .runtime import Buffers, Thunk

log = logging.getLogger("xlapy.gpu")

_OP_N, _OP_T = 0, 1
_handles: dict[int, Any] = {}
_missing: set[int] = set()


def _row_major(shape) -> bool:
    return shape.layout is None or list(shape.layout.minor_to_major) == \
        list(range(shape.rank - 1, -1, -1))


class _Geometry(NamedTuple):
    batch: int
    m: int
    n: int
    k: int
    lhs_k_first: bool      # lhs is [batch.., k, m..] (else [batch.., m.., k])
    rhs_k_first: bool      # rhs is [batch.., k, n..] (else [batch.., n.., k])


def _geometry(instr: HloInstruction) -> _Geometry | None:
    """The matrix product a dot is (module docstring), or None."""
    if instr.opcode != "dot" or len(instr.operands) != 2:
        return None
    lhs, rhs = instr.operands
    et = instr.shape.element_type
    if not instr.shape.is_array or et.name not in ("f32", "f64") or \
            lhs.shape.element_type != et or rhs.shape.element_type != et:
        return None
    a = instr.attrs
    lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    nb = len(lb)
    if len(lc) != 1 or len(rc) != 1 or lb != tuple(range(nb)) or rb != lb:
        return None
    ld, rd = lhs.shape.dims, rhs.shape.dims
    if ld[:nb] != rd[:nb] or not all(_row_major(s) for s in (lhs.shape, rhs.shape, instr.shape)):
        return None
    (lc,), (rc,) = lc, rc
    k = ld[lc]
    if lc == len(ld) - 1:
        lhs_k_first, m = False, prod(ld[nb:-1])
    elif lc == nb:
        lhs_k_first, m = True, prod(ld[nb + 1:])
    else:
        return None
    if rc == nb:
        rhs_k_first, n = True, prod(rd[nb + 1:])
    elif rc == len(rd) - 1:
        rhs_k_first, n = False, prod(rd[nb:-1])
    else:
        return None
    batch = prod(ld[:nb])
    if min(batch, m, n, k) <= 0:
        return None
    return _Geometry(batch, m, n, k, lhs_k_first, rhs_k_first)


def gemm_supported(instr: HloInstruction) -> bool:
    """Whether ``instr`` is a dot this module computes (module docstring)."""
    return _geometry(instr) is not None


def _find_library() -> ctypes.CDLL | None:
    names = ["libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"]
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    roots = list(site.getsitepackages()) + [site.getusersitepackages()] + \
        [p for p in sys.path if p.endswith("site-packages")]
    for root in roots:
        for pattern in ("nvidia/cu*/lib/libcublas.so*", "nvidia/cublas/lib/libcublas.so*"):
            for path in sorted(glob.glob(os.path.join(root, pattern)), reverse=True):
                if "Lt" in os.path.basename(path):
                    continue
                lt = glob.glob(os.path.join(os.path.dirname(path), "libcublasLt.so*"))
                try:
                    for p in lt:
                        ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
                    return ctypes.CDLL(path)
                except OSError as e:
                    log.debug("cannot load %s: %s", path, e)
    return None


class Cublas:
    """A cuBLAS handle on the device's current context."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.handle = ctypes.c_void_p()
        code = lib.cublasCreate_v2(ctypes.byref(self.handle))
        if code != 0:
            raise ExecutionError(f"cublasCreate failed with status {code}")

    def gemm(self, dtype: str, ta: int, tb: int, m: int, n: int, k: int, a: int, lda: int,
             b: int, ldb: int, c: int, ldc: int, batch: int = 1, sa: int = 0, sb: int = 0,
             sc: int = 0) -> None:
        scalar = ctypes.c_float if dtype == "f32" else ctypes.c_double
        one, zero = scalar(1.0), scalar(0.0)
        t = "S" if dtype == "f32" else "D"
        p = ctypes.c_uint64
        if batch == 1:
            code = getattr(self.lib, f"cublas{t}gemm_v2")(
                self.handle, ta, tb, m, n, k, ctypes.byref(one), p(a), lda, p(b), ldb,
                ctypes.byref(zero), p(c), ldc)
        else:
            ll = ctypes.c_longlong
            code = getattr(self.lib, f"cublas{t}gemmStridedBatched")(
                self.handle, ta, tb, m, n, k, ctypes.byref(one), p(a), lda, ll(sa), p(b), ldb,
                ll(sb), ctypes.byref(zero), p(c), ldc, ll(sc), batch)
        if code != 0:
            raise ExecutionError(f"cuBLAS gemm failed with status {code}")


def cublas(device: Any) -> Cublas | None:
    """The device's cuBLAS handle, None when the library is not found."""
    key = id(device)
    if key in _handles:
        return _handles[key]
    if key in _missing:
        return None
    lib = _find_library()
    if lib is None:
        log.warning("cuBLAS not found: dots run in the host fallback")
        _missing.add(key)
        return None
    device._bind()
    _handles[key] = Cublas(lib)
    return _handles[key]


class GemmThunk(Thunk):
    """One :func:`gemm_supported` dot on cuBLAS."""

    kind = "gemm"

    def __init__(self, instr: HloInstruction, handle: Cublas, buffers: Buffers,
                 operands: list, output: Any) -> None:
        self.instruction, self.handle = instr, handle
        g = _geometry(instr)
        m, n, k = g.m, g.n, g.k
        # column-major view: C^T (n x m) = op(B) (n x k) * op(A) (k x m)
        tb, ldb = (_OP_N, n) if g.rhs_k_first else (_OP_T, k)
        ta, lda = (_OP_T, m) if g.lhs_k_first else (_OP_N, k)
        self.dtype = instr.shape.element_type.name
        self.args: list[Any] = [
            self.dtype, tb, ta, n, m, k, buffers.address(operands[1]), ldb,
            buffers.address(operands[0]), lda, buffers.address(output), n, g.batch,
            k * n, m * k, m * n]
        for i, ref in ((6, operands[1]), (8, operands[0]), (10, output)):
            buffers.track(ref, self.args, i)    # parameters and outputs are bound per call

    def run(self) -> None:
        (dt, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, batch, sa, sb, sc) = self.args
        self.handle.gemm(dt, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, batch, sa, sb, sc)


__all__ = ["gemm_supported", "GemmThunk", "cublas", "Cublas"]
