"""The GPU's tiled transpose kernels (``xlapy/backends/gpu/transpose.py``): which kernels
take them, and their results on the ``gpu_sim`` grid emulator against the interpreter
(rank 2 and 3, sizes that are not multiples of the tile, several element types, fused
elementwise consumers, several transposed operands, the weight update of an MLP training
step), and their PTX assembled by ``ptxas`` for sm_80 and sm_90. With
``XLAPY_GPU_TEST_DEVICE=1`` the same programs also run on the device.
"""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

from xlapy.client.run import run_hlo
from xlapy.hlo import parse_module

gpu = pytest.importorskip("xlapy.backends.gpu")
from xlapy.backends.gpu.ptx import ptxas_check, ptxas_path  # noqa: E402
from xlapy.backends.gpu.transpose import MIN_DIM, TILE  # noqa: E402
from gpu_programs import gpu_kernels  # noqa: E402  (in tests/)

DEVICE = os.environ.get("XLAPY_GPU_TEST_DEVICE") == "1"
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
      "c64": np.complex64, "s32": np.int32, "s8": np.int8, "u16": np.uint16, "pred": np.bool_}


@pytest.fixture(scope="module")
def sim():
    return gpu.GpuSimBackend()


def _transposes(backend, text: str) -> list:
    return [k for k in gpu_kernels(backend, text).values() if k.kind == "transpose"]


def _args(text: str, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for p in sorted((i for i in parse_module(text).entry.instructions
                     if i.opcode == "parameter"), key=lambda i: i.parameter_number):
        name, dims = p.shape.element_type.name, tuple(p.shape.dims)
        if name == "pred":
            out.append(rng.integers(0, 2, dims).astype(np.bool_))
        elif name in ("s32", "s8", "u16"):
            out.append(rng.integers(-100 if name != "u16" else 0, 100, dims).astype(NP[name]))
        elif name == "c64":
            out.append((rng.standard_normal(dims) + 1j * rng.standard_normal(dims))
                       .astype(np.complex64))
        else:
            out.append(rng.standard_normal(dims).astype(NP[name]))
    return out


def _check(text: str, exact: bool = True, backend: str = "gpu_sim") -> None:
    """``text`` on ``backend`` equals (or, with transcendental ops, is close to) the
    interpreter's result, and its kernels assemble for sm_80 and sm_90."""
    args = _args(text)
    want = run_hlo(parse_module(text), args, backend="interpreter")
    got = run_hlo(parse_module(text), args, backend=backend)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=2e-6, atol=1e-30)
    if ptxas_path() is not None:
        ptx = gpu.GpuBackend().compiler_ir(parse_module(text), "ptx")
        for arch in ("sm_80", "sm_90"):
            ptxas_check(ptx, arch)


def _transpose2(ty: str, r: int, c: int) -> str:
    return (f"HloModule t\nENTRY e {{\n x = {ty}[{r},{c}] parameter(0)\n"
            f" ROOT y = {ty}[{c},{r}] transpose(x), dimensions={{1,0}}\n}}\n")


# ----------------------------------------------------------------------------- detection
def test_a_bare_transpose_is_one_tiled_kernel_with_a_tile_per_block(sim):
    (k,) = gpu_kernels(sim, _transpose2("f32", 37, 45)).values()
    assert k.kind == "transpose" and k.block == TILE * 8
    assert k.grid == 2 * 2            # ceil(45/32) x ceil(37/32) tiles
    assert "shared tiles for ['y']" in k.notes[0]


def test_the_ptx_uses_shared_memory_and_a_barrier():
    ptx = gpu.GpuBackend().compiler_ir(parse_module(_transpose2("f32", 64, 96)), "ptx")
    assert ".shared" in ptx and "bar.sync" in ptx
    assert "st.shared" in ptx and "ld.shared" in ptx


@pytest.mark.parametrize("shape", [(MIN_DIM - 1, 200), (200, MIN_DIM - 1), (1, 64)])
def test_short_dimensions_stay_loopgpu_kernels(sim, shape):
    r, c = shape
    assert not _transposes(sim, _transpose2("f32", r, c))
    _check(_transpose2("f32", r, c))


def test_elementwise_kernels_and_minor_preserving_transposes_are_not_tiled(sim):
    add = ("HloModule a\nENTRY e {\n x = f32[64,64] parameter(0)\n"
           " ROOT y = f32[64,64] add(x, x)\n}\n")
    heads = ("HloModule h\nENTRY e {\n x = f32[2,40,4,32] parameter(0)\n"
             " ROOT y = f32[2,4,40,32] transpose(x), dimensions={0,2,1,3}\n}\n")
    assert not _transposes(sim, add) and not _transposes(sim, heads)
    _check(heads)


# ----------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("ty", ["f32", "f64", "f16", "bf16", "c64", "s32", "s8", "u16",
                                "pred"])
@pytest.mark.parametrize("shape", [(37, 45), (64, 96), (33, 100), (129, 17)])
def test_rank2_transposes_match_the_interpreter(sim, ty, shape):
    text = _transpose2(ty, *shape)
    assert len(_transposes(sim, text)) == 1
    _check(text)


@pytest.mark.parametrize("perm,dims", [((0, 2, 1), (3, 40, 50)), ((0, 2, 1), (5, 33, 17)),
                                       ((2, 1, 0), (20, 3, 70)), ((1, 2, 0), (45, 2, 36)),
                                       ((2, 0, 1), (2, 50, 40))])
def test_rank3_transposes_match_the_interpreter(sim, perm, dims):
    out = [dims[p] for p in perm]
    text = (f"HloModule t3\nENTRY e {{\n x = f32[{','.join(map(str, dims))}] parameter(0)\n"
            f" ROOT y = f32[{','.join(map(str, out))}] transpose(x), "
            f"dimensions={{{','.join(map(str, perm))}}}\n}}\n")
    assert len(_transposes(sim, text)) == 1
    _check(text)


def test_rank4_batch_dims_lead_the_tiles(sim):
    text = ("HloModule t4\nENTRY e {\n x = f32[2,3,20,36] parameter(0)\n"
            " ROOT y = f32[2,3,36,20] transpose(x), dimensions={0,1,3,2}\n}\n")
    (k,) = _transposes(sim, text)
    assert k.grid == 2 * 3 * 2 * 1
    _check(text)


@pytest.mark.parametrize("dims,perm,grid", [((4, 8, 64), (2, 0, 1), 2),    # a = dims 2,1
                                            ((6, 5, 70), (2, 0, 1), 3),    # a = 5 x 6
                                            ((64, 4, 8), (1, 2, 0), 2),    # b = dims 1,0
                                            ((3, 7, 9, 40), (0, 3, 1, 2), 3 * 2 * 2)])
def test_short_minor_dims_are_collapsed_into_a_tile_axis(sim, dims, perm, grid):
    """A transpose whose minor dims are short is a ``0-2-1`` transpose of the collapsed
    dims (XLA's normalization): tiled along the collapsed axis."""
    out = [dims[p] for p in perm]
    text = (f"HloModule c3\nENTRY e {{\n x = f32[{','.join(map(str, dims))}] parameter(0)\n"
            f" ROOT y = f32[{','.join(map(str, out))}] transpose(x), "
            f"dimensions={{{','.join(map(str, perm))}}}\n}}\n")
    (k,) = _transposes(sim, text)
    assert k.grid == grid, k.notes
    _check(text)


@pytest.mark.parametrize("ty,op", [("f32", "exponential"), ("f16", "exponential"),
                                   ("f64", "abs")])   # f64 exp calls libm: host fallback
def test_fused_elementwise_consumers_read_the_other_operands_in_output_order(sim, ty, op):
    text = (f"HloModule f\nENTRY e {{\n x = {ty}[70,45] parameter(0)\n"
            f" y = {ty}[45,70] parameter(1)\n b = {ty}[70] parameter(2)\n"
            f" t = {ty}[45,70] transpose(x), dimensions={{1,0}}\n"
            f" bb = {ty}[45,70] broadcast(b), dimensions={{1}}\n"
            f" s = {ty}[45,70] add(t, y)\n m = {ty}[45,70] multiply(s, bb)\n"
            f" ROOT o = {ty}[45,70] {op}(m)\n}}\n")
    (k,) = gpu_kernels(sim, text).values()
    assert k.kind == "transpose" and "operands ['x'] read transposed" in k.notes[0]
    _check(text, exact=False)


def test_several_transposed_operands_are_tiled_together(sim):
    text = ("HloModule m\nENTRY e {\n x = f32[50,65] parameter(0)\n"
            " z = f32[50,65] parameter(1)\n y = f32[65,50] parameter(2)\n"
            " tx = f32[65,50] transpose(x), dimensions={1,0}\n"
            " tz = f32[65,50] transpose(z), dimensions={1,0}\n"
            " p = f32[65,50] multiply(tz, y)\n ROOT o = f32[65,50] subtract(tx, p)\n}\n")
    (k,) = gpu_kernels(sim, text).values()
    assert k.kind == "transpose" and "operands ['z', 'x'] read transposed" in k.notes[0]
    _check(text)


def test_a_transpose_feeding_two_outputs_and_a_non_elementwise_use(sim):
    text = ("HloModule o\nENTRY e {\n x = f32[40,70] parameter(0)\n"
            " t = f32[70,40] transpose(x), dimensions={1,0}\n"
            " r = f32[70,40] reverse(t), dimensions={1}\n n = f32[70,40] negate(t)\n"
            " s = f32[70,40] add(r, n)\n ROOT o = (f32[70,40], f32[70,40]) tuple(s, n)\n}\n")
    assert _transposes(sim, text)
    _check(text)


def test_a_layout_changing_copy_is_tiled(sim):
    text = ("HloModule c\nENTRY e {\n x = f32[40,70]{0,1} parameter(0)\n"
            " ROOT y = f32[40,70]{1,0} copy(x)\n}\n")
    assert len(_transposes(sim, text)) == 1
    _check(text)


def _weight_update(r: int, c: int, alias: bool = False) -> str:
    head = "HloModule w" + (", input_output_alias={ {}: (0, {}, may-alias) }" if alias else "")
    return (f"{head}\nENTRY e {{\n w = f32[{r},{c}] parameter(0)\n"
            f" g = f32[{c},{r}] parameter(1)\n lr = f32[] constant(0.01)\n"
            f" lb = f32[{c},{r}] broadcast(lr), dimensions={{}}\n"
            f" s = f32[{c},{r}] multiply(g, lb)\n"
            f" t = f32[{r},{c}] transpose(s), dimensions={{1,0}}\n"
            f" ROOT o = f32[{r},{c}] subtract(w, t)\n}}\n")


@pytest.mark.parametrize("alias", [False, True])
def test_the_mlp_weight_update_is_one_tiled_kernel(sim, alias):
    """``w - 0.01 * transpose(g)`` (an MLP step's ``copy_subtract_fusion``), also with the
    weight donated (the output in the weight's buffer)."""
    text = _weight_update(100, 67, alias)
    (k,) = gpu_kernels(sim, text).values()
    assert k.kind == "transpose" and "operands ['g'] read transposed" in k.notes[0]
    _check(text)


def test_the_mlp_training_step_from_jax_runs_its_weight_updates_tiled(sim):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def step(w1, w2, x):
        def loss(ws):
            return jnp.sum(jnp.tanh(x @ ws[0]) @ ws[1])
        g1, g2 = jax.grad(loss)((w1, w2))
        return w1 - 0.01 * g1, w2 - 0.01 * g2
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((40, 72), (72, 24), (20, 40))]
    with jax.default_matmul_precision("highest"):
        text = jax.jit(step).lower(*args).as_text(dialect="hlo")
    assert len(_transposes(sim, text)) >= 1
    got = run_hlo(parse_module(text), args, backend="gpu_sim")
    want = run_hlo(parse_module(text), args, backend="interpreter")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- on a GPU
@pytest.mark.skipif(not DEVICE, reason="XLAPY_GPU_TEST_DEVICE=1 runs these on a GPU")
@pytest.mark.parametrize("text", [_transpose2("f32", 1000, 777), _transpose2("f16", 333, 4097),
                                  _weight_update(1025, 2049), _weight_update(512, 300, True)])
def test_tiled_transposes_on_the_device(text):
    _check(text, backend="gpu")
