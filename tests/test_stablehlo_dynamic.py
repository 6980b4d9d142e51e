"""Dynamic dims in StableHLO import (``xlapy/hlo/stablehlo/dynamic.py``).

Unbounded ``tensor<?x...>`` dims, as ``jax.export`` prints them for symbolic shapes, are
specialized from the argument shapes (``run_hlo`` takes them from its arguments) and the
program runs with JAX's outputs at several sizes; without shapes the import names the
line:column and says what is missing. Bounded dims (``#stablehlo.bounds``) become HLO's
``<=N`` dims, which the dynamic padder runs.
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.errors import HloParseError
from xlapy.hlo import parse_module
from xlapy.hlo.stablehlo import to_hlo_module

BACKENDS = ("interpreter", "cpu")


# ------------------------------------------------------------------ JAX's symbolic shapes
def _poly_functions():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def cumsum_loop(x):
        def body(c, row):
            c = c + row
            return c, c
        return lax.scan(body, jnp.zeros(x.shape[1:], x.dtype), x)[1]

    return {
        # name: (function, symbolic argument specs, concrete argument shapes per run)
        "elementwise_reduce": (lambda x, y: jnp.sin(x) * 2.0 + y.sum(axis=1, keepdims=True),
                               ["b, 4", "b, 4"], [[(3, 4), (3, 4)], [(7, 4), (7, 4)]]),
        "matmul_bias": (lambda x, w, c: jnp.tanh(x @ w + c), ["b, 8", "8, 3", "3"],
                        [[(5, 8), (8, 3), (3,)], [(2, 8), (8, 3), (3,)]]),
        "flatten_iota": (lambda x: x.reshape(-1) * jnp.arange(x.size, dtype=x.dtype),
                         ["b, 4"], [[(3, 4)], [(6, 4)]]),
        "concat_pad": (lambda x: jnp.pad(jnp.concatenate([x, 2 * x]), ((1, 2), (0, 0))),
                       ["b, 3"], [[(2, 3)], [(5, 3)]]),
        "two_vars_mean": (lambda x: (x.T @ x) / x.shape[0] - x.mean(axis=0)[:, None],
                          ["a, b"], [[(4, 3)], [(6, 2)]]),
        "softmax_rows": (lambda x: jax.nn.softmax(x, axis=0), ["b, 5"], [[(4, 5)], [(9, 5)]]),
        "scan_over_rows": (cumsum_loop, ["b, 3"], [[(4, 3)], [(2, 3)]]),
        # dynamic_gather, and a size computed in a private function (@divmod)
        "slices_gather": (lambda x: x[1:] * 2 + x[:-1] + jnp.flip(x[::2], 0).sum(),
                          ["b, 3"], [[(3, 3)], [(6, 3)]]),
    }


def _export(fn, specs):
    import jax
    import jax.numpy as jnp
    from jax import export
    scope = export.SymbolicScope()
    args = [jax.ShapeDtypeStruct(export.symbolic_shape(s, scope=scope), jnp.float32)
            for s in specs]
    return export.export(jax.jit(fn))(*args).mlir_module()


@pytest.fixture(scope="module")
def poly():
    pytest.importorskip("jax")
    return {name: (fn, _export(fn, specs), runs)
            for name, (fn, specs, runs) in _poly_functions().items()}


@pytest.mark.parametrize("name", sorted(["elementwise_reduce", "matmul_bias", "flatten_iota",
                                         "concat_pad", "two_vars_mean", "softmax_rows",
                                         "scan_over_rows", "slices_gather"]))
def test_symbolic_shapes_specialize_and_match_jax(poly, name):
    import jax
    fn, text, runs = poly[name]
    assert "?x" in text           # the text really has unbounded dims
    for k, shapes in enumerate(runs):
        rng = np.random.default_rng(k)
        args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        want = np.asarray(jax.jit(fn)(*args))
        for backend in BACKENDS:
            (got,) = xlapy.run_hlo(text, args, backend=backend)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_specialized_module_has_static_shapes(poly):
    _, text, _ = poly["elementwise_reduce"]
    module = to_hlo_module(text, [(3, 4), (3, 4)])
    hlo = module.to_text()
    assert "?" not in hlo and "<=" not in hlo
    assert module.entry.root.shape.dims == (3, 4)
    assert [p.shape.dims for p in module.entry.parameters] == [(3, 4), (3, 4)]


def test_unbounded_dims_without_shapes_name_the_function(poly):
    _, text, _ = poly["elementwise_reduce"]
    with pytest.raises(HloParseError) as e:
        parse_module(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "func.func public @main" in ln)
    assert str(e.value).startswith(f"{line}:")
    assert "unbounded dimension" in str(e.value) and "bound" in str(e.value)
    assert "arg_shapes" in str(e.value)


def test_inconsistent_arguments_raise_jax_shape_assertion(poly):
    _, text, _ = poly["elementwise_reduce"]
    x = np.zeros((5, 4), np.float32)
    with pytest.raises(HloParseError, match=r"args\[1\]\.shape\[0\] \(= 2\)"):
        xlapy.run_hlo(text, [x, x[:2]])


def test_wrong_rank_is_an_error_at_main(poly):
    _, text, _ = poly["elementwise_reduce"]
    with pytest.raises(HloParseError, match="rank 1"):
        to_hlo_module(text, [(3,), (3, 4)])


# ------------------------------------------------------------------ written by hand
UNBOUNDED_RESULT = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<?xf32> {
    %0 = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<?xf32>
    %1 = stablehlo.iota dim = 0 : tensor<?xf32>
    return %1 : tensor<?xf32>
  }
}
"""


def test_a_result_dim_that_no_operand_gives_is_an_error_at_the_op():
    with pytest.raises(HloParseError) as e:
        parse_module(UNBOUNDED_RESULT)
    assert str(e.value).startswith("4:5:") and "stablehlo.iota" in str(e.value)


DATA_DEPENDENT = """module @m {
  func.func public @main(%arg0: tensor<?xf32>, %arg1: tensor<1xi32>) -> tensor<?xf32> {
    %0 = stablehlo.dynamic_reshape %arg0, %arg1 : (tensor<?xf32>, tensor<1xi32>) -> tensor<?xf32>
    return %0 : tensor<?xf32>
  }
}
"""


def test_a_shape_operand_that_depends_on_data_is_an_error():
    with pytest.raises(HloParseError, match="not known at compile time") as e:
        to_hlo_module(DATA_DEPENDENT, [(4,), (1,)])
    assert str(e.value).startswith("3:5:")


BOUNDED = """module @jit_f {
  func.func public @main(%arg0: tensor<8x4xf32>, %arg1: tensor<i32>) -> (tensor<i32>, tensor<4xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.set_dimension_size %arg0, %arg1, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> tensor<?x4xf32, #stablehlo.bounds<8, ?>>
    %1 = stablehlo.sine %0 : tensor<?x4xf32, #stablehlo.bounds<8, ?>>
    %2 = stablehlo.get_dimension_size %1, dim = 0 : (tensor<?x4xf32, #stablehlo.bounds<8, ?>>) -> tensor<i32>
    %3 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<?x4xf32, #stablehlo.bounds<8, ?>>, tensor<f32>) -> tensor<4xf32>
    return %2, %3 : tensor<i32>, tensor<4xf32>
  }
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_bounded_dims_become_hlo_bounded_dims(backend):
    module = parse_module(BOUNDED)
    assert "f32[<=8,4]" in module.to_text()
    x = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)
    for n in (8, 5, 1):
        size, total = xlapy.run_hlo(BOUNDED, [x, np.int32(n)], backend=backend)
        assert int(size) == n
        np.testing.assert_allclose(total, np.sin(x[:n]).sum(0), rtol=1e-5, atol=1e-6)


def test_command_line_tools_specialize(poly, tmp_path):
    import jax
    fn, text, _ = poly["matmul_bias"]
    src = tmp_path / "f.mlir"
    src.write_text(text)
    from xlapy.tools.convert import main as convert_main
    out = tmp_path / "f.hlo"
    assert convert_main([str(src), "--arg-shapes", "5x8,8x3,3", "-o", str(out)]) == 0
    assert "f32[5,3]" in out.read_text() and "?" not in out.read_text()
    assert convert_main([str(src), "--arg-shapes", "5xq"]) == 2
    assert convert_main([str(src)]) == 2                  # unbounded, no shapes
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 3), (3,)]]
    np.savez(tmp_path / "data.npz", arg0=args[0], arg1=args[1], arg2=args[2],
             out0=np.asarray(jax.jit(fn)(*args)))
    from xlapy.tools.run_hlo_module import main as run_main
    assert run_main([str(src), "--platform", "cpu", "--input_data",
                     str(tmp_path / "data.npz")]) == 0


def test_static_modules_convert_the_same_with_argument_shapes():
    """Argument shapes change nothing for a module without unbounded dims (run_hlo passes
    them for every StableHLO text): same HLO, calls with constant operands included."""
    from pathlib import Path

    from xlapy.backends.cpu.canonical import canonical_text   # names aside
    data = Path(__file__).resolve().parent / "data" / "stablehlo"
    files = sorted(p for p in data.glob("*/*.mlir") if "call @" in p.read_text())[:12]
    assert files
    for path in files:
        text = path.read_text()
        plain = to_hlo_module(text)
        shapes = [p.shape.dims for p in plain.entry.parameters]
        assert canonical_text(to_hlo_module(text, shapes)) == canonical_text(plain), path.name


DYNAMIC_CONV = """module @m {
  func.func public @main(%arg0: tensor<1x5x6x2xf32>, %arg1: tensor<3x3x2x4xf32>, %arg2: tensor<2x2xi64>) -> tensor<1x3x3x4xf32> {
    %pad = stablehlo.constant dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>
    %0 = "stablehlo.dynamic_conv"(%arg0, %arg1, PADDING) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>}> : (tensor<1x5x6x2xf32>, tensor<3x3x2x4xf32>, tensor<2x2xi64>) -> tensor<1x3x3x4xf32>
    return %0 : tensor<1x3x3x4xf32>
  }
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_conv_with_known_padding_is_a_convolution(backend):
    """``dynamic_conv`` (generic form, ``#stablehlo.conv`` dimension numbers) whose padding
    operand is a constant converts to HLO's convolution and runs with JAX's result."""
    jax = pytest.importorskip("jax")
    text = DYNAMIC_CONV.replace("PADDING", "%pad")
    assert "pad=1_1x0_1" in parse_module(text).to_text()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 5, 6, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    (got,) = xlapy.run_hlo(text, [x, w, np.zeros((2, 2), np.int64)], backend=backend)
    want = jax.lax.conv_general_dilated(x, w, (2, 2), [(1, 1), (0, 1)],
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_dynamic_conv_with_data_dependent_padding_is_an_error_at_the_op():
    with pytest.raises(HloParseError, match="padding operand is not known") as e:
        parse_module(DYNAMIC_CONV.replace("PADDING", "%arg2"))
    assert str(e.value).startswith("4:5:")
