"""``pmap`` across processes: ``mpiexec -n 2`` runs ``mpi_pmap_worker.py`` with one and with
two devices per process; each process maps over its own devices and the collectives span
the whole run (MPI between processes, shared memory within one)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
TESTS = Path(__file__).resolve().parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
if not MPIEXEC.exists():
    pytest.skip(f"no mpiexec next to {sys.executable} (install the mpich wheel)",
                allow_module_level=True)


@pytest.mark.parametrize("devices", [1, 2])
def test_pmap_across_two_processes(devices):
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), str(TESTS),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable,
                           str(TESTS / "mpi_pmap_worker.py")], env=env, cwd=TESTS,
                          capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "OK 0" in out and "OK 1" in out
