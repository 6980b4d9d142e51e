"""benchmarks/keras_cifar.py: the Keras CIFAR-10 CNN step benchmark runs in ``--smoke`` mode
(batch 4, backend "interpreter"), checks every model against its float64 NumPy forward pass,
marks TensorFlow missing when it is not installed (the CI situation) and reports the
speed-ups of xlapy's compiled step."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

harness = importlib.import_module("harness")
keras_cifar = importlib.import_module("keras_cifar")

HAVE_TF = keras_cifar.tf_available()
HAVE_JAX = harness.jax_available()


def test_smoke_run(tmp_path, capsys):
    from xlapy.frontend.core import default_backend
    backend_before = default_backend()
    out_json = tmp_path / "keras_cifar.json"
    rc = keras_cifar.main(["--smoke", "--backend", "interpreter", "--json", str(out_json)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert default_backend() == backend_before          # the eager backend is put back
    data = json.loads(out_json.read_text())
    assert data["backend"] == "interpreter"
    assert data["header"]["peers"]["tensorflow"] != "not installed" if HAVE_TF else \
        data["header"]["peers"]["tensorflow"] == "not installed"
    [row] = data["rows"]
    assert row["size"] == "batch 4"
    impls = row["impls"]
    assert set(impls) == set(keras_cifar.NAMES)
    ok = {"xlapy jit", "xlapy eager"} | (set(keras_cifar.TF_NAMES) if HAVE_TF else set()) | \
        ({"jax"} if HAVE_JAX else set())
    for name in keras_cifar.NAMES:
        if name in ok:
            assert impls[name]["status"] == "ok", (name, impls[name])
            assert impls[name]["median_s"] > 0 and impls[name]["compile_s"] > 0
        else:                   # a peer that is not installed is a column marked missing
            assert impls[name]["status"] == "missing", (name, impls[name])
            assert "not installed" in impls[name]["detail"]
    speedups = row["xlapy_jit_speedup_over"]
    assert set(speedups) == set(keras_cifar.NAMES) - {"xlapy jit"}
    eager_ratio = impls["xlapy eager"]["median_s"] / impls["xlapy jit"]["median_s"]
    assert speedups["xlapy eager"] == pytest.approx(eager_ratio)
    assert all((speedups[n] is None) == (n not in ok) for n in speedups)
    assert sum(line.startswith("| implementation |") for line in printed.splitlines()) == 1
    assert "| xlapy Keras, jit_compile=True (interpreter) |" in printed
    assert "# BLAS:" in printed and "# tensorflow " in printed


def test_reference_conv_and_pool_match_loops():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 4, 3))
    w = rng.standard_normal((3, 3, 3, 2))
    b = rng.standard_normal(2)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    for padding, src, (oh, ow) in (("valid", x, (3, 2)), ("same", padded, (5, 4))):
        got = keras_cifar._conv(x, w, b, padding)
        want = np.empty((2, oh, ow, 2))
        for n in range(2):
            for i in range(oh):
                for j in range(ow):
                    patch = src[n, i:i + 3, j:j + 3, :]
                    want[n, i, j] = np.tensordot(patch, w, axes=3) + b
        np.testing.assert_allclose(got, want, rtol=1e-12)
    pooled = keras_cifar._pool(x)                       # 5x4 -> 2x2, the odd row dropped
    assert pooled.shape == (2, 2, 2, 3)
    assert pooled[1, 1, 0, 2] == max(x[1, 2, 0, 2], x[1, 2, 1, 2], x[1, 3, 0, 2], x[1, 3, 1, 2])


def test_reference_forward_is_a_softmax_and_loss_is_cross_entropy():
    weights, x, y = keras_cifar.problem(3)
    probs = keras_cifar.reference_forward(weights, x, chunk=2)   # chunks must not matter
    assert probs.shape == (3, 10)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(probs, keras_cifar.reference_forward(weights, x), rtol=1e-12)
    expected = -np.mean(np.log(probs[np.arange(3), y.argmax(axis=1)]))
    assert keras_cifar.reference_loss(probs, y) == pytest.approx(expected)
    shapes = [w.shape for w in weights]
    assert shapes[0] == (3, 3, 3, 32) and shapes[8] == (2304, 512) and shapes[-1] == (10,)


class _FakeModel:
    """Just the Keras calls keras_impl makes, answering with fixed values."""

    def __init__(self, forward: np.ndarray, loss: float) -> None:
        self.forward, self.loss, self.weights, self.steps = forward, loss, None, 0

    def set_weights(self, weights):
        self.weights = weights

    def __call__(self, x, training=False):
        assert training is False
        return self.forward

    def train_on_batch(self, x, y, return_dict=False):
        self.steps += 1
        return {"loss": self.loss, "accuracy": 0.1}


def test_keras_impl_checks_the_forward_pass():
    forward = np.full((2, 10), 0.1)
    good = _FakeModel(forward.astype(np.float32), 2.3)
    impl = keras_cifar.keras_impl("xlapy jit", good, ["w"], None, None, forward)
    assert impl.call is not None and impl.compile_s > 0 and good.steps == 1
    assert good.weights == ["w"] and impl.call() == pytest.approx(2.3)
    bad = _FakeModel(forward * 1.01, 2.3)
    impl = keras_cifar.keras_impl("tf xla", bad, ["w"], None, None, forward)
    assert impl.call is None and impl.failed and bad.steps == 0
    assert impl.note.startswith("WRONG forward pass: output 0: max abs error")


def test_table_and_speedups():
    res = harness.CaseResult("Keras CIFAR-10 CNN train_on_batch", "batch 256")
    for name, t in (("xlapy jit", 0.4), ("xlapy eager", 1.2), ("tf xla", 0.8)):
        res.results[name] = harness.ImplResult(name, harness.summarize([t], 1), compile_s=2.0)
    res.results["tf graph"] = harness.ImplResult("tf graph", status="missing",
                                                 detail="tensorflow is not installed")
    up = keras_cifar.speedups(res)
    assert up["xlapy eager"] == pytest.approx(3.0) and up["tf xla"] == pytest.approx(2.0)
    assert up["tf graph"] is None and up["jax"] is None
    table = keras_cifar.format_table([res], "cpu")
    assert "| xlapy Keras, jit_compile=True (cpu) | 400 ms | 2.00 | 1.00 |" in table
    assert "| TF Keras, jit_compile=True (XLA) | 800 ms | 2.00 | 2.00 |" in table
    assert "| TF Keras, jit_compile=False (tf.function graph) | - | - | - |" in table
    assert "faster than: xlapy eager 3.00x, tf graph -, tf xla 2.00x" in table
    assert "tf graph: missing: tensorflow is not installed" in table


def test_columns_builds_only_the_named_columns(tmp_path, capsys):
    out_json = tmp_path / "keras_cifar.json"
    rc = keras_cifar.main(["--smoke", "--backend", "interpreter", "--columns", "xlapy jit",
                           "--json", str(out_json)])
    assert rc == 0, capsys.readouterr().out
    [row] = json.loads(out_json.read_text())["rows"]
    assert row["impls"]["xlapy jit"]["status"] == "ok"
    for name in set(keras_cifar.NAMES) - {"xlapy jit"}:
        assert row["impls"][name]["status"] == "missing", (name, row["impls"][name])
        assert "--columns" in row["impls"][name]["detail"] or \
            "not installed" in row["impls"][name]["detail"]
