"""Convolution + bias (+ relu) output fusion: the pass merges a convolution the generated
forward kernel computes with its bias/relu loop fusion, the kernel applies the epilogue as
it stores its tiles, the answers match the interpreter (odd sizes, strides, padding, with
and without relu, NaN through the relu), the library path applies the epilogue of a fusion
the kernel does not compute (NCHW), and an inference network's temp bytes drop by the
runtime's own count."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.lax as lax
import xlapy.numpy as xnp
from xlapy.backends.cpu import conv, conv_direct, conv_kernels
from xlapy.client.optimize import optimize_with_report
from xlapy.config import debug_options, get_debug_options
from xlapy.hlo import parse_module
from xlapy.passes.conv_output_fusion import conv_output_fusion_parts

NHWC = ("NHWC", "HWIO", "NHWC")

pytestmark = pytest.mark.skipif(
    not conv_kernels.lanes(), reason="the generated convolution kernels need vector FMA")


def _layer(relu: bool, stride=(1, 1), padding="SAME", dn=NHWC):
    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, stride, padding, dimension_numbers=dn)
        if dn[2] == "NCHW":
            y = y + b[None, :, None, None]
        else:
            y = y + b
        return xnp.maximum(y, 0.0) if relu else y
    return f


def _data(n, h, w, c, o, kh=3, kw=3, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, h, w, c)).astype(np.float32),
            (rng.standard_normal((kh, kw, c, o)) / np.sqrt(kh * kw * c)).astype(np.float32),
            rng.standard_normal(o).astype(np.float32))


def _fusions(jitted, *args, **flags):
    module = optimize_with_report(jitted.lower(*args).hlo_module, "cpu",
                                  debug_options=get_debug_options().replace(**flags)).module
    return [i for i in module.entry.instructions if conv_output_fusion_parts(i) is not None]


@pytest.mark.parametrize("relu", [True, False], ids=["relu", "bias"])
@pytest.mark.parametrize("n,h,w,c,o,stride,padding", [
    (2, 7, 9, 3, 17, (1, 1), "SAME"),
    (3, 11, 10, 5, 20, (2, 2), "SAME"),
    (1, 9, 13, 7, 32, (1, 2), "VALID"),
    (2, 6, 8, 16, 48, (1, 1), ((2, 0), (1, 3))),
])
def test_fused_layer_matches_the_interpreter(relu, n, h, w, c, o, stride, padding):
    x, k, b = _data(n, h, w, c, o)
    f = _layer(relu, stride, padding)
    jitted = xlapy.jit(f)
    fused = _fusions(jitted, x, k, b)
    assert len(fused) == 1 and fused[0].attrs["calls"].root.opcode == \
        ("maximum" if relu else "add")
    got = np.asarray(jitted(x, k, b))
    want = np.asarray(xlapy.jit(f, backend="interpreter")(x, k, b))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    if relu:
        assert (got >= 0).all() and (got == 0).any()


def test_the_kernel_applies_the_epilogue():
    x, k, b = _data(2, 7, 9, 3, 17)
    f = _layer(True)
    fused = _fusions(xlapy.jit(f), x, k, b)[0]
    op, feeds, relu = conv_output_fusion_parts(fused)
    thunk = conv.make_convolution_thunk(op, True, relu)
    assert thunk.direct_epilogue and thunk.direct.spec.bias and thunk.direct.spec.relu
    assert sorted(feeds) == [0, 1, 2]
    out = np.full(op.shape.dims, np.nan, np.float32)
    thunk([x, k, b], out)                       # the thunk's operands: input, kernel, bias
    want = np.asarray(xlapy.jit(f, backend="interpreter")(x, k, b))
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


def test_nan_goes_through_the_relu():
    x, k, b = _data(2, 7, 9, 3, 17)
    x[1, 3, 4, 0] = np.nan
    f = _layer(True)
    got = np.asarray(xlapy.jit(f)(x, k, b))
    want = np.asarray(xlapy.jit(f, backend="interpreter")(x, k, b))
    assert np.isnan(got).sum() == np.isnan(want).sum() > 0
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_not_fused_when_the_pre_activation_is_read_elsewhere():
    x, k, b = _data(2, 7, 9, 3, 17)

    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC)
        return xnp.maximum(y + b, 0.0), y * 2.0
    jitted = xlapy.jit(f)
    assert not _fusions(jitted, x, k, b)
    for g, w in zip(jitted(x, k, b), xlapy.jit(f, backend="interpreter")(x, k, b)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def test_not_fused_for_a_bias_along_another_dim_or_with_the_flag_off():
    x, k, _ = _data(2, 7, 9, 3, 17)
    rows = np.arange(9, dtype=np.float32)

    def f(x, w, r):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC)
        return xnp.maximum(y + r[None, None, :, None], 0.0)
    jitted = xlapy.jit(f)
    assert not _fusions(jitted, x, k, rows)
    np.testing.assert_allclose(np.asarray(jitted(x, k, rows)),
                               np.asarray(xlapy.jit(f, backend="interpreter")(x, k, rows)),
                               rtol=2e-5, atol=2e-5)
    _, _, b = _data(2, 7, 9, 3, 17)
    assert _fusions(xlapy.jit(_layer(True)), x, k, b)
    assert not _fusions(xlapy.jit(_layer(True)), x, k, b, xla_cpu_conv_output_fusion=False)


NCHW_FUSION = """
HloModule nchw_fused

fused {
  x = f32[2,5,9,11] parameter(0)
  k = f32[7,5,3,3] parameter(1)
  b = f32[7] parameter(2)
  c = f32[2,7,9,11] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  bb = f32[2,7,9,11] broadcast(b), dimensions={1}
  s = f32[2,7,9,11] add(c, bb)
  z = f32[] constant(0)
  zb = f32[2,7,9,11] broadcast(z), dimensions={}
  ROOT r = f32[2,7,9,11] maximum(s, zb)
}

ENTRY main {
  b = f32[7] parameter(0)
  x = f32[2,5,9,11] parameter(1)
  k = f32[7,5,3,3] parameter(2)
  ROOT f = f32[2,7,9,11] fusion(x, k, b), kind=kOutput, calls=fused
}
"""


def test_nchw_fusion_gets_the_epilogue_on_the_library_path():
    module = parse_module(NCHW_FUSION)
    fusion = module.entry.root
    op, feeds, relu = conv_output_fusion_parts(fusion)
    assert feeds == [0, 1, 2] and relu and op.opcode == "convolution"
    rng = np.random.default_rng(3)
    b = rng.standard_normal(7).astype(np.float32)
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    k = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
    got = xlapy.run_hlo(NCHW_FUSION, [b, x, k], backend="cpu")[0]
    want = xlapy.run_hlo(NCHW_FUSION, [b, x, k], backend="interpreter")[0]
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert (got == 0).any()


def test_nchw_layer_matches_the_interpreter():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 9, 10)).astype(np.float32)
    k = rng.standard_normal((20, 6, 3, 3)).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    f = _layer(True, dn=("NCHW", "OIHW", "NCHW"))
    np.testing.assert_allclose(np.asarray(xlapy.jit(f)(x, k, b)),
                               np.asarray(xlapy.jit(f, backend="interpreter")(x, k, b)),
                               rtol=2e-5, atol=2e-5)


def test_inference_network_writes_each_activation_once():
    """Two conv + bias + relu layers: fused, each layer is one thunk (the convolution's own
    result is never written and read back); the bytes held do not grow (unfused, buffer
    assignment already lets each relu overwrite its convolution's result in place)."""
    x, k1, b1 = _data(4, 16, 16, 3, 32, seed=1)
    _, k2, b2 = _data(4, 16, 16, 32, 32, seed=2)

    def net(x, k1, b1, k2, b2):
        return _layer(True)(_layer(True)(x, k1, b1), k2, b2)
    args = (x, k1, b1, k2, b2)
    with debug_options(xla_cpu_conv_output_fusion=False):
        plain = xlapy.jit(net).lower(*args).compile()
    jitted = xlapy.jit(net)
    fused = jitted.lower(*args).compile()
    assert len(_fusions(jitted, *args)) == 2
    assert fused.memory_analysis().peak_memory_in_bytes <= \
        plain.memory_analysis().peak_memory_in_bytes
    steps = [sum(1 for i in optimize_with_report(
        jitted.lower(*args).hlo_module, "cpu",
        debug_options=get_debug_options().replace(xla_cpu_conv_output_fusion=on)
    ).module.entry.instructions if i.opcode not in ("parameter", "constant"))
        for on in (False, True)]
    assert steps == [4, 2]
    np.testing.assert_allclose(np.asarray(jitted(*args)),
                               np.asarray(xlapy.jit(net, backend="interpreter")(*args)),
                               rtol=1e-4, atol=1e-4)


def test_rules_follow_the_direct_kernel_choice(monkeypatch):
    x, k, b = _data(2, 7, 9, 3, 17)
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    jitted = xlapy.jit(_layer(True))
    assert not _fusions(jitted, x, k, b)


if __name__ == "__main__":
    pytest.main([__file__, "-q"])


@pytest.mark.parametrize("n,h,w,c,o,stride,padding", [
    (2, 7, 9, 3, 17, (1, 1), "SAME"),
    (1, 9, 13, 7, 32, (1, 2), "VALID"),
])
def test_nn_relu_select_form_is_fused(n, h, w, c, o, stride, padding):
    """``xlapy.nn.relu`` is ``select(y <= 0, 0, y)``: the same epilogue as ``maximum``
    (a NaN kept), fused alike."""
    x, k, b = _data(n, h, w, c, o)
    x[0, 2, 3, 0] = np.nan

    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, stride, padding, dimension_numbers=NHWC)
        return xlapy.nn.relu(y + b)
    jitted = xlapy.jit(f)
    fused = _fusions(jitted, x, k, b)
    assert len(fused) == 1 and conv_output_fusion_parts(fused[0])[2]
    got = np.asarray(jitted(x, k, b))
    want = np.asarray(xlapy.jit(f, backend="interpreter")(x, k, b))
    assert np.isnan(got).sum() == np.isnan(want).sum() > 0
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_a_select_that_zeroes_nan_is_not_taken_for_relu():
    """``select(y > 0, y, 0)`` turns a NaN into 0, which the kernel's relu does not: the
    bias alone may fuse, the select stays a loop of its own, and NaN becomes 0."""
    x, k, b = _data(2, 7, 9, 3, 17)
    x[1, 3, 4, 0] = np.nan

    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC) + b
        return lax.select(y > 0, y, xnp.zeros_like(y))
    jitted = xlapy.jit(f)
    assert not any(conv_output_fusion_parts(i)[2] for i in _fusions(jitted, x, k, b))
    got = np.asarray(jitted(x, k, b))
    want = np.asarray(xlapy.jit(f, backend="interpreter")(x, k, b))
    assert not np.isnan(got).any() and not np.isnan(want).any()
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_training_step_fuses_the_forward_convolutions():
    """The relu gradient masks with the relu's output, so a training step's forward
    convolutions store ``relu(conv + b)`` directly; loss and gradients match the
    interpreter."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 9, 9, 3)).astype(np.float32)
    w1 = (rng.standard_normal((3, 3, 3, 8)) / 5).astype(np.float32)
    w2 = (rng.standard_normal((3, 3, 8, 16)) / 8).astype(np.float32)
    b1, b2 = rng.standard_normal(8).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    v = (rng.standard_normal((2 * 2 * 16, 5)) / 8).astype(np.float32)

    def loss(params, x):
        w1, b1, w2, b2, v = params
        h = xlapy.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                                   dimension_numbers=NHWC) + b1)
        h = xlapy.nn.relu(lax.conv_general_dilated(h, w2, (2, 2), "VALID",
                                                   dimension_numbers=NHWC) + b2)
        h = lax.reduce_window(h, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return xnp.sum(xnp.square(h.reshape(3, -1) @ v))
    step = xlapy.jit(xlapy.value_and_grad(loss))
    params = (w1, b1, w2, b2, v)
    fused = _fusions(step, params, x)
    assert len(fused) == 2 and all(conv_output_fusion_parts(i)[2] for i in fused)
    got = step(params, x)
    want = xlapy.jit(xlapy.value_and_grad(loss), backend="interpreter")(params, x)
    for g, w in zip(xlapy.tree_flatten(got)[0], xlapy.tree_flatten(want)[0]):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)


def test_a_relu_to_negative_zero_is_not_fused():
    """``select(y <= -0, -0, y)`` stores -0 where the kernel's relu would store +0: the
    convolution keeps its own store, and the signs match the interpreter."""
    x, k, b = _data(2, 7, 9, 3, 17)

    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC) + b
        nz = xnp.full_like(y, -0.0)
        return lax.select(y <= nz, nz, y)
    jitted = xlapy.jit(f)
    assert not any(conv_output_fusion_parts(i)[2] for i in _fusions(jitted, x, k, b))
    got = np.asarray(jitted(x, k, b))
    want = np.asarray(xlapy.jit(f, backend="interpreter")(x, k, b))
    assert (np.signbit(got) == np.signbit(want)).all() and np.signbit(got[got == 0]).all()
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
