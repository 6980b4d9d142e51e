"""The ``Optimizer`` base class: state as Variables, clipping, weight decay, schedules.

Every piece of optimizer state is a non-trainable :class:`~xlapy.Variable`:
``iterations`` (int32), the ``learning_rate`` (unless it is a schedule) and one set of
slots per trained variable (momenta, second moments), created on the first
``apply_gradients`` (or by ``build``). So ``apply_gradients`` inside a compiled train
step reads and writes them through input/output aliasing, and changing
``optimizer.learning_rate = 1e-4`` between steps does not recompile.

The learning rate used at a step is ``schedule(iterations)`` or the Variable's value,
divided by ``1 + decay * iterations`` when the legacy ``decay`` argument is set (the
inverse-time decay of TensorFlow 2's Keras optimizers, ``lr=`` is accepted as the old
spelling of ``learning_rate``). Gradients are clipped first (``clipvalue`` elementwise,
``clipnorm`` per variable, ``global_clipnorm`` over all), then ``weight_decay`` shrinks
each variable by ``variable * weight_decay * lr`` (decoupled, as in Keras 3), then the
subclass's ``update_step`` applies the algorithm with the rate of :meth:`Optimizer.step_rate`,
and finally each updated variable's constraint (``kernel_constraint=`` and friends, see
:mod:`xlapy.keras.constraints`) projects it, as in Keras 3. Work shared by every
variable (the rate, the decay factor) is done once per step.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ... import numpy as xnp
from ...errors import InvalidArgumentError
from ...frontend.autodiff import GradientTape
from ...frontend.core import to_array
from ...frontend.sharded_step import variable_like
from ...frontend.variables import Variable
from .. import backend
from ..constraints import variable_constraint
from .schedules import LearningRateSchedule


class Optimizer:
    """Base class of optimizers (see the module docstring)."""

    #: The name when none is given (Keras 3's defaults; else the class name in snake case).
    default_name: str | None = None

    def __init__(self, learning_rate: Any = 0.001, name: str | None = None,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 decay: float = 0.0, lr: Any = None, **kwargs: Any) -> None:
        if kwargs:
            raise InvalidArgumentError(f"{type(self).__name__}: unexpected keyword arguments "
                                       f"{sorted(kwargs)}")
        if lr is not None:
            learning_rate = lr
        if clipnorm is not None and global_clipnorm is not None:
            raise InvalidArgumentError(f"{type(self).__name__}: pass at most one of clipnorm "
                                       "and global_clipnorm")
        self.name = name or backend.unique_name(self.default_name or
                                                backend.snake_case(type(self).__name__))
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self.decay = float(decay)
        self.iterations = Variable(np.zeros((), np.int32), trainable=False,
                                   name=f"{self.name}/iterations")
        self._schedule: LearningRateSchedule | Callable[[Any], Any] | None = None
        self._lr_var: Variable | None = None
        self._set_learning_rate(learning_rate)
        self._slots: dict[int, dict[str, Variable]] = {}
        self._slot_order: list[Variable] = []
        # the replicas of a data-parallel step (threads) may build at the same time
        self._build_lock = threading.Lock()

    # ----- learning rate
    def _set_learning_rate(self, value: Any) -> None:
        if isinstance(value, LearningRateSchedule) or (callable(value)
                                                       and not isinstance(value, Variable)):
            self._schedule = value
            return
        self._schedule = None
        v = float(np.asarray(value.numpy() if isinstance(value, Variable) else value))
        if self._lr_var is None:
            self._lr_var = Variable(np.float32(v), trainable=False,
                                    name=f"{self.name}/learning_rate")
        else:
            self._lr_var.assign(np.float32(v))

    @property
    def learning_rate(self) -> Any:
        """The schedule, or the learning-rate Variable (assign a float to change it)."""
        return self._schedule if self._schedule is not None else self._lr_var

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self._set_learning_rate(value)

    lr = learning_rate

    def current_learning_rate(self) -> Any:
        """The rate the next step uses (schedule and legacy ``decay`` applied)."""
        step = self.iterations.read_value()
        if self._schedule is not None:
            lr = xnp.asarray(self._schedule(step)).astype(np.float32)
        else:
            lr = self._lr_var.read_value()
        if self.decay:
            lr = lr / (1.0 + self.decay * step.astype(np.float32))
        return lr

    # ----- state
    def add_slot(self, var: Variable, name: str, initial: float = 0.0) -> Variable:
        """A Variable shaped like ``var`` holding per-variable state ``name``."""
        slot = variable_like(var, np.full(var.shape, initial, var.dtype), trainable=False,
                             name=f"{self.name}/{var.name}/{name}")     # split like ``var``
        self._slots.setdefault(id(var), {})[name] = slot
        self._slot_order.append(slot)
        return slot

    def get_slot(self, var: Variable, name: str) -> Variable:
        try:
            return self._slots[id(var)][name]
        except KeyError:
            raise InvalidArgumentError(f"{type(self).__name__} has no slot {name!r} for "
                                       f"variable {var.name!r}") from None

    def create_slots(self, var: Variable) -> None:
        """Create the state of one trained variable (override in algorithms)."""

    def build(self, var_list: Sequence[Variable]) -> None:
        """Create the slots of every variable in ``var_list`` that has none yet (once, when
        several threads ask at the same time)."""
        with self._build_lock:
            for var in var_list:
                if id(var) not in self._slots:
                    self._slots[id(var)] = {}
                    self.create_slots(var)

    @property
    def variables(self) -> list[Variable]:
        """``iterations``, the learning-rate Variable (if any) and every slot."""
        out = [self.iterations] + ([self._lr_var] if self._lr_var is not None and
                                   self._schedule is None else [])
        return out + list(self._slot_order)

    # ----- updates
    def _clip(self, grads: list[Any]) -> list[Any]:
        if self.clipvalue is not None:
            c = float(self.clipvalue)
            grads = [xnp.clip(g, -c, c) for g in grads]
        if self.clipnorm is not None:
            c = float(self.clipnorm)
            grads = [g * (c / xnp.maximum(xnp.sqrt(xnp.sum(xnp.square(g))), c)) for g in grads]
        if self.global_clipnorm is not None:
            c = float(self.global_clipnorm)
            norm = xnp.sqrt(sum(xnp.sum(xnp.square(g)) for g in grads))
            grads = [g * (c / xnp.maximum(norm, c)) for g in grads]
        return grads

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Variable]]) -> Variable:
        """Apply one step to each ``(gradient, variable)``; ``None`` gradients are skipped.
        Returns ``iterations``."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise InvalidArgumentError(f"{type(self).__name__}.apply_gradients: expected "
                                           f"Variables, got {type(v).__name__}")
        if not pairs:
            raise InvalidArgumentError(f"{type(self).__name__}.apply_gradients: no gradients "
                                       "were provided for any variable")
        variables = [v for _, v in pairs]
        grads = []
        for g, v in pairs:
            g = to_array(g)
            if tuple(g.shape) != tuple(v.shape):
                raise InvalidArgumentError(f"gradient of shape {g.shape} for variable "
                                           f"{v.name!r} of shape {tuple(v.shape)}")
            grads.append(g.astype(v.dtype) if g.dtype != v.dtype else g)
        self.build(variables)
        grads = self._clip(grads)
        lr = self.current_learning_rate()
        shrink = self.weight_decay * lr if self.weight_decay else None
        rate = self.step_rate(lr)
        for g, v in zip(grads, variables):
            if shrink is not None:
                v.assign(v.read_value() - v.read_value() * shrink)
            self.update_step(g, v, rate)
        for v in variables:
            constraint = variable_constraint(v)
            if constraint is not None:
                v.assign(constraint(v.read_value()))
        self.iterations.assign(self.iterations.read_value() + 1)
        return self.iterations

    def scale_loss(self, loss: Any) -> Any:
        """The loss a train step differentiates: ``loss`` itself here; a
        :class:`~xlapy.keras.optimizers.LossScaleOptimizer` multiplies it by its scale."""
        return loss

    def step_rate(self, learning_rate: Any) -> Any:
        """The rate :meth:`update_step` gets this step, computed once for all variables:
        ``learning_rate`` itself unless the algorithm folds a per-step factor into it
        (Adam's bias correction)."""
        return learning_rate

    def apply(self, grads: Sequence[Any], trainable_variables: Sequence[Variable]) -> Variable:
        """Keras 3's spelling: ``apply(grads, variables)``."""
        return self.apply_gradients(zip(grads, trainable_variables))

    def minimize(self, loss: Callable[[], Any], var_list: Sequence[Variable]) -> Variable:
        """Differentiate ``loss()`` with respect to ``var_list`` and apply one step."""
        with GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, list(var_list))
        return self.apply_gradients(zip(grads, var_list))

    def update_step(self, gradient: Any, variable: Variable, learning_rate: Any) -> None:
        raise InvalidArgumentError(f"{type(self).__name__} does not define update_step()")

    def get_config(self) -> dict:
        """The constructor arguments (the learning rate is the schedule object or the
        current value); ``type(opt)(**opt.get_config())`` makes an equivalent optimizer."""
        lr = self._schedule if self._schedule is not None else float(self._lr_var.numpy())
        return {"name": self.name, "learning_rate": lr, "decay": self.decay,
                "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                "clipvalue": self.clipvalue, "global_clipnorm": self.global_clipnorm}

    @classmethod
    def from_config(cls, config: dict) -> "Optimizer":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


__all__ = ["Optimizer"]
