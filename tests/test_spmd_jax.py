"""Sharded programs from the real XLA (``tests/make_spmd_cases.py``: JAX with 8 host devices,
GSPMD): xlapy propagates and partitions the module JAX lowered (each instruction getting the
sharding XLA's propagation gave it), runs it on the partitions
(interpreter), gets JAX's output, and inserts no more bytes of collective communication than
XLA's partitioned module (counted the same way from both)."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from xlapy.client.spmd import run_spmd, spmd_partition
from xlapy.hlo.parser import parse_module
from xlapy.passes.spmd_reshard import COLLECTIVES

DATA = pathlib.Path(__file__).parent / "data" / "spmd"
CASES = sorted(p.name[:-4] for p in DATA.glob("*.hlo") if "." not in p.name[:-4])


def collective_bytes(module) -> int:
    """Result bytes of every collective in every computation."""
    return sum(i.shape.byte_size for c in module.computations for i in c.instructions
               if i.opcode.removesuffix("-start") in COLLECTIVES)


def partitions(module) -> int:
    n = 1
    for i in module.entry.instructions:
        s = i.attrs.get("sharding")
        for leaf in (s.leaves() if s is not None else ()):
            if leaf.kind == "tiled":
                n = max(n, len(leaf.devices))
    return n


@pytest.mark.parametrize("name", CASES)
def test_jax_program(name):
    m = parse_module((DATA / f"{name}.hlo").read_text())
    xla = parse_module((DATA / f"{name}.partitioned.hlo").read_text())
    data = np.load(DATA / f"{name}.npz")
    args = [data[f"arg{i}"] for i in range(len(m.entry.parameters))]
    n = partitions(m)
    got = run_spmd(m, args, n)
    np.testing.assert_allclose(got, data["out0"], rtol=1e-4, atol=1e-4)
    ours = collective_bytes(spmd_partition(m, n).module)
    assert ours <= collective_bytes(xla), (ours, collective_bytes(xla))


@pytest.mark.parametrize("name", [c for c in CASES if (DATA / f"{c}.propagated.hlo").exists()])
def test_propagation_agrees_with_xla(name):
    """Every instruction XLA's ``sharding-propagation`` gave an array sharding gets the same
    sharding (compared by meaning) from xlapy's propagation."""
    m = parse_module((DATA / f"{name}.hlo").read_text())
    xla = parse_module((DATA / f"{name}.propagated.hlo").read_text())
    ours = {i.name: i.attrs.get("sharding")
            for i in spmd_partition(m, partitions(m)).propagated.entry.instructions}
    compared = 0
    for i in xla.entry.instructions:
        if i.name in ours and "sharding" in i.attrs and not i.shape.is_tuple:
            assert ours[i.name] == i.attrs["sharding"], (i.name, str(ours[i.name]),
                                                         str(i.attrs["sharding"]))
            compared += 1
    assert compared >= 2


@pytest.mark.parametrize("name", [c for c in ("cnn_step_spatial", "max_pool_grad_spatial")
                                  if c in CASES])
def test_jax_program_on_the_cpu_backend(name):
    """A spatially split CNN training step and a max-pool gradient (halo exchanges) on as many
    CPU devices as partitions."""
    from xlapy.config import debug_options
    m = parse_module((DATA / f"{name}.hlo").read_text())
    data = np.load(DATA / f"{name}.npz")
    args = [data[f"arg{i}"] for i in range(len(m.entry.parameters))]
    n = partitions(m)
    with debug_options(xla_force_host_platform_device_count=n):
        got = run_spmd(m, args, n, backend="cpu")
    np.testing.assert_allclose(got, data["out0"], rtol=1e-4, atol=1e-4)
