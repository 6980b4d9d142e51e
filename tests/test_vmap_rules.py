"""Every front-end primitive has a batching rule, and each rule is right.

The completeness check reads the primitive registry (as ``test_op_table.py`` reads the op
table): a primitive either has a rule or is in ``batching.NO_RULE`` with its reason, and
has a sample below. Each sample is checked generically: ``vmap(f)(xs)`` equals the
results of ``f`` on each example stacked, with the batch axis first, last, and (for ops
with several operands) with the first operand unbatched. The collectives are checked
against NumPy formulas over a named vmap axis, through their own axis and through another
(nested vmap). Samples run on the interpreter, the semantic oracle (the rules are
backend independent).
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.frontend import core
from xlapy.frontend.batching import NO_RULE
from xlapy.frontend.core import PRIMITIVES
from xlapy.frontend.primitives_elementwise import BINARY, UNARY

rng = np.random.default_rng(0)
N = 3


@pytest.fixture(autouse=True)
def _interpreter():
    old = core.default_backend()
    xlapy.set_default_backend("interpreter")
    yield
    xlapy.set_default_backend(old)


def _f32(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, (N,) + shape).astype(np.float32)


def _i32(*shape, lo=0, hi=4):
    return rng.integers(lo, hi, (N,) + shape).astype(np.int32)


def _spd(n):
    a = _f32(n, n)
    return (a @ a.transpose(0, 2, 1) + 3 * np.eye(n, dtype=np.float32)).astype(np.float32)


_INT_UNARY = {"not", "population_count", "clz"}
_INT_BINARY = {"and", "or", "xor", "shift_left", "shift_right_arithmetic",
               "shift_right_logical"}
_POSITIVE = {"log", "sqrt", "rsqrt", "log1p", "pow"}

# name -> (function of per-example operands, batched operands with the batch axis first)
SAMPLES: dict[str, tuple] = {}
for _name in UNARY:
    if _name in ("real", "imag"):
        continue
    _op = getattr(lax, {"not": "bitwise_not"}.get(_name, _name))
    SAMPLES[_name] = (_op, [_i32(2, 3, hi=100) if _name in _INT_UNARY else
                            _f32(2, 3, lo=0.1 if _name in _POSITIVE else -0.9, hi=0.9)])
SAMPLES["real"] = (lambda z: lax.real(z), [(_f32(4) + 1j * _f32(4)).astype(np.complex64)])
SAMPLES["imag"] = (lambda z: lax.imag(z), [(_f32(4) + 1j * _f32(4)).astype(np.complex64)])
for _name in BINARY:
    _op = getattr(lax, {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}
                  .get(_name, _name))
    if _name in _INT_BINARY:
        SAMPLES[_name] = (_op, [_i32(5, hi=9), _i32(5, hi=5)])
    else:
        lo = 0.1 if _name in _POSITIVE or _name in ("div", "rem") else -1.0
        SAMPLES[_name] = (_op, [_f32(5, lo=lo), _f32(5, lo=lo)])

SAMPLES.update({
    "compare": (lambda a, b: lax.lt(a, b), [_f32(4), _f32(4)]),
    "select": (lambda p, a, b: lax.select(p, a, b), [_f32(4) > 0, _f32(4), _f32(4)]),
    "select_scalar_pred": (lambda p, a, b: lax.select(p, a, b), [_f32() > 0, _f32(4), _f32(4)]),
    "clamp": (lambda lo, x, hi: lax.clamp(lo, x, hi), [_f32(lo=-1, hi=-0.5), _f32(4),
                                                       _f32(lo=0.5, hi=1)]),
    "convert_element_type": (lambda x: lax.convert_element_type(x, np.int32), [_f32(4, hi=9)]),
    "bitcast_convert_type": (lambda x: lax.bitcast_convert_type(x, np.int32), [_f32(4)]),
    "erf_inv": (lambda x: lax.erf_inv(x), [_f32(4, lo=-0.9, hi=0.9)]),
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 4, 3), (0, 2)), [_f32(2, 3)]),
    "reshape": (lambda x: lax.reshape(x, (3, 2)), [_f32(2, 3)]),
    "transpose": (lambda x: lax.transpose(x, (1, 0, 2)), [_f32(2, 3, 4)]),
    "slice": (lambda x: lax.slice(x, (0, 1), (2, 4), (1, 2)), [_f32(3, 5)]),
    "dynamic_slice": (lambda x, i, j: lax.dynamic_slice(x, [i, j], (2, 2)),
                      [_f32(4, 5), _i32(hi=4), _i32(hi=9)]),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, [i, 1]),
                             [_f32(4, 5), _f32(2, 3), _i32(hi=5)]),
    "concatenate": (lambda a, b: lax.concatenate([a, b], 1), [_f32(2, 3), _f32(2, 1)]),
    "pad": (lambda x, v: lax.pad(x, v, [(1, 0, 1), (0, 2, 0)]), [_f32(2, 3), _f32()]),
    "rev": (lambda x: lax.rev(x, (1,)), [_f32(2, 3)]),
    "gather": (lambda x, i: lax.gather(x, i, offset_dims=(1,), collapsed_slice_dims=(0,),
                                       start_index_map=(0,), index_vector_dim=1,
                                       slice_sizes=(1, 3)), [_f32(5, 3), _i32(4, 1, hi=5)]),
    "scatter": (lambda x, i, u: lax.scatter(x, i, u, update_window_dims=(1,),
                                            inserted_window_dims=(0,),
                                            scatter_dims_to_operand_dims=(0,),
                                            index_vector_dim=1, combiner="add"),
                [_f32(5, 3), _i32(4, 1, hi=5), _f32(4, 3)]),
    "reduce_sum": (lambda x: lax.reduce_sum(x, (0, 2)), [_f32(2, 3, 4)]),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (1,)), [_f32(2, 3)]),
    "reduce_max": (lambda x: lax.reduce_max(x, (0,)), [_f32(2, 3)]),
    "reduce_min": (lambda x: lax.reduce_min(x, (1,)), [_f32(2, 3)]),
    "reduce_and": (lambda x: lax.reduce_and(x, (1,)), [_f32(2, 3) > -0.5]),
    "reduce_or": (lambda x: lax.reduce_or(x, (0,)), [_f32(2, 3) > 0.5]),
    "argmax": (lambda x: lax.argmax(x, 1), [_f32(2, 3)]),
    "argmin": (lambda x: lax.argmin(x, 0), [_f32(2, 3)]),
    "cumsum": (lambda x: lax.cumulative("sum", x, 1), [_f32(2, 3)]),
    "cumprod": (lambda x: lax.cumulative("prod", x, 0, reverse=True), [_f32(2, 3)]),
    "cummax": (lambda x: lax.cumulative("max", x, 1), [_f32(2, 3)]),
    "cummin": (lambda x: lax.cumulative("min", x, 0), [_f32(2, 3)]),
    "sort": (lambda k, v: lax.sort([k, v], 1), [_f32(2, 4), _f32(2, 4)]),
    "dot_general": (lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                    [_f32(2, 3, 4), _f32(2, 4, 5)]),
    "dot_general_free": (lambda a, b: lax.dot_general(a, b, (((0,), (1,)), ((), ()))),
                         [_f32(4, 3), _f32(5, 4)]),
    "cholesky": (lambda a: xlapy.numpy.linalg.cholesky(a), [_spd(3)]),
    "triangular_solve": (lambda a, b: xlapy.frontend.primitives_linalg.triangular_solve(
        core.to_array(a), core.to_array(b), lower=True), [_spd(3), _f32(3, 2)]),
    "lu": (lambda a: xlapy.frontend.primitives_linalg.lu(a), [_spd(3)]),
    "qr": (lambda a: xlapy.frontend.primitives_linalg.qr(a), [_f32(4, 3)]),
    "eigh": (lambda a: xlapy.frontend.primitives_linalg.eigh(a), [_spd(3)]),
    "svd": (lambda a: xlapy.frontend.primitives_linalg.svd(a), [_f32(4, 3)]),
    "conv_general_dilated": (lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME"),
                             [_f32(2, 4, 6), _f32(3, 4, 3)]),
    "conv_grouped": (lambda x, w: lax.conv_general_dilated(x, w, (2,), "VALID",
                                                           feature_group_count=2),
                     [_f32(2, 4, 7), _f32(6, 2, 3)]),
    "reduce_window_sum": (lambda x: lax.reduce_window_sum(x, (2, 2), (1, 2)), [_f32(4, 5)]),
    "reduce_window_max": (lambda x: lax.reduce_window_max(x, (2,), (1,), "SAME"), [_f32(5)]),
    "reduce_window_min": (lambda x: lax.reduce_window_min(x, (3,), (2,)), [_f32(7)]),
    "select_and_scatter_add": (lambda s, x: lax.select_and_scatter_add(
        s, x, "ge", (2,), (2,), "VALID"), [_f32(3), _f32(6)]),
    "select_and_gather_add": (lambda t, x: core.bind(
        core.get_primitive("select_and_gather_add"), core.to_array(t), core.to_array(x),
        select_kind="ge",
        window_dimensions=(2,), window_strides=(1,), padding=((0, 0),), base_dilation=(1,),
        window_dilation=(1,)), [_f32(5), _f32(5)]),
    "while": (lambda x, n: lax.while_loop(lambda c: c[1] < n, lambda c: (c[0] * 1.5, c[1] + 1),
                                          (x, np.int32(0)))[0], [_f32(3), _i32(hi=4)]),
    "cond": (lambda p, x: lax.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x),
             [_f32(), _f32(3)]),
    "switch": (lambda i, x: lax.switch(i, [lambda v: v + 1.0, lambda v: v * v,
                                           lambda v: -v], x), [_i32(hi=3), _f32(3)]),
    "scan": (lambda c, xs: lax.scan(lambda a, r: (a * r + 1.0, a.sum()), c, xs),
             [_f32(2), _f32(4, 2)]),
    "fft": (lambda z: xlapy.frontend.primitives_fft.fft(core.to_array(z), "FFT", (4,)),
            [(_f32(2, 4) + 1j * _f32(2, 4)).astype(np.complex64)]),
    "eig": (lambda a: xlapy.frontend.primitives_eig.eig(core.to_array(a)), [_f32(3, 3)]),
    "reduce_precision": (lambda x: xlapy.frontend.primitives_misc.reduce_precision(x, 5, 10),
                         [_f32(4)]),
    "optimization_barrier": (lambda a, b: xlapy.frontend.primitives_misc.optimization_barrier(
        (a, b)), [_f32(3), _f32(2)]),
    "rng_bit_generator": (lambda k: xlapy.frontend.primitives_misc.rng_bit_generator(k, (3,)),
                          [_i32(4, hi=1000).astype(np.uint32)]),
    "sharding_constraint": (lambda x: core.bind(
        core.get_primitive("sharding_constraint"), core.to_array(x),
        sharding=xlapy.hlo.sharding.HloSharding.iota_tile((2, 1))), [_f32(4, 3)]),
})
COLLECTIVES = {"psum", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all",
               "axis_index"}
# Samples whose name is not a primitive's: extra cases of a primitive's rule.
EXTRA = {"select_scalar_pred", "dot_general_free", "conv_grouped"}


def test_every_primitive_has_a_batching_rule():
    from test_autodiff_rules import _import_primitive_modules
    _import_primitive_modules()         # every package that may define primitives
    missing = [n for n, p in PRIMITIVES.items() if not p.has_batching_rule and n not in NO_RULE]
    assert not missing, f"primitives without a batching rule: {missing}"
    assert all(not PRIMITIVES[n].has_batching_rule for n in NO_RULE)


def test_every_primitive_has_a_sample():
    untested = set(PRIMITIVES) - set(SAMPLES) - COLLECTIVES - set(NO_RULE)
    assert not untested, f"primitives without a vmap sample: {sorted(untested)}"


def _per_example(fn, args, axes):
    outs = []
    for k in range(N):
        ex = [a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, axes)]
        outs.append(fn(*[xlapy.numpy.asarray(e) for e in ex]))
    return outs


def _stack(outs):
    if isinstance(outs[0], (tuple, list)):
        return [np.stack([np.asarray(o[j]) for o in outs]) for j in range(len(outs[0]))]
    return [np.stack([np.asarray(o) for o in outs])]


def _variants(args):
    yield [0] * len(args)
    yield [-1 if np.ndim(a) > 1 else 0 for a in args]
    if len(args) > 1:
        yield [None] + [0] * (len(args) - 1)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_vmap_matches_stacked_examples(name):
    fn, batched = SAMPLES[name]
    for axes in _variants(batched):
        args = []
        for a, ax in zip(batched, axes):
            if ax is None:
                args.append(a[0])                      # one example, shared by all
            else:
                args.append(np.moveaxis(a, 0, ax))
        expected = _stack(_per_example(fn, args, axes))
        got = xlapy.vmap(fn, in_axes=tuple(axes))(*args)
        got = [np.asarray(g) for g in (got if isinstance(got, (tuple, list)) else [got])]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape and g.dtype == e.dtype, (name, axes, g.shape, e.shape)
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5, err_msg=f"{name} {axes}")


# ------------------------------------------------------------------------ collectives
X = rng.standard_normal((4, 8)).astype(np.float32)
PERM = ((0, 2), (3, 1), (2, 0))


def _ppermute_ref(x):
    out = np.zeros_like(x)
    for s, t in PERM:
        out[t] = x[s]
    return out


COLLECTIVE_CASES = {
    "psum": (lambda v: lax.psum(v, "i"), lambda x: np.broadcast_to(x.sum(0), x.shape)),
    "pmean": (lambda v: lax.pmean(v, "i"), lambda x: np.broadcast_to(x.mean(0), x.shape)),
    "pmax": (lambda v: lax.pmax(v, "i"), lambda x: np.broadcast_to(x.max(0), x.shape)),
    "pmin": (lambda v: lax.pmin(v, "i"), lambda x: np.broadcast_to(x.min(0), x.shape)),
    "all_gather": (lambda v: lax.all_gather(v, "i"),
                   lambda x: np.broadcast_to(x, (4,) + x.shape)),
    "all_gather_tiled": (lambda v: lax.all_gather(v, "i", axis=0, tiled=True),
                         lambda x: np.broadcast_to(x.reshape(-1), (4, x.size))),
    "psum_scatter": (lambda v: lax.psum_scatter(v[:4], "i"), lambda x: x[:, :4].sum(0)),
    "psum_scatter_tiled": (lambda v: lax.psum_scatter(v[:4], "i", tiled=True),
                           lambda x: x[:, :4].sum(0).reshape(4, 1)),
    "ppermute": (lambda v: lax.ppermute(v, "i", PERM), _ppermute_ref),
    "all_to_all": (lambda v: lax.all_to_all(v[:4], "i", 0, 0),
                   lambda x: x[:, :4].T.copy()),
    "all_to_all_tiled": (lambda v: lax.all_to_all(lax.reshape(v, (2, 4)), "i", 1, 0,
                                                  tiled=True), None),
    "axis_index": (lambda v: v * lax.convert_element_type(lax.axis_index("i"), np.float32),
                   lambda x: x * np.arange(4, dtype=np.float32)[:, None]),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVE_CASES))
def test_collectives_over_a_vmapped_axis(name):
    fn, ref = COLLECTIVE_CASES[name]
    got = np.asarray(xlapy.vmap(fn, axis_name="i")(X))
    if ref is not None:
        np.testing.assert_allclose(got, ref(X), rtol=1e-5, atol=1e-5)
    # Through another axis: an inner vmap (axis "j") leaves "i" to the outer one.
    nested = xlapy.vmap(lambda v: xlapy.vmap(lambda _: fn(v), axis_name="j")(
        np.zeros(3, np.float32)), axis_name="i")(X)
    np.testing.assert_allclose(np.asarray(nested),
                               np.broadcast_to(got[:, None], (4, 3) + got.shape[1:]),
                               rtol=1e-5, atol=1e-5)


def test_collectives_match_jax_vmap():
    jax = pytest.importorskip("jax")
    jlax = jax.lax
    cases = {
        "psum": lambda L: lambda v: L.psum(v, "i"),
        "pmax": lambda L: lambda v: L.pmax(v, "i"),
        "all_gather_tiled": lambda L: lambda v: L.all_gather(v, "i", axis=0, tiled=True),
        "psum_scatter": lambda L: lambda v: L.psum_scatter(v[:4], "i"),
        "ppermute": lambda L: lambda v: L.ppermute(v, "i", PERM + ((1, 3),)),
        "all_to_all": lambda L: lambda v: L.all_to_all(v[:4], "i", 0, 0),
        "all_to_all_tiled": lambda L: lambda v: L.all_to_all(v.reshape(2, 4), "i", 1, 0,
                                                              tiled=True),
        "all_to_all_axes": lambda L: lambda v: L.all_to_all(v.reshape(2, 4), "i", 1, 0),
        "axis_index": lambda L: lambda v: L.axis_index("i") + 0 * v[0].astype("int32"),
    }
    for name, make in cases.items():
        ours = np.asarray(xlapy.vmap(make(lax), axis_name="i")(X))
        theirs = np.asarray(jax.vmap(make(jlax), axis_name="i")(X))
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5, err_msg=name)


def test_collectives_inside_control_flow_under_vmap_match_jax():
    jax = pytest.importorskip("jax")
    perm = [(0, 1), (1, 0), (2, 3), (3, 2)]

    def make(L, np_):
        def f(v):
            a = L.cond(v.sum() > 5, lambda u: L.psum(u, "i"), lambda u: u * 0 + L.pmax(u, "i"),
                       v)
            b = L.fori_loop(0, 2, lambda k, c: c + L.all_gather(c, "i", tiled=True)[:3]
                            + L.axis_index("i"), v)
            c, ys = L.scan(lambda c, r: (c + L.psum(r, "i"), L.ppermute(r, "i", perm)), 0.0, v)
            d = L.while_loop(lambda s: s[1] < 2, lambda s: (
                s[0] + L.psum_scatter(np_.ones(4), "i"), s[1] + 1), (v[0], 0))[0]
            return a, b, c, ys, d
        return f
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    ours = xlapy.vmap(make(lax, xlapy.numpy), axis_name="i")(xs)
    theirs = jax.vmap(make(jax.lax, jax.numpy), axis_name="i")(xs)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)
