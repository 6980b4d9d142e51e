"""Front-end core: the :class:`Array` value, :class:`Primitive` and :func:`bind`.

Every operation of the front end is a :class:`Primitive`, defined once by how it lowers
to HLO with an :class:`~xlapy.hlo.builder.XlaBuilder`. :func:`bind` applies one:

- **inside a trace** (``jit``), the lowering is recorded into the trace's builder and the
  result is a *traced* Array (an HLO instruction plus its shape);
- **eagerly**, a one-op HLO module is built for the concrete input shapes and dtypes,
  compiled on the default backend and run at once. Executables are cached per
  (primitive, params, input avals, backend), so eager mode and jit share semantics, the
  way JAX runs eager ops.

Operators on Array (``+``, ``x[i]``, ``.sum()`` ...) are installed by ``xlapy.numpy``.
Each primitive is created, lowered and given its autodiff and batching rules in its
family file (``primitives_<family>.py``, see :class:`Primitive`); this module knows none
of them by object, only the registry :data:`PRIMITIVES`, so it imports no other part of
the front end but ``dtypes`` and ``source_info``.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Sequence

import numpy as np

from ..config import cache_settings, env_default_backend
from ..errors import InvalidArgumentError, ShapeError
from ..hlo.builder import XlaBuilder, as_element_type, build_module
from ..hlo.ir import HloComputation, HloInstruction
from ..hlo.shape import Shape
from ..threadlocal import PerThreadList
from . import dtypes
from .source_info import located

# The backend eager ops and jitted functions run on: ``XLAPY_DEFAULT_BACKEND``, else "gpu"
# when a usable NVIDIA GPU is present, else "cpu" -- decided at the first use (None until
# then), so importing xlapy never touches the GPU driver.
_DEFAULT_BACKEND: list[str | None] = [None]


def set_default_backend(name: str) -> None:
    """Run eager ops and jitted functions on backend ``name`` from now on."""
    from ..client import get_backend
    get_backend(name)              # fail early on an unknown name
    _DEFAULT_BACKEND[0] = name


def default_backend() -> str:
    """The backend eager ops and jitted functions run on (see ``_DEFAULT_BACKEND``)."""
    name = _DEFAULT_BACKEND[0]
    if name is None:
        name = env_default_backend()
        if name is None:
            from ..backends.cuda_probe import usable_gpu
            name = "gpu" if usable_gpu() else "cpu"
        _DEFAULT_BACKEND[0] = name
    return name


# ---------------------------------------------------------------------------------- Array
class Array:
    """An n-dimensional array: concrete (a NumPy value) or traced (an HLO instruction).

    ``weak_type`` marks values that came from Python scalars (see ``dtypes``).
    """

    __slots__ = ("_value", "_instr", "_trace", "shape", "dtype", "weak_type", "__weakref__")
    __array_priority__ = 100
    __array_ufunc__ = None        # NumPy defers binary operators to our reflected methods
    __hash__ = None               # type: ignore[assignment]

    def __init__(self, value: np.ndarray | None = None, *, weak_type: bool = False,
                 instr: HloInstruction | None = None, trace: Any = None) -> None:
        self._value = value
        self._instr = instr
        self._trace = trace
        self.weak_type = bool(weak_type)
        if value is not None:
            self.shape: tuple[int, ...] = tuple(value.shape)
            self.dtype: np.dtype = value.dtype
        else:
            assert instr is not None
            self.shape = tuple(instr.shape.dims)
            self.dtype = instr.shape.dtype

    # ----- basic properties
    @property
    def is_traced(self) -> bool:
        """Whether the value is unknown here: traced, or a value a graph being recorded
        computes from its arguments (ops then take their general path instead of
        specializing on the value, which would freeze it into the graph)."""
        if self._value is None:
            return True
        recorders = _RECORDERS.items
        return bool(recorders) and recorders[-1].depends(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def aval(self) -> tuple[tuple[int, ...], np.dtype, bool]:
        """The abstract value: (shape, dtype, weak_type)."""
        return (self.shape, self.dtype, self.weak_type)

    def type_text(self) -> str:
        """``f32[2,3]``, the HLO spelling of this array's type."""
        return f"{as_element_type(self.dtype).name}[{','.join(map(str, self.shape))}]"

    def block_until_ready(self) -> "Array":
        """Wait until the value is computed (host values always are); returns ``self``."""
        return self

    # ----- conversions to Python / NumPy
    def _concrete(self, what: str) -> np.ndarray:
        if self._value is None:
            raise InvalidArgumentError(located(
                f"{what} a traced value of type {self.type_text()}: its value is not known "
                "while the function is being compiled",
                "use xlapy.lax.cond / xlapy.lax.while_loop for control flow on traced values, "
                "or mark the argument static with static_argnums / static_argnames"))
        return self._value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        v = self._python_value("converting to a NumPy array")
        return np.asarray(v, dtype=dtype)

    def _python_value(self, what: str) -> np.ndarray:
        """The value for Python control flow: refused while a graph is recorded, where
        it would be frozen into the graph (``graph_capture.py``)."""
        recorders = _RECORDERS.items
        if recorders:
            recorders[-1].check_python_use(self, what)
        return self._concrete(what)

    def __bool__(self) -> bool:
        return bool(self._python_value("converting to a Python bool"))

    def __int__(self) -> int:
        return int(self._python_value("converting to a Python int"))

    def __float__(self) -> float:
        return float(self._python_value("converting to a Python float"))

    def __complex__(self) -> complex:
        return complex(self._concrete("converting to a Python complex"))

    def __index__(self) -> int:
        v = self._python_value("using as a Python index")
        if v.dtype.kind not in "iu" or v.ndim:
            raise TypeError(f"only integer scalar arrays can be used as an index, "
                            f"got {self.type_text()}")
        return int(v)

    def item(self) -> Any:
        return self._python_value("calling .item() on").item()

    def numpy(self) -> np.ndarray:
        """The value as a NumPy array (TensorFlow's ``Tensor.numpy()``; a copy, so writing
        to it never changes this array). Not available on traced values."""
        return np.array(self._python_value("calling .numpy() on"))

    def tolist(self) -> Any:
        return self._python_value("calling .tolist() on").tolist()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("xlapy arrays are immutable; use x = x.at[idx].set(value) instead")

    def __repr__(self) -> str:
        if self._value is None:
            return f"Traced<{self.type_text()}{', weak_type' if self.weak_type else ''}>"
        body = np.array2string(np.asarray(self._value), separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self.dtype})"

    __str__ = __repr__


def to_array(x: Any, dtype: Any = None) -> Array:
    """An Array from an Array, a NumPy value, a Python scalar or a nested list.

    Python scalars become weakly typed; 64-bit NumPy types are canonicalized to 32 bits.
    """
    if isinstance(x, Array):
        if dtype is None or np.dtype(dtype) == x.dtype:
            return x
        return convert(x, dtype)
    read = getattr(x, "__xlapy_array__", None)     # Variables
    if read is not None:
        return to_array(read(), dtype)
    if dtype is not None:
        dt = dtypes.canonicalize(dtype)
        return Array(np.asarray(x, dtype=dt))
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        dt, weak = dtypes.python_scalar_dtype(x)
        try:
            return Array(np.asarray(x, dtype=dt), weak_type=weak)
        except OverflowError:
            raise InvalidArgumentError(f"Python int {x} does not fit in {dt}") from None
    if isinstance(x, (list, tuple)) and any(isinstance(e, Array) for e in _flat(x)):
        return _stack_nested(x)
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"cannot convert {type(x).__name__} to an array: {e}") from None
    if arr.dtype == object or arr.dtype.kind in "SUMm":
        raise InvalidArgumentError(f"cannot convert {type(x).__name__} of dtype {arr.dtype} "
                                   "to an array")
    if isinstance(x, (list, tuple)) and arr.dtype.kind in "iuf":
        arr = arr.astype(dtypes.DEFAULT_INT if arr.dtype.kind in "iu" else dtypes.DEFAULT_FLOAT)
    return Array(np.asarray(arr, dtype=dtypes.canonicalize(arr.dtype)))


def convert(x: Array, dtype: Any, weak_type: bool = False) -> Array:
    """``x`` converted to ``dtype`` (canonicalized to 32 bits) with weak type ``weak_type``
    (``lax.convert_element_type``)."""
    dt = dtypes.canonicalize(dtype)
    if x.dtype == dt and x.weak_type == weak_type:
        return x
    if x.dtype == dt and not x.is_traced:
        return new_ref(x, weak_type)
    return bind(get_primitive("convert_element_type"), x, new_dtype=dt, weak_type=weak_type)


def _stack_nested(x: Any) -> Array:
    """An Array from nested lists/tuples holding Arrays (stacked along new leading axes)."""
    if not isinstance(x, (list, tuple)):
        return to_array(x)
    parts = [_stack_nested(e) for e in x]
    if not parts:
        return to_array(np.zeros((0,), dtypes.DEFAULT_FLOAT))
    dt, weak = dtypes.promote_types(*[(p.dtype, p.weak_type) for p in parts])
    reshape = get_primitive("reshape")
    parts = [bind(reshape, convert(p, dt, weak), new_sizes=(1,) + p.shape) for p in parts]
    shapes = {p.shape for p in parts}
    if len(shapes) != 1:
        raise ShapeError(f"cannot build an array from sequences of shapes {sorted(shapes)}")
    if len(parts) == 1:
        return parts[0]
    return bind(get_primitive("concatenate"), *parts, dimension=0)


def _flat(x: Any):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


# ------------------------------------------------------------------------------ primitives
class Primitive:
    """One operation of the front end and every rule a transformation needs for it.

    A primitive is created with :func:`primitive` in its family file
    (``primitives_elementwise.py``, ``primitives_data_movement.py`` ...) and its rules are
    registered beside it, each one way, with the ``def_*`` methods (usable as decorators):

    - ``def_lowering(lower)``: ``lower(ctx, *operands, **params)`` builds the op with
      ``ctx.b`` (an :class:`~xlapy.hlo.builder.XlaBuilder`) and returns one instruction (a
      list when ``multiple_results``);
    - ``def_vjp(rule)``: the reverse-mode rule ``rule(ct, ans, *args, **params)``: given the
      cotangent ``ct`` of the result (a list for ``multiple_results``, with zeros for results
      that got none), the primal result ``ans`` and operands, one cotangent per operand
      (``None`` where the operand takes no gradient, e.g. integer indices). Rules are
      written with ``lax`` ops, so they are themselves differentiable;
    - ``def_jvp(rule)``: an optional forward-mode rule ``rule(tangents, outs, *args,
      **params)`` returning the output tangents (``tangents`` has None for operands without
      one). Without it forward mode transposes the (linear) vjp rule;
    - ``def_batching(rule)``: the rule ``vmap`` uses, ``rule(args, dims, **params) ->
      (outs, out_dims)`` where ``dims[i]`` is the batched axis of ``args[i]`` or None.

    ``weak(args, params)`` decides the results' weak type (default: all operands weak); for
    ``multiple_results`` it may return one bool per result. A primitive without a rule raises
    a clear error when a transformation needs it.
    """

    def __init__(self, name: str, *, multiple_results: bool = False,
                 weak: Callable[[Sequence[Array], dict], Any] | None = None,
                 doc: str = "") -> None:
        self.name = name
        self.multiple_results = multiple_results
        self.weak = weak
        self.doc = doc
        self.lower: Callable[..., Any] = self._no_lowering
        self.vjp: Callable[..., Any] | None = None
        self.jvp: Callable[..., Any] | None = None
        self._batching: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"Primitive({self.name!r})"

    # ----- rule registration (each returns the rule, so it works as a decorator)
    def def_lowering(self, lower: Callable[..., Any]) -> Callable[..., Any]:
        self.lower = lower
        return lower

    def def_vjp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        self.vjp = rule
        return rule

    def def_jvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        self.jvp = rule
        return rule

    def def_batching(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        self._batching = rule
        return rule

    @property
    def has_batching_rule(self) -> bool:
        return self._batching is not None

    def batching_rule(self, args: Sequence[Array], dims: Sequence[int | None],
                      **params: Any) -> tuple[Any, Any]:
        """Apply the batching rule (``vmap``); a primitive without one says so."""
        if self._batching is None:
            raise InvalidArgumentError(located(
                f"vmap of {self.name!r} is not supported: it has no batching rule",
                "call the function once per example, or register a rule with "
                f"{self.name}_p.def_batching"))
        return self._batching(args, dims, **params)

    def _no_lowering(self, ctx: Any, *operands: Any, **params: Any) -> Any:
        raise InvalidArgumentError(f"primitive {self.name!r} has no lowering")

    # ----- application
    def bind(self, *args: Array, **params: Any) -> Any:
        return bind(self, *args, **params)

    def result_weak(self, args: Sequence[Array], params: dict) -> Any:
        if self.weak is not None:
            return self.weak(args, params)
        return bool(args) and all(a.weak_type for a in args)


PRIMITIVES: dict[str, Primitive] = {}


def primitive(name: str, **kw: Any) -> Primitive:
    """Define and register a primitive (names are unique; see :class:`Primitive`)."""
    if name in PRIMITIVES:
        raise InvalidArgumentError(f"primitive {name!r} is defined twice")
    p = Primitive(name, **kw)
    PRIMITIVES[name] = p
    return p


def get_primitive(name: str) -> Primitive:
    """The registered primitive ``name`` (family files register them when imported)."""
    p = PRIMITIVES.get(name)
    if p is None:
        raise InvalidArgumentError(f"no primitive named {name!r} is registered")
    return p


class LoweringContext:
    """What a lowering rule gets: the builder, plus helpers for called computations
    that carry the same metadata as the op being lowered."""

    def __init__(self, builder: XlaBuilder, metadata: Any = None) -> None:
        self.b = builder
        self.metadata = metadata

    def sub_builder(self, name: str) -> XlaBuilder:
        sb = XlaBuilder(name)
        sb.set_op_metadata(self.metadata)
        return sb

    def scalar_computation(self, opcode: str, dtype: Any) -> HloComputation:
        """``(x, y) -> opcode(x, y)`` over scalars of ``dtype`` (a reducer / combiner)."""
        et = as_element_type(dtype)
        sb = self.sub_builder(f"{opcode}_{et.name}")
        x, y = sb.parameter(Shape.scalar(et)), sb.parameter(Shape.scalar(et))
        if opcode == "set":
            return sb.build(y)
        return sb.build(sb.add_instruction(opcode, [x, y]))


# The trace stack: jit pushes a Trace, sub-computations (cond branches, loop bodies) push
# nested ones. A Trace has ``apply(primitive, args, params) -> list[Array]``. Per thread:
# a thread never sees another thread's traces, so its eager ops run eagerly.
_TRACE_STACK = PerThreadList()


def current_trace() -> Any:
    stack = _TRACE_STACK.items
    return stack[-1] if stack else None


# Active autodiff tapes (``xlapy.frontend.autodiff``): each gets ``record(prim, args,
# params, outs)`` for every primitive applied while it is active (per thread, too).
_TAPES = PerThreadList()


# Graph recorders (``graph_capture.py``, TF's graph mode): the innermost one sees every
# primitive applied eagerly while it is active (per thread).
_RECORDERS = PerThreadList()


def record(prim: Any, args: Sequence[Array], params: dict, outs: Sequence[Array]) -> None:
    """Tell the active tapes that ``prim`` mapped ``args`` to ``outs``."""
    for tape in _TAPES:
        tape.record(prim, args, params, outs)


# A new Array object for the same value, seen by tapes as the identity (not registered:
# it never lowers to an instruction).
alias_p = Primitive("alias")
alias_p.def_lowering(lambda ctx, x: x)
alias_p.def_vjp(lambda ct, ans, x: (ct,))
alias_p.def_jvp(lambda tangents, outs, x: [tangents[0]])
alias_p.def_batching(lambda args, dims: (args[0], dims[0]))


def new_ref(x: Array, weak_type: bool | None = None, keep_gradient: bool = True) -> Array:
    """A new Array object for ``x``'s value (``weak_type`` re-types it).

    Active tapes record it as an identity, so gradients flow through it; with
    ``keep_gradient=False`` it is a fresh value to them (``stop_gradient``, Variable reads).
    """
    weak = x.weak_type if weak_type is None else weak_type
    if type(x) is not Array:                # a vmap batch tracer
        y = x.fresh_ref(weak)
    elif x._value is not None:
        y = Array(x._value, weak_type=weak)
    else:
        y = Array(instr=x._instr, trace=x._trace, weak_type=weak)
    if keep_gradient and _TAPES.items:
        record(alias_p, [x], {}, [y])
    return y


def bind(prim: Primitive, *args: Array, **params: Any) -> Any:
    """Apply ``prim`` to Arrays: record it in the current trace or run it eagerly."""
    for a in args:
        if not isinstance(a, Array):
            raise InvalidArgumentError(f"{prim.name}: operands must be Arrays, got "
                                       f"{type(a).__name__}")
    stack = _TRACE_STACK.items              # current_trace(), without the call
    if stack:
        top = stack[-1]
        outs = top.apply(prim, args, params)
    else:
        top = None
        outs = _eager(prim, args, params)
    if _TAPES.items:
        # A vmap's batch trace hides the tapes older than it: they record the primitives
        # its batching rules bind below instead (see ``batching``).
        below = getattr(top, "tapes_below", ())
        for tape in _TAPES:
            if tape not in below:
                tape.record(prim, args, params, outs)
    if _RECORDERS.items and not stack:
        _RECORDERS.items[-1].record(prim, args, params, outs)
    return outs if prim.multiple_results else outs[0]


# One-op executables of eager operations, least recently used first; at most
# ``cache_settings().eager_ops`` of them (an unbounded cache grew with every new shape).
_EAGER_CACHE: collections.OrderedDict[Any, Any] = collections.OrderedDict()


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, tuple):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, np.ndarray):
        raise InvalidArgumentError("primitive parameters must be static Python values, "
                                   "not NumPy arrays")
    return v


def result_weak_types(prim: Primitive, args: Sequence[Array], params: dict, n: int) -> list[bool]:
    """The weak type of each of ``prim``'s ``n`` results."""
    weak = prim.result_weak(args, params)
    if isinstance(weak, (list, tuple)):
        return [bool(w) for w in weak]
    return [bool(weak)] * n


def plain_eager() -> bool:
    """Do operations now run eagerly with nothing watching them (no trace, no tape, no
    graph being recorded)?"""
    return not _TRACE_STACK.items and not _TAPES.items and not _RECORDERS.items


def _eager(prim: Primitive, args: Sequence[Array], params: dict) -> list[Array]:
    for a in args:
        if a._instr is not None and _HOST_SLOT.__get__(a, Array) is None:
            raise InvalidArgumentError(located(
                f"{prim.name}: a traced value escaped from the function that was being "
                f"compiled ({a.type_text()})",
                "return values from the jitted function instead of storing them"))
    backend = default_backend()
    key = (prim, tuple(sorted((k, _hashable(v)) for k, v in params.items())) if params else (),
           tuple((a.shape, a.dtype, a.weak_type) for a in args), backend)
    entry = _EAGER_CACHE.get(key)
    if entry is None:
        # [executable, weak type of each result (known after the first run), whether its
        #  results stay on a device]
        exe = _compile_eager(prim, args, params, backend)
        entry = [exe, None, hasattr(exe, "execute_resident")]
        _EAGER_CACHE[key] = entry
        limit = cache_settings().eager_ops
        while len(_EAGER_CACHE) > limit:
            _EAGER_CACHE.popitem(last=False)
    else:
        try:
            _EAGER_CACHE.move_to_end(key)
        except KeyError:                    # evicted meanwhile by another thread
            pass
    if entry[2]:
        result = entry[0].execute_resident([device_argument(a) for a in args])
    else:
        result = entry[0].execute([a._value for a in args])
    if not prim.multiple_results:
        weak = entry[1]
        if weak is None:
            weak = entry[1] = result_weak_types(prim, args, params, 1)
        if type(result) is np.ndarray:
            return [Array(result, weak_type=weak[0])]
        return [result_array(result, weak[0])]
    outs = list(result)
    weak = entry[1]
    if weak is None:
        weak = entry[1] = result_weak_types(prim, args, params, len(outs))
    return [result_array(v, w) for v, w in zip(outs, weak)]


def _compile_eager(prim: Primitive, args: Sequence[Array], params: dict, backend: str) -> Any:
    from ..client import get_backend
    b = XlaBuilder(f"eager_{prim.name}")
    operands = [b.parameter((a.dtype, a.shape)) for a in args]
    out = prim.lower(LoweringContext(b), *operands, **params)
    root = b.tuple(list(out)) if prim.multiple_results else out
    module = build_module(b.build(root), f"eager_{prim.name}")
    return get_backend(backend).compile(module)


def eager_cache_size() -> int:
    """How many one-op executables eager mode holds now."""
    return len(_EAGER_CACHE)


_HOST_SLOT = Array._value      # the slot itself (a DeviceArray's ``_value`` is a property)

#: The class of device Arrays (``device_array.DeviceArray``, installed when the front end
#: is imported): a device executable's results are wrapped in it.
DEVICE_ARRAY: list[type] = []


def device_argument(a: Array) -> Any:
    """What a device executable takes for ``a``: the device Array itself while its value
    is on a device (the executable binds its buffer), else the host value."""
    return a if type(a) is not Array and getattr(a, "_device", None) is not None \
        else a._value


def result_array(value: Any, weak_type: bool = False) -> Array:
    """An Array of an executable's result leaf: a host array, or a device value."""
    if type(value) is np.ndarray:
        return Array(value, weak_type=weak_type)
    if hasattr(value, "buffer"):                    # a GPU backend's DeviceValue
        return DEVICE_ARRAY[0](value, weak_type=weak_type)
    return Array(np.asarray(value), weak_type=weak_type)


__all__ = ["Array", "DEVICE_ARRAY", "device_argument", "result_array", "Primitive",
           "PRIMITIVES", "primitive", "get_primitive", "bind", "to_array", "convert", "new_ref",
           "LoweringContext", "current_trace", "set_default_backend", "default_backend"]
