"""Gather and scatter partitioned on the gathered/scattered operand (trivially sliced operand,
multi-dim index vectors, operand pass-through, index-parallel scatter): the partitioned program
on N devices against the unpartitioned program on one (interpreter), N in {2, 4}, uneven
splits, out-of-range indices; the collectives inserted are counted."""
from __future__ import annotations

import numpy as np
import pytest

from test_spmd_partitioner import module

from xlapy.client.run import run_hlo
from xlapy.client.spmd import run_spmd, spmd_partition
from xlapy.config import debug_options
from xlapy.hlo.parser import parse_module


def check(text: str, n: int, args):
    m = parse_module(text)
    p = spmd_partition(m, n)
    ref = run_hlo(p.propagated, args)[0]
    np.testing.assert_allclose(run_spmd(m, args, n), ref, rtol=1e-5, atol=1e-5)
    return p


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def split(n, rank, dims):
    tiles = [1] * rank
    for d in dims:
        tiles[d] = n if len(dims) == 1 else 2
    count = int(np.prod(tiles))
    return f"{{devices=[{','.join(map(str, tiles))}]<=[{count}]}}"


# a 2-d index vector into a 3-d table split on one or both indexed dims
GATHER_2D = """  t = f32[{a},{b},5] parameter(0), sharding={s}
  i = s32[4,3,2] parameter(1), sharding={{replicated}}
  ROOT g = f32[4,3,5] gather(t, i), offset_dims={{2}}, collapsed_slice_dims={{0,1}}, start_index_map={{0,1}}, index_vector_dim=2, slice_sizes={{1,1,5}}"""

IDS = np.array([[[0, 0], [6, 4], [9, 1]], [[3, 2], [-4, 1], [2, 99]],
                [[8, 3], [5, 0], [1, 4]], [[7, 7], [4, 2], [0, 3]]], np.int32)


@pytest.mark.parametrize("n,dims", [(2, [0]), (4, [0]), (2, [1]), (4, [1]), (4, [0, 1])])
def test_gather_multi_dim_index_vector_into_a_split_table(n, dims):
    a, b = 9, 5                                       # uneven for 2 and 4 partitions
    text = module(GATHER_2D.format(a=a, b=b, s=split(n, 3, dims)))
    p = check(text, n, [rnd(a, b, 5), IDS])           # -4 and 99 clamp, as gather does
    assert p.collective_bytes() == {"all-reduce": 4 * 3 * 5 * 4}     # the table is not moved


def test_gather_uncollapsed_indexed_dim_and_index_vector_first():
    body = """  t = f32[10,6] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[1,7] parameter(1), sharding={replicated}
  ROOT g = f32[7,1,6] gather(t, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=0, slice_sizes={1,6}"""
    ids = np.array([[0, 9, 3, 4, 12, -1, 6]], np.int32)
    p = check(module(body), 4, [rnd(10, 6), ids])
    assert p.collective_bytes() == {"all-reduce": 7 * 6 * 4}


SCATTER = """  t = f32[{a},{b}] parameter(0), sharding={s}
  i = s32[{k},1] parameter(1), sharding={si}
  u = f32[{k},{b}] parameter(2), sharding={su}
  ROOT r = f32[{a},{b}] scatter(t, i, u), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add"""


@pytest.mark.parametrize("n", [2, 4])
def test_scatter_into_a_row_split_operand_is_local(n):
    # embedding-gradient style: rows of a split table updated by id; -1 and 11 are dropped
    text = module(SCATTER.format(a=11, b=6, k=7, s=f"{{devices=[{n},1]<=[{n}]}}",
                                 si="{replicated}", su="{replicated}"))
    ids = np.array([[0], [10], [3], [3], [-1], [11], [6]], np.int32)
    p = check(text, n, [rnd(11, 6), ids, rnd(7, 6, seed=1)])
    assert p.collective_bytes() == {}
    assert p.propagated.entry.root.attrs["sharding"].data_tiles == (n, 1)


@pytest.mark.parametrize("n", [2, 4])
def test_scatter_operand_split_on_a_pass_through_dim(n):
    text = module(SCATTER.format(a=8, b=7, k=5, s=f"{{devices=[1,{n}]<=[{n}]}}",
                                 si="{replicated}", su=f"{{devices=[1,{n}]<=[{n}]}}"))
    ids = np.array([[1], [7], [1], [20], [4]], np.int32)
    p = check(text, n, [rnd(8, 7), ids, rnd(5, 7, seed=1)])
    assert p.collective_bytes() == {}


@pytest.mark.parametrize("n", [2, 4])
def test_scatter_index_parallel_adds_the_partial_scatters(n):
    # operand replicated, 9 updates split by batch (uneven): partial sums all-reduced
    text = module(SCATTER.format(a=6, b=4, k=9, s="{replicated}",
                                 si=f"{{devices=[{n},1]<=[{n}]}}",
                                 su=f"{{devices=[{n},1]<=[{n}]}}") + "")
    text = text.replace("to_apply=add", "to_apply=add, sharding={replicated}")
    ids = np.array([[0], [5], [2], [2], [9], [1], [0], [3], [5]], np.int32)
    p = check(text, n, [rnd(6, 4), ids, rnd(9, 4, seed=1)])
    assert p.collective_bytes() == {"all-reduce": 6 * 4 * 4}


def test_scatter_2d_index_vector_into_a_2x2_split_operand():
    body = """  t = f32[7,5,3] parameter(0), sharding={devices=[2,2,1]<=[4]}
  i = s32[6,2] parameter(1), sharding={replicated}
  u = f32[6,3] parameter(2), sharding={replicated}
  ROOT r = f32[7,5,3] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add"""
    ids = np.array([[0, 0], [6, 4], [3, 2], [3, 2], [7, 0], [4, 3]], np.int32)
    p = check(module(body), 4, [rnd(7, 5, 3), ids, rnd(6, 3, seed=1)])
    assert p.collective_bytes() == {}


def test_scatter_with_other_combiner_runs_replicated():
    body = """  t = f32[8,3] parameter(0), sharding={devices=[1,2]<=[2]}
  i = s32[4,1] parameter(1), sharding={devices=[2,1]<=[2]}
  u = f32[4,3] parameter(2), sharding={devices=[2,1]<=[2]}
  ROOT r = f32[8,3] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=max"""
    ids = np.array([[1], [1], [7], [0]], np.int32)
    check(module(body), 2, [rnd(8, 3), ids, rnd(4, 3, seed=1)])


def test_gather_and_scatter_on_the_cpu_backend():
    with debug_options(xla_force_host_platform_device_count=4):
        text = module(GATHER_2D.format(a=9, b=5, s=split(4, 3, [0, 1])))
        m = parse_module(text)
        args = [rnd(9, 5, 5), IDS]
        np.testing.assert_allclose(run_spmd(m, args, 4, backend="cpu"),
                                   run_hlo(m, args)[0], rtol=1e-6)
        text = module(SCATTER.format(a=6, b=4, k=9, s="{replicated}",
                                     si="{devices=[4,1]<=[4]}", su="{devices=[4,1]<=[4]}"))
        m = parse_module(text)
        ids = np.array([[0], [5], [2], [2], [9], [1], [0], [3], [5]], np.int32)
        args = [rnd(6, 4), ids, rnd(9, 4, seed=1)]
        np.testing.assert_allclose(run_spmd(m, args, 4, backend="cpu"),
                                   run_hlo(m, args)[0], rtol=1e-5, atol=1e-6)


BATCHED_GATHER = """  t = f32[{b},16,4] parameter(0), sharding={s}
  i = s32[{b},5,1] parameter(1), sharding={si}
  ROOT g = f32[{b},5,4] gather(t, i), offset_dims={{2}}, collapsed_slice_dims={{1}}, start_index_map={{1}}, operand_batching_dims={{0}}, start_indices_batching_dims={{0}}, index_vector_dim=2, slice_sizes={{1,1,4}}"""

BATCHED_SCATTER = """  t = f32[{b},16,4] parameter(0), sharding={s}
  i = s32[{b},5,1] parameter(1), sharding={si}
  u = f32[{b},5,4] parameter(2), sharding={si}
  ROOT r = f32[{b},16,4] scatter(t, i, u), update_window_dims={{2}}, inserted_window_dims={{1}}, scatter_dims_to_operand_dims={{1}}, input_batching_dims={{0}}, scatter_indices_batching_dims={{0}}, index_vector_dim=2, to_apply=add"""


def batched_ids(b):
    return np.random.default_rng(4).integers(-2, 18, (b, 5, 1)).astype(np.int32)


@pytest.mark.parametrize("n,b", [(2, 8), (4, 8), (4, 7)])
def test_batched_gather_split_on_the_batch_is_local(n, b):
    s = f"{{devices=[{n},1,1]<=[{n}]}}"
    p = check(module(BATCHED_GATHER.format(b=b, s=s, si=s)), n, [rnd(b, 16, 4), batched_ids(b)])
    assert p.collective_bytes() == {}
    assert p.propagated.entry.root.attrs["sharding"].data_tiles == (n, 1, 1)


@pytest.mark.parametrize("n,b", [(2, 8), (4, 8), (4, 7)])
def test_batched_scatter_split_on_the_batch_is_local(n, b):
    s = f"{{devices=[{n},1,1]<=[{n}]}}"
    p = check(module(BATCHED_SCATTER.format(b=b, s=s, si=s)), n,
              [rnd(b, 16, 4), batched_ids(b), rnd(b, 5, 4, seed=1)])
    assert p.collective_bytes() == {}


def test_batched_scatter_with_replicated_indices_slices_them():
    s = "{devices=[4,1,1]<=[4]}"
    p = check(module(BATCHED_SCATTER.format(b=8, s=s, si="{replicated}")), 4,
              [rnd(8, 16, 4), batched_ids(8), rnd(8, 5, 4, seed=1)])
    assert p.collective_bytes() == {}


def test_vocabulary_parallel_embedding_with_data_parallel_ids_on_a_2x2_mesh():
    # table rows split over "model" (devices {0,1} hold different rows), ids split over "data":
    # the ids stay split, each partition adds its masked lookups within its model group only
    body = """  t = f32[11,6] parameter(0), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  i = s32[5,3] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  ROOT g = f32[5,3,6] gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,6}"""
    ids = np.random.default_rng(5).integers(-1, 13, (5, 3)).astype(np.int32)
    p = check(module(body), 4, [rnd(11, 6), ids])
    assert p.collective_bytes() == {"all-reduce": 3 * 3 * 6 * 4}     # a 3-row shard, no gather
