"""Launching a test worker as 2 MPI processes with the ``mpiexec`` of the ``mpich`` wheel (in
the virtual environment's ``bin``, next to the interpreter; installed by the test extra).
A test module calls :func:`require_mpiexec` first: it skips when mpi4py or mpiexec is
missing."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def require_mpiexec() -> None:
    """Skip the calling test module unless mpi4py and ``mpiexec`` are installed."""
    pytest.importorskip("mpi4py")
    if not MPIEXEC.exists():
        pytest.skip(f"no mpiexec next to {sys.executable} (install the mpich wheel)",
                    allow_module_level=True)


def launch(worker: str, args: list[str], devices: int = 1, hard_timeout: float = 120
           ) -> tuple[int, str, float]:
    """``mpiexec -n 2 python tests/<worker> <args>`` with ``devices`` CPU devices per
    process; returns the exit code, stdout and stderr together, and the seconds it took
    (``hard_timeout`` bounds the whole job)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), str(TESTS),
                                         env.get("PYTHONPATH", "")])
    cmd = [str(MPIEXEC), "-n", "2", sys.executable, str(TESTS / worker)] + list(args)
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=TESTS, capture_output=True, text=True,
                          timeout=hard_timeout)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start
