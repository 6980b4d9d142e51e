"""``run_hlo``: run an HLO module (object or text) on a backend with NumPy arguments."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.ir import HloModule
from ..hlo.shape import Shape
from .backends import get_backend


def as_module(module_or_text: HloModule | str) -> HloModule:
    """An HloModule from a module or HLO text."""
    if isinstance(module_or_text, HloModule):
        return module_or_text
    if isinstance(module_or_text, str):
        from ..hlo import parse_module
        return parse_module(module_or_text)
    raise InvalidArgumentError(
        f"expected an HloModule or HLO text, got {type(module_or_text).__name__}")


def prepare_argument(value: Any, shape: Shape, where: str) -> Any:
    """Check (and for Python scalars/lists, convert) one argument against a parameter shape."""
    if shape.is_tuple:
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
            raise InvalidArgumentError(f"{where}: expected a tuple of {len(shape.tuple_shapes)} "
                                       f"values for shape {shape}")
        return tuple(prepare_argument(v, s, f"{where}[{i}]")
                     for i, (v, s) in enumerate(zip(value, shape.tuple_shapes)))
    if shape.is_token:
        from ..backends.interpreter import TOKEN
        return TOKEN
    if isinstance(value, np.ndarray) or np.isscalar(value) and isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype != shape.dtype:
            raise InvalidArgumentError(
                f"{where}: expected element type {shape.element_type} ({shape.dtype}) for "
                f"{shape.to_text(False)}, got an array of dtype {arr.dtype}")
    else:
        arr = np.asarray(value, dtype=shape.dtype)
    if tuple(arr.shape) != shape.dims:
        raise InvalidArgumentError(
            f"{where}: expected shape {shape.to_text(False)}, got dims {tuple(arr.shape)}")
    return arr


def flatten_result(value: Any) -> list[np.ndarray]:
    """Tuple results flattened depth first into a list of arrays."""
    if isinstance(value, tuple):
        out: list[np.ndarray] = []
        for v in value:
            out.extend(flatten_result(v))
        return out
    return [value]


def run_hlo(module_or_text: HloModule | str, args: Sequence[Any] = (),
            backend: str = "interpreter") -> list[np.ndarray]:
    """Run an HLO module on ``backend`` and return its outputs as NumPy arrays.

    ``args`` are the entry parameters in order (NumPy arrays of the parameter's
    dtype, or Python scalars/lists). A tuple root is flattened depth first, so
    the result is always a list.
    """
    module = as_module(module_or_text)
    entry = module.entry
    if entry is None:
        raise InvalidArgumentError(f"module {module.name} has no entry computation")
    params = entry.parameters
    if len(args) != len(params):
        raise InvalidArgumentError(
            f"module {module.name} takes {len(params)} arguments "
            f"({', '.join(p.shape.to_text(False) for p in params)}), got {len(args)}")
    prepared = [prepare_argument(a, p.shape, f"argument {i} ({p.name})")
                for i, (a, p) in enumerate(zip(args, params))]
    executable = get_backend(backend).compile(module)
    return flatten_result(executable.execute(prepared))
