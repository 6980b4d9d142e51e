"""Compile and load the hand-written C loops in ``benchmarks/c`` (the practical speed limit).

Each ``c/<name>.c`` is compiled at benchmark time with
``gcc -O3 -march=native -fopenmp -shared -fPIC`` into a temporary directory (once per process)
and loaded with ctypes; the OpenMP team is set to :data:`C_THREADS` threads. Callers pass
NumPy buffers with :func:`ptr`. ctypes releases the GIL during the call, as xlapy's runtime does.

OpenMP worker threads are made to sleep between parallel regions (``OMP_WAIT_POLICY=PASSIVE``,
set before libgomp loads unless the caller set it): on 2 cores a worker spinning after a C
loop steals the core that OpenBLAS's threads (in the transformer's C loop) or the next
implementation in the round-robin (JAX's or xlapy's threads) need. Measured on the
transformer block: 0.6-2 s per call spinning, 61-65 ms passive; the elementwise loops do not
change.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import os
import shutil
import subprocess
import tempfile

import numpy as np

C_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c")
CFLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")
C_THREADS = 2

_TMP: list[str] = []


def omp_wait_policy() -> str:
    """The caller's OMP_WAIT_POLICY if set, else PASSIVE (see the module docstring)."""
    return os.environ.get("OMP_WAIT_POLICY", "PASSIVE")


def c_available() -> bool:
    return shutil.which("gcc") is not None


@functools.lru_cache(maxsize=None)
def gcc_version() -> str | None:
    if not c_available():
        return None
    out = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True)
    return out.stdout.strip() or None


def _tmpdir() -> str:
    if not _TMP:
        _TMP.append(tempfile.mkdtemp(prefix="xlapy-bench-c-"))
        atexit.register(cleanup)
    return _TMP[0]


def openblas_link_flags() -> list[str]:
    """Link against scipy-openblas32, the OpenBLAS xlapy's CPU backend calls for dot."""
    import scipy_openblas32 as sob
    lib_dir = sob.get_lib_dir()
    return [f"-L{lib_dir}", f"-l{sob.get_library()}", f"-Wl,-rpath,{lib_dir}"]


@functools.lru_cache(maxsize=None)
def load(name: str, with_openblas: bool = False) -> ctypes.CDLL:
    """Compile ``c/<name>.c`` and load it; RuntimeError with gcc's message if it fails."""
    src = os.path.join(C_DIR, f"{name}.c")
    out = os.path.join(_tmpdir(), f"{name}.so")
    cmd = ["gcc", *CFLAGS, "-o", out, src]
    if with_openblas:
        cmd += openblas_link_flags()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
    os.environ["OMP_WAIT_POLICY"] = omp_wait_policy()   # read once, when libgomp loads
    lib = ctypes.CDLL(out)
    lib.omp_set_num_threads.argtypes = [ctypes.c_int]   # libgomp, resolved through the lib
    lib.omp_set_num_threads(C_THREADS)
    return lib


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    """The data pointer of a C-contiguous NumPy array (the caller keeps ``a`` alive)."""
    if not a.flags.c_contiguous:
        raise ValueError("C loops need C-contiguous arrays")
    return ctypes.c_void_p(a.ctypes.data)


class Pinned:
    """Input arrays passed to C by pointer: ``.ptrs`` stay valid as long as this object lives,
    so a call closure that holds it cannot outlive its buffers."""

    def __init__(self, *arrays: np.ndarray) -> None:
        self.arrays = arrays
        self.ptrs = [ptr(a) for a in arrays]


def cleanup() -> None:
    """Remove the temporary build directory (the loaded libraries stay mapped)."""
    while _TMP:
        shutil.rmtree(_TMP.pop(), ignore_errors=True)
