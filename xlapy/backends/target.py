"""``Target``: what a backend tells the compiler about itself, and how backends are found.

A backend is one folder, ``xlapy/backends/<name>/``, and nothing outside it:

- ``pipeline.py``: the backend's HLO pass pipeline as one readable list (in the style of
  XLA's ``CpuCompiler::RunHloPasses``) and ``TARGET``, an instance of a :class:`Target`
  subclass. Its presence is what makes ``<name>`` a backend: :func:`get_target` imports
  ``xlapy.backends.<name>.pipeline`` and returns its ``TARGET``; ``xlapy.optimize(m,
  "<name>")``, ``get_backend("<name>")`` and ``jit(..., backend="<name>")`` then work.
  A folder that serves several backend names (a device and its simulator) sets
  ``TARGETS = {"<name>": ..., "<name>_sim": ...}`` instead of (or besides) ``TARGET``;
- the emitters (HLO to the backend's code) and the runtime (a backend object with
  ``name`` and ``compile(module) -> executable``; see ``xlapy.client.backends.Backend``),
  returned by :meth:`Target.create_backend`.

What :func:`xlapy.backends.compile.optimize_module` does for every backend and caller:
clone the module, run ``target.pipeline(ctx)`` on the clone, ``target.assign_buffers``,
and write XLA's dumps. A backend's compiler calls it too, then emits code from the
optimized module and its buffer assignment.

Passes sit below the backends and never import them. A pass that needs a backend's rule
(what its emitters accept) takes a *rules* object in its constructor, typed by a protocol
in :mod:`xlapy.passes.backend_rules`; the target implements the protocol and its
``pipeline`` hands the object to the pass. The CPU target's ``row_reduction_rules`` (the
reduction emitter's row-cache size and memory order, for ``ReductionConsumerFusion``) is
the example: a GPU target that runs that pass gives its own.
"""
from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule
from ..passes.buffer_assignment import BufferAssignment, assign_buffers
from ..passes.context import PassContext
from ..passes.pipeline import HloPassPipeline

# Other names of backends (XLA's platform names).
ALIASES = {"host": "cpu"}


class Target(ABC):
    """One backend's compiler-facing description (module docstring).

    Subclasses set :attr:`name` (the folder's name) and implement :meth:`pipeline` and
    :meth:`create_backend`; :meth:`assign_buffers` may be overridden by a backend whose
    buffers follow other rules.
    """

    name: ClassVar[str]

    @abstractmethod
    def pipeline(self, ctx: PassContext) -> HloPassPipeline:
        """The HLO pass pipeline this backend runs before code generation, for a
        compilation with context ``ctx`` (its options may select optional passes); built
        with ``HloPassPipeline(name, passes, context=ctx)``, so that running it without a
        context uses ``ctx``. The pipeline ends with the module ready for
        :meth:`assign_buffers`."""

    def assign_buffers(self, module: HloModule) -> BufferAssignment:
        """The last step of compiling for this backend before code generation: the
        buffer assignment of the optimized module (XLA's ``BufferAssigner``)."""
        return assign_buffers(module)

    @abstractmethod
    def create_backend(self) -> Any:
        """A new runtime backend object (``name``, ``compile(module) -> executable``)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def _folders() -> list[str]:
    """The folders of ``xlapy/backends`` that hold a ``pipeline.py``."""
    root = Path(__file__).resolve().parent
    return sorted(p.parent.name for p in root.glob("*/pipeline.py"))


def _targets_of(folder: str) -> dict[str, Target]:
    """The targets a backend folder's ``pipeline.py`` defines, by backend name."""
    module = importlib.import_module(f"{__package__}.{folder}.pipeline")
    targets = dict(getattr(module, "TARGETS", {}))
    if hasattr(module, "TARGET"):
        targets.setdefault(folder, module.TARGET)
    for key, target in targets.items():
        if not isinstance(target, Target):
            raise InvalidArgumentError(f"xlapy/backends/{folder}/pipeline.py's target "
                                       f"{key!r} is {type(target).__name__}, not a Target")
    return targets


def target_names() -> list[str]:
    """The backends: each backend folder's name, and the other names its ``TARGETS``
    gives (this imports every folder's ``pipeline.py``)."""
    return sorted({name for folder in _folders() for name in _targets_of(folder)})


def canonical_name(name: str) -> str:
    """``name`` lower-cased with aliases resolved (``"Host"`` -> ``"cpu"``)."""
    key = name.lower()
    return ALIASES.get(key, key)


def get_target(name: str) -> Target:
    """The :class:`Target` of backend ``name`` (case-insensitive; aliases allowed);
    InvalidArgumentError lists the known backends."""
    key = canonical_name(name)
    # the folder of that name first: in the common case only it is imported
    for folder in sorted(_folders(), key=lambda f: f != key):
        targets = _targets_of(folder)
        if key in targets:
            return targets[key]
    raise InvalidArgumentError(f"no optimization pipeline for backend {name!r} (known: "
                               f"{', '.join(target_names())})")


__all__ = ["ALIASES", "Target", "canonical_name", "get_target", "target_names"]
