"""A BLAS another library already loaded into the process, for the CPU runtime's products.

PyTorch's CPU wheels carry Intel MKL inside ``libtorch_cpu.so`` and export its Fortran
``sgemm_``/``dgemm_``; MKL threads each call itself on the GNU OpenMP runtime that
PyTorch's operators use. Under ``torch.compile(backend="xlapy")`` a training step
alternates between PyTorch's operators and xlapy's programs, whose products (a
transformer's projections and feed-forward layers) are most of its time: run by that MKL
on that runtime's threads, they go as fast as in eager PyTorch, where the OpenBLAS calls
split over the runtime's pool (``blas_lib.GemmCall.pieces``) were slower on the same
shapes (docs/performance.md). A front end that knows such a library is loaded (the
PyTorch backend) calls :func:`use_process_blas`; ``XLAPY_CPU_PROCESS_BLAS=0`` keeps
OpenBLAS, and so does the pool's back-off: while it keeps its jobs off a team that keeps
coming late (``thread_pool``), the products are OpenBLAS pieces on its own workers again.
Real (f32, f64) products and batches of them go there (a batch as one
``?gemm_batch_`` call, which the library threads over the batch); vectors and complex
products stay with OpenBLAS.

Row-major products map to the column-major Fortran routine as ``C^T = op(B)^T op(A)^T``:
the same memory read with the operands swapped (:func:`process_gemm`).
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import Callable

import numpy as np

from ...config import env_cpu_process_blas
from .blas_lib import GemmCall

log = logging.getLogger("xlapy.cpu")

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_INT = ctypes.c_int
_INT_P, _CHAR_P, _VOID_P = ctypes.POINTER(_INT), ctypes.c_char_p, ctypes.c_void_p


class _ProcessBlas:
    """The ``?gemm_`` and ``?gemm_batch_`` routines (32-bit integers, arguments by
    reference) of a loaded library, by dtype: ``(gemm, gemm_batch, scalar type)``."""

    def __init__(self, lib: ctypes.CDLL, path: str) -> None:
        self.path = path
        self.routines: dict[np.dtype, tuple[Callable, Callable, type]] = {}
        for ch, dtype, scalar in (("s", _F32, ctypes.c_float), ("d", _F64, ctypes.c_double)):
            scalar_p = ctypes.POINTER(scalar)
            gemm = getattr(lib, f"{ch}gemm_")
            gemm.argtypes = [_CHAR_P, _CHAR_P, _INT_P, _INT_P, _INT_P, scalar_p, _VOID_P,
                             _INT_P, _VOID_P, _INT_P, scalar_p, _VOID_P, _INT_P]
            # the batch routine takes arrays (one entry per group) and pointer arrays
            batch = getattr(lib, f"{ch}gemm_batch_")
            batch.argtypes = [_CHAR_P, _CHAR_P, _INT_P, _INT_P, _INT_P, scalar_p, _VOID_P,
                              _INT_P, _VOID_P, _INT_P, scalar_p, _VOID_P, _INT_P, _INT_P,
                              _INT_P]
            gemm.restype = batch.restype = None
            self.routines[dtype] = (gemm, batch, scalar)


_ROUTINES = ("sgemm_", "dgemm_", "sgemm_batch_", "dgemm_batch_")


_BLAS: _ProcessBlas | None = None
_LOCK = threading.Lock()
_FORK_HOOK: list[bool] = []          # the at-fork hook, registered once


def use_process_blas(path: str) -> bool:
    """Run the CPU runtime's real products on the ``sgemm_``/``dgemm_`` of the
    library at ``path`` when the process has already loaded it (never loads it itself);
    whether they now do. Nothing changes with ``XLAPY_CPU_PROCESS_BLAS=0``, without
    ``RTLD_NOLOAD``, or when the library does not export both routines."""
    global _BLAS
    if _BLAS is not None:
        return _BLAS.path == path
    noload = getattr(os, "RTLD_NOLOAD", None)
    if not env_cpu_process_blas() or noload is None:
        return False
    try:
        lib = ctypes.CDLL(path, mode=noload)
    except OSError:
        return False
    if not all(hasattr(lib, f) for f in _ROUTINES):
        return False
    with _LOCK:
        if _BLAS is None:
            _BLAS = _ProcessBlas(lib, path)
            if not _FORK_HOOK:
                # the library's OpenMP team does not survive fork(): a child uses OpenBLAS
                os.register_at_fork(after_in_child=stop_process_blas)
                _FORK_HOOK.append(True)
    log.debug("xlapy: the CPU runtime's products run on the BLAS of %s", path)
    return _BLAS.path == path


def stop_process_blas() -> None:
    """Back to OpenBLAS for products planned from now on (tests, benchmarks)."""
    global _BLAS
    with _LOCK:
        _BLAS = None


def in_use() -> bool:
    """Whether products run on the process's BLAS now (a plan made while one was in use
    runs its product on OpenBLAS once it is not: after fork(), or
    :func:`stop_process_blas`)."""
    return _BLAS is not None


def process_blas_path() -> str | None:
    """The library :func:`use_process_blas` chose, or None."""
    blas = _BLAS
    return None if blas is None else blas.path


def process_gemm(call: GemmCall, beta: int = 0) -> Callable[[int, int, int], None] | None:
    """``run(a_ptr, b_ptr, c_ptr)`` doing ``call`` (a row-major product or batch of them,
    see :class:`blas_lib.GemmCall`; ``beta=1`` adds to C) on the process's BLAS, its
    arguments made once; None when no such BLAS is in use or the product is not real."""
    blas = _BLAS
    if blas is None or call.dtype not in blas.routines:
        return None
    gemm, gemm_batch, scalar = blas.routines[call.dtype]
    ref = ctypes.byref
    # column-major: C^T (n x m, ldc) = op(B)^T (n x k) @ op(A)^T (k x m)
    trans_b, trans_a = (b"T" if call.b.trans else b"N"), (b"T" if call.a.trans else b"N")
    n, m, k = _INT(call.n), _INT(call.m), _INT(call.k)
    ldb, lda, ldc = _INT(call.b.ld), _INT(call.a.ld), _INT(call.ldc)
    alpha, beta_v = scalar(1.0), scalar(float(beta))
    head = (trans_b, trans_a, ref(n), ref(m), ref(k), ref(alpha))
    r_ldb, r_lda, r_beta, r_ldc = ref(ldb), ref(lda), ref(beta_v), ref(ldc)
    keep: tuple = (n, m, k, ldb, lda, ldc, alpha, beta_v)
    if call.batch == 1:
        def run(a_ptr: int, b_ptr: int, c_ptr: int, _keep: tuple = keep) -> None:
            gemm(*head, b_ptr, r_ldb, a_ptr, r_lda, r_beta, c_ptr, r_ldc)
        return run
    # one group of ``batch`` products: per call, arrays of the matrices' addresses
    item = call.dtype.itemsize
    steps = np.arange(call.batch, dtype=np.int64)
    offsets = [steps * (s * item) for s in (call.stride_a, call.stride_b, call.stride_c)]
    groups, size = _INT(1), _INT(call.batch)
    tail = (ref(groups), ref(size))
    keep += (groups, size)

    def run_batch(a_ptr: int, b_ptr: int, c_ptr: int, _keep: tuple = keep) -> None:
        a, b, c = offsets[0] + a_ptr, offsets[1] + b_ptr, offsets[2] + c_ptr
        gemm_batch(*head, b.ctypes.data, r_ldb, a.ctypes.data, r_lda, r_beta,
                   c.ctypes.data, r_ldc, *tail)
    return run_batch


__all__ = ["use_process_blas", "stop_process_blas", "in_use", "process_blas_path",
           "process_gemm"]
