"""``xlapy.keras.distribution``: Keras 3's distribution API over xlapy's SPMD partitioner.

::

    from xlapy.keras import distribution as dist
    mesh = dist.DeviceMesh((2, 2), ("batch", "model"))
    layout_map = dist.LayoutMap(mesh)
    layout_map["dense.*kernel"] = (None, "model")        # regex on the variable path
    layout_map["dense.*bias"] = ("model",)
    dist.set_distribution(dist.ModelParallel(layout_map=layout_map, batch_dim_name="batch"))
    model = keras.Sequential([...])                      # Dense kernels created sharded
    model.compile(..., jit_compile=True)
    model.fit(x, y)                                      # one SPMD program per step

While a distribution is set (:func:`set_distribution`, or inside ``distribution.scope()``),
every weight a layer creates gets the layout the distribution gives its path
(``<layer name>/<weight name>``, e.g. ``dense_1/kernel``): a ``LayoutMap`` entry whose key
matches it (the exact path first, else one ``re.search`` match; two matching keys are an
error); without one it is replicated. A weight with a split dimension is a
:class:`~xlapy.frontend.sharded_step.ShardedVariable`, which holds only its shards, and the
optimizer's slots for it are split the same way. A model compiled with ``jit_compile=True``
while a distribution is set compiles its train, test and predict steps as one SPMD program
each (:class:`~xlapy.frontend.sharded_step.ShardedStep`): the batch is split along
``batch_dim_name`` (``DataParallel``: the mesh's first axis) and the weights stay in their
shards between steps.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend.sharded_step import ShardedVariable
from ..frontend.sharding import Mesh, NamedSharding, PartitionSpec, _where
from ..frontend.variables import Variable

_GLOBAL: list[Any] = [None]          # the distribution set process-wide (Keras's global state)
_SCOPES: list[Any] = []              # distributions whose scope() is open, innermost last


def list_devices(device_type: str | None = None) -> list[str]:
    """This run's devices as Keras names them (``"cpu:0"``, ...)."""
    from ..client.devices import devices
    return [f"{device_type or 'cpu'}:{d.id}" for d in devices()]


class DeviceMesh:
    """Named axes over devices: ``DeviceMesh(shape, axis_names, devices=None)`` (devices
    default to the first ``prod(shape)`` of the run, as positions)."""

    def __init__(self, shape: Sequence[int], axis_names: Sequence[str],
                 devices: Sequence[Any] | None = None) -> None:
        shape = tuple(int(s) for s in shape)
        if len(shape) != len(axis_names):
            raise InvalidArgumentError(f"DeviceMesh: shape {shape} has {len(shape)} dimensions "
                                       f"but {len(axis_names)} axis names{_where()}")
        n = int(np.prod(shape))
        ids = np.arange(n) if devices is None else np.asarray(
            [int(str(d).rsplit(":", 1)[-1]) if isinstance(d, str) else getattr(d, "id", d)
             for d in np.asarray(devices, dtype=object).reshape(-1)])
        if ids.size != n:
            raise InvalidArgumentError(f"DeviceMesh: shape {shape} needs {n} devices, got "
                                       f"{ids.size}{_where()}")
        self.shape, self.axis_names = shape, tuple(axis_names)
        self.devices = ids.reshape(shape)
        self.mesh = Mesh(self.devices, self.axis_names)

    def __repr__(self) -> str:
        return f"DeviceMesh({self.shape}, {self.axis_names})"


class TensorLayout:
    """Per tensor dimension a mesh axis name or None (Keras's ``TensorLayout``)."""

    def __init__(self, axes: Sequence[Any], device_mesh: DeviceMesh | None = None) -> None:
        self.axes = tuple(axes)
        self.device_mesh = device_mesh

    def __repr__(self) -> str:
        return f"TensorLayout({self.axes})"


class LayoutMap:
    """Regex keys on variable paths -> layouts (tuples of axis names or ``TensorLayout``)."""

    def __init__(self, device_mesh: DeviceMesh) -> None:
        if not isinstance(device_mesh, DeviceMesh):
            raise InvalidArgumentError(f"LayoutMap takes a DeviceMesh, got "
                                       f"{type(device_mesh).__name__}{_where()}")
        self.device_mesh = device_mesh
        self._layouts: dict[str, TensorLayout] = {}

    def __setitem__(self, key: str, layout: Any) -> None:
        if key in self._layouts:
            raise InvalidArgumentError(f"LayoutMap: key {key!r} is already set{_where()}")
        if not isinstance(layout, TensorLayout):
            layout = TensorLayout(layout, self.device_mesh)
        for a in layout.axes:
            if a is not None and a not in self.device_mesh.axis_names:
                raise InvalidArgumentError(
                    f"LayoutMap[{key!r}] = {layout.axes}: axis {a!r} is not an axis of "
                    f"{self.device_mesh!r}{_where()}")
        layout.device_mesh = self.device_mesh
        self._layouts[key] = layout

    def __getitem__(self, path: str) -> TensorLayout | None:
        """The layout of the variable at ``path``: its exact key, else the one key that
        ``re.search`` finds in it, else None."""
        if path in self._layouts:
            return self._layouts[path]
        hits = [k for k in self._layouts if re.search(k, path)]
        if len(hits) > 1:
            raise InvalidArgumentError(f"LayoutMap: the variable path {path!r} matches "
                                       f"several keys {hits}; make the keys exclusive"
                                       f"{_where()}")
        return self._layouts[hits[0]] if hits else None

    def __len__(self) -> int:
        return len(self._layouts)

    def __iter__(self) -> Iterator[str]:
        return iter(self._layouts)

    def get(self, path: str, default: Any = None) -> Any:
        found = self[path]
        return default if found is None else found


class Distribution:
    """What a distribution decides: the mesh, the data layout and each variable's layout."""

    def __init__(self, device_mesh: DeviceMesh, batch_dim_name: str | None) -> None:
        if batch_dim_name is not None and batch_dim_name not in device_mesh.axis_names:
            raise InvalidArgumentError(f"batch_dim_name {batch_dim_name!r} is not an axis of "
                                       f"{device_mesh!r}{_where()}")
        self.device_mesh, self.batch_dim_name = device_mesh, batch_dim_name

    def get_data_layout(self, data_shape: Sequence[int]) -> TensorLayout:
        """The batch (first) dimension split over ``batch_dim_name``."""
        return TensorLayout((self.batch_dim_name,) + (None,) * (len(data_shape) - 1),
                            self.device_mesh)

    def get_variable_layout(self, variable: Any) -> TensorLayout:
        """Replicated (overridden by ``ModelParallel``)."""
        return TensorLayout((None,) * len(np.shape(variable)), self.device_mesh)

    @contextmanager
    def scope(self) -> Iterator["Distribution"]:
        """This distribution in effect for the block."""
        _SCOPES.append(self)
        try:
            yield self
        finally:
            _SCOPES.pop()


class DataParallel(Distribution):
    """Every weight replicated, the batch split over the mesh's (first) axis;
    ``DataParallel(device_mesh=None, devices=None)`` (default: all the run's devices)."""

    def __init__(self, device_mesh: DeviceMesh | None = None,
                 devices: Sequence[Any] | None = None) -> None:
        if device_mesh is None:
            n = len(devices) if devices is not None else len(list_devices())
            device_mesh = DeviceMesh((n,), ("batch",), devices)
        super().__init__(device_mesh, device_mesh.axis_names[0])


class ModelParallel(Distribution):
    """Weights laid out by ``layout_map``; the batch split over ``batch_dim_name`` (None:
    data replicated). ``ModelParallel(layout_map=..., batch_dim_name=...)``; Keras's older
    form with ``device_mesh=`` first is accepted."""

    def __init__(self, device_mesh: DeviceMesh | None = None, layout_map: LayoutMap | None = None,
                 batch_dim_name: str | None = None) -> None:
        if layout_map is None:
            raise InvalidArgumentError(f"ModelParallel needs a layout_map{_where()}")
        mesh = device_mesh or layout_map.device_mesh
        if mesh is not layout_map.device_mesh:
            raise InvalidArgumentError(f"ModelParallel: the layout_map's mesh is not "
                                       f"{mesh!r}{_where()}")
        super().__init__(mesh, batch_dim_name)
        self.layout_map = layout_map

    def get_variable_layout(self, variable: Any) -> TensorLayout:
        path = variable if isinstance(variable, str) else getattr(variable, "path", None) or \
            getattr(variable, "name", "")
        found = self.layout_map[path]
        return found if found is not None else super().get_variable_layout(variable)


def set_distribution(value: Distribution | None) -> None:
    """Set the distribution of everything created and compiled from now on (None: off)."""
    if value is not None and not isinstance(value, Distribution):
        raise InvalidArgumentError(f"set_distribution takes a Distribution or None, got "
                                   f"{type(value).__name__}{_where()}")
    _GLOBAL[0] = value


def distribution() -> Distribution | None:
    """The distribution in effect: the innermost open ``scope()``, else the one set."""
    return _SCOPES[-1] if _SCOPES else _GLOBAL[0]


def make_weight(value: np.ndarray, path: str, trainable: bool) -> Variable:
    """A layer's weight at ``path`` under the distribution in effect: a
    :class:`ShardedVariable` when its layout splits a dimension, else a Variable."""
    d = distribution()
    layout = d.get_variable_layout(path) if d is not None else None
    if layout is None or all(a is None for a in layout.axes):
        return Variable(value, trainable=trainable, name=path)
    if len(layout.axes) != np.ndim(value):
        raise InvalidArgumentError(f"the layout {layout.axes} of variable {path!r} has "
                                   f"{len(layout.axes)} entries, but the variable has shape "
                                   f"{np.shape(value)}{_where()}")
    sharding = NamedSharding(d.device_mesh.mesh, PartitionSpec(*layout.axes))
    return ShardedVariable(value, sharding, trainable=trainable, name=path)


__all__ = ["list_devices", "DeviceMesh", "TensorLayout", "LayoutMap", "Distribution",
           "DataParallel", "ModelParallel", "set_distribution", "distribution", "make_weight"]
