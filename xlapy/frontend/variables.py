"""``Variable``: mutable state that compiled functions read and assign (TF's ``tf.Variable``).

Eagerly a Variable holds a concrete array; ``assign`` replaces it. Inside ``jit`` the
first read of a Variable adds a parameter to the traced module (after the function's
own arguments); reads see the latest value assigned in the function; every assigned
Variable becomes an extra output that *aliases* its parameter, which the module header
shows as ``input_output_alias={ {k}: (p, {}, may-alias) }``. After the call the
Variable holds the new value. Assigning inside a ``cond`` branch or a loop body is
refused: return the value and assign it outside.

Trainable Variables are watched by ``GradientTape`` when read. As in TensorFlow, the
gradient does not flow through ``assign``: a read after an assign starts a new value.

Interrupts: a Variable's value is replaced, never written in place, and a compiled call
sets all the Variables it assigned at once (:func:`commit_values`) after it completed,
so an interrupted or failed call leaves every Variable at its old value. Eager code
that assigns several Variables can make them all-or-nothing with :func:`transaction`
(Keras's op-by-op training step does).
"""
from __future__ import annotations

import collections
import itertools
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from ..hlo.shape import Shape
from ..threadlocal import PerThreadList
from . import core
from .batching import BatchTrace
from .core import Array, convert, current_trace, new_ref, to_array
from .dtypes import is_float
from .source_info import located

_NAMES = itertools.count()
# The journals of this thread's open transactions, innermost last: (Variable, old value).
_JOURNALS = PerThreadList()
# The classes ``Variable(...)`` makes in this thread, innermost last (variable_class_scope).
_CLASSES = PerThreadList()
_AUTOCAST = PerThreadList()      # per thread: the dtype floating Variables are read as


@contextmanager
def autocast_scope(dtype: Any) -> Iterator[None]:
    """Inside the block, floating Variables (with ``autocast`` set) read as ``dtype``
    (``None``: as they are), as Keras's mixed precision reads a layer's f32 weights in
    its compute dtype; scopes nest (the innermost wins)."""
    with _AUTOCAST.pushed(None if dtype is None else np.dtype(dtype)):
        yield


@contextmanager
def variable_class_scope(cls: type) -> Iterator[None]:
    """``Variable(...)`` called in the block (on this thread) makes a ``cls``, a subclass
    of :class:`Variable` with the same constructor: how a distribution strategy's scope
    makes the variables created in it mirrored (TF's ``variable_creator_scope``)."""
    if not (isinstance(cls, type) and issubclass(cls, Variable)):
        raise InvalidArgumentError(f"variable_class_scope needs a subclass of Variable, got "
                                   f"{cls!r}")
    with _CLASSES.pushed(cls):
        yield


def commit_values(variables: Sequence["Variable"], values: Sequence[Array]) -> None:
    """Give ``variables[k]`` the value ``values[k]`` (concrete Arrays), all at once.

    The assignments run inside one C-level loop (``map(setattr, ...)`` drained by a
    ``deque``), where Python never checks for a pending signal, and the old values are
    kept alive until it is done (releasing one may run a finalizer, where an interrupt
    could land): a KeyboardInterrupt comes before or after the commit, never inside."""
    old = [v._value for v in variables]
    journals = _JOURNALS.items
    if journals:
        journals[-1].extend(zip(variables, old))
    collections.deque(map(setattr, variables, itertools.repeat("_value"), values), maxlen=0)
    del old


@contextmanager
def transaction() -> Iterator[None]:
    """All-or-nothing Variable assignments: if the block raises (an error, a
    KeyboardInterrupt), every Variable it assigned -- eagerly or through a compiled
    call -- gets back the value it had when the block started. Transactions nest (an
    inner one that completes is undone with its outer one) and are per thread."""
    journal: list[tuple[Variable, Array]] = []
    _JOURNALS.append(journal)
    try:
        yield
    except BaseException:
        _JOURNALS.pop()
        first: dict[int, tuple[Variable, Array]] = {}
        for var, value in journal:
            first.setdefault(id(var), (var, value))
        commit_values([v for v, _ in first.values()], [x for _, x in first.values()])
        raise
    _JOURNALS.pop()
    if _JOURNALS.items:
        _JOURNALS.items[-1].extend(journal)


@dataclass
class VariableSlot:
    """A Variable's state inside one jit trace."""

    variable: "Variable"
    param: Array
    current: Array
    assigned: bool = False


def _root(trace: Any) -> Any:
    """The outermost trace of ``trace``'s chain; None when that is an eager ``vmap``'s
    batch trace, which builds nothing (a Variable is read there as its concrete value)."""
    while trace.parent is not None:
        trace = trace.parent
    return None if isinstance(trace, BatchTrace) else trace


def trace_slots(trace: Any) -> dict[int, VariableSlot]:
    """The variable slots of a (root) trace, in first-read order."""
    slots = getattr(trace, "variable_slots", None)
    if slots is None:
        slots = {}
        trace.variable_slots = slots
    return slots


class Variable:
    """A mutable, named array (see the module docstring).

    ``Variable(initial_value, trainable=True, name=None, dtype=None)``; read it with
    ``v.value()`` / ``v.read_value()`` or use it directly in ``xlapy.numpy`` operations;
    change it with ``assign``, ``assign_add``, ``assign_sub``.
    """

    __array_priority__ = 200
    __hash__ = object.__hash__
    #: Whether reads inside :func:`autocast_scope` give the scope's dtype (Keras 3's
    #: ``Variable(autocast=...)``; e.g. moving statistics set it False).
    autocast = True

    def __new__(cls, *args: Any, **kwargs: Any) -> "Variable":
        classes = _CLASSES.items
        if classes and cls is Variable:         # a strategy's scope (variable_class_scope)
            cls = classes[-1]
        return object.__new__(cls)

    def __init__(self, initial_value: Any, trainable: bool = True, name: str | None = None,
                 dtype: Any = None, aggregation: Any = None) -> None:
        """``aggregation``: how a distribution strategy combines the replicas' assignments
        (``tf.VariableAggregation``; kept here, acted on by ``xlapy.tf.distribute``'s
        mirrored variables; None for a plain Variable)."""
        if callable(initial_value):
            initial_value = initial_value()
        value = to_array(initial_value, dtype)
        if value._value is None:
            raise InvalidArgumentError(located(
                "a Variable's initial value must be concrete, but it was computed inside a "
                "function being compiled",
                "create Variables outside compiled functions (e.g. build the model first)"))
        self._value = Array(value._value)
        self.trainable = bool(trainable)
        self.aggregation = aggregation
        self.name = name or f"Variable_{next(_NAMES)}"
        self.shape: tuple[int, ...] = value.shape
        self.dtype: np.dtype = value.dtype

    # ----- reading
    def read_value(self) -> Array:
        """The current value (traced inside ``jit``); watched by active tapes."""
        trace = current_trace()
        current = self._value if trace is None or _root(trace) is None else \
            self._slot(trace).current
        arr = new_ref(current, keep_gradient=False)      # each read is its own value
        tapes = core._TAPES.items
        if tapes:
            for tape in list(tapes):
                tape.on_variable_read(self, arr)
        if trace is None and core._RECORDERS.items:
            core._RECORDERS.items[-1].on_variable_read(self, arr)
        cast = _AUTOCAST.items[-1] if _AUTOCAST.items else None
        if cast is not None and self.autocast and is_float(arr.dtype) and arr.dtype != cast:
            return arr.astype(cast)        # differentiable: the gradient comes back as f32
        return arr

    value = read_value
    __xlapy_array__ = read_value

    def _slot(self, trace: Any) -> VariableSlot:
        root = _root(trace)
        slots = trace_slots(root)
        slot = slots.get(id(self))
        if slot is None:
            shape = Shape.array(as_element_type(self.dtype), self.shape)
            param = root.new_param(shape, name=self.name.replace("/", "_"),
                                   op_name=f"variable {self.name}")
            slot = VariableSlot(self, param, param)
            slots[id(self)] = slot
        return slot

    def numpy(self) -> np.ndarray:
        """The current value as a NumPy array (eager only)."""
        return np.array(self._value._value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.read_value(), dtype=dtype)

    # ----- writing
    def assign(self, value: Any) -> "Variable":
        """Set the value (same shape; converted to the Variable's dtype)."""
        v = to_array(value)
        if v.shape != self.shape:
            raise InvalidArgumentError(located(
                f"cannot assign a value of shape {v.shape} to Variable {self.name!r} of shape "
                f"{self.shape}"))
        if v.dtype != self.dtype:
            if not v.weak_type and not np.can_cast(v.dtype, self.dtype, "same_kind"):
                raise InvalidArgumentError(located(
                    f"cannot assign a value of dtype {v.dtype} to Variable {self.name!r} of "
                    f"dtype {self.dtype}"))
            v = convert(v, self.dtype)
        trace = current_trace()
        if trace is None:
            if v._value is None:
                raise InvalidArgumentError(located(
                    f"assigning a traced value to Variable {self.name!r} outside the function "
                    "being compiled"))
            journals = _JOURNALS.items
            if journals:
                journals[-1].append((self, self._value))
            if core._RECORDERS.items:
                core._RECORDERS.items[-1].on_variable_assign(self, v)
            self._value = Array(np.asarray(v._value))
            return self
        if isinstance(trace, BatchTrace):
            raise InvalidArgumentError(located(
                f"Variable {self.name!r} is assigned inside vmap",
                "return the new value from the vmapped function and assign outside"))
        if trace.parent is not None:
            raise InvalidArgumentError(located(
                f"Variable {self.name!r} is assigned inside a cond branch or a loop body; "
                "return the new value from it and assign outside"))
        slot = self._slot(trace)
        slot.current = Array(instr=trace.instr_for(v), trace=trace)
        slot.assigned = True
        return self

    def assign_add(self, delta: Any) -> "Variable":
        return self.assign(self.read_value() + delta)

    def assign_sub(self, delta: Any) -> "Variable":
        return self.assign(self.read_value() - delta)

    # ----- array-like behaviour
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self._value._value), separator=", ")
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype} {body}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.read_value(), name)

    def __len__(self) -> int:
        return self.shape[0]


def _delegate(name: str) -> Any:
    def method(self: Variable, *args: Any) -> Any:
        return getattr(self.read_value(), name)(*args)
    method.__name__ = name
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
            "xor", "lshift", "rshift"):
    setattr(Variable, f"__{_op}__", _delegate(f"__{_op}__"))
    setattr(Variable, f"__r{_op}__", _delegate(f"__r{_op}__"))
for _op in ("neg", "pos", "abs", "invert", "getitem", "lt", "le", "gt", "ge", "bool",
            "float", "int", "index"):
    setattr(Variable, f"__{_op}__", _delegate(f"__{_op}__"))

__all__ = ["Variable", "VariableSlot", "trace_slots", "commit_values", "transaction",
           "variable_class_scope", "autocast_scope"]
