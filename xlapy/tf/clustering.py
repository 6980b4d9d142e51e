"""Mark-for-compilation: TensorFlow's auto-clustering decisions on an op graph.

:func:`mark_for_compilation` follows TF's ``MarkForCompilationPass``
(``tensorflow/compiler/jit/mark_for_compilation_pass.cc``):

1. **Candidates.** A node is a compilation candidate when its op is compilable
   (:func:`compilability`: a table of the ops XLA cannot compile, each with its reason;
   function arguments and results are never clustered) and it is not marked
   ``compilable=False`` by its creator.
2. **Contraction.** Every candidate starts as its own cluster. Clusters are visited in
   post order (consumers first), each trying to merge with its consumers along data
   edges, repeatedly until nothing changes. An edge is contracted only if (a) both ends
   are candidates, (b) the merged cluster would create no cycle: there is no other path
   from one cluster to the other through nodes outside them (data and control edges;
   TF's ``GraphCycles::ContractEdge``), (c) resource safety holds: XLA reads all
   resource variables when a cluster starts and writes them when it ends, so a cluster
   may not hold a resource write and a resource read that must run after it (TF's
   ``resource_operation_safety_analysis``), (d) the merged cluster has at most
   ``max_cluster_size`` effective nodes.
3. **Size.** A cluster counts its nodes except ``Const`` and ``Identity`` (TF's
   *effective* size); clusters smaller than ``min_cluster_size`` (default 4) are dropped.
4. **Names.** Surviving clusters are named ``cluster_0``, ``cluster_1``, ... in the
   program order of their first node (deterministic).

The result says, for every node, its cluster or why it has none. :meth:`Clustering.summary`
is TF's "XLA auto-clustering summary"; :func:`dump` writes the graph before and after
clustering and the summary (``--tf_xla_clustering_debug``).
"""
from __future__ import annotations

import collections
import os
from dataclasses import dataclass, field
from typing import Iterable

# Ops XLA cannot compile and why (TF's op names and xlapy's own for the same ops).
NOT_COMPILABLE: dict[str, str] = {
    "Unique": "has a data-dependent output shape",
    "Where": "has a data-dependent output shape (one-argument form)",
    "BooleanMask": "has a data-dependent output shape",
    "PrintV2": "prints on the host (TF does not compile PrintV2)",
    "PyFunc": "runs Python (TF does not compile PyFunc)",
    "EagerPyFunc": "runs Python (TF does not compile EagerPyFunc)",
    "NumpyFunction": "runs Python (TF does not compile PyFunc)",
    "StringFormat": "works on strings",
    "_Arg": "is a function argument",
    "_Retval": "is a function result",
}
# Ops that do not count towards a cluster's size (TF's effective cluster size).
NOT_COUNTED = frozenset({"Const", "Identity", "constant", "alias"})


def compilability(op: str) -> str | None:
    """None when ``op`` can be compiled, else the reason it cannot."""
    return NOT_COMPILABLE.get(op)


@dataclass
class OpNode:
    """One op of a graph: ``inputs`` are the names of the nodes whose outputs it reads,
    ``control_inputs`` of nodes that must run before it; ``resource`` is ``"read"``,
    ``"write"`` or ``"readwrite"`` for ops on resource variables; ``compilable=False``
    refuses it whatever its op (with ``reason``)."""

    name: str
    op: str
    inputs: list[str] = field(default_factory=list)
    control_inputs: list[str] = field(default_factory=list)
    resource: str | None = None
    compilable: bool = True
    reason: str = ""


class OpGraph:
    """Nodes in program order (a node's inputs come before it)."""

    def __init__(self, nodes: Iterable[OpNode] = ()) -> None:
        self.nodes: dict[str, OpNode] = {}
        for n in nodes:
            self.add(n)

    def add(self, node: OpNode) -> OpNode:
        for i in node.inputs + node.control_inputs:
            if i not in self.nodes:
                raise KeyError(f"node {node.name!r} reads {i!r}, which is not defined before it")
        if node.name in self.nodes:
            raise KeyError(f"node {node.name!r} is defined twice")
        self.nodes[node.name] = node
        return node

    def successors(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {n: [] for n in self.nodes}
        for n in self.nodes.values():
            for i in dict.fromkeys(n.inputs + n.control_inputs):
                out[i].append(n.name)
        return out

    def to_text(self, clusters: dict[str, str] | None = None) -> str:
        """One line per node: ``name = Op(inputs) ^control _XlaCluster="cluster_N"``."""
        lines = []
        for n in self.nodes.values():
            ctl = "".join(f" ^{c}" for c in n.control_inputs)
            res = f" resource={n.resource}" if n.resource else ""
            cl = f' _XlaCluster="{clusters[n.name]}"' if clusters and n.name in clusters else ""
            lines.append(f"{n.name} = {n.op}({', '.join(n.inputs)}){ctl}{res}{cl}")
        return "\n".join(lines) + "\n"


@dataclass
class Clustering:
    """What :func:`mark_for_compilation` decided."""

    graph: OpGraph
    cluster_of: dict[str, str]                     # node -> cluster name
    reasons: dict[str, str]                        # unclustered node -> why
    members: dict[str, list[str]]                  # cluster name -> nodes in program order

    def summary(self) -> str:
        """TF's auto-clustering summary: clusters and sizes, unclustered ops by reason."""
        lines = [f"XLA auto-clustering summary: {len(self.members)} cluster(s), "
                 f"{len(self.cluster_of)} of {len(self.graph.nodes)} nodes clustered"]
        for name, nodes in self.members.items():
            ops = collections.Counter(self.graph.nodes[n].op for n in nodes)
            lines.append(f"  {name}: size {len(nodes)} ("
                         + ", ".join(f"{op} x{k}" for op, k in sorted(ops.items())) + ")")
        by_reason: dict[str, list[str]] = collections.defaultdict(list)
        for n, why in self.reasons.items():
            by_reason[why].append(n)
        for why, nodes in by_reason.items():
            lines.append(f"  not clustered ({why}): " + ", ".join(
                f"{n} ({self.graph.nodes[n].op})" for n in nodes))
        return "\n".join(lines) + "\n"

    def one_line(self) -> str:
        sizes = ", ".join(f"{k}={len(v)}" for k, v in self.members.items())
        return (f"auto-clustering: {len(self.members)} cluster(s) [{sizes}], "
                f"{len(self.reasons)} node(s) left out")


def mark_for_compilation(graph: OpGraph, min_cluster_size: int = 4,
                         max_cluster_size: int = 2 ** 31 - 1) -> Clustering:
    """Cluster ``graph`` by TF's rules (see the module docstring)."""
    return _Marker(graph, min_cluster_size, max_cluster_size).run()


class _Marker:
    def __init__(self, graph: OpGraph, min_size: int, max_size: int) -> None:
        self.g, self.min_size, self.max_size = graph, min_size, max_size
        self.order = list(graph.nodes)
        self.pos = {n: i for i, n in enumerate(self.order)}
        self.succ = graph.successors()
        self.reasons: dict[str, str] = {}
        self.parent: dict[str, str] = {}

    def candidate(self, node: OpNode) -> bool:
        why = compilability(node.op) if node.compilable else (node.reason or "marked "
                                                                               "not compilable")
        if why:
            self.reasons[node.name] = why
        return why is None

    def find(self, n: str) -> str:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def run(self) -> Clustering:
        for name, node in self.g.nodes.items():
            if self.candidate(node):
                self.parent[name] = name
        self.cmembers = {n: [n] for n in self.parent}
        self.reach = self._reachability()
        changed = True
        while changed:
            changed = False
            for n in reversed(self.order):             # post order: consumers first
                if n not in self.parent or self.find(n) != n:
                    continue
                for m in sorted({self.find(s) for s in self._cluster_succ(n)},
                                key=lambda c: self.pos[c]):
                    if self.find(n) == n and m != n and self._try_contract(n, m):
                        changed = True
        members: dict[str, list[str]] = {}
        for root in sorted({self.find(n) for n in self.parent},
                           key=lambda r: min(self.pos[x] for x in self.cmembers[r])):
            nodes = sorted(self.cmembers[root], key=self.pos.__getitem__)
            size = self._effective(nodes)
            if size < self.min_size:
                for x in nodes:
                    self.reasons[x] = (f"its cluster has {size} effective op(s), fewer than "
                                       f"--tf_xla_min_cluster_size={self.min_size}")
                continue
            members[f"cluster_{len(members)}"] = nodes
        cluster_of = {n: c for c, nodes in members.items() for n in nodes}
        reasons = {n: self.reasons[n] for n in self.order if n in self.reasons}
        return Clustering(self.g, cluster_of, reasons, members)

    # ----- helpers
    def _effective(self, nodes: Iterable[str]) -> int:
        return sum(1 for n in nodes if self.g.nodes[n].op not in NOT_COUNTED)

    def _reachability(self) -> dict[str, set[str]]:
        """Node -> every node reachable from it (data and control edges)."""
        reach: dict[str, set[str]] = {}
        for n in reversed(self.order):
            r: set[str] = set()
            for s in self.succ[n]:
                r.add(s)
                r |= reach[s]
            reach[n] = r
        return reach

    def _cluster_succ(self, root: str) -> set[str]:
        """Candidate nodes fed by ``root``'s cluster through data edges."""
        out = set()
        for x in self.cmembers[root]:
            for s in self.succ[x]:
                if s in self.parent and x in self.g.nodes[s].inputs:
                    out.add(s)
        return out

    def _try_contract(self, a: str, b: str) -> bool:
        merged = self.cmembers[a] + self.cmembers[b]
        if self._effective(merged) > self.max_size:
            return False
        if self._creates_cycle(a, b) or not self._resource_safe(merged):
            return False
        self.parent[b] = a
        self.cmembers[a] = merged
        del self.cmembers[b]
        return True

    def _creates_cycle(self, a: str, b: str) -> bool:
        """Whether some path leaves cluster ``a`` or ``b`` and re-enters the other through
        a node outside both (merging would make the cluster depend on itself)."""
        inside = set(self.cmembers[a]) | set(self.cmembers[b])
        for x in inside:
            for s in self.succ[x]:
                if s in inside:
                    continue
                if any(t in inside for t in self.reach[s]):
                    return True
        return False

    def _resource_safe(self, nodes: list[str]) -> bool:
        writes = [n for n in nodes if self.g.nodes[n].resource in ("write", "readwrite")]
        reads = [n for n in nodes if self.g.nodes[n].resource in ("read", "readwrite")]
        return not any(r in self.reach[w] for w in writes for r in reads if r != w)


def dump(clustering: Clustering, directory: str, name: str) -> list[str]:
    """Write ``<name>.before.txt``, ``<name>.after.txt`` (nodes with their
    ``_XlaCluster``) and ``<name>.summary.txt`` into ``directory``; return the paths."""
    os.makedirs(directory, exist_ok=True)
    files = {"before": clustering.graph.to_text(),
             "after": clustering.graph.to_text(clustering.cluster_of),
             "summary": clustering.summary()}
    paths = []
    for kind, text in files.items():
        path = os.path.join(directory, f"mark_for_compilation.{name}.{kind}.txt")
        with open(path, "w") as f:
            f.write(text)
        paths.append(path)
    return paths


__all__ = ["OpNode", "OpGraph", "Clustering", "mark_for_compilation", "compilability",
           "dump", "NOT_COMPILABLE"]
