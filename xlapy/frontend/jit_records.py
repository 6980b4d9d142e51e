"""The records behind ``xlapy.jit``'s cache (``jit.py``): a call's cache key (pytree
structure, per-leaf avals, static values, replica count), the cached entry of one compile,
the compile records ``cache_info()`` reports, and how a leaf becomes an aval."""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from ..hlo.ir import HloModule
from .abstract import ShapeDtypeStruct, abstract_leaf
from .core import Array, to_array
from .jit_reasons import const_text
from .jit_signature import CallBinding
from .pytree import TreeDef, tree_unflatten
from .variables import Variable


@dataclass(frozen=True)
class _Key:
    treedef: TreeDef
    avals: tuple           # per leaf: (shape, dtype, weak) or ("const", value bytes)
    statics: tuple         # (name, value) of static arguments
    replicas: int = 1      # replicas that call it together (``replicas.py``)


@dataclass
class CompileRecord:
    """One compilation: why it happened and the argument types it was for."""

    reason: str
    signature: str


@dataclass
class CacheInfo:
    hits: int = 0
    misses: int = 0
    compiles: list[CompileRecord] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        return [c.reason for c in self.compiles]


@dataclass
class _Entry:
    module: HloModule
    executable: Any
    out_tree: TreeDef
    out_weak: list[bool]
    param_leaves: list[int]      # flat leaf index of each HLO parameter
    variables: list[Variable] = field(default_factory=list)   # parameters after the leaves
    assigned: list[Variable] = field(default_factory=list)    # outputs after the results
    used: int = 0                                             # recency (jit_cache.CLOCK)
    replicas: int = 1                                         # module's replica_count
    n_results: int = field(init=False)                        # outputs of the executable
    unflatten: Callable[[list[Array]], Any] = field(init=False)
    resident: bool = field(init=False)      # results stay on a device (execute_resident)
    donates: bool = False       # its fast-path calls donate device Arrays (resident.py)

    def __post_init__(self) -> None:
        self.n_results = len(self.out_weak) + len(self.assigned)
        self.unflatten = _unflattener(self.out_tree)
        self.resident = hasattr(self.executable, "execute_resident")


def _unflattener(treedef: TreeDef) -> Callable[[list[Array]], Any]:
    """``tree_unflatten(treedef, ·)``, shortcut for one array and a tuple of arrays."""
    if treedef.is_leaf:
        return lambda outs: outs[0]
    if treedef.kind == "tuple" and all(c.is_leaf for c in treedef.children):
        return tuple
    return functools.partial(tree_unflatten, treedef)


@dataclass
class _Args:
    """One call's arguments split into static values and array leaves."""

    statics: tuple
    leaves: list[Any]
    paths: list[str]
    treedef: TreeDef
    dyn_names: list[str]
    binding: CallBinding


# Argument values that can never be traced are static without being named so (as in
# TensorFlow's ``tf.function``): strings, bytes, enum members.
_ALWAYS_STATIC = (str, bytes, enum.Enum)


def _leaf_aval(x: Any, path: str) -> tuple:
    if isinstance(x, Array):
        return (x.shape, x.dtype, x.weak_type)
    if isinstance(x, Variable):
        return ("var", id(x), x.shape, x.dtype)
    if isinstance(x, ShapeDtypeStruct):         # lower() on types only
        return abstract_leaf(x)
    try:
        a = to_array(x)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"argument {path!r} of type {type(x).__name__} is not an array; mark it static "
            "with static_argnums / static_argnames") from None
    return (a.shape, a.dtype, a.weak_type)


def _aval_text(aval: tuple) -> str:
    if aval[0] == "const":
        return const_text(aval[1])
    if aval[0] == "var":
        return f"Variable {as_element_type(aval[3]).name}[{','.join(map(str, aval[2]))}]"
    shape, dtype, weak = aval
    return f"{as_element_type(dtype).name}[{','.join(map(str, shape))}]" + (
        "{weak}" if weak else "")


def _const_value(x: Any) -> Any:
    v = np.asarray(x)
    return v.item() if v.ndim == 0 else (v.shape, str(v.dtype), v.tobytes())
