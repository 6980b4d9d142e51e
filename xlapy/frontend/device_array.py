"""Arrays whose value lives on a device: :class:`DeviceArray` (a GPU backend's results).

A ``gpu``/``gpu_sim`` executable returns ``DeviceValue`` s (``xlapy.backends.gpu.device``);
the front end wraps them as DeviceArrays, which are :class:`~xlapy.frontend.core.Array` s
whose ``_value`` (the host copy) is made on the first read. Importing this module
installs the class in ``core.DEVICE_ARRAY`` (``core.result_array`` wraps device results
in it; core cannot import this module, which imports core).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .core import _RECORDERS, DEVICE_ARRAY, Array

_HOST = Array._value        # the slot descriptor: a DeviceArray's host copy, once read


class DeviceArray(Array):
    """An :class:`Array` whose value lives on a device (a GPU backend's ``DeviceValue``:
    a buffer of its caching allocator) until it is read.

    Reading it -- ``np.asarray``, printing, ``.item()``, host indexing, any use of
    ``_value`` -- copies the value to the host once and keeps the copy; a GPU executable
    binds the device buffer directly; a CPU computation reads the host copy. The buffer
    goes back to the allocator when the last Array holding it dies. Donating the array
    (``jit(donate_argnums=...)``) deletes it: ``_value`` becomes the ``DeletedBuffer``
    that raises "Array has been deleted".
    """

    __slots__ = ("_device",)

    def __init__(self, value: Any, *, weak_type: bool = False) -> None:
        _HOST.__set__(self, None)
        self._instr = None
        self._trace = None
        self._device = value
        self.weak_type = bool(weak_type)
        self.shape = tuple(value.shape)
        self.dtype = value.dtype

    @property                   # type: ignore[override]
    def _value(self) -> Any:
        v = _HOST.__get__(self, DeviceArray)
        if v is None:
            v = self._device.read()
            _HOST.__set__(self, v)
        return v

    @_value.setter
    def _value(self, value: Any) -> None:
        # a new value (a donated array's DeletedBuffer): the device copy goes with the old
        _HOST.__set__(self, value)
        self._device = None

    @property
    def device_value(self) -> Any:
        """The device value (None once the array was deleted)."""
        return self._device

    @property
    def is_traced(self) -> bool:
        recorders = _RECORDERS.items
        return bool(recorders) and recorders[-1].depends(self)

    def is_deleted(self) -> bool:
        """Whether the array was donated (its buffer given to a computation's output)."""
        return self._device is None and not isinstance(_HOST.__get__(self, DeviceArray),
                                                       np.ndarray)

    def is_fully_replicated_on_host(self) -> bool:
        """Whether the host copy was made already (the value was read)."""
        return isinstance(_HOST.__get__(self, DeviceArray), np.ndarray)

    def block_until_ready(self) -> "DeviceArray":
        """Wait for the device work that computes this value; returns ``self``."""
        d = self._device
        if d is not None:
            d.device.synchronize()
        return self

    def __reduce__(self) -> tuple:
        # pickled as a host Array (a device buffer does not outlive the process)
        return (_host_array, (self._value, self.weak_type))

    def __deepcopy__(self, memo: dict) -> Array:
        d = self._device
        if d is None:
            return Array(self._value, weak_type=self.weak_type)
        return DeviceArray(d.device.copy_value(d), weak_type=self.weak_type)

    def fresh_ref(self, weak: bool) -> Array:
        """A new Array of the same value (sharing the device buffer)."""
        d = self._device
        if d is None:
            return Array(self._value, weak_type=weak)
        y = DeviceArray(d, weak_type=weak)
        _HOST.__set__(y, _HOST.__get__(self, DeviceArray))
        return y


def _host_array(value: np.ndarray, weak_type: bool) -> Array:
    return Array(value, weak_type=weak_type)


DEVICE_ARRAY.append(DeviceArray)


__all__ = ["DeviceArray"]
