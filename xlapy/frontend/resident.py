"""Arrays on a device: jit calls on a device backend, and ``device_put``.

:func:`execute` runs a jit entry whose executable keeps its results on the device
(``execute_resident``): device Arrays in (their buffers bound), device Arrays out.
:func:`donating_call` is jit's fast path for calls that donate device Arrays (a signature
remembered only when every donated leaf was one, :func:`fast_donation`): the buffers of
donated Arrays no other Array shares become the outputs', and the Arrays are deleted.

A GPU backend's results are :class:`~xlapy.frontend.core.DeviceArray` s already;
:func:`put_on_device` puts host values there (``xlapy.device_put(x,
xlapy.devices("gpu")[0])``, as JAX's ``device_put``) and brings device values back (a CPU
device, or None).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..client.devices import Device, GpuDevice
from ..errors import InvalidArgumentError
from . import donation
from .core import Array, device_argument, result_array, to_array
from .device_array import DeviceArray
from .pytree import tree_map
from .replicas import executable_for
from .variables import commit_values


def execute(entry: Any, values: list[Any], owned: Sequence[int] = ()) -> list[Array]:
    """jit's ``_execute`` on a device backend: device Arrays in, device Arrays out."""
    if entry.variables:
        values = values + [device_argument(v._value) for v in entry.variables]
    exe = entry.executable if entry.replicas == 1 else executable_for(entry.executable)
    result = exe.execute_resident(values, owned)
    flat = (result,) if entry.n_results == 1 else tuple(result)
    if entry.assigned:
        commit_values(entry.assigned, [result_array(v) for v in flat[len(entry.out_weak):]])
    return [result_array(v, w) for v, w in zip(flat, entry.out_weak)]


def fast_donation(entry: Any, leaves: Sequence[Any]) -> bool:
    """Whether calls like this one may donate on jit's fast path: a device entry whose
    donated leaves are all device Arrays (their type is in the fast signature)."""
    plan = donation.plan_of(entry)
    return entry.resident and all(type(leaves[entry.param_leaves[p]]) is DeviceArray
                                  for p in plan.arguments)


def donating_call(entry: Any, values: list[Any], where: str) -> list[Array]:
    """A fast-path call donating device Arrays (module docstring)."""
    plan = donation.plan_of(entry)
    owned, arrays = [], []
    for p in plan.arguments:
        x = values[p]
        if type(x) is DeviceArray and x._device is not None:
            arrays.append(x)
            if p in plan.in_place and donation.sole_device_owner(x):
                owned.append(p)
    try:
        outs = execute(entry, values, owned)
    except BaseException:       # the buffers handed over may be half written
        donation.delete([values[p] for p in owned], where)
        raise
    donation.delete(arrays, where)
    return outs


def is_single_device(target: Any) -> bool:
    """Whether ``target`` names one device (not a sharding)."""
    return isinstance(target, (Device, GpuDevice))


def put_on_device(x: Any, device: Device | GpuDevice | None) -> Any:
    """The arrays of pytree ``x`` on ``device`` (see the module docstring)."""
    if isinstance(device, GpuDevice):
        runtime = device.runtime()
        return tree_map(lambda leaf: _to_gpu(leaf, runtime), x)
    if device is None or isinstance(device, Device):
        return tree_map(_to_host, x)
    raise InvalidArgumentError(f"device_put: expected a device or a NamedSharding, got "
                               f"{type(device).__name__}")


def _to_gpu(leaf: Any, runtime: Any) -> DeviceArray:
    a = to_array(leaf)
    if a.is_traced:
        raise InvalidArgumentError(f"device_put of a traced value ({a.type_text()})")
    d = a.device_value if type(a) is DeviceArray else None
    if d is not None and d.device is runtime:
        return a
    return DeviceArray(runtime.put(np.asarray(a._value)), weak_type=a.weak_type)


def _to_host(leaf: Any) -> Array:
    a = to_array(leaf)
    if type(a) is DeviceArray:
        return Array(a._value, weak_type=a.weak_type)
    return a


__all__ = ["put_on_device", "is_single_device"]
