"""Recording a function's ops as a graph (TensorFlow's graph mode).

:func:`capture` runs a function once, op by op, with a :class:`GraphRecorder` active:
every primitive applied eagerly (``core.bind``), every Variable read and assignment, and
every *host op* -- an op that cannot be compiled and runs as Python (``tf.unique``,
``tf.print``, callbacks; functions wrapped with :func:`host_op`, whose own primitives are
not recorded) -- becomes a :class:`Node` whose inputs are the function's argument leaves,
earlier nodes' outputs or constants. :meth:`CapturedGraph.run` replays the nodes on new
arguments without running the Python body again, as a ``tf.function`` graph runs.

What a graph cannot hold makes the capture fail with :class:`GraphCaptureError` (the
caller then runs the function op by op, as before): Python control flow on a recorded
value (``if x > 0``, ``int(x)``, a value needed as a shape), which would freeze one
branch into the graph. xlapy has no AutoGraph: write such code with ``tf.cond`` /
``tf.while_loop``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..errors import InvalidArgumentError
from . import core
from .core import Array, Primitive, to_array
from .pytree import tree_flatten, tree_unflatten
from .source_info import located

# A value in the graph: ("arg", leaf index) | ("node", node index, output index) |
# ("const", Array).
Ref = tuple


class GraphCaptureError(InvalidArgumentError):
    """The function cannot be recorded as a graph (see the module docstring)."""


@dataclass
class Node:
    """One recorded op. ``kind``: ``"prim"`` (``prim`` with ``params``), ``"host"`` (Python
    ``fn`` called with ``tree`` unflattened from the inputs and ``statics``), ``"read"`` /
    ``"assign"`` (of ``var``). ``op`` is the op type clustering sees."""

    kind: str
    op: str
    inputs: list[Ref]
    n_out: int
    prim: Primitive | None = None
    params: dict = field(default_factory=dict)
    fn: Callable[..., Any] | None = None
    tree: Any = None
    statics: list = field(default_factory=list)
    var: Any = None
    out_tree: Any = None


class GraphRecorder:
    """Collects the nodes of one capture (see the module docstring)."""

    def __init__(self, args: Sequence[Array]) -> None:
        self.nodes: list[Node] = []
        self.refs: dict[int, Ref] = {id(a): ("arg", k) for k, a in enumerate(args)}
        self.keep: list[Any] = list(args)          # ids stay unique while recording
        self.depth = 0                             # > 0 inside a host op

    def ref(self, x: Any) -> Ref:
        got = self.refs.get(id(x))
        if got is not None:
            return got
        self.keep.append(x)
        return ("const", x)

    def _outputs(self, outs: Sequence[Any]) -> None:
        k = len(self.nodes) - 1
        for j, o in enumerate(outs):
            if isinstance(o, Array):
                self.refs[id(o)] = ("node", k, j)
                self.keep.append(o)

    def record(self, prim: Primitive, args: Sequence[Array], params: dict,
               outs: Sequence[Array]) -> None:
        if self.depth:
            return
        self.nodes.append(Node("prim", prim.name, [self.ref(a) for a in args], len(outs),
                               prim=prim, params=dict(params)))
        self._outputs(outs)

    def on_variable_read(self, var: Any, value: Array) -> None:
        if self.depth:
            return
        self.nodes.append(Node("read", "ReadVariableOp", [], 1, var=var))
        self._outputs([value])

    def on_variable_assign(self, var: Any, value: Array) -> None:
        if self.depth:
            return
        self.nodes.append(Node("assign", "AssignVariableOp", [self.ref(value)], 0, var=var))

    def record_host(self, op: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
                    out: Any) -> None:
        leaves, tree = tree_flatten((args, kwargs))
        arrays = [k for k, x in enumerate(leaves) if isinstance(x, Array)
                  or hasattr(x, "__xlapy_array__")]
        statics = [(k, x) for k, x in enumerate(leaves) if k not in set(arrays)]
        inputs = [self.ref(to_array(leaves[k]) if not isinstance(leaves[k], Array)
                           else leaves[k]) for k in arrays]
        out_leaves, out_tree = tree_flatten(out)
        node = Node("host", op, inputs, len(out_leaves), fn=fn, tree=(tree, arrays),
                    statics=statics, out_tree=out_tree)
        self.nodes.append(node)
        self._outputs(out_leaves)

    def depends(self, x: Array) -> bool:
        """Whether ``x`` is computed from the arguments (outside host ops)."""
        return self.depth == 0 and id(x) in self.refs

    def check_python_use(self, x: Array, what: str) -> None:
        """Refuse ``what`` on a value that depends on the arguments (at host-op depth 0)."""
        if self.depth == 0 and id(x) in self.refs:
            raise GraphCaptureError(located(
                f"{what} a tensor while the function is recorded as a graph would freeze its "
                "current value into the graph",
                "use tf.cond / tf.while_loop (xlapy has no AutoGraph); the function runs op "
                "by op instead"))


def host_op(op: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make ``fn`` one node of type ``op`` in recorded graphs (its own primitives are not
    recorded; it runs again, as Python, each time the graph runs)."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            recorders = core._RECORDERS.items
            rec = recorders[-1] if recorders else None
            if rec is None or rec.depth or core._TRACE_STACK.items:
                return fn(*args, **kwargs)
            rec.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                rec.depth -= 1
            rec.record_host(op, fn, args, kwargs, out)
            return out
        return run
    return wrap


@dataclass
class CapturedGraph:
    """A recorded function: nodes, and the output structure over graph values."""

    nodes: list[Node]
    outputs: list[Ref]
    out_tree: Any
    n_args: int

    def value(self, ref: Ref, args: Sequence[Array], results: list[list[Any]]) -> Any:
        if ref[0] == "arg":
            return args[ref[1]]
        if ref[0] == "node":
            return results[ref[1]][ref[2]]
        return ref[1]

    def run_node(self, node: Node, inputs: list[Any]) -> list[Any]:
        """Run one node op by op on its input values; its outputs."""
        if node.kind == "prim":
            out = core.bind(node.prim, *inputs, **node.params)
            return list(out) if node.prim.multiple_results else [out]
        if node.kind == "read":
            return [node.var.read_value()]
        if node.kind == "assign":
            node.var.assign(inputs[0])
            return []
        tree, arrays = node.tree
        leaves: list[Any] = [None] * (len(arrays) + len(node.statics))
        for k, v in zip(arrays, inputs):
            leaves[k] = v
        for k, v in node.statics:
            leaves[k] = v
        args, kwargs = tree_unflatten(tree, leaves)
        return tree_flatten(node.fn(*args, **kwargs))[0]

    def run(self, args: Sequence[Array]) -> Any:
        """Replay every node op by op on ``args`` (the argument leaves)."""
        results: list[list[Any]] = []
        for node in self.nodes:
            results.append(self.run_node(node, [self.value(r, args, results)
                                                for r in node.inputs]))
        return tree_unflatten(self.out_tree, [self.value(r, args, results)
                                              for r in self.outputs])


def capture(fn: Callable[..., Any], leaves: Sequence[Array],
            call: Callable[[Sequence[Array]], Any]) -> tuple[CapturedGraph, Any]:
    """Record ``call(leaves)`` (which calls ``fn`` with the argument leaves in place) as a
    graph; returns the graph and this call's result. Raises GraphCaptureError."""
    rec = GraphRecorder(leaves)
    core._RECORDERS.append(rec)
    try:
        out = call(leaves)
    finally:
        core._RECORDERS.pop()
    out_leaves, out_tree = tree_flatten(out)
    outputs = [rec.ref(o) if isinstance(o, Array) else ("const", o) for o in out_leaves]
    return CapturedGraph(rec.nodes, outputs, out_tree, len(leaves)), out


__all__ = ["GraphRecorder", "CapturedGraph", "Node", "GraphCaptureError", "capture",
           "host_op"]
