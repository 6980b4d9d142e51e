"""Several processes: ``xlapy.distributed.initialize()`` joins an MPI launch.

Launch the same script once per process with MPI's launcher::

    mpiexec -n 2 python train.py

(``mpiexec`` is in the virtual environment's ``bin`` once the ``mpich`` wheel is installed).
:func:`initialize` detects the launch from the environment MPI's launchers set
(``PMI_RANK``/``PMI_SIZE`` from MPICH's Hydra, ``OMPI_COMM_WORLD_RANK``/``_SIZE`` from Open MPI,
``PMIX_RANK``), or takes ``num_processes``/``process_id`` as JAX's does and checks them against
MPI. Afterwards :func:`xlapy.process_index` / :func:`xlapy.process_count` and
:func:`xlapy.devices` describe the whole job, and a module with one participant per process
runs with :func:`xlapy.run_hlo`, each process passing its own devices' arguments; collectives go
through MPI (``backends/communicator_mpi.py``), or, with several devices per process
(``--xla_force_host_platform_device_count``), through shared memory within a process and MPI
between processes (``backends/communicator_mixed.py``).

A process that raises an uncaught exception after :func:`initialize` logs it and calls
``MPI_Abort``, so the other processes end too instead of waiting in a collective.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

from .client.devices import PROCESS
from .errors import InvalidArgumentError

log = logging.getLogger("xlapy.distributed")

#: Seconds between printing an uncaught exception and ``MPI_Abort``.
ABORT_GRACE_SECONDS = 0.5

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


def mpi_environment() -> tuple[int, int] | None:
    """``(rank, size)`` when this process was started by an MPI launcher, else None."""
    rank = next((os.environ[v] for v in _RANK_VARS if v in os.environ), None)
    size = next((os.environ[v] for v in _SIZE_VARS if v in os.environ), None)
    if rank is None:
        return None
    try:
        return int(rank), int(size) if size is not None else -1
    except ValueError:
        return None


def is_initialized() -> bool:
    """Whether :func:`initialize` has joined a multi-process run."""
    return PROCESS.communicator is not None


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, timeout: float | None = None) -> None:
    """Join the processes of an MPI launch (see the module docstring).

    ``num_processes``/``process_id``, when given, must match what MPI reports;
    ``coordinator_address`` is accepted for JAX compatibility (MPI needs none).
    ``timeout`` (seconds) bounds each collective's wait for the other processes.
    Without an MPI launch and with ``num_processes`` absent or 1 this is a single-process
    run and nothing changes.
    """
    if is_initialized():
        raise InvalidArgumentError("xlapy.distributed.initialize() was already called")
    env = mpi_environment()
    if env is None and (num_processes is None or num_processes == 1):
        log.info("no MPI launch detected: running as a single process")
        return
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise InvalidArgumentError(
            "a multi-process run needs mpi4py and an MPI library: pip install mpi4py mpich, "
            "then launch with mpiexec -n N python script.py") from e
    from .backends.communicator_mpi import MpiCommunicator
    from .client.devices import local_device_count
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if num_processes is not None and num_processes != size:
        raise InvalidArgumentError(f"num_processes={num_processes}, but MPI started {size} "
                                   f"processes")
    if process_id is not None and process_id != rank:
        raise InvalidArgumentError(f"process_id={process_id}, but this is MPI rank {rank}")
    if coordinator_address is not None:
        log.info("coordinator_address=%s ignored: MPI connects the processes",
                 coordinator_address)
    PROCESS.index, PROCESS.count = rank, size
    local = local_device_count()
    if local > 1:
        from .backends.communicator_mixed import MixedCommunicator
        PROCESS.communicator = MixedCommunicator(comm, local, timeout)
    else:
        PROCESS.communicator = MpiCommunicator(comm, timeout)
    _install_abort_hook(comm)
    log.info("process %d of %d joined the MPI run", rank, size)


def shutdown() -> None:
    """Leave the multi-process run (this process runs alone afterwards)."""
    PROCESS.index, PROCESS.count, PROCESS.communicator = 0, 1, None


def _install_abort_hook(comm: Any) -> None:
    previous = sys.excepthook

    def hook(kind, value, tb) -> None:
        # the one-line reason first: MPI_Abort may end the process before mpiexec has
        # forwarded all of a long traceback
        sys.stderr.write(f"{kind.__name__}: {value}\n")
        sys.stderr.flush()
        previous(kind, value, tb)
        sys.stderr.flush()
        if PROCESS.communicator is not None and PROCESS.count > 1:
            time.sleep(ABORT_GRACE_SECONDS)     # let mpiexec forward what was written
            comm.Abort(1)
    sys.excepthook = hook


__all__ = ["initialize", "shutdown", "is_initialized", "mpi_environment"]
