"""Models: ``Sequential``, the functional ``Model(inputs, outputs)`` and subclassed models.

- ``Sequential([layers...])`` chains layers; it is built as soon as the input shape is
  known (``input_shape=`` on the first layer, an ``Input``, ``build(shape)`` or the first
  call).
- ``Model(inputs, outputs)`` with KerasTensors from :func:`~xlapy.keras.layers.Input`
  replays the recorded layer calls in topological order (any DAG: shared layers, merges,
  several inputs).
- Subclass ``Model``, create layers in ``__init__`` (assigned layers are tracked) and
  write ``call(inputs, training=None)``.

All get the training API of :mod:`.training` (``compile``/``fit``/``evaluate``/``predict``)
plus ``summary``, ``get_weights``/``set_weights`` and ``save_weights``/``load_weights``.
Models also have ``get_config``/``from_config`` (a subclassed model's config is the
arguments its constructor was called with, unless it overrides ``get_config``),
``to_json`` (:func:`model_from_json`) and ``save(path)`` (:func:`load_model`), see
:mod:`.model_saving`.
"""
from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Mapping, Sequence

from ..errors import InvalidArgumentError, UnimplementedError
from ..frontend.core import to_array
from ..frontend.pytree import tree_unflatten
from . import saving, serialization, summary
from .layers.base import InputLayer, KerasTensor, Layer, Node, flatten_symbolic
from .training import Trainer


class Model(Trainer, Layer):
    """A trainable graph of layers (see the module docstring)."""

    _accepts_integer_inputs = True

    def __new__(cls, *args: Any, **kwargs: Any) -> "Model":
        if cls is Model and (args or "inputs" in kwargs):
            cls = Functional
        return super().__new__(cls, *args, **kwargs)      # Layer.__new__ keeps the args

    def __init__(self, *args: Any, name: str | None = None, trainable: bool = True,
                 **kwargs: Any) -> None:
        if args or "inputs" in kwargs:
            raise InvalidArgumentError("Model(inputs, outputs) builds a functional model; "
                                       "subclasses of Model take no positional arguments")
        Layer.__init__(self, trainable=trainable, name=name, **kwargs)
        self.compiled = False

    def _cast_input(self, x: Any) -> Any:
        return x

    def build(self, input_shape: Any) -> None:
        self.built = True

    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A layer by name or by index in :attr:`layers`."""
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise InvalidArgumentError(f"model {self.name!r} has no layer named {name!r}; layers: "
                                   f"{[l.name for l in self.layers]}")

    # ----- introspection and persistence
    def _summary_rows(self) -> list[tuple[str, Any, int, str]]:
        return [(f"{l.name} ({type(l).__name__})", l.output_shape, l.count_params(), "")
                for l in self.layers]

    def summary(self, line_length: int | None = None,
                print_fn: Callable[[str], None] | None = None) -> None:
        """Print the layer table: names, output shapes, parameter counts."""
        if not self.built:
            raise InvalidArgumentError(
                f"model {self.name!r} is not built yet: give the first layer input_shape=, "
                "call model.build(input_shape), or call the model on data first")
        summary.summarize(self, line_length, print_fn)

    def save_weights(self, filepath: Any, overwrite: bool = True) -> None:
        """Write :attr:`weights` to ``.npz`` (or ``.h5`` with h5py), see :mod:`.saving`."""
        saving.save_weights(self, filepath, overwrite)

    def load_weights(self, filepath: Any, skip_mismatch: bool = False) -> None:
        """Read weights written by :meth:`save_weights` (or by Keras, ``.h5``) into this
        model, which must be built."""
        saving.load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def save(self, filepath: Any, overwrite: bool = True, include_optimizer: bool = True) -> None:
        """Save the architecture, the weights and the compile settings with the optimizer
        state to a ``.keras`` file; :func:`load_model` reads it back."""
        from .model_saving import save_model
        save_model(self, filepath, overwrite=overwrite, include_optimizer=include_optimizer)

    def export_aot(self, name: str = "model", out_dir: str = ".", example: Any = None,
                   batch_size: int | None = None, **options: Any) -> Any:
        """Compile the model's inference call (``model(x, training=False)``) ahead of time
        into ``name.o`` + ``name.h`` (:func:`xlapy.aot.compile`; ``options``: ``blas``,
        ``threads``, ``shared``, ``target_cpu``, ...). The input batch shape comes from
        ``example`` (an input batch) or ``batch_size`` rows of the model's input shape;
        the weights are frozen into the object as constants. Returns the
        :class:`~xlapy.aot.AotResult`."""
        from .. import aot
        from ..aot.frontends import keras_inference
        fn, args = keras_inference(self, () if example is None else (example,), batch_size)
        return aot.compile(fn, *args, name=name, out_dir=out_dir, **options)

    def get_config(self) -> dict:
        """A subclassed model's config: the arguments its constructor was called with
        (captured, as for layers) plus ``name``, ``trainable`` and ``dtype``, as Keras 3's
        automatic config. Override it (and ``from_config``) when the constructor takes
        values that cannot be saved."""
        try:
            return Layer.get_config(self)
        except InvalidArgumentError as e:
            raise UnimplementedError(
                f"{type(self).__name__}: cannot make a config from its constructor arguments "
                f"({e}); define get_config()/from_config() to save it with model.save, or "
                "use save_weights/load_weights") from None

    @classmethod
    def from_config(cls, config: dict, custom_objects: Mapping[str, Any] | None = None) -> Any:
        """A functional model from its config (``Model.from_config``), or a subclass
        from its constructor arguments (``name``, ``trainable`` and ``dtype`` are set
        afterwards when the constructor does not take them)."""
        if "nodes" in config and (cls is Model or issubclass(cls, Functional)):
            return serialization.model_from_config({"class_name": "Functional",
                                                    "config": config}, custom_objects)
        config = dict(config)
        params = inspect.signature(cls.__init__).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        later = {} if takes_any else {k: config.pop(k) for k in ("name", "trainable", "dtype")
                                      if k in config and k not in params}
        try:
            model = cls(**config)
        except TypeError as e:
            raise InvalidArgumentError(
                f"cannot rebuild {cls.__name__} from its config {sorted(config)} ({e}); "
                "make get_config() return the constructor's arguments, or define "
                "from_config(cls, config)") from None
        if "name" in later:
            model.name = later["name"]
        if "trainable" in later:
            model.trainable = later["trainable"]
        return model

    def to_json(self, **kwargs: Any) -> str:
        """The architecture as a JSON string (:func:`model_from_json` reads it)."""
        return json.dumps(serialization.serialize(self), **kwargs)


class Functional(Model):
    """A model defined by symbolic inputs and outputs (``Model(inputs, outputs)``)."""

    def __init__(self, inputs: Any, outputs: Any, name: str | None = None,
                 trainable: bool = True) -> None:
        Layer.__init__(self, trainable=trainable, name=name or _model_name())
        self.compiled = False
        self._input_struct, self._output_struct = inputs, outputs
        self.inputs, in_tree = flatten_symbolic(inputs)
        self.outputs, self._out_tree = flatten_symbolic(outputs)
        for t in self.inputs + self.outputs:
            if not isinstance(t, KerasTensor):
                raise InvalidArgumentError(f"Model inputs and outputs must be KerasTensors "
                                           f"(from Input and layer calls), got {type(t).__name__}")
        for t in self.inputs:
            if not isinstance(t.node.layer, InputLayer):
                raise InvalidArgumentError(f"model input {t!r} does not come from Input()")
        self._nodes = self._topological_nodes()
        for node in self._nodes:
            if all(node.layer is not l for l in self._layers):
                self._layers.append(node.layer)
        self.built = True
        shapes = [t.shape for t in self.inputs]
        self.input_shape = shapes[0] if len(shapes) == 1 else shapes
        out = [t.shape for t in self.outputs]
        self.output_shape = out[0] if len(out) == 1 else out

    def _topological_nodes(self) -> list[Node]:
        order: list[Node] = []
        state: dict[int, str] = {}
        given = {id(t) for t in self.inputs}

        def visit(t: KerasTensor) -> None:
            node = t.node
            if node is None:
                raise InvalidArgumentError(f"{t!r} was not produced by a layer call")
            if isinstance(node.layer, InputLayer) and id(t) not in given:
                raise InvalidArgumentError(
                    f"graph disconnected: the output depends on input {node.layer.name!r}, "
                    "which is not among the model's inputs")
            mark = state.get(id(node))
            if mark == "done":
                return
            if mark == "active":
                raise InvalidArgumentError("the layer graph has a cycle")
            state[id(node)] = "active"
            for parent in node.parents:
                visit(parent)
            state[id(node)] = "done"
            order.append(node)

        for t in self.outputs:
            visit(t)
        return order

    def call(self, inputs: Any, training: Any = None) -> Any:
        if isinstance(inputs, dict):
            missing = [t.name for t in self.inputs if t.name not in inputs]
            if missing:
                raise InvalidArgumentError(f"model {self.name!r}: no value for inputs {missing} "
                                           f"(got keys {sorted(inputs)})")
            inputs = [inputs[t.name] for t in self.inputs]
        values, _ = flatten_symbolic(inputs)
        if len(values) != len(self.inputs):
            raise InvalidArgumentError(f"model {self.name!r} expects {len(self.inputs)} "
                                       f"inputs, got {len(values)}")
        env: dict[int, Any] = {}
        for t, v in zip(self.inputs, values):
            a = to_array(v)
            env[id(t)] = a.astype(t.dtype) if a.dtype != t.dtype else a
        for node in self._nodes:
            if isinstance(node.layer, InputLayer):
                continue
            leaves, tree = flatten_symbolic(node.inputs)
            args = tree_unflatten(tree, [env[id(l)] if isinstance(l, KerasTensor) else l
                                         for l in leaves])
            kwargs = dict(node.kwargs)
            kwargs.setdefault("training", training)       # an explicit training= wins
            out = node.layer(args, **kwargs)
            outs = out if len(node.outputs) > 1 else [out]
            for t, v in zip(node.outputs, outs):
                env[id(t)] = v
        return tree_unflatten(self._out_tree, [env[id(t)] for t in self.outputs])

    def compute_output_shape(self, input_shape: Any) -> Any:
        return self.output_shape

    def get_config(self) -> dict:
        return serialization.model_config(self)

    def _summary_rows(self) -> list[tuple[str, Any, int, str]]:
        multi = any(len(n.parents) > 1 for n in self._nodes)
        rows = []
        for node in self._nodes:
            layer = node.layer
            links = ", ".join(f"{p.node.layer.name}[0][{p.index}]" for p in node.parents) \
                if multi else ""
            shape = [t.shape for t in node.outputs]
            rows.append((f"{layer.name} ({type(layer).__name__})",
                         shape[0] if len(shape) == 1 else shape, layer.count_params(), links))
        return rows


class Sequential(Model):
    """A linear stack of layers."""

    def __init__(self, layers: Sequence[Any] | None = None, name: str | None = None,
                 trainable: bool = True) -> None:
        Layer.__init__(self, trainable=trainable, name=name or _model_name("sequential"))
        self.compiled = False
        self._declared_input: tuple | None = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Any) -> None:
        """Append a layer (an ``Input`` tensor or an ``InputLayer`` sets the input shape
        instead)."""
        if isinstance(layer, KerasTensor) and isinstance(getattr(layer.node, "layer", None),
                                                         InputLayer):
            layer = layer.node.layer
        if isinstance(layer, InputLayer):
            if self._layers:
                raise InvalidArgumentError("an Input can only be the first element of a "
                                           "Sequential model")
            self._declared_input = tuple(layer.batch_shape)
            self._build_chain(self._declared_input)
            return
        if not isinstance(layer, Layer):
            raise InvalidArgumentError(f"Sequential.add expects a Layer, got "
                                       f"{type(layer).__name__}")
        self._layers.append(layer)
        if self._declared_input is None and len(self._layers) == 1 and \
                layer._input_shape_arg is not None:
            self._declared_input = layer._input_shape_arg
        if self._declared_input is not None:
            self._build_chain(self._declared_input)
        else:
            self.built = False

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._layers:
            raise InvalidArgumentError("pop() on an empty Sequential model")
        layer = self._layers.pop()
        if self._layers and self._declared_input is not None:
            self._build_chain(self._declared_input)
        return layer

    def _build_chain(self, input_shape: tuple) -> None:
        shape = (None, *tuple(input_shape)[1:])
        self.input_shape = shape
        for layer in self._layers:
            layer._maybe_build(shape)
            out = layer.compute_output_shape(shape)
            layer.input_shape, layer.output_shape = shape, out
            shape = out
        self.output_shape = shape
        self.built = True

    def build(self, input_shape: Any = None) -> None:
        """Build every layer for inputs of ``input_shape`` (the batch size may be None)."""
        shape = input_shape if input_shape is not None else self._declared_input
        if shape is None:
            raise InvalidArgumentError("Sequential.build needs an input shape")
        self._declared_input = (None, *tuple(shape)[1:])
        self._build_chain(self._declared_input)

    def call(self, inputs: Any, training: Any = None) -> Any:
        x = inputs
        for layer in self._layers:
            x = layer(x, training=training)
        return x

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = input_shape
        for layer in self._layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def get_config(self) -> dict:
        return serialization.model_config(self)

    @classmethod
    def from_config(cls, config: dict, custom_objects: Mapping[str, Any] | None = None) -> Any:
        return serialization.model_from_config({"class_name": cls.__name__,
                                                "config": config}, custom_objects)


def _model_name(base: str = "model") -> str:
    from .backend import unique_name
    return unique_name(base)


def load_model(filepath: Any, custom_objects: Mapping[str, Any] | None = None,
               compile: bool = True, safe_mode: bool = True) -> Model:
    """A model saved by :meth:`Model.save` (see :mod:`.model_saving`)."""
    from .model_saving import load_model as _load
    return _load(filepath, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode)


def model_from_json(json_string: str, custom_objects: Mapping[str, Any] | None = None) -> Any:
    """A new (untrained) model from :meth:`Model.to_json`'s string."""
    return serialization.deserialize(json.loads(json_string), custom_objects)


def clone_model(model: Model, custom_objects: Mapping[str, Any] | None = None) -> Any:
    """A new model with the same architecture and freshly initialized weights."""
    return serialization.deserialize(serialization.serialize(model), custom_objects)


__all__ = ["Model", "Functional", "Sequential", "load_model", "model_from_json",
           "clone_model"]
