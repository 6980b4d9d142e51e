"""``run_hlo``: run an HLO module (object or text) on a backend with NumPy arguments.

Every module is verified before it runs (``xlapy.hlo.verifier``; the backends do it in
``compile``): malformed HLO raises :class:`~xlapy.errors.VerificationError` naming the
computation and instruction, and, when the module came from text given to ``run_hlo``,
the ``line:column`` of the instruction with the line itself.

Arguments are checked as a careful XLA client checks host values against the entry
parameters: NumPy arrays and scalars must have the parameter's dtype and dims; Python
scalars and (nested) lists are converted, but only when the value is representable:
a float for an integer or ``pred`` parameter, an int out of the integer type's range,
or anything that is not a number raises :class:`~xlapy.errors.InvalidArgumentError`
naming the argument, what it expected and what it got.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidArgumentError, VerificationError
from ..hlo.ir import HloModule
from ..hlo.shape import Shape
from .backends import get_backend
from .multi_device import participant_count, run_devices


def as_module(module_or_text: HloModule | str | bytes,
              args: Sequence[Any] | None = None) -> HloModule:
    """An HloModule from a module, HLO or StableHLO text, or a serialized HloModuleProto.
    StableHLO's unbounded dims (``tensor<?x...>``) are specialized from the shapes of
    ``args`` when they are arrays or scalars (``xlapy.hlo.stablehlo.dynamic``)."""
    if isinstance(module_or_text, HloModule):
        return module_or_text
    if isinstance(module_or_text, str) and args is not None and all(
            isinstance(a, (np.ndarray, np.generic, int, float, complex)) for a in args):
        from ..hlo.stablehlo import is_stablehlo, to_hlo_module
        if is_stablehlo(module_or_text):
            return to_hlo_module(module_or_text, [np.shape(a) for a in args])
    if isinstance(module_or_text, (str, bytes)):
        from ..hlo import parse_module
        return parse_module(module_or_text)
    raise InvalidArgumentError(
        f"expected an HloModule, HLO/StableHLO text or HloModuleProto bytes, got "
        f"{type(module_or_text).__name__}")


# ------------------------------------------------------------------------- verification
_COMP_LINE = re.compile(r"^\s*(?:ENTRY\s+)?%?([^\s%(){}=,]+)\s*(?:\(.*\)\s*->.*)?\{\s*$")
_INSTR_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([^\s%(){}=,]+)\s*=")


def _positions(text: str) -> tuple[dict[tuple[str, str], tuple[int, int]],
                                   dict[str, tuple[int, int]], list[str]]:
    """``(computation, instruction) -> (line, column)`` of each instruction's name and
    ``computation -> (line, column)`` of each computation's header, from HLO text."""
    lines = text.splitlines()
    instrs: dict[tuple[str, str], tuple[int, int]] = {}
    comps: dict[str, tuple[int, int]] = {}
    comp = ""
    for n, line in enumerate(lines, 1):
        m = _INSTR_LINE.match(line)
        if m and comp:
            instrs.setdefault((comp, m.group(1)), (n, m.start(1) + 1))
            continue
        m = _COMP_LINE.match(line)
        if m and not line.lstrip().startswith("HloModule"):
            comp = m.group(1)
            comps.setdefault(comp, (n, m.start(1) + 1))
    return instrs, comps, lines


def locate_problems(error: VerificationError, text: str) -> VerificationError:
    """``error`` with each problem prefixed by the ``line:column`` of the instruction (or
    computation) it names in ``text``, followed by that line."""
    instrs, comps, lines = _positions(text)
    located: list[str] = []
    for problem in error.problems:
        where, _, _ = problem.partition(": ")
        comp, _, instr = where.partition("/")
        if comp.startswith("computation "):
            pos = comps.get(comp[len("computation "):])
        elif where.startswith("module "):
            pos = (1, 1) if lines else None
        else:
            pos = instrs.get((comp, instr))
        if pos is None:
            located.append(problem)
        else:
            located.append(f"{pos[0]}:{pos[1]}: {problem}\n      {lines[pos[0] - 1].strip()}")
    head = str(error).split("\n", 1)[0]
    new = VerificationError(head + "\n  " + "\n  ".join(located), located)
    return new


def verify_for_execution(module: HloModule, text: str | None = None) -> None:
    """Run the HLO verifier as the backends do before compiling (instruction names need
    only be unique per computation, as the parser guarantees); with ``text``, problems
    carry their ``line:column`` (:func:`locate_problems`)."""
    from ..hlo.verifier import verify_module
    try:
        verify_module(module, unique_names="computation")
    except VerificationError as e:
        if text is None:
            raise
        raise locate_problems(e, text) from None


# ---------------------------------------------------------------------------- arguments
def _expected(shape: Shape) -> str:
    return f"{shape.to_text(False)} (dtype {shape.dtype})"


def from_python(value: Any, shape: Shape, where: str) -> np.ndarray:
    """A Python scalar or (nested) list converted to ``shape``'s dtype, refusing what
    would not convert exactly in kind: floats for integer or ``pred`` parameters, ints
    outside the integer type's range, non-numbers (InvalidArgumentError)."""
    what = f"{type(value).__name__} {value!r:.60}"
    try:
        natural = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"{where}: expected {_expected(shape)}, got {what}: "
                                   f"{e}") from None
    et = shape.element_type
    kind = natural.dtype.kind if natural.size else "b"     # [] fits any type
    if kind == "O" and natural.size and all(isinstance(v, int) and not isinstance(v, bool)
                                            for v in natural.reshape(-1)):
        kind = "i"                      # ints too large for int64: range-checked below
    ok = {"b": True, "i": not et.is_pred, "u": not et.is_pred,
          "f": et.is_floating or et.is_complex,
          "c": et.is_complex}.get(kind, False)
    if not ok:
        got = {"f": "a float", "c": "a complex number", "i": "an int",
               "u": "an int"}.get(kind, "a value that is not a number")
        raise InvalidArgumentError(f"{where}: expected {_expected(shape)}, got {got} "
                                   f"({what}); convert it explicitly")
    if et.is_integral and kind in "iuO":
        info = np.iinfo(shape.dtype)
        flat = [int(v) for v in natural.reshape(-1)]
        bad = next((v for v in flat if not info.min <= v <= info.max), None)
        if bad is not None:
            raise InvalidArgumentError(f"{where}: expected {_expected(shape)}, got {what}: "
                                       f"{bad} is out of range [{info.min}, {info.max}]")
        if kind == "O":
            natural = np.asarray(flat, dtype=shape.dtype).reshape(natural.shape)
    try:
        return np.asarray(natural, dtype=shape.dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"{where}: expected {_expected(shape)}, got {what}: "
                                   f"{e}") from None


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
    if isinstance(value, (bool, int, float, complex, list, tuple)) and \
            not isinstance(value, np.generic):
        arr = from_python(value, shape, where)
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError, OverflowError) as e:
            raise InvalidArgumentError(f"{where}: expected {_expected(shape)}, got "
                                       f"{type(value).__name__}: {e}") from None
        if arr.dtype == object:
            raise InvalidArgumentError(f"{where}: expected {_expected(shape)}, got "
                                       f"{type(value).__name__} {value!r:.60}")
        if arr.dtype != shape.dtype:
            raise InvalidArgumentError(
                f"{where}: expected element type {shape.element_type} ({shape.dtype}) for "
                f"{shape.to_text(False)}, got an array of dtype {arr.dtype}")
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


def run_hlo(module_or_text: HloModule | str | bytes, args: Sequence[Any] = (),
            backend: str = "interpreter", *, timeout: float | None = None) -> list:
    """Run an HLO module on ``backend`` and return its outputs as NumPy arrays.

    ``args`` are the entry parameters in order (NumPy arrays of the parameter's
    dtype, or Python scalars/lists that convert exactly, see the module docstring).
    The module is verified first. A tuple root is flattened depth first, so the result
    is always a list.

    A module with ``replica_count x num_partitions`` > 1 participants runs once per device
    (``multi_device.py``): ``args`` is then one argument list per participant this process
    runs (all of them in one process; its own in an MPI run), and the result is one output
    list per participant. ``timeout`` (seconds) bounds each collective's wait for the other
    participants (default ``--xla_cpu_collective_call_terminate_timeout_seconds``).
    """
    module = as_module(module_or_text, args)
    entry = module.entry
    if entry is None:
        raise InvalidArgumentError(f"module {module.name} has no entry computation")
    params = entry.parameters
    replicas, partitions = participant_count(module)
    multi = replicas * partitions > 1
    if not multi and len(args) != len(params):
        raise InvalidArgumentError(
            f"module {module.name} takes {len(params)} arguments "
            f"({', '.join(p.shape.to_text(False) for p in params)}), got {len(args)}")
    be = get_backend(backend)
    try:
        executable = be.compile(module)
    except VerificationError as e:
        from ..hlo.stablehlo import is_stablehlo
        if not isinstance(module_or_text, str) or is_stablehlo(module_or_text):
            raise                   # line:column only for HLO text
        raise locate_problems(e, module_or_text) from None

    def prepare(device_args: Sequence[Any], device: int | None = None) -> list:
        on = "" if device is None else f"device {device}: "
        if device is not None and (not isinstance(device_args, (list, tuple))
                                   or len(device_args) != len(params)):
            got = len(device_args) if isinstance(device_args, (list, tuple)) else \
                type(device_args).__name__
            raise InvalidArgumentError(
                f"{on}module {module.name} takes {len(params)} arguments "
                f"({', '.join(p.shape.to_text(False) for p in params)}), got {got}")
        return [prepare_argument(a, p.shape, f"{on}argument {i} ({p.name})")
                for i, (a, p) in enumerate(zip(device_args, params))]

    if multi:
        values = run_devices(module, executable, args, prepare, timeout, be.name)
        return [flatten_result(v) for v in values]
    return flatten_result(executable.execute(prepare(args)))
