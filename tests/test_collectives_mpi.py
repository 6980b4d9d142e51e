"""Collectives across processes: ``mpiexec -n 2`` (the launcher of the ``mpich`` wheel in the
virtual environment) runs ``mpi_collectives_worker.py``; every collective must match the
NumPy model, and a failing, missing or disagreeing rank must end the job with an error naming
the collective, within the timeout, never a hang."""
from __future__ import annotations

import pytest

from mpi_launch import launch, require_mpiexec

require_mpiexec()


def _launch(mode: str, timeout: float | None = None, devices: int = 1
            ) -> tuple[int, str, float]:
    return launch("mpi_collectives_worker.py",
                  [mode] + ([str(timeout)] if timeout is not None else []), devices)


def test_every_collective_across_two_processes():
    rc, out, _ = _launch("collectives")
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out


def test_two_processes_with_two_devices_each():
    rc, out, _ = _launch("mixed", devices=2)
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out


def test_a_failing_rank_ends_the_other():
    rc, out, elapsed = _launch("fail", timeout=60)
    assert rc != 0
    assert "rank 1 fails before the all-reduce" in out
    assert elapsed < 60


def test_a_rank_that_never_arrives_times_out_naming_the_collective():
    rc, out, elapsed = _launch("hang", timeout=3)
    assert rc != 0
    assert "all-reduce %a on process 0: timed out after 3 s" in out, out[-3000:]
    assert elapsed < 60


def test_a_killed_rank_ends_the_other_before_the_timeout():
    """MPI's launcher ends the job when a process dies: rank 0, waiting in a 4 MiB
    all-reduce for rank 1, does not wait out the 30 s timeout."""
    rc, out, elapsed = _launch("killed", timeout=30)
    assert rc != 0
    assert "rank 1 is killed" in out, out[-3000:]
    assert elapsed < 30


@pytest.mark.parametrize("mode, what", [("hang-cpu", "all-reduce %a"),
                                        ("hang-large", "all-reduce %a"),
                                        ("hang-permute", "collective-permute %a")])
def test_a_missing_rank_times_out_the_cpu_backends_collectives(mode, what):
    """The CPU backend's prepared MPI calls poll under the same timeout."""
    rc, out, elapsed = _launch(mode, timeout=3)
    assert rc != 0
    assert f"{what} on process 0: timed out after 3 s" in out, out[-3000:]
    assert elapsed < 60


def test_ranks_that_disagree_on_shapes_fail_naming_both():
    rc, out, _ = _launch("disagree", timeout=30)
    assert rc != 0
    assert "participants disagree at all-reduce %a" in out
    assert "(8,)" in out and "(4,)" in out


@pytest.mark.parametrize("mode, shapes", [("disagree-size", ("(1048576,)", "(4,)")),
                                          ("disagree-dtype", ("float32", "int32")),
                                          ("disagree-dtype-large", ("float32", "int32")),
                                          ("disagree-op", ("(8,)", "all-gather %a"))])
def test_cpu_all_reduces_that_disagree_fail_naming_both(mode, shapes):
    """The CPU backend's all-reduce starts its data call together with the agreement: a
    mismatch must still fail on both ranks, naming both sides, well before the timeout."""
    rc, out, elapsed = _launch(mode, timeout=30)
    assert rc != 0
    assert "participants disagree at all-" in out, out[-3000:]
    assert all(s in out for s in shapes), out[-3000:]
    assert elapsed < 30


@pytest.mark.parametrize("devices", [1, 2])
def test_pmap_across_two_processes(devices):
    """``mpi_pmap_worker.py``: each process maps over its own devices, the collectives span
    the run, the results equal the program on the whole global batch."""
    rc, out, _ = launch("mpi_pmap_worker.py", [], devices)
    assert rc == 0, out[-4000:]
    assert "OK 0" in out and "OK 1" in out


def test_the_all_reduce_benchmark_runs_with_its_breakdown():
    """``benchmarks/collectives.py --breakdown`` under ``mpiexec -n 2``: the table and the
    per-layer rows for one small size (its own check: xlapy's all-reduce sums right)."""
    import os
    import subprocess
    import sys

    from mpi_launch import MPIEXEC, TESTS
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent),
                                                        os.environ.get("PYTHONPATH", "")]),
               XLA_FLAGS="--xla_force_host_platform_device_count=1")
    proc = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable,
                           str(TESTS.parent / "benchmarks" / "collectives.py"), "--max-mib",
                           "0.004", "--reps", "3", "--breakdown"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert any(r[:1] == ["4096"] and len(r) == 6 for r in rows), proc.stdout
    breakdown = [r for r in rows if r[:1] == ["4096"] and len(r) == 5]
    assert breakdown and all(float(t) > 0 for t in breakdown[0][1:]), proc.stdout
    # MPICH reports persistent requests (the prepared calls' agreements) still allocated
    # when MPI_Finalize frees their communicator
    assert "persistent request" not in proc.stderr, proc.stderr
