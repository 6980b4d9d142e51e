"""``Layer``, the symbolic ``KerasTensor`` of the functional API, ``Input``.

A layer owns weights (:class:`~xlapy.Variable` objects created by :meth:`Layer.add_weight`
in :meth:`Layer.build`) and computes :meth:`Layer.call`. Calling a layer:

- on arrays (NumPy, ``xlapy`` Arrays, traced values inside ``jit``) builds it from the
  input shape on first use and runs ``call``;
- on :class:`KerasTensor` objects (from :func:`Input`) builds it from the symbolic
  shape (batch size ``None``) and returns new KerasTensors whose history records the
  call; ``Model(inputs, outputs)`` replays that graph.

``training`` is passed to ``call`` when its signature has that argument. Floating-point
inputs are cast to the layer's compute dtype and integer inputs too, unless the layer
takes integers (``Embedding``).

``dtype`` is a dtype or a dtype policy (:mod:`xlapy.keras.mixed_precision`; None: the
global policy): weights are created in the policy's ``variable_dtype`` and, under a mixed
policy, read as its ``compute_dtype`` inside ``call`` (``layer.dtype`` is the variable
dtype, ``layer.compute_dtype`` the other).

Every layer takes Keras's common keyword arguments: ``name``, ``trainable``, ``dtype``,
``input_shape`` / ``batch_input_shape`` / ``input_dim`` / ``batch_size`` (the first layer
of a ``Sequential``), and ``activity_regularizer``: a penalty on the layer's outputs,
recorded on every call and added to the training loss through :attr:`Layer.losses` (as
in Keras 3, not divided by the batch size; rows of a padded last batch are left out).

``get_config()`` returns the arguments the layer was created with (captured when it is
constructed) plus its name, dtype and input shape; ``from_config(config)`` makes a new
layer from them. :mod:`xlapy.keras.serialization` turns them into JSON.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Sequence

import numpy as np

from ...errors import InvalidArgumentError
from ...threadlocal import PerThreadList
from ...frontend import jit
from ...frontend.core import Array, to_array
from ...frontend.dtypes import is_float
from ...frontend.pytree import tree_flatten, tree_map, tree_unflatten
from ...frontend.variables import Variable, autocast_scope
from .. import backend, constraints, distribution, initializers, mixed_precision, regularizers

Shape = tuple  # a shape with None for unknown (batch) sizes

_CALL_DEPTH = PerThreadList([0])   # per thread: nesting of layer calls (activity losses reset at 0)


class KerasTensor:
    """A symbolic value of the functional API: a shape (``None`` batch), a dtype and the
    layer call (``node``) that produced it."""

    def __init__(self, shape: Sequence[int | None], dtype: Any = "float32",
                 node: "Node | None" = None, index: int = 0, name: str | None = None) -> None:
        self.shape: Shape = tuple(None if s is None else int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.node = node
        self.index = index
        self.name = name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        src = f", created by layer '{self.node.layer.name}'" if self.node else ""
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype.name}{src}>"


class Node:
    """One call of ``layer`` on symbolic ``inputs`` (a pytree of KerasTensors)."""

    def __init__(self, layer: "Layer", inputs: Any, kwargs: dict) -> None:
        self.layer = layer
        self.inputs = inputs
        self.kwargs = kwargs
        self.outputs: list[KerasTensor] = []

    @property
    def parents(self) -> list[KerasTensor]:
        """The KerasTensors this call consumed."""
        return [t for t in flatten_symbolic(self.inputs)[0] if isinstance(t, KerasTensor)]


def _is_symbolic(x: Any) -> bool:
    return any(isinstance(t, KerasTensor) for t in flatten_symbolic(x)[0])


def _kt_leaf(x: Any) -> bool:
    return isinstance(x, KerasTensor)


def flatten_symbolic(x: Any) -> tuple[list[Any], Any]:
    """Flatten a pytree whose leaves may be KerasTensors."""
    return tree_flatten(x, is_leaf=_kt_leaf)


@functools.lru_cache(maxsize=None)
def _call_params(cls: type) -> frozenset:
    try:
        return frozenset(inspect.signature(cls.call).parameters)
    except (TypeError, ValueError):
        return frozenset()


def _shape_of(x: Any) -> Any:
    """The shape of an array-like or symbolic leaf, or of each leaf of a pytree."""
    def one(a: Any) -> Shape:
        if isinstance(a, KerasTensor):
            return a.shape
        return tuple(np.shape(a)) if not isinstance(a, (Array, Variable)) else tuple(a.shape)
    leaves, tree = flatten_symbolic(x)
    shapes = [one(a) for a in leaves]
    return shapes[0] if tree.is_leaf else tree_unflatten(tree, shapes)


class Layer:
    """Base class of layers and models (see the module docstring).

    Subclasses override :meth:`build` (create weights with :meth:`add_weight`),
    :meth:`call` and :meth:`compute_output_shape`.
    """

    _accepts_integer_inputs = False
    #: Whether ``call`` reads floating weights as the compute dtype under a mixed policy
    #: (normalization layers compute in float32 and say False).
    _autocast = True

    def __new__(cls, *args: Any, **kwargs: Any) -> "Layer":
        obj = super().__new__(cls)
        object.__setattr__(obj, "_init_args", (args, dict(kwargs)))
        return obj

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 input_shape: Sequence[int] | None = None,
                 batch_input_shape: Sequence[int | None] | None = None,
                 input_dim: int | None = None, batch_size: int | None = None,
                 activity_regularizer: Any = None, **kwargs: Any) -> None:
        if kwargs:
            raise InvalidArgumentError(f"{type(self).__name__}: unexpected keyword arguments "
                                       f"{sorted(kwargs)}")
        object.__setattr__(self, "_layers", [])
        self.name = name or backend.unique_name(backend.snake_case(type(self).__name__))
        self.dtype_policy = mixed_precision.get_policy(dtype)
        self.dtype = np.dtype(self.dtype_policy.variable_dtype)
        self._trainable = bool(trainable)
        self.built = False
        self._weights: list[Variable] = []
        self._own_trainable: dict[int, bool] = {}
        self._regularized: list[tuple[Any, Variable]] = []
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self._activity_losses: list[Any] = []
        self._input_shape_arg: Shape | None = None
        if batch_input_shape is not None:
            self._input_shape_arg = tuple(batch_input_shape)
        elif input_shape is not None:
            self._input_shape_arg = (batch_size, *input_shape)
        elif input_dim is not None:
            self._input_shape_arg = (batch_size, int(input_dim))
        self.input_shape: Any = None
        self.output_shape: Any = None
        self._inbound_nodes: list[Node] = []

    @property
    def compute_dtype(self) -> np.dtype:
        """The dtype ``call`` computes in (the policy's ``compute_dtype``)."""
        return np.dtype(self.dtype_policy.compute_dtype)

    @property
    def variable_dtype(self) -> np.dtype:
        """The dtype of the layer's weights (the same as :attr:`dtype`)."""
        return self.dtype

    # ----- sub-layer tracking
    def __setattr__(self, name: str, value: Any) -> None:
        layers = self.__dict__.get("_layers")
        if layers is not None and not name.startswith("_"):
            items = value if isinstance(value, (list, tuple)) else [value]
            for v in items:
                if isinstance(v, Layer) and v is not self and all(v is not l for l in layers):
                    layers.append(v)
        object.__setattr__(self, name, value)

    # ----- weights
    def add_weight(self, name: str, shape: Sequence[int], initializer: Any = "glorot_uniform",
                   dtype: Any = None, trainable: bool = True, regularizer: Any = None,
                   constraint: Any = None) -> Variable:
        """Create, initialize and track a weight ``<layer name>/<name>``; ``regularizer``
        adds a penalty to :attr:`losses`, ``constraint`` projects the weight after every
        optimizer update (:mod:`xlapy.keras.constraints`)."""
        init = initializers.get(initializer)
        dt = np.dtype(dtype or self.dtype)
        value = np.asarray(init(tuple(int(s) for s in shape), dt), dt)
        var = distribution.make_weight(value, f"{self.name}/{name}",   # sharded by a layout
                                       trainable and self._trainable)
        self._weights.append(var)
        self._own_trainable[id(var)] = bool(trainable)
        reg = regularizers.get(regularizer)
        if reg is not None:
            self._regularized.append((reg, var))
        constraints.set_variable_constraint(var, constraints.get(constraint))
        return var

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        """Freezing a layer makes its weights non-trainable (recompile the model after)."""
        self._trainable = bool(value)
        for var in self._weights:
            var.trainable = self._trainable and self._own_trainable.get(id(var), True)
        for layer in self._layers:
            layer.trainable = value

    def _all_layers(self) -> list["Layer"]:
        out: list[Layer] = []
        for layer in self._layers:
            out.append(layer)
            out.extend(layer._all_layers())
        return out

    @property
    def weights(self) -> list[Variable]:
        """Every weight: this layer's, then its sub-layers' (each once)."""
        seen, out = set(), []
        for var in self._weights + [w for l in self._all_layers() for w in l._weights]:
            if id(var) not in seen:
                seen.add(id(var))
                out.append(var)
        return out

    variables = weights

    @property
    def trainable_weights(self) -> list[Variable]:
        return [w for w in self.weights if w.trainable]

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return [w for w in self.weights if not w.trainable]

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def losses(self) -> list[Any]:
        """Penalties of this layer and its sub-layers: weight regularizers (computed now)
        and the activity regularizers of the latest call."""
        out = []
        for layer in [self] + self._all_layers():
            out += [reg(var.read_value()) for reg, var in layer._regularized]
            out += list(layer._activity_losses)
        return out

    def _record_activity_loss(self, outputs: Any) -> None:
        """The activity penalty of ``outputs`` (padded rows of the batch masked out)."""
        mask = backend.current_batch_mask()
        for out in tree_flatten(outputs)[0]:
            value = to_array(out)
            if value.dtype.kind != "f":
                continue
            if mask is not None and value.ndim >= 1 and tuple(mask.shape) == value.shape[:1]:
                m = to_array(mask).astype(value.dtype)
                value = value * m.reshape((value.shape[0],) + (1,) * (value.ndim - 1))
            self._activity_losses.append(self.activity_regularizer(value))

    def get_weights(self) -> list[np.ndarray]:
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Assign NumPy arrays to the weights, in the order of :attr:`weights`."""
        mine = self.weights
        if len(weights) != len(mine):
            raise InvalidArgumentError(f"layer {self.name!r} has {len(mine)} weights, but "
                                       f"set_weights got {len(weights)} arrays")
        for var, value in zip(mine, weights):
            value = np.asarray(value)
            if tuple(value.shape) != tuple(var.shape):
                raise InvalidArgumentError(
                    f"weight {var.name!r} has shape {tuple(var.shape)}, but set_weights got "
                    f"an array of shape {tuple(value.shape)}")
            var.assign(value.astype(var.dtype))

    def count_params(self) -> int:
        return int(sum(w.size for w in self.weights))

    # ----- building and calling
    def build(self, input_shape: Any) -> None:
        """Create the weights for inputs of ``input_shape`` (batch may be ``None``)."""
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        raise InvalidArgumentError(f"layer {type(self).__name__} does not define call()")

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Output shape for ``input_shape``; by default found by tracing ``call`` once."""
        return _traced_output_shape(self, input_shape)

    def _maybe_build(self, input_shape: Any) -> None:
        if not self.built:
            self.build(input_shape)
            self.built = True
            if self.input_shape is None:
                self.input_shape = input_shape

    def _cast_input(self, x: Any) -> Any:
        if isinstance(x, KerasTensor) or x is None:
            return x
        a = to_array(x)
        kind = a.dtype.kind
        compute = self.compute_dtype
        if is_float(a.dtype) and a.dtype != compute:
            return a.astype(compute)
        if kind in "iub" and not self._accepts_integer_inputs:
            return a.astype(compute)
        return a

    def __call__(self, inputs: Any, *args: Any, training: Any = None, **kwargs: Any) -> Any:
        if training is not None and "training" in _call_params(type(self)):
            kwargs["training"] = training
        if _is_symbolic(inputs):
            return self._symbolic_call(inputs, args, kwargs)
        inputs = tree_map(self._cast_input, inputs)
        self._maybe_build(_shape_of(inputs))
        if _CALL_DEPTH[0] == 0:                 # a new forward pass: forget old penalties
            for layer in [self] + self._all_layers():
                layer._activity_losses = []
        _CALL_DEPTH[0] += 1
        policy = self.dtype_policy
        try:
            with autocast_scope(policy.compute_dtype
                                if policy.is_mixed and self._autocast else None):
                outputs = self.call(inputs, *args, **kwargs)
        finally:
            _CALL_DEPTH[0] -= 1
        if self.activity_regularizer is not None:
            self._record_activity_loss(outputs)
        if self.output_shape is None:           # for summary(): shapes with batch None
            self.output_shape = tree_map(lambda o: (None, *np.shape(o)[1:]), outputs)
        return outputs

    # ----- configuration
    def get_config(self) -> dict:
        """The arguments that recreate this layer with :meth:`from_config` (see the
        module docstring); values may be objects, :mod:`..serialization` encodes them."""
        args, kwargs = self.__dict__.get("_init_args", ((), {}))
        try:
            bound = inspect.signature(type(self).__init__).bind(self, *args, **kwargs)
        except TypeError as e:
            raise InvalidArgumentError(f"layer {self.name!r}: cannot recover its constructor "
                                       f"arguments for get_config ({e})") from None
        config: dict = {}
        for key, value in list(bound.arguments.items())[1:]:
            kind = bound.signature.parameters[key].kind
            if kind is inspect.Parameter.VAR_KEYWORD:      # the base Layer's arguments
                config.update({k: v for k, v in value.items() if k not in (
                    "input_shape", "input_dim", "batch_size", "batch_input_shape")})
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    raise InvalidArgumentError(f"layer {self.name!r}: get_config cannot "
                                               "describe *args constructor arguments")
            else:
                config[key] = value
        config.update(name=self.name, trainable=self.trainable,
                      dtype=self.dtype_policy.name)
        if self._input_shape_arg is not None:
            config["batch_input_shape"] = list(self._input_shape_arg)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Layer":
        """A new layer from :meth:`get_config`'s dict."""
        return cls(**config)

    def _symbolic_call(self, inputs: Any, args: tuple, kwargs: dict) -> Any:
        if args:
            raise InvalidArgumentError(f"layer {self.name!r}: pass extra arguments of a "
                                       "symbolic call by keyword")
        shape = _shape_of(inputs)
        self._maybe_build(shape)
        out_shape = self.compute_output_shape(shape)
        node = Node(self, inputs, dict(kwargs))
        self._inbound_nodes.append(node)
        multi = isinstance(out_shape, list)
        shapes = out_shape if multi else [out_shape]
        node.outputs = [KerasTensor(s, self.compute_dtype, node, i)
                        for i, s in enumerate(shapes)]
        self.input_shape = shape
        self.output_shape = out_shape
        return node.outputs if multi else node.outputs[0]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}, built={self.built}>"


def _traced_output_shape(layer: Layer, input_shape: Any) -> Any:
    """Trace ``layer.call`` on a batch of one (no execution) and read the result shapes."""
    leaves, tree = tree_flatten(input_shape, is_leaf=lambda s: isinstance(s, tuple) and all(
        d is None or isinstance(d, int) for d in s))
    dummies = [np.zeros(tuple(1 if d is None else d for d in s), layer.compute_dtype)
               for s in leaves]
    fn = jit(lambda xs: layer.call(tree_unflatten(tree, xs)))
    module = fn.lower(dummies).hlo_module
    root = module.entry.root
    out = [tuple(s.dims) for s in root.shape.tuple_shapes] if root.shape.is_tuple else \
        [tuple(root.shape.dims)]
    batch_unknown = any(s and s[0] is None for s in leaves)
    out = [(None, *s[1:]) if batch_unknown and s else s for s in out]
    return out[0] if len(out) == 1 else out


class InputLayer(Layer):
    """The layer behind :func:`Input`: no weights; its output is the model input.

    ``InputLayer(shape=(28, 28))`` (no batch size) or ``batch_shape=(None, 28, 28)``;
    TensorFlow 2 Keras's ``input_shape=`` / ``batch_input_shape=`` are accepted too. As
    the first element of a ``Sequential`` it sets the model's input shape.
    """

    def __init__(self, shape: Sequence[int | None] | None = None,
                 dtype: Any = "float32", name: str | None = None,
                 batch_size: int | None = None,
                 batch_shape: Sequence[int | None] | None = None,
                 input_shape: Sequence[int | None] | None = None,
                 batch_input_shape: Sequence[int | None] | None = None,
                 sparse: bool = False) -> None:
        if sparse:
            raise InvalidArgumentError("InputLayer: sparse inputs are not supported")
        given = [a for a in (shape, batch_shape, input_shape, batch_input_shape)
                 if a is not None]
        if len(given) != 1:
            raise InvalidArgumentError("InputLayer needs exactly one of shape= (without the "
                                       "batch size), batch_shape=, input_shape= or "
                                       "batch_input_shape=")
        if batch_shape is None:
            batch_shape = batch_input_shape
        if batch_shape is None:
            batch_shape = (batch_size, *tuple(shape if shape is not None else input_shape))
        batch_shape = tuple(batch_shape)
        super().__init__(name=name or backend.unique_name("input_layer"), dtype=dtype)
        self._accepts_integer_inputs = True
        self.batch_shape = batch_shape
        self.input_shape = self.output_shape = batch_shape
        self.built = True
        self.output = KerasTensor(batch_shape, dtype, Node(self, None, {}), 0, self.name)
        self.output.node.outputs = [self.output]

    def get_config(self) -> dict:
        return {"batch_shape": list(self.batch_shape), "dtype": self.dtype.name,
                "name": self.name}

    def call(self, inputs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape


def Input(shape: Sequence[int | None] | None = None, batch_size: int | None = None,
          dtype: Any = "float32", name: str | None = None,
          batch_shape: Sequence[int | None] | None = None) -> KerasTensor:
    """A symbolic model input: ``Input(shape=(28, 28, 1))`` (the batch size is ``None``)."""
    if batch_shape is None:
        if shape is None:
            raise InvalidArgumentError("Input needs shape= (without the batch size) or "
                                       "batch_shape=")
        batch_shape = (batch_size, *tuple(shape))
    return InputLayer(dtype=dtype, name=name, batch_shape=tuple(batch_shape)).output


__all__ = ["Layer", "KerasTensor", "Node", "InputLayer", "Input", "flatten_symbolic"]
