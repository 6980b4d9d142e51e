"""TF's mark-for-compilation rules on graphs written by hand (``xlapy.tf.clustering``)."""
from __future__ import annotations

import pytest

from xlapy.config import tf_xla_flags
from xlapy.errors import InvalidArgumentError
from xlapy.tf.clustering import OpGraph, OpNode, dump, mark_for_compilation


def _graph(*specs: str) -> OpGraph:
    """``"name = Op(a, b) ^c"`` lines; ``!name`` in the op marks it uncompilable."""
    g = OpGraph()
    for spec in specs:
        name, rhs = (s.strip() for s in spec.split("="))
        op, _, rest = rhs.partition("(")
        args, _, ctl = rest.partition(")")
        resource = None
        if "@" in op:
            op, resource = op.split("@")
        g.add(OpNode(name, op, [a.strip() for a in args.split(",") if a.strip()],
                     [c.strip()[1:] for c in ctl.split() if c.startswith("^")], resource))
    return g


def _clusters(c) -> dict[str, list[str]]:
    return {k: list(v) for k, v in c.members.items()}


def test_an_uncompilable_op_between_two_groups_gives_two_clusters():
    g = _graph("x = _Arg()", "a = Mul(x, x)", "b = Add(a, x)", "c = Exp(b)", "d = Sum(c)",
               "u = Unique(d)", "e = Mul(u, u)", "f = Add(e, u)", "h = Tanh(f)", "i = Sum(h)",
               "r = _Retval(i)")
    c = mark_for_compilation(g)
    assert _clusters(c) == {"cluster_0": ["a", "b", "c", "d"], "cluster_1": ["e", "f", "h", "i"]}
    assert c.reasons["u"] == "has a data-dependent output shape"
    assert c.reasons["x"] == "is a function argument"
    assert "cluster_0: size 4" in c.summary() and "Unique" in c.summary()


def test_contraction_never_creates_a_cycle():
    # Consumers first (TF's post order): x8 back to x3 merge; x2 may not join them, since
    # x2 -> u -> x5 would leave the cluster and come back; {x1, x2} is too small.
    g = _graph("x1 = Neg()", "x2 = Exp(x1)", "x3 = Log(x2)", "x4 = Abs(x3)", "u = PrintV2(x2)",
               "x5 = Add(x4, u)", "x6 = Mul(x5, x5)", "x7 = Tanh(x6)", "x8 = Sum(x7)")
    c = mark_for_compilation(g)
    assert _clusters(c) == {"cluster_0": ["x3", "x4", "x5", "x6", "x7", "x8"]}
    assert "2 effective op(s)" in c.reasons["x1"] and "2 effective op(s)" in c.reasons["x2"]


def test_control_edges_count_for_cycles():
    g = _graph("a = Exp()", "b = Log(a)", "c = Abs(b)", "u = PrintV2(a)", "d = Neg(c) ^u",
               "e = Sum(d)", "f = Mul(e, e)", "h = Tanh(f)")
    c = mark_for_compilation(g)           # a -> u -> ^d: a stays out of d's cluster
    assert _clusters(c) == {"cluster_0": ["b", "c", "d", "e", "f", "h"]}
    assert "fewer than --tf_xla_min_cluster_size=4" in c.reasons["a"]


def test_minimum_size_counts_effective_ops_only():
    g = _graph("k = Const()", "i = Identity(k)", "a = Exp(i)", "b = Log(a)", "c = Abs(b)")
    assert _clusters(mark_for_compilation(g)) == {}
    assert _clusters(mark_for_compilation(g, min_cluster_size=3)) == {
        "cluster_0": ["k", "i", "a", "b", "c"]}


def test_maximum_size_splits_a_chain():
    g = _graph("n1 = Exp()", *[f"n{k} = Exp(n{k - 1})" for k in range(2, 9)])
    c = mark_for_compilation(g, max_cluster_size=4)
    assert _clusters(c) == {"cluster_0": ["n1", "n2", "n3", "n4"],
                            "cluster_1": ["n5", "n6", "n7", "n8"]}


def test_a_resource_read_after_a_write_stays_out_of_the_writers_cluster():
    g = _graph("r1 = ReadVariableOp@read()", "a = Exp(r1)", "b = Log(a)",
               "w = AssignVariableOp@write(b)", "r2 = ReadVariableOp@read() ^w", "c = Mul(r2, b)",
               "d = Tanh(c)", "e = Sum(d)")
    c = mark_for_compilation(g)           # b -> c would merge them: the read must follow w
    assert c.cluster_of["w"] != c.cluster_of.get("r2")
    assert _clusters(c) == {"cluster_0": ["r1", "a", "b", "w"], "cluster_1": ["r2", "c", "d", "e"]}
    g.nodes["r2"].resource = None          # not a resource read: one cluster
    assert _clusters(mark_for_compilation(g)) == {"cluster_0": list(g.nodes)}


def test_dumps_and_flags(tmp_path, monkeypatch):
    g = _graph("a = Exp()", "b = Log(a)", "c = Abs(b)", "d = Neg(c)")
    paths = dump(mark_for_compilation(g), str(tmp_path), "f")
    after = open(paths[1]).read()
    assert 'd = Neg(c) _XlaCluster="cluster_0"' in after
    assert "XLA auto-clustering summary: 1 cluster(s)" in open(paths[2]).read()
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit "
                                       "--tf_xla_min_cluster_size=2 --tf_xla_other=1")
    flags = tf_xla_flags()
    assert (flags.auto_jit, flags.cpu_global_jit, flags.min_cluster_size) == (2, True, 2)
    assert flags.unknown == ("--tf_xla_other=1",)
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=yes")
    with pytest.raises(InvalidArgumentError, match="tf_xla_auto_jit"):
        tf_xla_flags()
