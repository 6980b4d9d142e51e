"""The machine header printed above every benchmark table, and the OpenBLAS environment check.

OPENBLAS_CORETYPE forces OpenBLAS to use one CPU's kernels and OPENBLAS_L2_SIZE changes its
blocking; with either set the BLAS numbers of NumPy, JAX's peers and xlapy describe a
different machine, so the scripts refuse to run (``--allow-openblas-env`` overrides, and
``--smoke`` only warns). Run them as
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/<script>.py``.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
import time
from typing import Mapping

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def openblas_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The OpenBLAS tuning variables that are set, with their values."""
    return {k: environ[k] for k in OPENBLAS_VARS if k in environ}


def check_openblas_env(allow: bool, environ: Mapping[str, str] = os.environ) -> None:
    """Exit with status 2 when OpenBLAS tuning variables are set, unless ``allow``."""
    found = openblas_env(environ)
    if not found:
        return
    text = ", ".join(f"{k}={v}" for k, v in found.items())
    if allow:
        print(f"WARNING: {text} is set; BLAS timings do not describe this machine's own "
              "OpenBLAS kernel.", file=sys.stderr)
        return
    print(f"refusing to benchmark: {text} is set, which changes OpenBLAS's kernel choice or "
          "blocking. Rerun as `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE <command>` "
          "(or pass --allow-openblas-env).", file=sys.stderr)
    raise SystemExit(2)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def llvm_host() -> str:
    """LLVM's name for the host CPU (what llvmlite code generation targets)."""
    try:
        import llvmlite.binding as llvm
        return llvm.get_host_cpu_name()
    except Exception as e:  # llvmlite missing or its native library failed to load
        return f"unknown ({type(e).__name__})"


def blas_libraries() -> list[str]:
    """One line per BLAS library loaded in this process, from threadpoolctl.

    ``architecture`` is the OpenBLAS kernel in use (e.g. SkylakeX, Haswell). Libraries are
    listed only once loaded: xlapy's scipy-openblas32 appears after its first dot.
    """
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["threadpoolctl is not installed: BLAS kernel unknown"]
    out = []
    for lib in threadpool_info():
        if lib.get("user_api") != "blas":
            continue
        out.append(f"{lib.get('prefix')} {lib.get('version')}, kernel "
                   f"{lib.get('architecture')}, {lib.get('num_threads')} threads "
                   f"({lib.get('threading_layer')}), {os.path.basename(lib.get('filepath', ''))}")
    return out or ["no BLAS library loaded yet"]


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)


def others_busy(seconds: float = 0.5) -> float | None:
    """Fraction of all cores busy during ``seconds`` while this process sleeps: the load other
    processes put on the machine right now (the load average also remembers our own past
    runs). None where /proc/stat does not exist."""
    try:
        idle0, total0 = _cpu_times()
        time.sleep(seconds)
        idle1, total1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return None
    total = total1 - total0
    return 1.0 - (idle1 - idle0) / total if total > 0 else None


def busy_text(busy: float | None) -> str:
    return "(not measured)" if busy is None else f"{100 * busy:.0f}%"


def machine_header(measure_busy: bool = True) -> dict:
    """CPU, cores, versions, BLAS kernels and anything that makes the numbers suspect
    (``measure_busy`` spends half a second measuring how busy other processes keep the CPU)."""
    from c_loops import C_THREADS, gcc_version, omp_wait_policy
    versions = {name: _version(dist) or "not installed" for name, dist in (
        ("numpy", "numpy"), ("jax", "jax"), ("jaxlib", "jaxlib"), ("llvmlite", "llvmlite"),
        ("xlapy", "xlapy"), ("scipy-openblas32", "scipy-openblas32"))}
    versions["gcc"] = gcc_version() or "not found"
    warnings = [f"{k}={v} is set" for k, v in openblas_env().items()]
    for var in ("OMP_NUM_THREADS", "XLA_FLAGS", "OPENBLAS_NUM_THREADS", "XLAPY_CACHE_DIR"):
        if var in os.environ:
            warnings.append(f"{var}={os.environ[var]} is set")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    load = os.getloadavg()
    busy = others_busy() if measure_busy else None
    if busy is not None and busy > 0.1:
        warnings.append(f"other processes keep {busy_text(busy)} of the {usable} cores busy: "
                        "timings are noisy (slower, and the multi-threaded columns more so)")
    return {"cpu": cpu_model(), "llvm_host_cpu": llvm_host(), "cores": os.cpu_count(),
            "usable_cores": usable, "load_average": load, "others_busy": busy,
            "c_threads": C_THREADS, "omp_wait_policy": omp_wait_policy(),
            "xlapy_disk_cache": os.environ.get("XLAPY_DISABLE_CACHE") != "1",
            "python": platform.python_version(), "versions": versions,
            "blas": blas_libraries(), "warnings": warnings}
