"""``LossScaleOptimizer``: dynamic loss scaling for ``float16`` training, as in Keras 3.

``float16`` has a narrow exponent range: small gradients of a ``mixed_float16`` model
underflow to zero. The loss is multiplied by a scale before differentiation
(:meth:`LossScaleOptimizer.scale_loss`), so the gradients are scaled too, and divided by
it again before the update. The scale is dynamic:

- when every gradient is finite, the inner optimizer applies the unscaled gradients and
  a counter advances; after ``dynamic_growth_steps`` finite steps in a row the scale
  doubles (and the counter restarts);
- when any gradient holds an ``inf`` or ``nan`` (the scale was too large), the step is
  skipped -- the variables, the inner optimizer's slots and ``iterations`` keep their
  values -- the scale halves and the counter restarts.

The choice is made on traced values (a select per updated Variable), so a compiled train
step stays one program with no host round trip. ``Model.compile`` wraps the optimizer in
one when the model's policy is ``mixed_float16`` (``auto_scale_loss=True``, the default),
and ``train_step`` differentiates the scaled loss. As in Keras 3 (``tf.keras`` since
TensorFlow 2.16), ``apply_gradients`` takes the *scaled* gradients and unscales them
itself; TensorFlow 2's older ``get_unscaled_gradients`` spelling, whose
``apply_gradients`` took unscaled ones, is not offered, so such code fails loudly rather
than unscaling twice.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ... import numpy as xnp
from ...errors import InvalidArgumentError
from ...frontend.core import to_array
from ...frontend.variables import Variable
from .base import Optimizer


class LossScaleOptimizer(Optimizer):
    """Wraps ``inner_optimizer`` with dynamic loss scaling (see the module docstring)."""

    default_name = "loss_scale_optimizer"

    def __init__(self, inner_optimizer: Optimizer, initial_scale: float = 2.0 ** 15,
                 dynamic_growth_steps: int = 2000, name: str | None = None,
                 dynamic: bool = True, **kwargs: Any) -> None:
        if not isinstance(inner_optimizer, Optimizer):
            raise InvalidArgumentError("LossScaleOptimizer: inner_optimizer must be an "
                                       f"Optimizer, got {type(inner_optimizer).__name__}")
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise InvalidArgumentError("LossScaleOptimizer: the inner optimizer already "
                                       "scales the loss")
        if not dynamic:
            raise InvalidArgumentError("LossScaleOptimizer: only dynamic loss scaling is "
                                       "supported (dynamic=True), as in Keras 3")
        if not np.isfinite(initial_scale) or initial_scale <= 0:
            raise InvalidArgumentError("LossScaleOptimizer: initial_scale must be a positive "
                                       f"finite number, got {initial_scale!r}")
        if int(dynamic_growth_steps) < 1:
            raise InvalidArgumentError("LossScaleOptimizer: dynamic_growth_steps must be >= 1, "
                                       f"got {dynamic_growth_steps!r}")
        super().__init__(learning_rate=0.0, name=name, **kwargs)
        self.inner_optimizer = inner_optimizer
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(dynamic_growth_steps)
        # the step count is the inner optimizer's: a skipped step does not count
        self.iterations = inner_optimizer.iterations
        self.step_counter = Variable(np.zeros((), np.int32), trainable=False,
                                     name=f"{self.name}/step_counter")
        self.dynamic_scale = Variable(np.float32(initial_scale), trainable=False,
                                      name=f"{self.name}/dynamic_scale")

    # ----- the inner optimizer's settings
    @property
    def learning_rate(self) -> Any:
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self.inner_optimizer.learning_rate = value

    lr = learning_rate

    def current_learning_rate(self) -> Any:
        return self.inner_optimizer.current_learning_rate()

    @property
    def variables(self) -> list[Variable]:
        """The scale, the counter and the inner optimizer's Variables."""
        return [self.dynamic_scale, self.step_counter] + self.inner_optimizer.variables

    def build(self, var_list: Sequence[Variable]) -> None:
        self.inner_optimizer.build(var_list)

    # ----- scaling
    def scale_loss(self, loss: Any) -> Any:
        """``loss`` times the current scale (differentiate this one)."""
        return loss * self.dynamic_scale.read_value().astype(to_array(loss).dtype)


    # ----- the step
    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Variable]]) -> Variable:
        """Unscale, and apply with the inner optimizer when every gradient is finite; else
        skip the step. Then adjust the scale (see the module docstring)."""
        pairs = [(to_array(g), v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise InvalidArgumentError("LossScaleOptimizer.apply_gradients: no gradients "
                                       "were provided for any variable")
        variables = [v for _, v in pairs]
        self.inner_optimizer.build(variables)
        finite = xnp.all(xnp.stack([xnp.all(xnp.isfinite(g)) for g, _ in pairs]))
        scale = self.dynamic_scale.read_value()
        unscaled = [g / scale.astype(g.dtype) for g, _ in pairs]
        # the state a skipped step must leave as it was (slots exist after build)
        state = list({id(v): v for v in variables + self.inner_optimizer.variables}.values())
        before = [v.read_value() for v in state]
        self.inner_optimizer.apply_gradients(zip(unscaled, variables))
        for v, old in zip(state, before):
            v.assign(xnp.where(finite, v.read_value(), old))
        counter = self.step_counter.read_value()
        grow = xnp.logical_and(finite, counter >= self.dynamic_growth_steps - 1)
        self.dynamic_scale.assign(xnp.where(
            finite, xnp.where(grow, scale * 2.0, scale), scale * 0.5).astype(np.float32))
        self.step_counter.assign(xnp.where(
            xnp.logical_and(finite, xnp.logical_not(grow)), counter + 1, 0).astype(np.int32))
        return self.iterations

    def update_step(self, gradient: Any, variable: Variable, learning_rate: Any) -> None:
        raise InvalidArgumentError("LossScaleOptimizer applies its steps through its inner "
                                   "optimizer (apply_gradients)")

    # ----- config
    def get_config(self) -> dict:
        return {"name": self.name, "inner_optimizer": self.inner_optimizer,
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config: dict) -> "LossScaleOptimizer":
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            from ..serialization import deserialize
            inner = deserialize(inner)
        return cls(inner, **config)

    def __repr__(self) -> str:
        return f"<LossScaleOptimizer inner={self.inner_optimizer!r}>"


__all__ = ["LossScaleOptimizer"]
