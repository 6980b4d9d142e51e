"""Recycled memory for large output arrays.

Every call of an executable returns fresh output arrays. For large ones, fresh memory is
expensive: glibc hands blocks of 128 KB and more back to the kernel when they are freed
(``munmap``), so the next call's arrays start on unmapped pages and the kernels writing
them take a page fault every 4 KB (on the MLP training step, its Adam-update kernels ran
markedly slower than on warm memory: docs/performance.md).

:func:`empty` gives an array whose memory comes from a process-wide pool of blocks. The
array's ``base`` is a :class:`Lease`; when the last array or view using the lease goes away,
the lease's ``__del__`` puts the block back in the pool, so the next call of the same
program (or any other program needing the same size) writes into pages that are
already mapped. Nothing changes for the caller: the array is an ordinary, writable,
C-contiguous ndarray that owns nothing else. A lease is a ctypes byte array at the block's
address (one ctypes type per block size, made once), so the array is made on it through
the buffer protocol: NumPy builds an array from an ``__array_interface__`` dict several
times slower, and every large output of every call pays it.

Blocks are pooled by exact byte size (one program's outputs come back with the same
sizes), 64-byte aligned, and only for arrays of :data:`MIN_BYTES` or more (smaller ones
come from malloc's own bins, which do not unmap). At most :data:`MAX_POOLED_BYTES` stay
pooled; beyond that a returned block is freed. Blocks, leased or free, count in the
process's memory statistics (``memory_stats.STATS``) until they are freed.

A lease referenced by a single array counts as that array being unshared
(``frontend/donation.py`` checks ``base`` reference counts), so a pooled output donated
to the next call is still written in place.
"""
from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any, Callable

import numpy as np

from ..memory_stats import STATS
from .thunks import address_of

#: Arrays this large or larger come from the pool.
MIN_BYTES = 256 << 10
#: The most bytes kept in free blocks.
MAX_POOLED_BYTES = 1 << 30
_ALIGNMENT = 64
_MAX_LEASE_TYPES = 4096     # lease types kept (one per block size)


class _Pool:
    """Free blocks by size (see the module docstring)."""

    def __init__(self) -> None:
        self.free: dict[int, list[np.ndarray]] = {}
        self.pooled = 0
        self.lock = threading.Lock()
        self.reused = 0                 # statistics (tests, debugging)
        self.allocated = 0

    def take(self, nbytes: int) -> np.ndarray:
        with self.lock:
            blocks = self.free.get(nbytes)
            if blocks:
                self.pooled -= nbytes
                self.reused += 1
                return blocks.pop()
            self.allocated += 1
        raw = np.empty(nbytes + _ALIGNMENT, np.uint8)
        STATS.allocate(nbytes)
        start = -raw.ctypes.data % _ALIGNMENT
        return raw[start:start + nbytes]

    def give_back(self, block: np.ndarray) -> None:
        nbytes = block.nbytes
        with self.lock:
            if self.pooled + nbytes <= MAX_POOLED_BYTES:
                self.free.setdefault(nbytes, []).append(block)
                self.pooled += nbytes
                return
        STATS.release(nbytes)

    def clear(self) -> None:
        """Free every pooled block."""
        with self.lock:
            self.free.clear()
            STATS.release(self.pooled)
            self.pooled = 0


POOL = _Pool()


class Lease:
    """The ``base`` of an array made by :func:`empty`: holds one pooled block (``block``)
    and returns it to the pool when no array uses it any more. Each lease is an instance
    of :func:`lease_type`'s ctypes byte array type of its block's size, made at the
    block's address (the module docstring says why)."""

    __slots__ = ()
    #: marks recycled memory for the front end's donation check (``frontend/donation.py``)
    memory_lease = True
    block: np.ndarray

    def __del__(self) -> None:
        POOL.give_back(self.block)


_lease_types: dict[int, Any] = {}


def lease_type(nbytes: int) -> Any:
    """The :class:`Lease` type of ``nbytes``-byte blocks (a ctypes byte array)."""
    kind = _lease_types.get(nbytes)
    if kind is None:
        if len(_lease_types) >= _MAX_LEASE_TYPES:       # many sizes: start over
            _lease_types.clear()
        kind = _lease_types[nbytes] = type(f"Lease{nbytes}", (Lease, ctypes.c_char * nbytes),
                                           {})
    return kind


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-contiguous array, from the pool when it is large (module doc)."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if nbytes < MIN_BYTES or dtype.isbuiltin != 1:   # ml_dtypes' types: not pooled
        return np.empty(shape, dtype)
    return _leased(shape, dtype, nbytes, lease_type(nbytes))


def _leased(shape: tuple[int, ...], dtype: np.dtype, nbytes: int, kind: Any) -> np.ndarray:
    """An array of ``shape`` on a pooled block of ``nbytes`` under a lease of type ``kind``."""
    block = POOL.take(nbytes)
    lease = kind.from_address(address_of(block))
    lease.block = block
    return np.ndarray(shape, dtype, lease)


def allocator(shape: tuple[int, ...], dtype: np.dtype) -> Callable[[], np.ndarray]:
    """``empty(shape, dtype)`` as a function of no arguments, its size, pooling decision
    and lease type worked out once (an executable's per-call output)."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if nbytes < MIN_BYTES or dtype.isbuiltin != 1:
        return functools.partial(np.empty, shape, dtype)
    return functools.partial(_leased, shape, dtype, nbytes, lease_type(nbytes))


def copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``a`` (on recycled memory when it is large)."""
    out = empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


__all__ = ["empty", "allocator", "copy", "Lease", "lease_type", "POOL", "MIN_BYTES",
           "MAX_POOLED_BYTES"]
