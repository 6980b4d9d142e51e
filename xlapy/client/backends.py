"""Backend registry: a backend turns an HloModule into an executable.

A backend is registered under a platform name (``"interpreter"``, ``"cpu"``);
``get_backend(name)`` returns it. Names are case-insensitive, as in XLA's tools
(``--platform=CPU``, ``--platform=Interpreter``).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Collection, Protocol, Sequence

from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule


class Executable(Protocol):
    """A compiled module: ``execute(args)`` returns the root value (tuples as Python tuples).

    ``execute(args, owned)`` also accepts the numbers of donated parameters whose arrays
    the caller hands over (it never reads them again): a backend may then write the
    aliased output into them in place (the CPU backend does; the interpreter ignores it).
    """

    module: HloModule

    def execute(self, args: Sequence[Any], owned: Collection[int] = ()) -> Any: ...


class Backend(Protocol):
    name: str

    def compile(self, module: HloModule) -> Executable: ...


_FACTORIES: dict[str, Callable[[], Backend]] = {}
_INSTANCES: dict[str, Backend] = {}
_INSTANCES_LOCK = threading.Lock()       # one instance per name, whichever thread asks first
_ALIASES = {"host": "cpu", "interpreter": "interpreter"}


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``factory()`` the backend for platform ``name``."""
    _FACTORIES[name.lower()] = factory
    _INSTANCES.pop(name.lower(), None)


def available_backends() -> list[str]:
    return sorted(_FACTORIES)


def get_backend(name: str) -> Backend:
    """The backend registered under ``name``; InvalidArgumentError lists the available ones."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in _FACTORIES:
        raise InvalidArgumentError(
            f"unknown or unavailable backend {name!r}; available: {', '.join(available_backends())}")
    backend = _INSTANCES.get(key)
    if backend is None:
        with _INSTANCES_LOCK:
            backend = _INSTANCES.get(key)
            if backend is None:
                backend = _INSTANCES[key] = _FACTORIES[key]()
    return backend


class InterpreterExecutable:
    """The reference interpreter bound to one module."""

    def __init__(self, module: HloModule) -> None:
        from ..backends.interpreter import Evaluator
        self.module = module
        # One evaluator per executable: instruction orders are computed once, and the
        # stateful rng op advances across executions as XLA's does.
        self._evaluator = Evaluator(module)

    def execute(self, args: Sequence[Any], owned: Collection[int] = ()) -> Any:
        """Evaluate the module (``owned`` is accepted and ignored: arguments are never
        written)."""
        return self._evaluator.run(args)


class InterpreterBackend:
    """Runs HLO on the NumPy reference interpreter (no optimization passes)."""

    name = "interpreter"

    def compile(self, module: HloModule) -> InterpreterExecutable:
        """Verify ``module`` (``VerificationError`` names the instruction) and bind it."""
        from ..hlo.verifier import verify_module
        verify_module(module, unique_names="computation")
        return InterpreterExecutable(module)


register_backend("interpreter", InterpreterBackend)


def _cpu_backend() -> Backend:
    from ..backends.cpu import CpuBackend     # imports llvmlite: only when first used
    return CpuBackend()


register_backend("cpu", _cpu_backend)
