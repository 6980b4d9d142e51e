"""Convolutions on the GPU backend (``xlapy/backends/gpu/convolution.py``, ``conv_gemm.py``)
on the ``gpu_sim`` grid emulator against the interpreter: random convolution
configurations (dim orders, strides, padding with negative pads, base and window dilation,
window reversal, feature and batch groups, odd sizes, dtypes) through both kernels, the
conformance cases with convolutions (none on the host), the kernels' PTX through ``ptxas``
for sm_80 and sm_90; with ``XLAPY_GPU_TEST_DEVICE=1`` a few convolutions on the device.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from conformance import all_cases, run_case
from gpu_programs import ColumnMajorGemm, conv_text, gpu_kernels as _kernels
from xlapy.client.run import run_hlo
from xlapy.config import debug_options
from xlapy.hlo import parse_module

gpu = pytest.importorskip("xlapy.backends.gpu")
from xlapy.backends.gpu import conv_gemm, conv_im2col, convolution  # noqa: E402
from xlapy.backends.gpu.ptx import ptxas_check, ptxas_path  # noqa: E402

DEVICE = os.environ.get("XLAPY_GPU_TEST_DEVICE") == "1"
TOL = {"f32": 2e-5, "f64": 1e-12, "f16": 4e-3, "bf16": 3e-2, "s32": 0}


@pytest.fixture(scope="module")
def sim():
    return gpu.GpuSimBackend()


def _args(text: str, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for p in parse_module(text).entry.parameters:
        et = p.shape.element_type
        if et.is_integral:
            out.append(rng.integers(-9, 10, p.shape.dims).astype(et.dtype))
        else:
            out.append(rng.standard_normal(p.shape.dims).astype(et.dtype))
    return out


def _check(backend, text: str, seed: int = 0) -> None:
    args = _args(text, seed)
    got = run_hlo(parse_module(text), args, backend=backend)[0]
    want = run_hlo(parse_module(text), args, backend="interpreter")[0]
    dt = parse_module(text).entry.root.shape.element_type.name
    assert got.shape == want.shape and got.dtype == want.dtype
    g, w = got.astype(np.float64), want.astype(np.float64)
    scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
    err = float(np.max(np.abs(g - w), initial=0.0))
    assert err <= TOL[dt] * scale, f"max error {err} (scale {scale}) for\n{text}"


# ----------------------------------------------------------------------------- random configs
def random_conv(seed: int) -> str:
    """A random valid convolution (module docstring): labels in random orders."""
    rng = np.random.default_rng(seed)
    while True:
        nsp = int(rng.choice([1, 2, 2, 2, 3]))
        g = int(rng.choice([1, 1, 2, 3]))
        bg = 1 if g > 1 else int(rng.choice([1, 1, 2]))
        cg, opg, nb = (int(v) for v in rng.integers(1, [6, 7, 4]))
        n, c, o = nb * bg, cg * g, opg * g * bg
        sp = [int(v) for v in rng.integers(1, 8 if nsp < 3 else 5, nsp)]
        ks = [int(v) for v in rng.integers(1, 4, nsp)]
        dims = []
        for k in ks:
            parts = [f"{int(rng.integers(-1, 3))}_{int(rng.integers(-1, 3))}"]
            dims.append((k, int(rng.integers(1, 4)), parts[0], int(rng.integers(1, 3)),
                         int(rng.integers(1, 3)), int(rng.integers(0, 2))))
        window = " ".join([
            "size=" + "x".join(str(d[0]) for d in dims),
            "stride=" + "x".join(str(d[1]) for d in dims),
            "pad=" + "x".join(d[2] for d in dims),
            "lhs_dilate=" + "x".join(str(d[3]) for d in dims),
            "rhs_dilate=" + "x".join(str(d[4]) for d in dims),
            "rhs_reversal=" + "x".join(str(d[5]) for d in dims)])
        digits = [str(i) for i in range(nsp)]
        lx, lw, ly = (list(rng.permutation(v)) for v in (
            ["b", "f", *digits], ["i", "o", *digits], ["b", "f", *digits]))
        labels = f"{''.join(lx)}_{''.join(lw)}->{''.join(ly)}"
        xdims = [n if ch == "b" else c if ch == "f" else sp[int(ch)] for ch in lx]
        wdims = [cg if ch == "i" else o if ch == "o" else ks[int(ch)] for ch in lw]
        extra = (f", feature_group_count={g}" if g > 1 else "") + \
            (f", batch_group_count={bg}" if bg > 1 else "")
        dt = str(rng.choice(["f32"] * 5 + ["f64", "f16", "bf16", "s32"]))
        try:
            text = conv_text(xdims, wdims, window, labels, extra, dt)
        except Exception:          # noqa: BLE001 - a window that does not fit: draw again
            continue
        if parse_module(text).entry.root.shape.num_elements:
            return text


@pytest.mark.parametrize("kernel", ["direct", "tiled"])
@pytest.mark.parametrize("seed", range(20))
def test_random_convolutions_match_the_interpreter(sim, monkeypatch, seed, kernel):
    """Odd seeds: as compiled (the pipeline canonicalizes the labels to NHWC/HWIO with
    transposes); even seeds: without the canonicalization, so the kernels read the random
    dim orders themselves."""
    monkeypatch.setattr(convolution, "FORCE", kernel)
    if seed % 2 == 0:
        from xlapy.passes.convolution_canonicalization import ConvolutionCanonicalization
        monkeypatch.setattr(ConvolutionCanonicalization, "run", lambda *a, **k: False)
    text = random_conv(seed)
    kinds = {k.kind for k in _kernels(sim, text).values()
             if k.instruction.opcode == "convolution"}
    integer = "s32[" in text.split("ROOT")[1]
    assert kinds == {"conv-direct" if kernel == "direct" or integer else "conv-gemm-tiled"}
    _check("gpu_sim", text, seed)


def test_random_generator_covers_the_features():
    texts = [random_conv(s) for s in range(20)]
    joined = "\n".join(texts)
    for feature in ("feature_group_count", "batch_group_count", "f16[", "bf16[", "f64[",
                    "s32[", "_-1", "rhs_reversal=1", "lhs_dilate=2", "rhs_dilate=2"):
        assert feature in joined, feature


# ----------------------------------------------------------------------------- forms of CNNs
FORMS = {
    # forward NHWC / HWIO, as JAX and Keras lower it
    "forward": ((4, 9, 9, 16), (3, 3, 16, 24), "size=3x3 pad=1_1x1_1", "b01f_01io->b01f", ""),
    "forward_stride2": ((3, 11, 10, 8), (3, 3, 8, 20), "size=3x3 stride=2x2 pad=0_1x0_1",
                        "b01f_01io->b01f", ""),
    # JAX's input gradient of a stride-2 conv: dilated output gradient, reversed kernel
    "input_grad": ((3, 5, 5, 20), (3, 3, 8, 20), "size=3x3 pad=2_1x2_1 lhs_dilate=2x2 "
                   "rhs_reversal=1x1", "b01f_01oi->b01f", ""),
    # JAX's weight gradient: the activations' batch is the contraction
    "weight_grad": ((6, 9, 9, 16), (6, 9, 9, 24), "size=9x9 pad=1_1x1_1", "f01b_i01o->01bf",
                    ""),
    "nchw": ((2, 8, 7, 9), (12, 8, 3, 3), "size=3x3 pad=1_1x1_1", "bf01_oi01->bf01", ""),
    "depthwise": ((2, 8, 8, 12), (3, 3, 1, 12), "size=3x3 pad=1_1x1_1", "b01f_01io->b01f",
                  ", feature_group_count=12"),
}


#: a weight gradient whose sum is split over blocks
SPLIT_WGRAD = ((16, 12, 12, 8), (16, 12, 12, 16), "size=12x12 pad=1_1x1_1", "f01b_i01o->01bf")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_cnn_forms_choose_their_kernel_and_match(sim, form):
    x, w, window, labels, extra = FORMS[form]
    text = conv_text(x, w, window, labels, extra)
    (k,) = [k for k in _kernels(sim, text).values() if k.instruction.opcode == "convolution"]
    assert k.kind == ("conv-direct" if form == "depthwise" else "conv-gemm-tiled")
    _check("gpu_sim", text)


def test_weight_gradient_with_a_long_sum_splits_it_and_adds_the_parts_in_order(sim):
    text = conv_text(*SPLIT_WGRAD)
    (k,) = _kernels(sim, text).values()
    assert k.kind == "conv-gemm-tiled" and k.after and k.scratch > 0
    assert k.grid > 1 and k.grid % conv_gemm.split_count(1, -(-16 * 144 // conv_gemm.BK)) == 0
    exe = sim.compile(parse_module(text))
    args = _args(text, 3)
    first, second = exe.execute(args), exe.execute(args)
    assert np.array_equal(first, second)                  # no atomics: deterministic
    _check("gpu_sim", text, 3)
    with debug_options(xla_hlo_profile=True):
        profiled = sim.compile(parse_module(text))
    np.testing.assert_array_equal(profiled.execute(args), first)
    rows = profiled.profile_text().splitlines()
    assert any("launches" in r for r in rows) and any("launch " in r for r in rows)


@pytest.mark.parametrize("dt,out_dt", [("bf16", "f32"), ("f16", "f32"), ("f32", "f64")])
def test_mixed_precision_results(sim, dt, out_dt):
    text = conv_text((2, 6, 6, 8), (3, 3, 8, 16), "size=3x3 pad=1_1x1_1", "b01f_01io->b01f",
                     dt=dt, out_dt=out_dt)
    _check("gpu_sim", text)


def test_non_default_layouts_are_read_where_they_are(sim):
    text = ("HloModule c\nENTRY e {\n x = f32[2,7,6,5]{0,1,2,3} parameter(0)\n"
            " w = f32[3,3,5,9]{2,3,0,1} parameter(1)\n"
            " ROOT c = f32[2,7,6,9]{1,3,0,2} convolution(x, w), window={size=3x3 "
            "pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n")
    _check("gpu_sim", text)


def test_empty_input_with_padding_gives_zeros(sim):
    text = conv_text((2, 0, 4), (3, 4, 5), "size=3 pad=2_2", "b0f_0io->b0f")
    args = _args(text, 0)
    got = run_hlo(parse_module(text), args, backend="gpu_sim")[0]
    assert got.shape == (2, 2, 5) and not got.any()


@pytest.mark.parametrize("kernel", ["direct", "tiled"])
def test_padding_and_dilation_holes_multiply_zeros(sim, monkeypatch, kernel):
    """A tap on padding or between base-dilated inputs multiplies a zero, as the
    interpreter's padded input does: an inf or nan weight there makes the output nan."""
    monkeypatch.setattr(convolution, "FORCE", kernel)
    text = conv_text((2, 5, 8), (3, 8, 8), "size=3 pad=2_1 lhs_dilate=2", "b0f_0io->b0f")
    x, w = _args(text, 3)
    w[0, 1, 2], w[2, 0, 5], w[1, 3, 7] = np.inf, -np.inf, np.nan
    got = run_hlo(parse_module(text), [x, w], backend="gpu_sim")[0]
    want = run_hlo(parse_module(text), [x, w], backend="interpreter")[0]
    assert np.isnan(want).any() and not np.isnan(want).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_a_custom_fusion_wrapping_a_convolution_runs_its_kernel(sim):
    """XLA:CPU's optimized HLO wraps convolutions in kCustom fusions (here with the
    parameters in the other order)."""
    text = ("HloModule f\nfc {\n p0 = f32[3,3,4,8] parameter(0)\n p1 = f32[2,6,6,4] "
            "parameter(1)\n ROOT c = f32[2,6,6,8] convolution(p1, p0), window={size=3x3 "
            "pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\nENTRY e {\n w = f32[3,3,4,8] "
            "parameter(0)\n x = f32[2,6,6,4] parameter(1)\n ROOT f = f32[2,6,6,8] fusion(w, x),"
            " kind=kCustom, calls=fc\n}\n")
    (k,) = _kernels(sim, text).values()
    assert k.kind == "conv-gemm-tiled" and k.instruction.opcode == "fusion"
    exe = sim.compile(parse_module(text))
    assert exe.fallback_opcodes() == []
    _check("gpu_sim", text, 7)


def test_convolutions_stay_their_own_kernels(sim):
    """A bias add and relu after the convolution are a separate loop kernel."""
    text = ("HloModule c\nENTRY e {\n x = f32[2,8,8,4] parameter(0)\n"
            " w = f32[3,3,4,16] parameter(1)\n b = f32[16] parameter(2)\n"
            " c = f32[2,8,8,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
            "dim_labels=b01f_01io->b01f\n bb = f32[2,8,8,16] broadcast(b), dimensions={3}\n"
            " s = f32[2,8,8,16] add(c, bb)\n z = f32[] constant(0)\n"
            " zb = f32[2,8,8,16] broadcast(z), dimensions={}\n"
            " ROOT r = f32[2,8,8,16] maximum(s, zb)\n}\n")
    kinds = sorted(k.kind for k in _kernels(sim, text).values())
    assert kinds[0] == "conv-gemm-tiled" and len(kinds) == 2
    exe = sim.compile(parse_module(text))
    assert exe.fallback_opcodes() == []
    args = _args(text, 4)
    want = run_hlo(parse_module(text), args, backend="interpreter")[0]
    np.testing.assert_allclose(exe.execute(args), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", ["forward", "forward_stride2", "weight_grad", "nchw"])
def test_im2col_and_the_cublas_call_compute_the_convolution(monkeypatch, form):
    """With cuBLAS (here a NumPy model of its column-major gemm on the simulator's memory)
    large f32 convolutions run as the im2col kernel plus one gemm call."""
    monkeypatch.setattr(conv_im2col, "blas_handle", lambda device: ColumnMajorGemm())
    monkeypatch.setattr(conv_im2col, "MIN_MACS", 0)
    monkeypatch.setattr(conv_im2col, "OVER_TILED", True)
    text = conv_text(*FORMS[form])
    exe = gpu.GpuSimBackend().compile(parse_module(text))
    kinds = {t.kind for t in exe.plan.walk() if t.instruction.opcode == "convolution"}
    assert kinds == {"im2col-gemm"}
    args = _args(text, 6)
    want = run_hlo(parse_module(text), args, backend="interpreter")[0]
    np.testing.assert_allclose(exe.execute(args), want, rtol=1e-5, atol=1e-4)


def test_the_tiled_kernel_is_preferred_to_im2col_where_it_applies(monkeypatch):
    """With cuBLAS present, a convolution the tiled kernel takes stays on it (faster on the
    card); one it does not take (a single output feature) goes to im2col + the gemm."""
    monkeypatch.setattr(conv_im2col, "blas_handle", lambda device: ColumnMajorGemm())
    monkeypatch.setattr(conv_im2col, "MIN_MACS", 0)
    for out_features, kind in ((16, "launch"), (1, "im2col-gemm")):
        text = conv_text((2, 8, 8, 8), (3, 3, 8, out_features), "size=3x3 pad=1_1x1_1",
                         "b01f_01io->b01f")
        exe = gpu.GpuSimBackend().compile(parse_module(text))
        kinds = {t.kind for t in exe.plan.walk() if t.instruction.opcode == "convolution"}
        assert kinds == {kind}, (out_features, kinds)
        args = _args(text, 7)
        want = run_hlo(parse_module(text), args, backend="interpreter")[0]
        np.testing.assert_allclose(exe.execute(args), want, rtol=1e-5, atol=1e-4)


def test_im2col_declines_what_it_cannot_express():
    monkeypatch_free = [conv_text(*FORMS[f]) for f in ("input_grad", "depthwise")] + [
        conv_text((2, 6, 6, 8), (3, 3, 8, 16), "size=3x3", "b01f_01io->b01f", dt="bf16")]
    for text in monkeypatch_free:
        conv = parse_module(text).entry.root
        assert conv_im2col.im2col_plan(convolution.conv_spec(conv)) is None


# ----------------------------------------------------------------------------- conformance
def _conv_cases() -> list:
    """The conformance cases with convolutions; the training step only in the deep run
    (test_gpu.py's conformance run checks its numerics and that no convolution falls back)."""
    return [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if "train" in c.name else [])
            for c in all_cases() if "convolution(" in c.text("module.hlo")] or [
        pytest.param(None, marks=pytest.mark.skip(reason="no conformance cases"))]


@pytest.mark.parametrize("case", _conv_cases())
def test_conformance_convolutions_run_on_the_gpu_kernels(sim, request, case):
    if "train" in case.name and "slow" not in (request.config.getoption("markexpr") or "") \
            and not os.environ.get("XLAPY_SLOW_TESTS"):
        pytest.skip("deep run: pytest -m slow (or XLAPY_SLOW_TESTS=1)")
    exe, bad = run_case(sim, case)
    assert not bad, "\n".join(m.message for m in bad)
    assert exe.fallback_opcodes() == []
    convs = [k for k in exe.plan.walk() if k.instruction.opcode == "convolution"]
    assert convs and all(t.kind in ("launch", "launches") for t in convs)


# ----------------------------------------------------------------------------- ptxas
@pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not installed")
@pytest.mark.parametrize("kernel", ["direct", "tiled"])
def test_convolution_kernels_assemble_with_ptxas(monkeypatch, kernel):
    """The direct or the tiled kernel, the split-K sum and the im2col kernel (emitted for
    every eligible convolution here) assemble for both targets."""
    monkeypatch.setattr(convolution, "FORCE", kernel)
    monkeypatch.setattr(conv_im2col, "MIN_MACS", 0)
    monkeypatch.setattr(conv_im2col, "OVER_TILED", True)
    texts = [conv_text(*FORMS[f]) for f in ("forward", "input_grad", "nchw")]
    texts += [conv_text(*SPLIT_WGRAD),                                  # split + combine
              random_conv(1), conv_text((2, 6, 6, 8), (3, 3, 8, 16), "size=3x3",
                                        "b01f_01io->b01f", dt="bf16", out_dt="f32"),
              conv_text((2, 6, 6, 8), (3, 3, 8, 16), "size=3x3", "b01f_01io->b01f",
                        dt="f64")]
    im2col = False
    for text in texts:
        ptx = gpu.GpuBackend().compiler_ir(parse_module(text), "ptx")
        assert ".entry" in ptx
        im2col = im2col or "_im2col" in ptx
        for arch in ("sm_80", "sm_90"):
            ptxas_check(ptx, arch)
    assert im2col


# ----------------------------------------------------------------------------- on a GPU
@pytest.mark.skipif(not DEVICE, reason="XLAPY_GPU_TEST_DEVICE=1 runs these on a GPU")
@pytest.mark.parametrize("path", ["im2col", "own"])
@pytest.mark.parametrize("form", sorted(FORMS) + ["split_wgrad"])
def test_cnn_forms_on_the_device(monkeypatch, form, path):
    """Each form on the device: through im2col + cuBLAS where it applies (with cuBLAS),
    and on the backend's own kernels."""
    if path == "own":
        monkeypatch.setattr(conv_im2col, "blas_handle", lambda device: None)
    else:
        monkeypatch.setattr(conv_im2col, "MIN_MACS", 0)
        monkeypatch.setattr(conv_im2col, "OVER_TILED", True)
    _check("gpu", conv_text(*SPLIT_WGRAD) if form == "split_wgrad" else conv_text(*FORMS[form]))


@pytest.mark.skipif(not DEVICE, reason="XLAPY_GPU_TEST_DEVICE=1 runs these on a GPU")
@pytest.mark.parametrize("seed", range(8))
def test_random_convolutions_on_the_device(seed):
    _check("gpu", random_conv(seed), seed)
