"""Windowed ops split on windowed dims (halo exchange): convolutions split on spatial dims and
reduce-windows split on windowed dims run partitioned on N devices against the unpartitioned
program on one (interpreter), for N in {2, 4} and uneven splits; the collectives inserted are
counted."""
from __future__ import annotations

import numpy as np
import pytest

from test_spmd_partitioner import _check, module

from xlapy.client.run import run_hlo
from xlapy.client.spmd import run_spmd, spmd_partition
from xlapy.config import debug_options
from xlapy.hlo.parser import parse_module


def conv_text(x, k, out, window, n, split, extra=""):
    return module(f"""  x = f32[{x}] parameter(0), sharding={split.format(n=n)}
  k = f32[{k}] parameter(1)
  ROOT y = f32[{out}] convolution(x, k), window={{{window}}}, dim_labels=b01f_01io->b01f{extra}""")


H = "{{devices=[1,{n},1,1]<=[{n}]}}"          # split the rows (spatial dim 0)
HW = "{{devices=[1,2,2,1]<=[4]}}"             # rows and columns on a 2x2 mesh

# name: (input dims, kernel dims, output dims, window)
CONVS = {
    "same_3x3": ("2,10,7,3", "3,3,3,4", "2,10,7,4", "size=3x3 pad=1_1x1_1"),
    "valid_3x3": ("2,11,6,3", "3,3,3,4", "2,9,4,4", "size=3x3"),
    "stride2_same": ("2,13,8,3", "3,3,3,4", "2,7,4,4", "size=3x3 stride=2x2 pad=1_1x1_1"),
    "stride2_valid_even": ("2,16,8,2", "2,2,2,3", "2,8,4,3", "size=2x2 stride=2x2"),
    "dilated": ("2,14,9,2", "3,3,2,3", "2,10,5,3", "size=3x3 rhs_dilate=2x2"),
    "dilated_same": ("2,9,9,2", "3,3,2,3", "2,9,9,3", "size=3x3 pad=2_2x2_2 rhs_dilate=2x2"),
    "asymmetric_pad": ("2,10,6,2", "4,4,2,3", "2,10,6,3", "size=4x4 pad=1_2x1_2"),
    "big_window": ("2,9,5,2", "7,3,2,3", "2,3,3,3", "size=7x3"),
    "negative_pad": ("2,12,6,2", "3,3,2,3", "2,7,4,3", "size=3x3 pad=-1_-2x0_0"),
    "fewer_outputs_than_partitions": ("2,5,4,2", "3,3,2,3", "2,3,2,3", "size=3x3"),
    "stride_past_window": ("2,13,6,2", "2,2,2,3", "2,4,2,3", "size=2x2 stride=3x3"),
}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_split_on_rows(name, n):
    x, k, out, window = CONVS[name]
    p = _check(conv_text(x, k, out, window, n, H), n)
    root = p.propagated.entry.root.attrs["sharding"]
    assert root.data_tiles[1] == n              # the row split propagates to the output
    kinds = set(p.collective_bytes())
    assert "all-gather" not in kinds or name == "big_window", p.collective_bytes()


def test_conv_same_3x3_exchanges_one_row_each_way():
    x, k, out, window = CONVS["same_3x3"]
    p = _check(conv_text(x, k, out, window, 2, H), 2)
    # one row of f32[2,_,7,3] to each side: 2 * (2*1*7*3*4) bytes, no gather
    assert p.collective_bytes() == {"collective-permute": 2 * 2 * 7 * 3 * 4}
    ops = [i.opcode for i in p.module.entry.instructions]
    assert ops.count("collective-permute") == 2 and "partition-id" in ops


def test_conv_valid_stride_two_even_split_needs_no_halo():
    x, k, out, window = CONVS["stride2_valid_even"]
    p = _check(conv_text(x, k, out, window, 2, H), 2)
    assert p.collective_bytes() == {}


def test_conv_halo_past_the_neighbour_gathers_the_rows():
    # 7-row window over 4 partitions of 3 rows: the halo reaches two shards away; XLA also
    # falls back to gathering the windowed dim there
    x, k, out, window = CONVS["big_window"]
    p = _check(conv_text(x, k, out, window, 4, H), 4)
    assert set(p.collective_bytes()) == {"all-gather"}


def test_conv_split_on_rows_and_columns():
    x, k, out, window = CONVS["same_3x3"]
    p = _check(conv_text(x, k, out, window, 4, HW), 4)
    assert set(p.collective_bytes()) == {"collective-permute"}
    assert p.propagated.entry.root.attrs["sharding"].to_text() == "{devices=[1,2,2,1]<=[4]}"


def test_conv_rows_and_output_features():
    x, k, out, window = CONVS["same_3x3"]
    text = conv_text(x, k, out, window, 4, "{{devices=[1,2,1,1,2]<=[4] last_tile_dim_replicate}}",
                     ", sharding={devices=[1,2,1,2]<=[4]}")
    text = text.replace("k = f32[3,3,3,4] parameter(1)",
                        "k = f32[3,3,3,4] parameter(1), sharding={devices=[1,1,1,2,2]<=[2,2]T(1,0)"
                        " last_tile_dim_replicate}")
    p = _check(text, 4)
    assert set(p.collective_bytes()) == {"collective-permute"}


def test_conv_output_split_on_rows_from_a_replicated_input_is_local():
    x, k, out, window = CONVS["stride2_same"]
    p = _check(conv_text(x, k, out, window, 4, "{{replicated}}",
                         ", sharding={devices=[1,4,1,1]<=[4]}"), 4)
    assert p.collective_bytes() == {}


def test_conv_kernel_split_on_spatial_keeps_rows_unsplit():
    # a spatially split kernel is not halo-exchanged here: the conv runs as before
    x, k, out, window = CONVS["valid_3x3"]
    text = conv_text(x, k, out, window, 2, H).replace(
        "k = f32[3,3,3,4] parameter(1)", "k = f32[3,3,3,4] parameter(1), "
        "sharding={devices=[2,1,1,1]<=[2]}")
    _check(text, 2)


@pytest.mark.parametrize("n", [2, 4])
def test_transposed_conv_split_on_rows(n):
    # the input gradient of a stride-2 SAME convolution: base dilation 2, each partition's
    # first window at the same phase of the dilated input, so the halo exchange applies
    text = conv_text("2,8,5,2", "3,3,2,3", "2,16,10,3",
                     "size=3x3 pad=1_2x1_2 lhs_dilate=2x2", n, H)
    p = _check(text, n)
    assert set(p.collective_bytes()) == {"collective-permute"}, p.collective_bytes()


@pytest.mark.parametrize("n", [2, 4])
def test_base_dilation_at_varying_phases_slices_the_output(n):
    # 11 outputs over the dilated 6 rows: for 4 partitions the first windows start at
    # different phases of the dilated input; the local op starts at the larger phase, computes
    # one more output and each partition keeps its own (as XLA at stride 1)
    text = conv_text("2,6,5,2", "3,3,2,3", "2,11,3,3", "size=3x3 pad=1_1x0_0 lhs_dilate=2x1",
                     n, H)
    p = _check(text, n)
    assert set(p.collective_bytes()) == {"collective-permute"}


def test_base_dilation_at_varying_phases_with_a_stride_falls_back():
    text = conv_text("2,6,5,2", "3,3,2,3", "2,4,3,3",
                     "size=3x3 stride=3x1 pad=1_1x0_0 lhs_dilate=2x1", 4, H)
    p = _check(text, 4)
    assert "collective-permute" not in p.collective_bytes()


def rw_text(dims, window, n, split, init="-inf", to_apply="max", extra=""):
    out = dims[1]
    return module(f"""  x = f32[{dims[0]}] parameter(0), sharding={split.format(n=n)}
  m = f32[] constant({init})
  ROOT y = f32[{out}] reduce-window(x, m), window={{{window}}}, to_apply={to_apply}{extra}""")


RWS = {
    "max_pool_2x2": (("2,12,9,3", "2,6,4,3"), "size=1x2x2x1 stride=1x2x2x1"),
    "max_pool_3x3_s2_same": (("2,11,9,3", "2,6,5,3"),
                             "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0"),
    "avg_pool_valid": (("2,10,7,2", "2,8,5,2"), "size=1x3x3x1"),
    "dilated_window": (("2,13,5,2", "2,9,5,2"), "size=1x3x1x1 rhs_dilate=1x2x1x1"),
    "cumsum": (("2,10,3,2", "2,10,3,2"), "size=1x10x1x1 pad=0_0x9_0x0_0x0_0"),
    "base_dilated": (("2,8,3,2", "2,14,3,2"), "size=1x2x1x1 lhs_dilate=1x2x1x1"),
}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", sorted(RWS))
def test_reduce_window_split_on_windowed_dim(name, n):
    dims, window = RWS[name]
    add = name in ("avg_pool_valid", "cumsum")
    p = _check(rw_text(dims, window, n, H, "0" if add else "-inf", "add" if add else "max"), n)
    assert p.propagated.entry.root.attrs["sharding"].data_tiles[1] == n
    kinds = set(p.collective_bytes())
    if name == "cumsum":          # the window spans every shard: gathered, as XLA does
        assert kinds == {"all-gather"}
    else:
        assert kinds <= {"collective-permute"}, p.collective_bytes()


def test_max_pool_3x3_stride_2_exchanges_one_row_right_only():
    dims, window = RWS["max_pool_3x3_s2_same"]
    p = _check(rw_text(dims, window, 2, H), 2)
    # 6 rows each; partition 1's first window starts at row 3*2-1 = 5: one row from the left
    assert p.collective_bytes() == {"collective-permute": 2 * 1 * 9 * 3 * 4}


def test_reduce_window_mask_uses_the_init_value():
    # every value negative, max-pooled: padding and halo rows outside the array must read as
    # the init value (-inf), not as the zeros a collective-permute gives the edge partitions
    dims, window = RWS["max_pool_3x3_s2_same"]
    m = parse_module(rw_text(dims, window, 4, H))
    x = -1 - np.abs(np.random.default_rng(3).standard_normal((2, 11, 9, 3))).astype(np.float32)
    p = spmd_partition(m, 4)
    got = run_spmd(m, [x], 4)
    np.testing.assert_array_equal(got, run_hlo(p.propagated, [x])[0])
    assert got.max() < -1


def test_reduce_window_on_both_spatial_dims_of_a_2x2_mesh():
    dims, window = RWS["max_pool_3x3_s2_same"]
    p = _check(rw_text(dims, window, 4, HW), 4)
    assert set(p.collective_bytes()) == {"collective-permute"}


@pytest.mark.parametrize("name", ["same_3x3", "stride2_same"])
def test_conv_halo_on_the_cpu_backend(name):
    x, k, out, window = CONVS[name]
    with debug_options(xla_force_host_platform_device_count=2):
        p = _check(conv_text(x, k, out, window, 2, H), 2, backend="cpu")
    assert "collective-permute" in p.collective_bytes()


def test_max_pool_halo_on_the_cpu_backend():
    dims, window = RWS["max_pool_3x3_s2_same"]
    with debug_options(xla_force_host_platform_device_count=2):
        p = _check(rw_text(dims, window, 2, H), 2, backend="cpu")
    assert set(p.collective_bytes()) == {"collective-permute"}


POOL_GRADS = {
    "3x3_s2_same": ("2,16,6,3", "2,8,3,3", "size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x1_1x0_0"),
    "2x2_s2": ("2,12,6,3", "2,6,3,3", "size=1x2x2x1 stride=1x2x2x1"),
    "3x3_s1_same": ("2,9,5,2", "2,9,5,2", "size=1x3x3x1 pad=0_0x1_1x1_1x0_0"),
    "3x3_s2_valid_uneven": ("2,13,7,2", "2,6,3,2", "size=1x3x3x1 stride=1x2x2x1"),
}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", sorted(POOL_GRADS))
def test_max_pool_and_its_gradient_split_on_rows(name, n):
    # the pool and its gradient (select-and-scatter) keep the row split: halo exchanges only
    x, pooled, window = POOL_GRADS[name]
    p = _check(module(f"""  x = f32[{x}] parameter(0), sharding={{devices=[1,{n},1,1]<=[{n}]}}
  m = f32[] constant(-inf)
  p = f32[{pooled}] reduce-window(x, m), window={{{window}}}, to_apply=max
  z = f32[] constant(0)
  ROOT g = f32[{x}] select-and-scatter(x, p, z), window={{{window}}}, select=ge, scatter=add"""), n)
    assert p.propagated.entry.root.attrs["sharding"].data_tiles[1] == n
    assert set(p.collective_bytes()) <= {"collective-permute"}, p.collective_bytes()


def test_max_pool_gradient_with_all_negative_values_and_a_2x2_mesh():
    # padding rows must lose every comparison (-inf), not win it as zeros would
    x, pooled, window = POOL_GRADS["3x3_s2_same"]
    m = parse_module(module(f"""  x = f32[{x}] parameter(0), sharding={{devices=[1,2,2,1]<=[4]}}
  s = f32[{pooled}] parameter(1), sharding={{devices=[1,2,2,1]<=[4]}}
  z = f32[] constant(0)
  ROOT g = f32[{x}] select-and-scatter(x, s, z), window={{{window}}}, select=ge, scatter=add"""))
    rng = np.random.default_rng(6)
    args = [-1 - np.abs(rng.standard_normal((2, 16, 6, 3))).astype(np.float32),
            rng.standard_normal((2, 8, 3, 3)).astype(np.float32)]
    p = spmd_partition(m, 4)
    np.testing.assert_allclose(run_spmd(m, args, 4), run_hlo(p.propagated, args)[0], rtol=1e-6)
    assert set(p.collective_bytes()) == {"collective-permute"}


def test_select_and_scatter_with_another_select_runs_replicated():
    x, pooled, window = POOL_GRADS["2x2_s2"]
    text = module(f"""  x = f32[{x}] parameter(0), sharding={{devices=[1,2,1,1]<=[2]}}
  s = f32[{pooled}] parameter(1), sharding={{devices=[1,2,1,1]<=[2]}}
  z = f32[] constant(0)
  ROOT g = f32[{x}] select-and-scatter(x, s, z), window={{{window}}}, select=sel, scatter=add""")
    text = text.replace("ENTRY main {", """sel {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  d = f32[] subtract(a, b)
  k = f32[] constant(0.5)
  ROOT c = pred[] compare(d, k), direction=GT
}

ENTRY main {""")
    p = _check(text, 2)
    assert "collective-permute" not in p.collective_bytes()


# kernel gradients of row-split convolutions: input and output gradient both split on rows
KERNEL_GRADS = {
    "same": ("2,10,8,3", "2,10,8,5", "3,3,3,5", "size=10x8 pad=1_1x1_1"),
    "valid": ("2,12,7,3", "2,10,5,5", "3,3,3,5", "size=10x5"),
    "stride2": ("2,16,8,3", "2,8,4,5", "3,3,3,5", "size=8x4 pad=0_1x0_1 rhs_dilate=2x2"),
}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", sorted(KERNEL_GRADS))
def test_kernel_gradient_of_a_row_split_convolution(name, n):
    x, g, out, window = KERNEL_GRADS[name]
    split = f"{{devices=[1,{n},1,1]<=[{n}]}}"
    p = _check(module(f"""  x = f32[{x}] parameter(0), sharding={split}
  g = f32[{g}] parameter(1), sharding={split}
  ROOT k = f32[{out}] convolution(x, g), window={{{window}}}, dim_labels=f01b_i01o->01bf"""), n)
    got = p.collective_bytes()
    # partial kernel gradients added once (3*3*3*5 floats); only halo rows of x move besides
    assert got.get("all-reduce") == 3 * 3 * 3 * 5 * 4 and "all-gather" not in got, got


def test_kernel_gradient_with_rows_split_over_one_axis_of_a_2x2_mesh():
    # the rows split over one mesh axis and replicated over the other: the partial kernel
    # gradients are added within the row groups only (XLA 0.10.2 adds them over all devices
    # and returns twice the gradient for this sharding)
    x, g, out, window = KERNEL_GRADS["same"]
    split = "{devices=[1,2,1,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"
    p = _check(module(f"""  x = f32[{x}] parameter(0), sharding={split}
  g = f32[{g}] parameter(1), sharding={split}
  ROOT k = f32[{out}] convolution(x, g), window={{{window}}}, dim_labels=f01b_i01o->01bf"""), 4)
    (ar,) = [i for i in p.module.entry.instructions if i.opcode == "all-reduce"]
    assert [len(g) for g in ar.attrs["replica_groups"].groups] == [2, 2]


# pad and slice along the split dim: a window of size 1 (halo exchange, no gather)
PADS_SLICES = {
    "pad_edges": ("f32[10,3]", "f32[13,3]", "pad(x, z), padding=1_2x0_0"),
    "pad_interior": ("f32[8,3]", "f32[17,3]", "pad(x, z), padding=1_1_1x0_0"),
    "pad_negative": ("f32[11,3]", "f32[9,3]", "pad(x, z), padding=-3_1x0_0"),
    "slice_prefix": ("f32[10,3]", "f32[7,3]", "slice(x), slice={[0:7], [0:3]}"),
    "slice_middle_strided": ("f32[13,4]", "f32[4,2]", "slice(x), slice={[2:12:3], [1:4:2]}"),
}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", sorted(PADS_SLICES))
def test_pad_and_slice_along_the_split_dim(name, n):
    x, y, op = PADS_SLICES[name]
    p = _check(module(f"""  x = {x} parameter(0), sharding={{devices=[{n},1]<=[{n}]}}
  z = f32[] constant(-1)
  ROOT y = {y} {op}"""), n)
    assert p.propagated.entry.root.attrs["sharding"].data_tiles[0] == n
    assert set(p.collective_bytes()) <= {"collective-permute"}, p.collective_bytes()


def test_jit_with_row_split_images_keeps_the_split_through_conv_and_pool():
    import xlapy
    import xlapy.lax as lax
    from xlapy.sharding import Mesh, NamedSharding, PartitionSpec

    def f(x, k):
        y = lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return lax.reduce_window(y, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

    x = np.random.default_rng(0).standard_normal((2, 16, 8, 3)).astype(np.float32)
    k = np.random.default_rng(1).standard_normal((3, 3, 3, 4)).astype(np.float32)
    with debug_options(xla_force_host_platform_device_count=4):
        mesh = Mesh(np.array(xlapy.devices()[:4]), ("y",))
        g = xlapy.jit(f, in_shardings=(NamedSharding(mesh, PartitionSpec(None, "y")),
                                       NamedSharding(mesh, PartitionSpec())))
        out = g(x, k)
        ref = xlapy.jit(f)(x, k)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-5)
    assert out.sharding.to_text() == "{devices=[1,4,1,1]<=[4]}"
