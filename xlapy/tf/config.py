"""``tf.config``: the JIT setting and the (CPU-only) device list.

``tf.config.optimizer.set_jit(True)`` (or ``"autoclustering"``) is
``xlapy.frontend.tf_function.set_auto_jit(True)``: from then on ``tf.function`` without
``jit_compile`` compiles each function whole when it can and runs op by op the
signatures that cannot be compiled (TF's auto-clustering, with whole functions as the
clusters); Keras ``compile(jit_compile=None)`` follows the same setting.
``set_jit(False)`` runs such functions op by op.

xlapy runs on the host CPU: there is one physical device, ``/physical_device:CPU:0``,
and no GPU, so ``list_physical_devices('GPU')`` is empty; the logical devices are the
process's CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count=N``), which
``tf.distribute.MirroredStrategy`` replicates over.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

from ..errors import InvalidArgumentError
from ..client.devices import local_device_count
from ..frontend.tf_function import auto_jit, set_auto_jit

PhysicalDevice = namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = namedtuple("LogicalDevice", ["name", "device_type"])

_CPU = PhysicalDevice("/physical_device:CPU:0", "CPU")


class optimizer:  # noqa: N801  (TF's namespace ``tf.config.optimizer``)
    """``tf.config.optimizer``: ``set_jit`` / ``get_jit``."""

    @staticmethod
    def set_jit(enabled: bool | str) -> None:
        """``True`` or ``"autoclustering"``: compile ``tf.function``s without
        ``jit_compile`` when they can be; ``False`` or ``""``: run them op by op."""
        if enabled in (True, "autoclustering"):
            set_auto_jit(True)
        elif enabled in (False, ""):
            set_auto_jit(False)
        else:
            raise InvalidArgumentError(f"tf.config.optimizer.set_jit: expected True, False or "
                                       f"'autoclustering', got {enabled!r}")

    @staticmethod
    def get_jit() -> str:
        """``"autoclustering"`` when enabled, else ``""`` (as TF)."""
        return "autoclustering" if auto_jit() else ""


def _check_type(device_type: str | None) -> str | None:
    if device_type is None:
        return None
    t = device_type.upper()
    if t not in ("CPU", "GPU", "TPU", "XLA_CPU", "XLA_GPU"):
        raise InvalidArgumentError(f"unknown device type {device_type!r}")
    return t


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """``[PhysicalDevice('/physical_device:CPU:0', 'CPU')]`` for ``None`` or ``'CPU'``;
    ``[]`` for accelerators (there are none)."""
    t = _check_type(device_type)
    return [_CPU] if t in (None, "CPU") else []


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """One ``/device:CPU:i`` per CPU device of the process
    (``--xla_force_host_platform_device_count``, as TF's virtual CPUs); ``[]`` for
    accelerators."""
    t = _check_type(device_type)
    if t not in (None, "CPU"):
        return []
    return [LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(local_device_count())]


def get_visible_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    return list_physical_devices(device_type)


def set_visible_devices(devices: Any, device_type: str | None = None) -> None:
    """Accepts the CPU (alone or in a list) or an empty accelerator list."""
    devs = devices if isinstance(devices, (list, tuple)) else [devices]
    if any(d != _CPU for d in devs):
        raise InvalidArgumentError(f"tf.config.set_visible_devices: only {_CPU.name} exists")
    if not devs and _check_type(device_type) in (None, "CPU"):
        raise InvalidArgumentError("tf.config.set_visible_devices: the CPU cannot be hidden")


class experimental:  # noqa: N801  (TF's namespace ``tf.config.experimental``)
    """``tf.config.experimental``: memory growth (GPU-only in TF, so always an error
    here) and the device listings."""

    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)

    @staticmethod
    def set_memory_growth(device: Any, enable: bool) -> None:
        raise InvalidArgumentError(f"tf.config.experimental.set_memory_growth: {device} is not "
                                   "a GPU (xlapy has no GPU devices)")

    @staticmethod
    def get_memory_growth(device: Any) -> bool:
        raise InvalidArgumentError(f"tf.config.experimental.get_memory_growth: {device} is not "
                                   "a GPU (xlapy has no GPU devices)")


__all__ = ["optimizer", "experimental", "PhysicalDevice", "LogicalDevice",
           "list_physical_devices", "list_logical_devices", "get_visible_devices",
           "set_visible_devices"]
