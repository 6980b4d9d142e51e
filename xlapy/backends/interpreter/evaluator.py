"""The reference interpreter's core: walks a computation and dispatches each opcode.

Values are NumPy arrays (0-d for scalars) of the element type's NumPy dtype,
Python tuples for tuple shapes, and :data:`TOKEN` for tokens. Each opcode's
semantics live in one handler registered with :func:`handler` in the family
files of this package (``elementwise.py``, ``data_movement.py``, ...).

A handler is ``fn(ev, instr, operands) -> value``. Handlers of elementwise ops
must work on operands of any shape (they only use ``instr.shape.element_type``),
because scalar computations such as reducers and comparators are evaluated on
whole arrays at once by :meth:`Evaluator.call_elementwise`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...errors import ExecutionError, InvalidArgumentError, UnimplementedError
from ...hlo.ir import HloComputation, HloInstruction, HloModule
from ...hlo.shape import Shape


class _Token:
    __slots__ = ()

    def __repr__(self) -> str:
        return "token"


TOKEN = _Token()

Handler = Callable[["Evaluator", HloInstruction, list], Any]
HANDLERS: dict[str, Handler] = {}


def handler(*opcodes: str) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the interpreter semantics of ``opcodes``."""
    def register(fn: Handler) -> Handler:
        for op in opcodes:
            HANDLERS[op] = fn
        return fn
    return register


def describe(instr: HloInstruction) -> str:
    """``%name = shape opcode`` plus the computation, for error messages."""
    where = f" in computation {instr.parent.name}" if instr.parent is not None else ""
    return f"%{instr.name} = {instr.shape} {instr.opcode}(...){where}"


class Evaluator:
    """Evaluates computations of one module on NumPy values.

    ``rng_seed`` seeds the legacy stateful ``rng`` op; ``max_while_iterations``
    guards against runaway loops (None = unlimited). An evaluator caches each
    computation's instruction order, so the module must not change while it is in
    use (an executable keeps one evaluator for its module's lifetime).
    """

    def __init__(self, module: HloModule | None = None, rng_seed: int = 42,
                 max_while_iterations: int | None = None) -> None:
        self.module = module
        self.rng_seed = rng_seed
        self._rng: np.random.Generator | None = None
        self.rng_state = 0          # rng-get-and-update-state counter
        self.max_while_iterations = max_while_iterations
        self._orders: dict[int, list[HloInstruction]] = {}

    @property
    def rng(self) -> np.random.Generator:
        """The generator of the stateful ``rng`` op (created on first use)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.rng_seed)
        return self._rng

    def run(self, args: Sequence[Any]) -> Any:
        """Run the module's entry computation on ``args``."""
        if self.module is None or self.module.entry is None:
            raise InvalidArgumentError("module has no entry computation")
        return self.call(self.module.entry, list(args))

    def call(self, comp: HloComputation, args: Sequence[Any]) -> Any:
        """Evaluate ``comp`` with ``args`` bound to its parameters; returns the root's value."""
        if len(args) != len(comp.parameters):
            raise InvalidArgumentError(
                f"computation {comp.name} takes {len(comp.parameters)} arguments, got {len(args)}")
        order = self._orders.get(id(comp))
        if order is None:
            order = self._orders[id(comp)] = comp.post_order()
        env: dict[int, Any] = {}
        for instr in order:
            if instr.opcode == "parameter":
                env[id(instr)] = args[instr.parameter_number]
                continue
            env[id(instr)] = self.evaluate(instr, [env[id(o)] for o in instr.operands])
        return env[id(comp.root)]

    def evaluate(self, instr: HloInstruction, operands: list) -> Any:
        """The value of one instruction given its operands' values."""
        fn = HANDLERS.get(instr.opcode)
        if fn is None:
            raise UnimplementedError(
                f"the interpreter does not execute opcode '{instr.opcode}': {describe(instr)}")
        try:
            return fn(self, instr, operands)
        except (ExecutionError, InvalidArgumentError, UnimplementedError):
            raise
        except FloatingPointError as e:  # numpy errstate raise mode: not expected
            raise ExecutionError(f"{describe(instr)}: {e}") from e

    def call_elementwise(self, comp: HloComputation, *arrays: Any) -> Any:
        """Evaluate a scalar computation elementwise over equally shaped arrays at once."""
        return self.call(comp, list(arrays))


def evaluate_module(module: HloModule, args: Sequence[Any], **options) -> Any:
    """Run ``module``'s entry computation on ``args`` (NumPy values) with the interpreter."""
    return Evaluator(module, **options).run(args)


def zeros_of(shape: Shape) -> Any:
    """A zero value of any shape (tuples recursively; tokens as TOKEN)."""
    if shape.is_tuple:
        return tuple(zeros_of(s) for s in shape.tuple_shapes)
    if shape.is_token:
        return TOKEN
    return np.zeros(shape.dims, dtype=shape.dtype)


def as_value(x: Any, shape: Shape) -> Any:
    """Coerce a host value to the interpreter's value for ``shape`` (dtype and dims checked)."""
    if shape.is_tuple:
        if not isinstance(x, (tuple, list)) or len(x) != len(shape.tuple_shapes):
            raise InvalidArgumentError(f"expected a tuple of {len(shape.tuple_shapes)} values "
                                       f"for shape {shape}")
        return tuple(as_value(v, s) for v, s in zip(x, shape.tuple_shapes))
    if shape.is_token:
        return TOKEN
    a = np.asarray(x)
    if a.dtype != shape.dtype:
        a = a.astype(shape.dtype)
    if tuple(a.shape) != shape.dims:
        raise InvalidArgumentError(f"argument of shape {a.shape} does not match {shape}")
    return a


@handler("constant")
def _constant(ev: Evaluator, instr: HloInstruction, operands: list) -> Any:
    return instr.literal


CustomCall = Callable[["Evaluator", HloInstruction, list], Any]
CUSTOM_CALLS: dict[str, CustomCall] = {}


def custom_call(*targets: str) -> Callable[[CustomCall], CustomCall]:
    """Register ``fn(ev, instr, operands)`` as the semantics of ``custom_call_target`` names."""
    def register(fn: CustomCall) -> CustomCall:
        for t in targets:
            CUSTOM_CALLS[t] = fn
        return fn
    return register
