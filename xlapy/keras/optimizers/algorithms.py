"""SGD, Adam, AdamW, RMSprop and Adagrad with Keras's update formulas.

``lr`` below is the step's learning rate (schedule and legacy ``decay`` applied),
``g`` the (clipped) gradient, ``t = iterations + 1``:

- SGD: ``w -= lr * g``; with momentum ``m = momentum * m - lr * g`` then ``w += m``
  (Nesterov: ``w += momentum * m - lr * g``);
- Adam: ``m += (g - m) * (1 - beta_1)``, ``v += (g**2 - v) * (1 - beta_2)``,
  ``w -= alpha * m / (sqrt(v) + epsilon)`` with ``alpha = lr * sqrt(1 - beta_2**t) /
  (1 - beta_1**t)`` computed once per step (``step_rate``); AMSGrad uses the running
  maximum of ``v``;
- RMSprop: ``a = rho * a + (1 - rho) * g**2`` (centered: minus the square of the
  running mean gradient), ``step = lr * g / sqrt(a + epsilon)``, ``w -= step`` (with
  momentum ``m = momentum * m + step`` and ``w -= m``);
- Adagrad: ``a += g**2``, ``w -= lr * g / sqrt(a + epsilon)``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as xnp
from ...errors import InvalidArgumentError
from ...frontend.variables import Variable
from .base import Optimizer


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum."""

    default_name = "SGD"

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        if not 0 <= momentum <= 1:
            raise InvalidArgumentError(f"SGD: momentum must be in [0, 1], got {momentum}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)

    def get_config(self) -> dict:
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}

    def create_slots(self, var: Variable) -> None:
        if self.momentum:
            self.add_slot(var, "momentum")

    def update_step(self, g: Any, var: Variable, lr: Any) -> None:
        if not self.momentum:
            var.assign(var.read_value() - lr * g)
            return
        m_slot = self.get_slot(var, "momentum")
        m = self.momentum * m_slot.read_value() - lr * g
        m_slot.assign(m)
        if self.nesterov:
            var.assign(var.read_value() + (self.momentum * m - lr * g))
        else:
            var.assign(var.read_value() + m)


class Adam(Optimizer):
    """Adam (Kingma & Ba) with Keras's defaults ``beta_1=0.9, beta_2=0.999, epsilon=1e-7``."""

    default_name = "adam"

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon, self.amsgrad = float(epsilon), bool(amsgrad)

    def get_config(self) -> dict:
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}

    def create_slots(self, var: Variable) -> None:
        self.add_slot(var, "m")
        self.add_slot(var, "v")
        if self.amsgrad:
            self.add_slot(var, "vhat")

    def step_rate(self, lr: Any) -> Any:
        """``lr`` with the bias correction of step ``t`` folded in (once per step)."""
        t = (self.iterations.read_value() + 1).astype(np.float32)
        b1_power = xnp.power(np.float32(self.beta_1), t)
        b2_power = xnp.power(np.float32(self.beta_2), t)
        return lr * xnp.sqrt(1.0 - b2_power) / (1.0 - b1_power)

    def update_step(self, g: Any, var: Variable, alpha: Any) -> None:
        m_slot, v_slot = self.get_slot(var, "m"), self.get_slot(var, "v")
        m = m_slot.read_value()
        v = v_slot.read_value()
        m = m + (g - m) * (1.0 - self.beta_1)
        v = v + (xnp.square(g) - v) * (1.0 - self.beta_2)
        m_slot.assign(m)
        v_slot.assign(v)
        if self.amsgrad:
            vhat_slot = self.get_slot(var, "vhat")
            v = xnp.maximum(vhat_slot.read_value(), v)
            vhat_slot.assign(v)
        var.assign(var.read_value() - alpha * m / (xnp.sqrt(v) + self.epsilon))


class AdamW(Adam):
    """Adam with decoupled weight decay (default ``weight_decay=0.004``)."""

    default_name = "adamw"

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.004,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate, weight_decay=weight_decay, **kwargs)


class RMSprop(Optimizer):
    """RMSprop with Keras's defaults ``rho=0.9, momentum=0, epsilon=1e-7``.

    ``RMSprop(lr=1e-4, decay=1e-6)`` (TensorFlow 2's spelling, used by the CIFAR-10
    tutorial) divides the rate by ``1 + decay * iterations``.
    """

    default_name = "rmsprop"

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        self.rho, self.momentum = float(rho), float(momentum)
        self.epsilon, self.centered = float(epsilon), bool(centered)

    def get_config(self) -> dict:
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}

    def create_slots(self, var: Variable) -> None:
        self.add_slot(var, "velocity")
        if self.momentum:
            self.add_slot(var, "momentum")
        if self.centered:
            self.add_slot(var, "average_gradient")

    def update_step(self, g: Any, var: Variable, lr: Any) -> None:
        vel_slot = self.get_slot(var, "velocity")
        vel = self.rho * vel_slot.read_value() + (1.0 - self.rho) * xnp.square(g)
        vel_slot.assign(vel)
        denominator = vel + self.epsilon
        if self.centered:
            avg_slot = self.get_slot(var, "average_gradient")
            avg = self.rho * avg_slot.read_value() + (1.0 - self.rho) * g
            avg_slot.assign(avg)
            denominator = denominator - xnp.square(avg)
        increment = lr * g / xnp.sqrt(denominator)
        if self.momentum:
            mom_slot = self.get_slot(var, "momentum")
            mom = self.momentum * mom_slot.read_value() + increment
            mom_slot.assign(mom)
            var.assign(var.read_value() - mom)
        else:
            var.assign(var.read_value() - increment)


class Adagrad(Optimizer):
    """Adagrad: per-coordinate rates from the sum of squared gradients."""

    default_name = "adagrad"

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def get_config(self) -> dict:
        return {**super().get_config(), "epsilon": self.epsilon,
                "initial_accumulator_value": self.initial_accumulator_value}

    def create_slots(self, var: Variable) -> None:
        self.add_slot(var, "accumulator", self.initial_accumulator_value)

    def update_step(self, g: Any, var: Variable, lr: Any) -> None:
        acc_slot = self.get_slot(var, "accumulator")
        acc = acc_slot.read_value() + xnp.square(g)
        acc_slot.assign(acc)
        var.assign(var.read_value() - lr * g / xnp.sqrt(acc + self.epsilon))


__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]
