"""HLO text xlapy prints is parsed, compiled and run by the real XLA (through jaxlib).

Needs jax and jaxlib, which the ``test`` extra installs (``pip install -e '.[test]'``).
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.peers

from real_xla import run_on_xla  # noqa: E402
import xlapy  # noqa: E402
import xlapy.numpy as xnp  # noqa: E402
from xlapy import lax  # noqa: E402


def _mlp_loss(w1, b1, w2, x, y):
    h = xnp.maximum(xnp.matmul(x, w1) + b1, 0.0)
    logits = xnp.matmul(h, w2)
    logp = logits - xnp.logsumexp(logits, axis=1, keepdims=True)
    return -xnp.mean(xnp.sum(logp * y, axis=1))


def _scan_fn(w, xs):
    def body(c, x):
        c = xnp.tanh(c * w + x)
        return c, c * c
    c, ys = lax.scan(body, xnp.zeros(3, xnp.float32), xs)
    return c, ys


def _cond_fn(x, p):
    return lax.cond(p > 0, lambda v: xnp.sin(v), lambda v: v * 2.0, x)


rng = np.random.default_rng(0)
CASES = {
    "fused_sum": (lambda x, y, z: xnp.sum(x + y * z),
                  [rng.standard_normal(64, np.float32) for _ in range(3)]),
    "softmax": (lambda x: xnp.exp(x - xnp.max(x, axis=1, keepdims=True)) /
                xnp.sum(xnp.exp(x - xnp.max(x, axis=1, keepdims=True)), axis=1, keepdims=True),
                [rng.standard_normal((4, 8), np.float32)]),
    "mlp_grad": (xlapy.grad(_mlp_loss, argnums=(0, 1, 2)),
                 [rng.standard_normal((5, 6), np.float32), np.zeros(6, np.float32),
                  rng.standard_normal((6, 3), np.float32), rng.standard_normal((4, 5), np.float32),
                  np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]]),
    "scan_grad": (xlapy.grad(lambda w, xs: xnp.sum(_scan_fn(w, xs)[1]), argnums=(0, 1)),
                  [np.float32(0.7), rng.standard_normal((4, 3), np.float32)]),
    "cond": (_cond_fn, [rng.standard_normal(5, np.float32), np.float32(1.0)]),
    "sort_gather": (lambda x, i: (xnp.sort(x), x[i], xnp.cumsum(x)),
                    [rng.standard_normal(7, np.float32), np.array([3, 0, 6], np.int32)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_xla_parses_and_runs_our_hlo(name):
    fn, args = CASES[name]
    jf = xlapy.jit(fn)
    ours = xlapy.tree_flatten(jf(*args))[0]
    text = jf.get_compiler_ir(*args)(stage="hlo")
    theirs = run_on_xla(text, list(args))
    assert len(theirs) == len(ours)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), b, rtol=2e-5, atol=2e-6)


def test_xla_parses_our_optimized_hlo():
    fn, args = CASES["mlp_grad"]
    text = xlapy.jit(fn).get_compiler_ir(*args)(stage="optimized_hlo")
    from jax._src.lib import xla_client as xc
    module = xc.hlo.hlo_module_from_text(text)
    assert "fusion" in module.to_string()


def test_variable_alias_header_is_accepted_by_xla():
    v = xlapy.Variable(np.ones(3, np.float32))

    @xlapy.jit
    def step(x):
        v.assign_add(x)
        return xnp.sum(v)

    x = np.arange(3, dtype=np.float32)
    text = step.get_compiler_ir(x)(stage="hlo")
    assert "input_output_alias={ {1}: (1, {}, may-alias) }" in text
    out = run_on_xla(text, [x, np.ones(3, np.float32)])
    np.testing.assert_allclose(out[0], 6.0)
    np.testing.assert_allclose(out[1], [1, 2, 3])
