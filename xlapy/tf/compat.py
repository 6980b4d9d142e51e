"""``tf.compat``: the TF1 switches TF2 tutorials still call.

xlapy is always eager (op by op) outside compiled functions, so
``tf.compat.v1.enable_eager_execution()`` and ``enable_v2_behavior()`` do nothing;
``disable_eager_execution()`` (TF1 graph mode) is refused.
"""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError
from ..frontend.core import current_trace


class v1:  # noqa: N801  (TF's namespace ``tf.compat.v1``)
    """``tf.compat.v1``: eager-execution switches."""

    @staticmethod
    def enable_eager_execution(config: Any = None, device_policy: Any = None,
                               execution_mode: Any = None) -> None:
        """A no-op: xlapy always executes eagerly outside compiled functions."""

    @staticmethod
    def enable_v2_behavior() -> None:
        """A no-op: xlapy has TF2 behaviour only."""

    @staticmethod
    def disable_eager_execution() -> None:
        raise InvalidArgumentError("tf.compat.v1.disable_eager_execution: xlapy has no TF1 "
                                   "graph mode; use tf.function instead")

    @staticmethod
    def executing_eagerly() -> bool:
        return current_trace() is None


__all__ = ["v1"]
