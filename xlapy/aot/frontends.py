"""What :func:`xlapy.aot.compile` accepts, turned into the HLO module it compiles.

- an :class:`~xlapy.hlo.ir.HloModule`, HLO text or a path to an ``.hlo`` file;
- a function traced at example arguments: a plain Python function, an ``xlapy.jit``
  function or an ``xlapy.tf.function`` (anything with ``lower(*args)``). A
  ``tf.function`` with a fully known ``input_signature`` needs no example arguments:
  zero arrays of the signature's shapes and dtypes are traced;
- a Keras model (:func:`keras_inference`): its inference call ``model(x,
  training=False)`` (``model.export_aot(...)`` calls this).

Variables the function reads are **frozen**, as tfcompile freezes a graph: their current
values become constants of the module (the C entry takes only the function's own
arguments). A function that assigns Variables (a training step) has state an object
cannot keep: InvalidArgumentError.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.ir import HloInstruction, HloModule
from ..hlo.shape import Shape


def freeze_parameters(module: HloModule, values: Sequence[np.ndarray]) -> HloModule:
    """A copy of ``module`` whose last ``len(values)`` entry parameters are constants
    holding ``values`` (in parameter order)."""
    if not values:
        return module
    out = module.clone()
    entry = out.entry
    keep = len(entry.parameters) - len(values)
    if keep < 0:
        raise InvalidArgumentError(f"cannot freeze {len(values)} parameters of a module with "
                                   f"{len(entry.parameters)}")
    for param, value in zip(entry.parameters[keep:], values):
        arr = np.array(value, dtype=param.shape.element_type.dtype, order="C")
        if tuple(arr.shape) != tuple(param.shape.dims):
            raise InvalidArgumentError(f"frozen value for %{param.name} has shape {arr.shape}, "
                                       f"the parameter {param.shape}")
        const = HloInstruction("constant", Shape.array(param.shape.element_type, arr.shape),
                               literal=arr, name=out.unique_name(param.name))
        entry.add_instruction(const)
        if entry.root is param:
            entry.root = const
        entry.replace_instruction(param, const)
    entry.parameters = entry.parameters[:keep]
    out.attributes.pop("entry_computation_layout", None)
    return out


def signature_arguments(fn: Any, what: str) -> tuple:
    """Zero arrays for a function's ``input_signature`` (every dim known)."""
    specs = getattr(fn, "input_signature", None)
    if not specs:
        raise InvalidArgumentError(f"{what}: give example arguments (or a tf.function with an "
                                   "input_signature) to fix the shapes of the object's inputs")
    args = []
    for k, spec in enumerate(specs):
        shape, dtype = getattr(spec, "shape", None), getattr(spec, "dtype", None)
        if shape is None or any(d is None for d in shape) or dtype is None:
            raise InvalidArgumentError(f"{what}: input_signature[{k}] {spec!r} has unknown "
                                       "dims; an object has fixed shapes: pass example "
                                       "arguments")
        args.append(np.zeros(tuple(shape), np.dtype(dtype)))
    return tuple(args)


def traced_module(fn: Callable[..., Any], example_args: tuple) -> HloModule:
    """Trace ``fn`` at ``example_args`` (module docstring) and freeze its Variables."""
    from ..frontend import jit
    what = f"xlapy.aot.compile({getattr(fn, '__name__', type(fn).__name__)})"
    if not example_args:
        example_args = signature_arguments(fn, what)
    lower = getattr(fn, "lower", None)
    lowered = (lower if callable(lower) else jit(fn).lower)(*example_args)
    assigned = getattr(lowered, "assigned", [])
    if assigned:
        names = ", ".join(getattr(v, "name", "?") for v in assigned)
        raise InvalidArgumentError(f"{what} assigns Variables ({names}); an ahead-of-time "
                                   "object keeps no state: export an inference function")
    values = [v.numpy() for v in getattr(lowered, "variables", [])]
    return freeze_parameters(lowered.hlo_module, values)


def is_keras_model(obj: Any) -> bool:
    """Whether ``obj`` is an ``xlapy.keras`` model."""
    from ..keras.models import Model
    return isinstance(obj, Model)


def keras_inference(model: Any, examples: tuple = (), batch_size: int | None = None) -> tuple:
    """``(function, example arguments)`` of a Keras model's inference call ``model(x,
    training=False)``: at ``examples`` (one input batch per model input), or at zeros of
    the model's input shape with ``batch_size`` rows."""
    from ..frontend import jit
    if not examples:
        shape = getattr(model, "input_shape", None)
        if shape is None or batch_size is None:
            raise InvalidArgumentError(f"export_aot of {getattr(model, 'name', 'a model')}: "
                                       "pass an example input batch, or batch_size= for a "
                                       "built model")
        if isinstance(shape, list):
            raise InvalidArgumentError("export_aot with batch_size= takes one-input models; "
                                       "pass example inputs for several")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"export_aot: batch_size must be a positive int, not "
                                       f"{batch_size!r}")
        if any(d is None for d in shape[1:]):
            raise InvalidArgumentError(f"export_aot: the model's input shape {shape} has "
                                       "unknown dims: pass an example input batch")
        examples = (np.zeros((batch_size, *shape[1:]), np.float32),)

    def inference(*xs: Any) -> Any:
        return model(xs[0] if len(xs) == 1 else list(xs), training=False)
    inference.__name__ = f"{getattr(model, 'name', 'model')}_inference"
    return jit(inference), tuple(examples)


def as_module(fn_or_module: Any, example_args: tuple) -> tuple[HloModule, str | None]:
    """The HLO module to compile and its source text when it came as text."""
    if isinstance(fn_or_module, HloModule):
        return fn_or_module, None
    from ..hlo import parse_module
    if isinstance(fn_or_module, (str, os.PathLike)):
        text = str(fn_or_module)
        if not text.lstrip().startswith("HloModule") and os.path.exists(text):
            with open(text) as f:
                text = f.read()
        return parse_module(text), text
    if is_keras_model(fn_or_module):
        fn_or_module, example_args = keras_inference(fn_or_module, example_args)
    if callable(fn_or_module):
        return traced_module(fn_or_module, example_args), None
    raise InvalidArgumentError(
        f"xlapy.aot.compile takes a function, an HloModule, HLO text or a path to an .hlo "
        f"file, not {type(fn_or_module).__name__}")


__all__ = ["as_module", "freeze_parameters", "is_keras_model", "keras_inference",
           "signature_arguments", "traced_module"]
