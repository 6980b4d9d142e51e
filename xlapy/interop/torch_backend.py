"""``torch.compile(model, backend="xlapy")``: PyTorch graphs compiled by xlapy.

TorchDynamo captures the model's FX graph; AOTAutograd splits it into a forward and a
backward graph of core-ATen ops (PyTorch's ``core_aten_decompositions`` break the rest
down); each graph is interpreted op by op with the lowerings of
``xlapy.interop.torch_ops`` on arrays traced under ``xlapy.jit``, so it gets xlapy's HLO
passes, fusion and CPU code generation, and is compiled once per input shape (dynamic
shapes are specialized). Tensors cross without copies: inputs are viewed as NumPy arrays
(``Tensor.numpy()``), outputs are wrapped with ``torch.from_numpy``; outputs that are
inputs, views of inputs or aliases of other outputs (what AOTAutograd saves for the
backward) are made by PyTorch without copies (``xlapy.interop.torch_outputs``).

In a graph with ops that have no lowering (or dtypes xlapy does not compute, such as
float64) those ops run in PyTorch between xlapy-compiled pieces
(``xlapy.interop.torch_partition``), and one INFO line on the ``xlapy.interop.torch``
logger lists them; ops Dynamo itself cannot capture are graph breaks run by PyTorch.
The backend is registered under the ``torch_dynamo_backends`` entry point, so
``backend="xlapy"`` works without importing xlapy.
"""
from __future__ import annotations

import functools
import logging
import os
from typing import Any, Callable, Sequence

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._decomp import core_aten_decompositions
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.node import map_arg

from .. import jit
from ..errors import InvalidArgumentError, UnimplementedError
from .. import numpy as xnp
from ..frontend.dtypes import canonicalize as canonicalize_dtype
from . import torch_ops
from .torch_dtypes import SUPPORTED, to_numpy_dtype
from .torch_outputs import SMALL_INT64, OutputPlan
from .torch_partition import split_unsupported

log = logging.getLogger("xlapy.interop.torch")

__all__ = ["xlapy_backend", "compile_graph", "unsupported_ops", "ensure_registered"]

_INT32 = 2 ** 31


def _op_name(node: torch.fx.Node) -> str:
    return str(node.target)


def _meta_tensors(node: torch.fx.Node) -> list[Any]:
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else [val]
    return [v for v in vals if isinstance(v, torch.Tensor)]


# Ops whose int64 results are computed in 32 bits: they move, select or compare
# values, produce indices (bounded by tensor sizes), or are the index arithmetic the
# decompositions emit (add, sub, clamp, ...); the inputs are checked to lie in the
# 32-bit range on every call. Reductions, products, powers and casts from floats that
# produce int64 can leave that range, so they run in PyTorch.
_INT64_EXACT = frozenset(["<built-in function getitem>"]) | frozenset(
    f"aten.{n}" for n in (
        "add", "sub", "neg", "clamp", "minimum", "maximum", "remainder", "abs",
        "scalar_tensor", "full", "full_like", "zeros_like", "ones_like", "empty",
        "view", "_unsafe_view", "reshape", "permute", "expand", "clone", "alias",
        "lift_fresh_copy", "detach", "contiguous", "squeeze", "unsqueeze", "slice",
        "select", "cat", "split_with_sizes", "repeat", "flip", "index_select", "gather",
        "index", "where", "argmax", "max", "amax", "amin", "sort", "topk", "arange",
        "max_pool2d_with_indices", "slice_scatter", "select_scatter", "scatter",
        "index_put", "constant_pad_nd", "embedding"))


def _node_problem(node: torch.fx.Node) -> str | None:
    """Why ``node`` cannot be compiled by xlapy, or None."""
    if node.op in ("call_module", "call_method"):
        return f"{node.op} {node.target}"
    if node.op != "call_function":
        return None
    name = _op_name(node)
    if name not in torch_ops.LOWERINGS:
        return name
    for t in _meta_tensors(node):
        if t.dtype not in SUPPORTED:
            return f"dtype {t.dtype}"
        if t.dtype == torch.int64 and name not in _INT64_EXACT and \
                name.rsplit(".", 1)[0] not in _INT64_EXACT and not _counts_bools(node):
            return f"{name} (int64 arithmetic)"
    return None


def _counts_bools(node: torch.fx.Node) -> bool:
    """A sum of booleans (a count, bounded by the element count: exact in 32 bits)."""
    if not _op_name(node).startswith("aten.sum.") or not node.args:
        return False
    src = node.args[0]
    return isinstance(src, torch.fx.Node) and any(
        t.dtype == torch.bool for t in _meta_tensors(src))


def unsupported_ops(gm: torch.fx.GraphModule) -> list[str]:
    """The ops (and dtypes) of an ATen graph that xlapy has no lowering for, sorted."""
    problems = (_node_problem(node) for node in gm.graph.nodes)
    return sorted({p for p in problems if p is not None})


def _attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


class _GraphFunction:
    """One ATen graph compiled by xlapy: called with the graph's flat inputs (tensors,
    ints, floats), returns its flat outputs as tensors sharing xlapy's result buffers."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, backend: str | None = None):
        self.gm = gm
        self.backend = backend
        self.name = name
        self.nodes = list(gm.graph.nodes)
        self.placeholders = [n for n in self.nodes if n.op == "placeholder"]
        out = next(n for n in self.nodes if n.op == "output")
        self.outputs = list(out.args[0]) if isinstance(out.args[0], (list, tuple)) \
            else [out.args[0]]
        self.plan = OutputPlan(self.nodes, self.placeholders, self.outputs)
        self._jits: dict[tuple, Callable[..., Any]] = {}
        self._eager_reason: str | None = None

    # ---------------------------------------------------------------- tracing
    def _interpret(self, tensor_slots: list[int], statics: tuple, arrays: Sequence[Any]):
        env: dict[torch.fx.Node, Any] = {}
        it_arrays, it_statics = iter(arrays), iter(statics)
        tensor_set = set(tensor_slots)
        for i, ph in enumerate(self.placeholders):
            env[ph] = next(it_arrays) if i in tensor_set else next(it_statics)
        for node in self.nodes:
            if node.op == "get_attr":      # a constant tensor the graph holds
                env[node] = xnp.asarray(_attr(self.gm, node.target).detach().numpy())
                continue
            if node.op != "call_function":
                continue
            args = map_arg(node.args, env.__getitem__)
            kwargs = map_arg(node.kwargs, env.__getitem__)
            result = torch_ops.LOWERINGS[_op_name(node)](*args, **kwargs)
            env[node] = self._conform(node, result)
        return [v if hasattr(v, "shape") else None
                for v in (env[o] for o in self.plan.computed)]

    @staticmethod
    def _conform(node: torch.fx.Node, result: Any) -> Any:
        """Check a lowering's result against PyTorch's recorded shape and dtype."""
        val = node.meta.get("val")
        if isinstance(val, (list, tuple)):
            if not isinstance(result, (list, tuple)) or len(result) != len(val):
                raise torch_ops.Unsupported(f"{node.target}: results differ from PyTorch's")
            return tuple(_GraphFunction._conform_one(node, r, v) for r, v in zip(result, val))
        return _GraphFunction._conform_one(node, result, val)

    @staticmethod
    def _conform_one(node: torch.fx.Node, r: Any, val: Any) -> Any:
        if not isinstance(val, torch.Tensor) or r is None:
            return r
        if not hasattr(r, "shape"):        # a Python number where PyTorch has a tensor
            r = xnp.asarray(r)
        # symbolic sizes (Dynamo's dynamic shapes) are whatever this call's inputs give
        shape = tuple(s if isinstance(s, int) else d for s, d in zip(val.shape, r.shape))
        if len(r.shape) != len(shape) or tuple(r.shape) != shape:
            raise torch_ops.Unsupported(f"{node.target}: shape {tuple(r.shape)} differs "
                                        f"from PyTorch's {shape}")
        want = canonicalize_dtype(to_numpy_dtype(val.dtype))
        return r if r.dtype == want else r.astype(want)

    # ---------------------------------------------------------------- calling
    def _jit_for(self, tensor_slots: tuple, statics: tuple) -> Callable[..., Any]:
        key = (tensor_slots, statics)
        fn = self._jits.get(key)
        if fn is None:
            slots = list(tensor_slots)
            fn = jit(lambda *arrays: self._interpret(slots, statics, arrays),
                     backend=self.backend)
            self._jits[key] = fn
        return fn

    def _fallback(self, reason: str) -> None:
        self._eager_reason = reason
        log.info("xlapy: %s runs in PyTorch: %s", self.name, reason)

    def __call__(self, args: list[Any]) -> list[Any]:
        if self._eager_reason is None:
            try:
                return self._run(args)
            except torch_ops.Unsupported as e:
                self._fallback(str(e))
            except (InvalidArgumentError, UnimplementedError) as e:
                # a lowering met arguments it does not handle while tracing: this graph
                # is PyTorch's from now on (never a wrong answer, never a crash)
                self._fallback(f"{type(e).__name__}: {e}")
        return self.gm(*args)

    def _run(self, args: list[Any]) -> list[Any]:
        tensor_slots, arrays, statics = [], [], []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                if a.device.type != "cpu":
                    raise torch_ops.Unsupported(f"a tensor on {a.device} (xlapy runs on the CPU)")
                if a.dtype == torch.int64 and a.numel() and not hasattr(a, SMALL_INT64) \
                        and bool(a.abs().max() >= _INT32):
                    raise torch_ops.Unsupported("an int64 input beyond the 32-bit range")
                tensor_slots.append(i)
                arrays.append(a.detach().resolve_conj().numpy())
            else:
                statics.append(a)
        outs = self._jit_for(tuple(tensor_slots), tuple(statics))(*arrays)
        return self.plan.results(args, outs)


def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                  backend: str | None = None) -> Callable:
    """AOTAutograd's compiler: ``gm`` (a forward or backward graph of core-ATen ops)
    compiled by xlapy for ``backend`` (``xlapy.jit``'s; None: the default backend), its
    ops without a lowering run by PyTorch."""
    name = f"graph {id(gm):#x}"
    missing = unsupported_ops(gm)
    if missing:
        return _split(gm, name, missing, backend)
    for node in gm.graph.nodes:
        if node.op == "output":
            outs = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
            if any(isinstance(o, torch.fx.Node) and not _meta_tensors(o) and
                   o.op != "placeholder" for o in outs):
                log.info("xlapy: %s runs in PyTorch: it returns symbolic sizes", name)
                return make_boxed_func(gm.forward)
    return _boxed(_GraphFunction(gm, name, backend))


def _node_lowerable(node: torch.fx.Node) -> bool:
    """A node a compiled piece may hold: a lowered op whose results are all tensors of
    dtypes xlapy computes (symbolic-size arithmetic stays with PyTorch)."""
    if node.op != "call_function" or _node_problem(node) is not None:
        return False
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else [val]
    return all(v is None or (isinstance(v, torch.Tensor) and v.dtype in SUPPORTED)
               for v in vals) and val is not None


def _split(gm: torch.fx.GraphModule, name: str, missing: list[str],
           backend: str | None) -> Callable:
    """A graph with ops xlapy cannot lower: its lowerable pieces compiled, the rest run
    by PyTorch; one INFO line names what runs in PyTorch."""
    try:
        fused, pieces = split_unsupported(
            gm, _node_lowerable,
            lambda sub, piece: _boxed(_GraphFunction(sub, f"{name} {piece}", backend)))
    except Exception as e:    # noqa: BLE001 - partitioning is an optimization only
        log.debug("xlapy: %s: partitioning failed: %s", name, e)
        fused, pieces = gm, 0
    log.info("xlapy: %s runs in PyTorch%s; no lowering for: %s", name,
             f" except {pieces} piece(s) compiled by xlapy" if pieces else "",
             ", ".join(missing))
    return make_boxed_func(fused.forward if pieces else gm.forward)


def _boxed(fn: _GraphFunction) -> Callable:
    def call(args: list[Any]) -> list[Any]:
        out = fn(list(args))
        args.clear()
        return out
    call._boxed_call = True  # type: ignore[attr-defined]
    call.graph_function = fn  # type: ignore[attr-defined]
    return call


@functools.lru_cache(maxsize=None)
def _aot_backend(backend: str | None) -> Callable:
    compiler = functools.partial(compile_graph, backend=backend)
    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler,
                        decompositions=core_aten_decompositions())


_OPTIONS = ("backend",)


def xlapy_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                  options: dict | None = None) -> Callable:
    """The TorchDynamo backend: ``torch.compile(model, backend="xlapy")``.

    Takes Dynamo's FX graph and its example inputs; returns the callable PyTorch runs in
    its place (AOTAutograd's wrapper around the xlapy-compiled forward and backward).
    ``torch.compile(..., options={"backend": name})`` picks xlapy's backend (``"cpu"``,
    ``"gpu"``, ``"interpreter"``, ...; the default backend when absent)."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InvalidArgumentError(f"torch.compile(backend='xlapy'): unknown options "
                                   f"{unknown}; known: {list(_OPTIONS)}")
    _prepare(options.get("backend"))
    return _aot_backend(options.get("backend"))(gm, example_inputs)


def _prepare(name: str | None) -> None:
    """Let the xlapy backend get ready for the compiles to come (the CPU backend starts
    its LLVM helper processes, which then load while AOTAutograd traces), and let the CPU
    runtime's parallel work run on PyTorch's OpenMP threads (``thread_pool``'s docstring:
    its own workers would share the cores with them while they spin) and its products on
    PyTorch's BLAS (``process_blas``)."""
    from ..backends.cpu.process_blas import use_process_blas
    from ..backends.cpu.thread_pool import share_openmp_threads
    from ..client import get_backend
    from ..frontend.core import default_backend
    backend = get_backend(name or default_backend())
    prepare = getattr(backend, "prepare", None)
    if callable(prepare):
        prepare()
    if getattr(backend, "name", None) == "cpu" and share_openmp_threads():
        # PyTorch's MKL, threaded on the same OpenMP runtime, runs the programs' products
        use_process_blas(os.path.join(os.path.dirname(torch.__file__), "lib",
                                      "libtorch_cpu.so"))


def ensure_registered() -> None:
    """Make ``backend="xlapy"`` resolvable. An installed xlapy is found through its entry
    point; a source tree that is not the installed package (a checkout on ``PYTHONPATH``)
    registers the backend by name here."""
    from torch._dynamo.backends.registry import lookup_backend
    try:
        lookup_backend("xlapy")
    except torch._dynamo.exc.InvalidBackend:
        torch._dynamo.register_backend(xlapy_backend, name="xlapy")
