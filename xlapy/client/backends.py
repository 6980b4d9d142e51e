"""Backend registry: a backend turns an HloModule into an executable.

Every folder ``xlapy/backends/<name>/`` with a ``pipeline.py`` is a backend
(:func:`xlapy.backends.target.get_target`); its target creates the backend object the
first time ``get_backend(name)`` asks for it. :func:`register_backend` puts another
factory under a name (tests, or a backend built with other settings). Names are
case-insensitive, as in XLA's tools (``--platform=CPU``, ``--platform=Interpreter``).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Collection, Protocol, Sequence

from ..backends.target import canonical_name, get_target, target_names
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


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``factory()`` the backend for platform ``name``."""
    key = canonical_name(name)
    _FACTORIES[key] = factory
    _INSTANCES.pop(key, None)


def available_backends() -> list[str]:
    return sorted(set(_FACTORIES) | set(target_names()))


def get_backend(name: str) -> Backend:
    """The backend registered under ``name``, else the one its backend folder's target
    creates; InvalidArgumentError lists the available ones."""
    key = canonical_name(name)
    if key not in _FACTORIES:
        try:
            target = get_target(key)
        except InvalidArgumentError:
            raise InvalidArgumentError(f"unknown or unavailable backend {name!r}; available: "
                                       f"{', '.join(available_backends())}") from None
        _FACTORIES[key] = target.create_backend
    backend = _INSTANCES.get(key)
    if backend is None:
        with _INSTANCES_LOCK:
            backend = _INSTANCES.get(key)
            if backend is None:
                backend = _INSTANCES[key] = _FACTORIES[key]()
    return backend


def __getattr__(name: str) -> Any:
    # the interpreter's classes, imported on first use: importing the interpreter loads
    # every handler and shape rule, which ``import xlapy`` does not need
    if name in ("InterpreterBackend", "InterpreterExecutable"):
        from ..backends.interpreter import runtime
        return getattr(runtime, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Backend", "Executable", "available_backends", "get_backend", "register_backend"]
