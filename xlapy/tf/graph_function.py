"""``tf.function`` without ``jit_compile=True``: graph mode and auto-clustering.

A :class:`GraphFunction` records its Python body once per argument signature as a graph
(``xlapy.frontend.graph_capture``) and replays the graph on later calls, as TF runs a
traced ``tf.function`` (Python side effects happen at the first call only). A body the
recorder refuses (Python control flow on a tensor: there is no AutoGraph) runs op by op on
every call, logged once at INFO with the reason and the line.

Auto-clustering (``tf.config.optimizer.set_jit(True)``, or ``TF_XLA_FLAGS`` with
``--tf_xla_auto_jit=1`` and ``--tf_xla_cpu_global_jit``, or ``--tf_xla_auto_jit=2``; off
with ``--tf_xla_auto_jit=-1``; only for ``jit_compile=None``): a signature is first compiled
whole (a function that compiles is one cluster). When it cannot be, its graph goes through
TF's mark-for-compilation pass (``clustering.py``): each cluster ``cluster_N`` becomes a jit
function over the cluster's inputs (compiled and cached per shape as ``jit`` is), the other
nodes run op by op, and values pass between them as arrays, without copies. Stateful nodes
(Variable reads and assignments, host ops) are chained in program order, as TF's automatic
control dependencies do, so the clusters never reorder side effects. The decision is
logged at INFO in one line; ``--tf_xla_clustering_debug`` writes the graph before and after
clustering and the summary (``TF_DUMP_GRAPH_PREFIX``, else ``--xla_dump_to``, else the
temporary directory).
"""
from __future__ import annotations

import heapq
import logging
import os
import tempfile
from typing import Any, Callable

from ..config import get_debug_options, tf_dump_graph_prefix, tf_xla_flags
from ..errors import InvalidArgumentError, UnimplementedError
from ..frontend import core
from ..frontend.core import Array, to_array
from ..frontend.graph_capture import CapturedGraph, Node, capture
from ..frontend.jit import JitFunction, _aval_text
from ..frontend.tf_function import auto_jit
from ..frontend.variables import Variable, transaction
from .clustering import Clustering, OpGraph, OpNode, dump, mark_for_compilation

log = logging.getLogger("xlapy.tf")
jit_log = logging.getLogger("xlapy.jit")

_STATEFUL = ("read", "assign", "host")


def autoclustering_enabled() -> bool:
    """Whether ``tf.function(jit_compile=None)`` auto-clusters now: ``set_jit(True)`` or
    ``TF_XLA_FLAGS`` (``xlapy.frontend.tf_function.auto_jit``)."""
    return auto_jit() is True


def op_graph(graph: CapturedGraph) -> tuple[OpGraph, list[str]]:
    """The clustering view of a recorded graph and each node's name (``<op>_<k>``)."""
    g = OpGraph()
    for k in range(graph.n_args):
        g.add(OpNode(f"arg_{k}", "_Arg"))
    names: list[str] = []
    last_stateful: str | None = None
    for k, node in enumerate(graph.nodes):
        name = f"{node.op}_{k}"
        inputs = [f"arg_{r[1]}" if r[0] == "arg" else names[r[1]]
                  for r in node.inputs if r[0] != "const"]
        control = []
        if node.kind in _STATEFUL:
            if last_stateful is not None and last_stateful not in inputs:
                control.append(last_stateful)
            last_stateful = name
        g.add(OpNode(name, node.op, list(dict.fromkeys(inputs)), control,
                     resource={"read": "read", "assign": "write"}.get(node.kind)))
        names.append(name)
    for j, r in enumerate(graph.outputs):
        if r[0] != "const":
            g.add(OpNode(f"retval_{j}", "_Retval",
                         [f"arg_{r[1]}" if r[0] == "arg" else names[r[1]]]))
    return g, names


class ClusteredGraph:
    """A recorded graph run as clusters (compiled) and single nodes (op by op)."""

    def __init__(self, graph: CapturedGraph, name: str) -> None:
        flags = tf_xla_flags()
        self.graph = graph
        opg, names = op_graph(graph)
        self.clustering: Clustering = mark_for_compilation(opg, flags.min_cluster_size,
                                                           flags.max_cluster_size)
        log.info("%s: %s", name, self.clustering.one_line())
        if flags.clustering_debug:
            directory = tf_dump_graph_prefix() or get_debug_options().xla_dump_to or \
                os.path.join(tempfile.gettempdir(), "xlapy_clustering")
            for path in dump(self.clustering, directory, name):
                log.info("auto-clustering dump: %s", path)
        unit_of: dict[int, Any] = {}
        self.clusters: dict[str, _Cluster] = {}
        for cname, members in self.clustering.members.items():
            idx = sorted(names.index(m) for m in members if m in names)
            self.clusters[cname] = _Cluster(cname, graph, idx)
            for i in idx:
                unit_of[i] = cname
        self.order = self._schedule(opg, names, unit_of)
        for c in self.clusters.values():
            c.find_outputs(unit_of)

    def _schedule(self, opg: OpGraph, names: list[str], unit_of: dict[int, Any]) -> list:
        """Units (cluster names, or node indices) in an order that respects every data and
        control edge, each as early in program order as it can run."""
        index = {n: i for i, n in enumerate(names)}
        units = {unit_of.get(i, i) for i in range(len(names))}
        deps: dict[Any, set] = {u: set() for u in units}
        first = {u: min(i for i in range(len(names)) if unit_of.get(i, i) == u) for u in units}
        for i, n in enumerate(names):
            u = unit_of.get(i, i)
            node = opg.nodes[n]
            for src in node.inputs + node.control_inputs:
                if src in index and unit_of.get(index[src], index[src]) != u:
                    deps[u].add(unit_of.get(index[src], index[src]))
        users: dict[Any, list] = {u: [] for u in units}
        for u, ds in deps.items():
            for d in ds:
                users[d].append(u)
        ready = [(first[u], str(u), u) for u in units if not deps[u]]
        heapq.heapify(ready)
        order = []
        while ready:
            _, _, u = heapq.heappop(ready)
            order.append(u)
            for v in users[u]:
                deps[v].discard(u)
                if not deps[v]:
                    heapq.heappush(ready, (first[v], str(v), v))
        if len(order) != len(units):
            raise InvalidArgumentError("auto-clustering produced a cycle between clusters")
        return order

    def run(self, args: list[Any]) -> Any:
        g = self.graph
        results: list[list[Any]] = [[] for _ in g.nodes]
        for unit in self.order:
            if isinstance(unit, str):
                self.clusters[unit].run(args, results)
            else:
                node = g.nodes[unit]
                results[unit] = g.run_node(node, [g.value(r, args, results)
                                                  for r in node.inputs])
        from ..frontend.pytree import tree_unflatten
        return tree_unflatten(g.out_tree, [g.value(r, args, results) for r in g.outputs])


class _Cluster:
    """One cluster: its nodes replayed inside a jit function named after it."""

    def __init__(self, name: str, graph: CapturedGraph, nodes: list[int]) -> None:
        self.name, self.graph, self.nodes = name, graph, nodes
        members = set(nodes)
        self.inputs: list[tuple] = []
        for i in nodes:
            for r in graph.nodes[i].inputs:
                if (r[0] == "arg" or (r[0] == "node" and r[1] not in members)) \
                        and r not in self.inputs:
                    self.inputs.append(r)
        self.outputs: list[tuple[int, int]] = []

        def body(*xs: Array) -> tuple:
            return self._body(xs)
        body.__name__ = name
        self.fn = JitFunction(body)

    def find_outputs(self, unit_of: dict[int, Any]) -> None:
        """The node outputs read outside the cluster (or returned by the function)."""
        members = set(self.nodes)
        used: list[tuple[int, int]] = []
        refs = [r for k, n in enumerate(self.graph.nodes) if k not in members
                for r in n.inputs] + list(self.graph.outputs)
        for r in refs:
            if r[0] == "node" and r[1] in members and (r[1], r[2]) not in used:
                used.append((r[1], r[2]))
        self.outputs = used

    def _body(self, xs: tuple) -> tuple:
        g = self.graph
        local: dict[int, list[Any]] = {}
        outer = dict(zip(self.inputs, xs))

        def value(r: tuple) -> Any:
            if r[0] == "node" and r[1] in local:
                return local[r[1]][r[2]]
            if r[0] == "const":
                return r[1]
            return outer[r]
        for i in self.nodes:
            node: Node = g.nodes[i]
            local[i] = g.run_node(node, [value(r) for r in node.inputs])
        return tuple(local[i][j] for i, j in self.outputs)

    def run(self, args: list[Any], results: list[list[Any]]) -> None:
        xs = [self.graph.value(r, args, results) for r in self.inputs]
        outs = self.fn(*xs)
        for (i, j), v in zip(self.outputs, outs if isinstance(outs, tuple) else (outs,)):
            while len(results[i]) <= j:
                results[i].append(None)
            results[i][j] = v


class GraphFunction:
    """``tf.function(jit_compile=None | False)`` (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], autocluster: bool | None) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "fn")
        self._autocluster = autocluster        # None: follow the settings at call time
        self._jit = JitFunction(fn)
        self._whole_failed: dict[Any, str] = {}
        self._graphs: dict[Any, Any] = {}
        self.fallbacks: dict[str, str] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if core._TRACE_STACK.items or core._RECORDERS.items or core._TAPES.items:
            return self.fn(*args, **kwargs)           # nested, or under a tape: inline
        try:
            a = self._jit._split(args, kwargs)
            key = self._jit._key(a)
        except InvalidArgumentError:
            return self.fn(*args, **kwargs)
        cluster = autoclustering_enabled() if self._autocluster is None else False
        if cluster and key not in self._whole_failed:
            try:
                return self._jit(*args, **kwargs)
            except (InvalidArgumentError, UnimplementedError) as e:
                if key in self._jit._cache:
                    raise                           # compiled: the program's own error
                self._whole_failed[key] = str(e)
                self._note(a, key, f"it cannot be compiled whole: {e}")
                jit_log.info("function %r is not compiled whole for (%s) (auto-jit): %s; "
                             "its graph is auto-clustered", self.__name__,
                             self._sig_text(a, key), e)
        plan = self._graphs.get((key, cluster))
        leaves = [x if isinstance(x, Variable) else to_array(x) for x in a.leaves]
        if plan is None:
            return self._capture(a, key, cluster, leaves, args, kwargs)
        if isinstance(plan, str):
            return self.fn(*args, **kwargs)
        return plan.run(leaves)

    def _capture(self, a: Any, key: Any, cluster: bool, leaves: list, args: tuple,
                 kwargs: dict) -> Any:
        def call(values: list) -> Any:
            return self._jit._call_fn(a, self._jit._rebuild(a, list(values)))
        try:
            with transaction():                     # a refused capture assigns nothing
                graph, out = capture(self.fn, leaves, call)
        except InvalidArgumentError as e:
            self._graphs[(key, cluster)] = str(e)
            self._note(a, key, f"it runs op by op: it cannot be recorded as a graph: {e}")
            log.info("tf.function %r runs op by op for (%s): it cannot be recorded as a "
                     "graph: %s", self.__name__, self._sig_text(a, key), e)
            return self.fn(*args, **kwargs)
        self._graphs[(key, cluster)] = ClusteredGraph(graph, self.__name__) if cluster \
            else graph
        return out

    @staticmethod
    def _sig_text(a: Any, key: Any) -> str:
        return ", ".join(f"{p}: {_aval_text(v)}" for p, v in zip(a.paths, key.avals))

    def _note(self, a: Any, key: Any, why: str) -> None:
        """``fallbacks``: per signature not compiled whole or not run as a graph, why."""
        text = self._sig_text(a, key)
        self.fallbacks[text] = "; ".join(filter(None, [self.fallbacks.get(text), why]))

    def clustering(self, *args: Any, **kwargs: Any) -> Clustering | None:
        """The clustering decided for these arguments' signature (None if not clustered)."""
        a = self._jit._split(args, kwargs)
        plan = self._graphs.get((self._jit._key(a), True))
        return plan.clustering if isinstance(plan, ClusteredGraph) else None

    def cache_info(self) -> Any:
        return self._jit.cache_info()

    def get_compiler_ir(self, *args: Any, **kwargs: Any) -> Any:
        return self._jit.get_compiler_ir(*args, **kwargs)

    experimental_get_compiler_ir = get_compiler_ir


__all__ = ["GraphFunction", "ClusteredGraph", "autoclustering_enabled", "op_graph"]
