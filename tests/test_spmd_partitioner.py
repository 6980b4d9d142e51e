"""Sharding propagation and the SPMD partitioner: every rule runs the partitioned program on
N devices and compares with the unpartitioned program on one (the interpreter is the oracle),
for N in {2, 4} and uneven splits."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.client.run import run_hlo
from xlapy.client.spmd import run_spmd, shard_array, spmd_partition, unshard
from xlapy.config import debug_options
from xlapy.errors import UnimplementedError
from xlapy.hlo.parser import parse_module
from xlapy.hlo.sharding import parse_sharding

ADD = """add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] maximum(x, y)
}

lt {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT c = pred[] compare(x, y), direction=LT
}

ge {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT c = pred[] compare(x, y), direction=GE
}

on_true {
  x = f32[8,6] parameter(0)
  ROOT y = f32[8,6] sine(x)
}

on_false {
  x = f32[8,6] parameter(0)
  z = f32[] constant(0)
  r = f32[8] reduce(x, z), dimensions={1}, to_apply=add
  ROOT b = f32[8,6] broadcast(r), dimensions={0}
}

cond2 {
  t = (s32[], f32[8,6], f32[6,6]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}

body2 {
  t = (s32[], f32[8,6], f32[6,6]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[8,6] get-tuple-element(t), index=1
  w = f32[6,6] get-tuple-element(t), index=2
  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = f32[8,6] tanh(d)
  ROOT r = (s32[], f32[8,6], f32[6,6]) tuple(j, y, w)
}

cond {
  t = (s32[], f32[6]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}

body {
  t = (s32[], f32[6]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[6] get-tuple-element(t), index=1
  y = f32[6] sine(x)
  ROOT r = (s32[], f32[6]) tuple(j, y)
}
"""


def module(body: str) -> str:
    return "HloModule m\n\n" + ADD + "\nENTRY main {\n" + body + "\n}\n"


def row(n):     # split dim 0 n ways
    return f"{{devices=[{n},1]<=[{n}]}}"


def col(n):
    return f"{{devices=[1,{n}]<=[{n}]}}"


CASES = {
    # name: body with {R}/{C}/{V} for the row, column and vector shardings
    "elementwise_same": """  a = f32[10,6] parameter(0), sharding={R}
  b = f32[10,6] parameter(1), sharding={R}
  ROOT c = f32[10,6] multiply(a, b)""",
    "elementwise_reshard": """  a = f32[10,7] parameter(0), sharding={R}
  b = f32[10,7] parameter(1), sharding={C}
  ROOT c = f32[10,7] subtract(a, b)""",
    "elementwise_all_to_all": """  a = f32[8,12] parameter(0), sharding={R}
  b = f32[8,12] parameter(1), sharding={C}
  ROOT c = f32[8,12] add(a, b), sharding={C}""",
    "dot_m_split": """  a = f32[10,12] parameter(0), sharding={R}
  b = f32[12,5] parameter(1), sharding={replicated}
  ROOT d = f32[10,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
    "dot_n_split": """  a = f32[10,12] parameter(0), sharding={replicated}
  b = f32[12,7] parameter(1), sharding={C}
  ROOT d = f32[10,7] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
    "dot_k_split": """  a = f32[6,13] parameter(0), sharding={C}
  b = f32[13,5] parameter(1), sharding={R}
  ROOT d = f32[6,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}""",
    "dot_k_split_scattered": """  a = f32[6,13] parameter(0), sharding={C}
  b = f32[13,5] parameter(1), sharding={R}
  ROOT d = f32[6,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={R}""",
    "dot_k_one_side": """  a = f32[6,13] parameter(0), sharding={C}
  b = f32[13,5] parameter(1), sharding={replicated}
  ROOT d = f32[6,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
    "mlp_conflicting": """  x = f32[8,12] parameter(0), sharding={R}
  w1 = f32[12,16] parameter(1), sharding={C}
  h = f32[8,16] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT g = f32[8,16] tanh(h)""",
    "dot_batch": """  a = f32[6,5,4] parameter(0), sharding={devices=[{n},1,1]<=[{n}]}
  b = f32[6,4,3] parameter(1)
  ROOT d = f32[6,5,3] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}""",
    "reduce_split_dim": """  a = f32[11,6] parameter(0), sharding={R}
  z = f32[] constant(0)
  ROOT r = f32[6] reduce(a, z), dimensions={0}, to_apply=add""",
    "reduce_max_uneven_all": """  a = f32[7,5] parameter(0), sharding={C}
  z = f32[] constant(-inf)
  ROOT r = f32[] reduce(a, z), dimensions={0,1}, to_apply=max""",
    "reduce_kept_dim": """  a = f32[9,6] parameter(0), sharding={R}
  z = f32[] constant(0)
  ROOT r = f32[9] reduce(a, z), dimensions={1}, to_apply=add""",
    "broadcast_transpose": """  a = f32[9] parameter(0), sharding={V}
  b = f32[9,4] broadcast(a), dimensions={0}
  t = f32[4,9] transpose(b), dimensions={1,0}
  c = f32[4,9] parameter(1)
  ROOT s = f32[4,9] add(t, c)""",
    "reshape_even": """  a = f32[8,6] parameter(0), sharding={R}
  r = f32[8,2,3] reshape(a)
  ROOT e = f32[8,2,3] tanh(r)""",
    "reshape_through_replicated": """  a = f32[6,8] parameter(0), sharding={C}
  r = f32[48] reshape(a)
  ROOT e = f32[48] negate(r)""",
    "constraint": """  a = f32[10,6] parameter(0), sharding={R}
  c = f32[10,6] custom-call(a), custom_call_target="Sharding", sharding={C}
  ROOT e = f32[10,6] exponential(c)""",
    "constant_iota": """  a = f32[5,6] parameter(0), sharding={R}
  k = f32[5,6] iota(), iota_dimension=1
  ROOT s = f32[5,6] add(a, k)""",
    "slice_pad_concat": """  a = f32[10,9] parameter(0), sharding={R}
  s = f32[10,4] slice(a), slice={[0:10], [2:9:2]}
  z = f32[] constant(0)
  p = f32[10,7] pad(s, z), padding=0_0x1_2
  ROOT c = f32[10,16] concatenate(p, a), dimensions={1}""",
    "slice_split_dim_replicated": """  a = f32[10,9] parameter(0), sharding={R}
  ROOT s = f32[5,9] slice(a), slice={[3:8], [0:9]}, sharding={R}""",
    "sort_runs_replicated": """  a = f32[6,8] parameter(0), sharding={R}
  ROOT s = f32[6,8] sort(a), dimensions={1}, to_apply=lt""",
    "while_vector_state": """  a = f32[6] parameter(0), sharding={V}
  i = s32[] constant(0)
  t = (s32[], f32[6]) tuple(i, a)
  w = (s32[], f32[6]) while(t), condition=cond, body=body
  ROOT r = f32[6] get-tuple-element(w), index=1""",
    "conv_batch": """  x = f32[6,7,7,3] parameter(0), sharding={devices=[{n},1,1,1]<=[{n}]}
  k = f32[3,3,3,5] parameter(1)
  ROOT c = f32[6,5,5,5] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f""",
    "conv_out_feature": """  x = f32[2,6,6,3] parameter(0)
  k = f32[3,3,3,6] parameter(1), sharding={devices=[1,1,1,{n}]<=[{n}]}
  ROOT c = f32[2,6,6,6] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f""",
    "conv_in_feature": """  x = f32[2,6,6,5] parameter(0), sharding={devices=[1,1,1,{n}]<=[{n}]}
  k = f32[3,3,5,4] parameter(1), sharding={devices=[1,1,{n},1]<=[{n}]}
  ROOT c = f32[2,4,4,4] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f, sharding={replicated}""",
    "conv_kernel_grad": """  x = f32[4,6,6,3] parameter(0), sharding={devices=[{n},1,1,1]<=[{n}]}
  g = f32[4,4,4,5] parameter(1), sharding={devices=[{n},1,1,1]<=[{n}]}
  ROOT c = f32[3,3,3,5] convolution(x, g), window={size=4x4}, dim_labels=f01b_i01o->01bf""",
    "dim_local_ops": """  a = f32[8,9] parameter(0), sharding={R}
  i = s32[] constant(2)
  z = s32[] constant(0)
  ds = f32[8,5] dynamic-slice(a, z, i), dynamic_slice_sizes={8,5}
  up = f32[8,2] parameter(1)
  du = f32[8,5] dynamic-update-slice(ds, up, z, i)
  rv = f32[8,5] reverse(du), dimensions={1}
  st = f32[8,5] sort(rv), dimensions={1}, to_apply=lt
  m = f32[] constant(-inf)
  ROOT rw = f32[8,3] reduce-window(st, m), window={size=1x3}, to_apply=max""",
    "max_pool_and_grad": """  x = f32[4,6,6,3] parameter(0), sharding={devices=[{n},1,1,1]<=[{n}]}
  m = f32[] constant(-inf)
  p = f32[4,3,3,3] reduce-window(x, m), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  z = f32[] constant(0)
  ROOT g = f32[4,6,6,3] select-and-scatter(x, p, z), window={size=1x2x2x1 stride=1x2x2x1}, select=ge, scatter=add""",
    "embedding_lookup": """  t = f32[10,6] parameter(0), sharding={devices=[1,{n}]<=[{n}]}
  i = s32[6,3] parameter(1), sharding={devices=[{n},1]<=[{n}]}
  ROOT g = f32[6,3,6] gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,6}""",
    "while_sharded_state": """  a = f32[8,6] parameter(0), sharding={R}
  w = f32[6,6] parameter(1)
  i = s32[] constant(0)
  t = (s32[], f32[8,6], f32[6,6]) tuple(i, a, w)
  l = (s32[], f32[8,6], f32[6,6]) while(t), condition=cond2, body=body2
  ROOT r = f32[8,6] get-tuple-element(l), index=1""",
    "conditional": """  a = f32[8,6] parameter(0), sharding={R}
  p = pred[] parameter(1)
  ROOT c = f32[8,6] conditional(p, a, a), true_computation=on_true, false_computation=on_false""",
    "mlp": """  x = f32[8,12] parameter(0), sharding={replicated}
  w1 = f32[12,16] parameter(1), sharding={C}
  w2 = f32[16,12] parameter(2), sharding={R}
  h = f32[8,16] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g = f32[8,16] tanh(h)
  ROOT y = f32[8,12] dot(g, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
}


# the same loop with the state replicated and the loop-invariant weight split by columns
CASES["while_reshard_in_body"] = CASES["while_sharded_state"].replace(
    "sharding={R}\n  w = f32[6,6] parameter(1)",
    "sharding={replicated}\n  w = f32[6,6] parameter(1), sharding={C}")


def case_text(name: str, n: int) -> str:
    body = CASES[name].replace("{R}", row(n)).replace("{C}", col(n))
    body = body.replace("{V}", f"{{devices=[{n}]<=[{n}]}}").replace("{n}", str(n))
    return module(body)


def _args(m, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in m.entry.parameters:
        if p.shape.element_type.name == "pred":
            out.append(np.array(rng.random(p.shape.dims) > 0.5))
        elif p.shape.element_type.is_integral:
            out.append(rng.integers(0, 10, p.shape.dims).astype(np.int32))
        else:
            out.append(rng.standard_normal(p.shape.dims).astype(np.float32))
    return out


def _check(text: str, n: int, backend: str = "interpreter"):
    m = parse_module(text)
    args = _args(m)
    p = spmd_partition(m, n)
    ref = run_hlo(p.propagated, args)[0]
    got = run_spmd(m, args, n, backend=backend)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    return p


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", sorted(CASES))
def test_partitioned_matches_one_device(name, n):
    _check(case_text(name, n), n)


def test_mesh_2x2_partial_replication():
    body = """  x = f32[6,10] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  w = f32[10,5] parameter(1), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  d = f32[6,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  ROOT r = f32[5] reduce(d, z), dimensions={0}, to_apply=add"""
    p = _check(module(body), 4)
    d = p.propagated.entry.instruction("d").attrs["sharding"]
    assert d.to_text() == "{devices=[2,2]<=[4]}"        # both operands' splits merged
    assert p.collective_bytes() == {"all-reduce": 3 * 4}   # only the reduce's partial sums


@pytest.mark.parametrize("dst", ["{devices=[2,2]<=[2,2]T(1,0)}", "{devices=[4,1]<=[4]}",
                                 "{devices=[1,4]<=[4]}", "{devices=[2,2]3,2,1,0}"])
def test_tile_moves_use_all_to_all_and_permute(dst):
    body = f"""  a = f32[8,12] parameter(0), sharding={{devices=[2,2]<=[4]}}
  t = f32[8,12] negate(a)
  ROOT c = f32[8,12] copy(t), sharding={dst}"""
    p = _check(module(body), 4)
    kinds = set(p.collective_bytes())
    assert kinds and kinds <= {"all-to-all", "collective-permute"}, kinds
    assert sum(p.collective_bytes().values()) <= 2 * 4 * 6 * 4


def test_data_parallel_conv_is_local_and_its_kernel_gradient_one_all_reduce():
    p = _check(case_text("conv_batch", 2), 2)
    assert p.collective_bytes() == {}
    p = _check(case_text("conv_kernel_grad", 2), 2)
    assert p.collective_bytes() == {"all-reduce": 3 * 3 * 3 * 5 * 4}


@pytest.mark.parametrize("table,ids,out", [
    ("{replicated}", "{devices=[2,1]<=[2]}", "{devices=[2,1,1]<=[2]}"),     # ids by batch
    ("{devices=[1,2]<=[2]}", "{replicated}", "{devices=[1,1,2]<=[2]}"),     # table by feature
])
def test_embedding_lookup_is_local(table, ids, out):
    text = case_text("embedding_lookup", 2).replace(
        "sharding={devices=[1,2]<=[2]}", f"sharding={table}", 1).replace(
        "s32[6,3] parameter(1), sharding={devices=[2,1]<=[2]}",
        f"s32[6,3] parameter(1), sharding={ids}")
    p = _check(text, 2)
    assert p.collective_bytes() == {}
    assert p.propagated.entry.root.attrs["sharding"].to_text() == out


@pytest.mark.parametrize("n", [2, 4])
def test_vocabulary_parallel_embedding_masks_and_all_reduces(n):
    body = f"""  t = f32[42,6] parameter(0), sharding={{devices=[{n},1]<=[{n}]}}
  i = s32[2,3] parameter(1), sharding={{replicated}}
  ROOT g = f32[2,3,6] gather(t, i), offset_dims={{2}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=2, slice_sizes={{1,6}}"""
    m = parse_module(module(body))
    p = spmd_partition(m, n)
    args = [np.random.default_rng(2).standard_normal((42, 6)).astype(np.float32),
            np.array([[0, 41, 50], [13, -2, 22]], np.int32)]   # 50 and -2 clamp, as in XLA
    np.testing.assert_allclose(run_spmd(m, args, n), run_hlo(p.propagated, args)[0])
    # the partial lookups are added (144 bytes), the 1 KB table is not gathered
    assert p.collective_bytes() == {"all-reduce": 2 * 3 * 6 * 4}


def test_embedding_lookup_conflict_gathers_the_smaller_operand():
    p = _check(case_text("embedding_lookup", 2), 2)
    assert p.collective_bytes() == {"all-gather": 6 * 3 * 4}      # the ids, not the table


def test_while_body_is_partitioned_with_the_loop_state_sharding():
    p = _check(case_text("while_sharded_state", 4), 4)
    assert p.collective_bytes() == {}                # rows stay split through the loop
    (body,) = [c for c in p.module.computations if c.name.startswith("body2")]
    assert body.name.endswith("_spmd")
    assert body.root.shape.tuple_shapes[1].dims == (2, 6)


@pytest.mark.parametrize("flag", [True, False])
def test_conditional_branches_are_partitioned(flag):
    m = parse_module(case_text("conditional", 4))
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((8, 6)).astype(np.float32), np.array(flag)]
    p = spmd_partition(m, 4)
    np.testing.assert_allclose(run_spmd(m, args, 4), run_hlo(p.propagated, args)[0],
                               rtol=1e-5, atol=1e-5)
    assert p.collective_bytes() == {}
    assert {c.name for c in p.module.computations} >= {"on_true_spmd", "on_false_spmd"}


def test_megatron_mlp_has_one_all_reduce_and_no_gather():
    p = _check(case_text("mlp", 4), 4)
    ops = [i.opcode for i in p.module.entry.instructions]
    assert ops.count("all-reduce") == 1 and "all-gather" not in ops
    assert p.collective_bytes() == {"all-reduce": 8 * 12 * 4}      # y, f32[8,12], once


def test_replicated_to_tiled_is_a_local_slice():
    p = _check(case_text("dot_m_split", 4).replace(
        "sharding={devices=[4,1]<=[4]}", "sharding={replicated}").replace(
        "ROOT d = f32[10,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "ROOT d = f32[10,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        "sharding={devices=[4,1]<=[4]}"), 4)
    ops = {i.opcode for i in p.module.entry.instructions}
    assert "dynamic-slice" in ops and "partition-id" in ops and not ops & {"all-gather",
                                                                         "all-reduce"}


def test_contracting_split_picks_the_cheaper_plan():
    # a is split on K; gathering a (6x13) costs more than all-reducing the 6x5 result
    p = _check(case_text("dot_k_one_side", 2), 2)
    assert set(p.collective_bytes()) == {"all-reduce"}


def test_partitioned_module_text_and_layout():
    p = spmd_partition(parse_module(case_text("dot_m_split", 4)), 4)
    text = p.module.to_text()
    assert "num_partitions=4" in text and "ENTRY %main_spmd" in text
    assert "f32[3,12]" in text and "parameter(0), sharding={devices=[4,1]<=[4]}" in text
    assert parse_module(text).to_text() == text


def test_shard_and_unshard_uneven():
    s = parse_sharding("{devices=[2,2]<=[2,2]T(1,0)}")
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    pieces = shard_array(x, s, 4)
    assert pieces[0].shape == (3, 4)
    assert pieces[1][0, 0] == x[3, 0]           # device 1 holds tile (1, 0)
    np.testing.assert_array_equal(unshard(pieces, s, x.shape), x)


def test_partition_dependent_op_is_a_typed_error():
    body = """  a = f32[8] parameter(0), sharding={devices=[2]<=[2]}
  q = u32[] partition-id()
  c = f32[] convert(q)
  b = f32[8] broadcast(c), dimensions={}
  ROOT s = f32[8] add(a, b)"""
    with pytest.raises(UnimplementedError, match="add s.* per-device value .*partition-id.*"
                                                 "ambiguous"):
        spmd_partition(parse_module(module(body)), 2)


@pytest.mark.parametrize("name", ["mlp", "dot_k_split", "reduce_split_dim", "reshape_even",
                                  "elementwise_all_to_all", "conv_kernel_grad",
                                  "while_reshard_in_body"])
def test_cpu_backend_on_two_devices(name):
    with debug_options(xla_force_host_platform_device_count=2):
        _check(case_text(name, 2), 2, backend="cpu")


def test_dump_after_propagation_and_partitioning(tmp_path):
    with debug_options(xla_dump_to=str(tmp_path)):
        spmd_partition(parse_module(case_text("mlp", 2)), 2)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.endswith("after_sharding-propagation.txt") for n in names), names
    assert any(n.endswith("after_spmd-partitioning.txt") for n in names), names


@pytest.mark.parametrize("name", ["slice_pad_concat", "dim_local_ops", "max_pool_and_grad"])
def test_ops_along_unsplit_dims_stay_local(name):
    p = _check(case_text(name, 4), 4)
    assert p.collective_bytes() == {}
    assert p.propagated.entry.root.attrs["sharding"].data_tiles[0] == 4


def test_slice_pad_concatenate_keep_the_row_split():
    p = _check(case_text("slice_pad_concat", 4), 4)
    out = p.propagated.entry.root.attrs["sharding"]
    assert out.to_text() == "{devices=[4,1]<=[4]}"


def test_sharding_for_another_device_count_is_rejected():
    from xlapy.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match=r"main/a: sharding .* uses 4 device\(s\), "
                                                   r"but the module has 2"):
        spmd_partition(parse_module(case_text("dot_m_split", 4)), 2)
