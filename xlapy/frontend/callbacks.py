"""Host callbacks: Python functions called from compiled code.

JAX's API: :func:`pure_callback` (a pure host function whose results later compiled ops
use; differentiable when given ``vjp=``), :func:`io_callback` (a function with side
effects, run exactly once per execution, optionally ``ordered``) and
``xlapy.debug.print`` (built on :func:`host_print`). Under ``jit`` each is one primitive
(``pure_callback``, ``io_callback``, ``debug_print``, ``debug_callback``) lowering to the
HLO jaxlib emits on CPU::

    custom-call(operands...), custom_call_target="xla_ffi_python_cpu_callback",
        api_version=API_VERSION_TYPED_FFI, backend_config={index = N : ui64}

where ``N`` is the callable's index in the process's registry
(``xlapy.backends.interpreter.host_callbacks``). The interpreter and the CPU runtime
run it by calling the function with NumPy arrays of the operands and checking what it
returns against ``result_shape_dtypes`` (a wrong shape or dtype is an
``InvalidArgumentError`` naming both; an exception raised by the function reaches the
caller unchanged, and the executable stays usable).

Effects and order: ``io_callback`` and printing carry ``custom_call_has_side_effect``
(never removed, merged or hoisted by the passes), and each trace chains its
side-effecting instructions -- loops and branches containing callbacks included -- by
control edges (``Trace._order_effects``), so they run in program order. ``ordered=True``
also threads a token through the calls of a computation, as JAX's ordered effects do:
``custom-call(token, x...) -> (token, results...)``.

Outside a trace the function simply runs (on NumPy copies of the arguments); under an
autodiff tape the call is recorded so ``vjp=`` gives its gradient. Callback
executables are never stored in the disk cache (the index means nothing in another
process). ``vmap`` of a callback is not supported (``batching.NO_RULE`` says why).
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..backends.interpreter.host_callbacks import CALLBACK_TARGET, check_results, register
from ..errors import InvalidArgumentError
from ..hlo.attrs import RawAttr
from ..hlo.builder import as_element_type
from ..hlo.shape import Shape
from . import core, dtypes, tracing
from .abstract import ShapeDtypeStruct  # noqa: F401  (jax.ShapeDtypeStruct: one class)
from .batching import NO_RULE
from .core import Array, primitive, to_array
from .graph_capture import host_op
from .pytree import tree_flatten, tree_unflatten
from .source_info import located, user_location


class CallbackSpec:
    """Everything the primitive needs about one traced callback (compared by identity)."""

    __slots__ = ("index", "name", "results", "effect", "ordered", "vjp", "in_tree",
                 "out_tree", "n_args")

    def __init__(self, index: int, name: str, results: list[Shape], effect: bool,
                 ordered: bool, vjp: Callable[..., Any] | None, in_tree: Any, out_tree: Any,
                 n_args: int) -> None:
        self.index, self.name, self.results = index, name, results
        self.effect, self.ordered, self.vjp = effect, ordered, vjp
        self.in_tree, self.out_tree, self.n_args = in_tree, out_tree, n_args


# One primitive per kind (their names are the instructions' op_type, as in JAX); the
# rules are shared.
CALLBACK_PRIMITIVES = {
    kind: primitive(kind, multiple_results=True, weak=lambda args, params: False,
                    doc=f"{kind}: a Python function called from compiled code.")
    for kind in ("pure_callback", "io_callback", "debug_print", "debug_callback")}


def _lower(ctx: core.LoweringContext, *operands: Any, spec: CallbackSpec) -> list:
    b = ctx.b
    ops = list(operands)
    arrays = [s.with_default_layout() for s in spec.results]
    trace = core.current_trace()
    if spec.ordered:
        token = trace.effect_token if trace.effect_token is not None else b.after_all()
        ops.insert(0, token)
        shape = Shape.tuple([Shape.token()] + arrays) if arrays else Shape.token()
    else:
        shape = arrays[0] if len(arrays) == 1 else Shape.tuple(arrays)
    attrs: dict[str, Any] = {"api_version": "API_VERSION_TYPED_FFI",
                             "backend_config": RawAttr(f"{{index = {spec.index} : ui64}}")}
    if spec.effect:
        attrs["custom_call_has_side_effect"] = True
    call = b.custom_call(CALLBACK_TARGET, ops, shape, **attrs)
    if spec.ordered:
        trace.effect_token = b.get_tuple_element(call, 0) if arrays else call
        return [b.get_tuple_element(call, k + 1) for k in range(len(arrays))]
    if len(arrays) == 1:
        return [call]
    return [b.get_tuple_element(call, k) for k in range(len(arrays))]


def _vjp(cts: list, ans: list, *args: Array, spec: CallbackSpec) -> list:
    if spec.vjp is None:
        raise InvalidArgumentError(located(
            f"differentiation of {spec.name} is not supported: it has no gradient rule",
            "pass vjp=fn to pure_callback (fn(ct, *args) returns one cotangent per "
            "argument), or wrap the value in xlapy.lax.stop_gradient"))
    call_args, call_kwargs = tree_unflatten(spec.in_tree, list(args))
    ct = tree_unflatten(spec.out_tree, list(cts))
    grads = spec.vjp(ct, *call_args, **call_kwargs)
    if not isinstance(grads, (tuple, list)) or len(grads) != spec.n_args:
        raise InvalidArgumentError(located(
            f"the vjp of {spec.name} returned {_count(grads)} for {spec.n_args} positional "
            "arguments", "return a tuple with one cotangent (or None) per argument"))
    flat: list = []
    for g, a in zip(grads, call_args):
        n = len(tree_flatten(a)[0])
        flat += [None] * n if g is None else tree_flatten(g)[0]
    flat += [None] * (len(args) - len(flat))          # keyword arguments: no gradient
    return flat


def _no_gradient(cts: list, ans: list, *args: Array, spec: CallbackSpec) -> list:
    """``io_callback``: no gradient flows through a call made for its effects (as through
    TF's ``py_func``), unless its maker gave one (``tf.py_function``)."""
    if spec.vjp is not None:
        return _vjp(cts, ans, *args, spec=spec)
    return [None] * len(args)


for _p in CALLBACK_PRIMITIVES.values():
    _p.def_lowering(_lower)
    NO_RULE[_p.name] = ("a host callback runs once per call of the program: batching it "
                        "needs a sequential or vectorized callback, which is not built")
CALLBACK_PRIMITIVES["pure_callback"].def_vjp(_vjp)          # the user's vjp=, or an error
CALLBACK_PRIMITIVES["io_callback"].def_vjp(_no_gradient)
# debug_print and debug_callback have no results, so no gradient ever reaches them.


def _count(x: Any) -> str:
    return f"{len(x)} values" if isinstance(x, (tuple, list)) else f"a {type(x).__name__}"


# ------------------------------------------------------------------------------- user API
def _result_shapes(result_shape_dtypes: Any) -> tuple[list[Shape], Any]:
    leaves, tree = tree_flatten(result_shape_dtypes)
    shapes = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise InvalidArgumentError(located(
                f"result_shape_dtypes must be a pytree of objects with .shape and .dtype, "
                f"got {type(leaf).__name__}", "use xlapy.ShapeDtypeStruct(shape, dtype)"))
        dt = dtypes.canonicalize(leaf.dtype)
        shapes.append(Shape.array(as_element_type(dt), tuple(int(d) for d in leaf.shape)))
    return shapes, tree


def _describe(kind: str, fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    loc = user_location(3)
    return f"{kind} {name!r}" + (f" (traced at {loc.describe()})" if loc is not None else "")


def call_host_function(kind: str, callback: Callable[..., Any], result_shape_dtypes: Any,
                       args: tuple, kwargs: dict, *, effect: bool, ordered: bool,
                       vjp: Callable[..., Any] | None = None, copy_args: bool = False,
                       op: str | None = None) -> Any:
    """Call ``callback(*args, **kwargs)`` on the host from (possibly) compiled code and
    return its results as Arrays with ``result_shape_dtypes``'s structure (see the module
    docstring; ``pure_callback`` and ``io_callback`` are this with their settings).
    ``kind`` names the call in errors; ``op`` is the primitive (default: from ``kind``)."""
    if not callable(callback):
        raise InvalidArgumentError(located(f"{kind}: callback must be callable, got "
                                           f"{type(callback).__name__}"))
    recorders = core._RECORDERS.items
    if recorders and not recorders[-1].depth and core.current_trace() is None:
        # a graph being recorded keeps the call as one node, run again with the graph
        tf_op = "PrintV2" if op == "debug_print" else "PyFunc"
        return host_op(tf_op)(call_host_function)(
            kind, callback, result_shape_dtypes, args, kwargs, effect=effect,
            ordered=ordered, vjp=vjp, copy_args=copy_args, op=op)
    shapes, out_tree = _result_shapes(result_shape_dtypes)
    leaves, in_tree = tree_flatten((tuple(args), dict(kwargs)))
    try:
        arrays = [to_array(x) for x in leaves]
    except InvalidArgumentError as e:
        raise InvalidArgumentError(located(f"{kind}: arguments must be arrays or numbers "
                                           f"({e})")) from None
    name = _describe(kind, callback)

    def host(*values: np.ndarray) -> list:
        vals = [np.array(v) for v in values] if copy_args else list(values)
        a, kw = tree_unflatten(in_tree, vals)
        return tree_flatten(callback(*a, **kw))[0]

    spec = CallbackSpec(register(host, name), name, shapes, effect, ordered, vjp, in_tree,
                        out_tree, len(args))
    if effect:
        tracing.EFFECTS_USED[0] = True
    prim = CALLBACK_PRIMITIVES[op or kind.replace(".", "_")]
    if core.current_trace() is not None:
        outs = core.bind(prim, *arrays, spec=spec)
    else:
        values = check_results(name, host(*[np.array(a._value) for a in arrays]), shapes)
        outs = [Array(v) for v in values]
        if core._TAPES.items:
            core.record(prim, arrays, {"spec": spec}, outs)
    return tree_unflatten(out_tree, list(outs))


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  vjp: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """Call the pure Python function ``callback(*args, **kwargs)`` (NumPy arrays in,
    arrays out) from compiled code, as ``jax.pure_callback`` does.

    ``result_shape_dtypes`` is a pytree of :class:`ShapeDtypeStruct` (anything with
    ``shape`` and ``dtype``) describing the results; ``callback`` must return the same
    structure. The compiler may drop a call whose results are unused (it is pure).
    ``vjp(ct, *args, **kwargs)``, when given, is its reverse-mode derivative: one
    cotangent (or None) per positional argument, written with xlapy ops (it may itself
    use ``pure_callback``); forward mode transposes it."""
    return call_host_function("pure_callback", callback, result_shape_dtypes, args, kwargs,
                              effect=False, ordered=False, vjp=vjp)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                ordered: bool = False, **kwargs: Any) -> Any:
    """Call ``callback(*args, **kwargs)``, which may have side effects, from compiled code
    (``jax.experimental.io_callback``): it runs exactly once each time the program reaches
    it, in program order (``ordered=True`` also threads a token through the calls). The
    arrays it receives are copies it may keep. Not differentiable."""
    return call_host_function("io_callback", callback, result_shape_dtypes, args, kwargs,
                              effect=True, ordered=ordered, copy_args=True)


@contextmanager
def outside_traces() -> Iterator[None]:
    """Run the block op by op: no trace and no autodiff tape of this thread sees it (for
    host code that uses xlapy ops, e.g. ``tf.py_function``'s function)."""
    traces, tapes = list(core._TRACE_STACK.items), list(core._TAPES.items)
    core._TRACE_STACK.clear()
    core._TAPES.clear()
    try:
        yield
    finally:
        core._TRACE_STACK[:] = traces
        core._TAPES[:] = tapes


def _stdout(text: str) -> None:
    sys.stdout.write(text)              # looked up when printing: redirections apply


def host_print(kind: str, render: Callable[[list[np.ndarray]], str], values: Sequence[Any],
               write: Callable[[str], Any] = _stdout, ordered: bool = True) -> None:
    """``write(render(arrays))`` when the program runs (at once when not compiling), with
    ``arrays`` the NumPy values of ``values``: the engine of ``xlapy.debug.print`` and
    ``tf.print``."""
    def emit(*arrays: np.ndarray) -> tuple:
        write(render(list(arrays)))
        return ()
    emit.__qualname__ = kind
    call_host_function(kind, emit, (), tuple(values), {}, effect=True, ordered=ordered,
                       op="debug_print")


__all__ = ["ShapeDtypeStruct", "pure_callback", "io_callback", "host_print", "outside_traces",
           "call_host_function", "CALLBACK_PRIMITIVES"]
