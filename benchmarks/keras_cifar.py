"""The seed's Keras CIFAR-10 CNN: one ``train_on_batch`` step, xlapy vs TensorFlow Keras and JAX.

The model is the seed's (the TensorFlow XLA tutorial's, see ``examples/cifar10_cnn.py``):
Conv2D 32 (same) + ReLU, Conv2D 32 + ReLU, MaxPool 2, Dropout 0.25, Conv2D 64 (same) + ReLU,
Conv2D 64 + ReLU, MaxPool 2, Dropout 0.25, Flatten, Dense 512 + ReLU, Dropout 0.5, Dense 10 +
softmax; RMSprop(learning_rate=1e-4, decay=1e-6), categorical cross-entropy, accuracy metric,
batch 256 of random data of CIFAR-10's shape ([256, 32, 32, 3] float32 in [0, 1), one-hot
labels). One sample is one ``model.train_on_batch(x, y)`` call (forward, loss, gradients,
optimizer update, metrics; the loss comes back to Python as a float) after warm-up.

Columns, each when available (a peer that is not installed is marked missing):

- ``xlapy jit``: xlapy Keras, ``compile(..., jit_compile=True)`` on ``--backend``;
- ``xlapy eager``: xlapy Keras, ``jit_compile=False`` (the same step op by op);
- ``tf graph``: TensorFlow Keras, ``jit_compile=False`` (a ``tf.function`` graph, no XLA);
- ``tf xla``: TensorFlow Keras, ``jit_compile=True`` (the step compiled by XLA);
- ``tf eager``: TensorFlow Keras, ``run_eagerly=True`` (op by op);
- ``jax``: JAX ``jit`` of the functional step of ``training.py``'s W5 (the same layers and
  RMSprop, but no dropout and no metrics).

Keras 3 has no ``decay`` argument; its equivalent, ``InverseTimeDecay(1e-4, 1, 1e-6)``
(``lr / (1 + 1e-6 * step)``), is what TensorFlow Keras gets. Every model starts from the same
weights. Before timing, each model's forward pass (``training=False``) must match a float64
NumPy forward pass of the same weights (rtol 1e-4); the loss of the timed step (with dropout)
must be within 10% of the reference loss. "first step s" is the first ``train_on_batch``
(tracing and compiling included).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ../tfvenv/bin/python benchmarks/keras_cifar.py

(run from a venv that has tensorflow-cpu and xlapy installed; see docs/performance.md)
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
import time
from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import harness

BATCH, SMOKE_BATCH = 256, 4
IMAGE = (32, 32, 3)
#: (kernel size, input channels, output channels, padding) of the four convolutions.
CONVS = [(3, 3, 32, "same"), (3, 32, 32, "valid"), (3, 32, 64, "same"), (3, 64, 64, "valid")]
DENSES = [(2304, 512), (512, 10)]
#: The timed step's loss has dropout in it: it is compared with the reference loss this loosely.
STEP_LOSS_RTOL = 0.1
FORWARD_RTOL, FORWARD_ATOL = 1e-4, 1e-6

NAMES = ("xlapy jit", "xlapy eager", "tf graph", "tf xla", "tf eager", "jax")
TF_NAMES = ("tf graph", "tf xla", "tf eager")
TITLES = {"xlapy jit": "xlapy Keras, jit_compile=True ({backend})",
          "xlapy eager": "xlapy Keras, jit_compile=False (op by op)",
          "tf graph": "TF Keras, jit_compile=False (tf.function graph)",
          "tf xla": "TF Keras, jit_compile=True (XLA)",
          "tf eager": "TF Keras, run_eagerly=True (op by op)",
          "jax": "JAX jit, functional step (no dropout, no metrics)"}


# ------------------------------------------------------------------ weights, data, reference
def problem(batch: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The shared initial weights (Keras order: kernel, bias per layer), x and one-hot y."""
    rng = np.random.default_rng(0)
    weights = []
    for k, cin, cout, _ in CONVS:
        lim = np.sqrt(6.0 / (k * k * (cin + cout)))
        weights += [rng.uniform(-lim, lim, (k, k, cin, cout)), rng.uniform(-0.05, 0.05, cout)]
    for fan_in, fan_out in DENSES:
        lim = np.sqrt(6.0 / (fan_in + fan_out))
        weights += [rng.uniform(-lim, lim, (fan_in, fan_out)),
                    rng.uniform(-0.05, 0.05, fan_out)]
    x = rng.random((batch, *IMAGE), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return [w.astype(np.float32) for w in weights], x, y


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, padding: str) -> np.ndarray:
    if padding == "same":
        p = w.shape[0] // 2
        x = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    windows = sliding_window_view(x, w.shape[:2], axis=(1, 2))      # [n, h, w, c, kh, kw]
    return np.einsum("nhwcij,ijco->nhwo", windows, w, optimize=True) + b


def _pool(x: np.ndarray) -> np.ndarray:
    n, h, w, c = x.shape
    return x[:, :h // 2 * 2, :w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def reference_forward(weights: Sequence[np.ndarray], x: np.ndarray, chunk: int = 32) -> np.ndarray:
    """The model's softmax output in float64 NumPy (``training=False``: no dropout)."""
    w = [np.asarray(v, np.float64) for v in weights]
    out = []
    for start in range(0, len(x), chunk):
        h = np.asarray(x[start:start + chunk], np.float64)
        for i, (_, _, _, padding) in enumerate(CONVS):
            h = np.maximum(_conv(h, w[2 * i], w[2 * i + 1], padding), 0.0)
            if i % 2 == 1:
                h = _pool(h)
        h = np.maximum(h.reshape(len(h), -1) @ w[8] + w[9], 0.0)
        logits = h @ w[10] + w[11]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        out.append(e / e.sum(axis=1, keepdims=True))
    return np.concatenate(out)


def reference_loss(probs: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.sum(y * np.log(probs), axis=1)))


# ------------------------------------------------------------------------------- the models
def build_model(keras: Any) -> Any:
    """The seed's CNN, written once for any module with Keras's API (xlapy.keras or keras)."""
    layers = keras.layers
    return keras.Sequential([
        keras.Input(shape=IMAGE),
        layers.Conv2D(32, (3, 3), padding="same"), layers.Activation("relu"),
        layers.Conv2D(32, (3, 3)), layers.Activation("relu"),
        layers.MaxPooling2D(pool_size=(2, 2)), layers.Dropout(0.25),
        layers.Conv2D(64, (3, 3), padding="same"), layers.Activation("relu"),
        layers.Conv2D(64, (3, 3)), layers.Activation("relu"),
        layers.MaxPooling2D(pool_size=(2, 2)), layers.Dropout(0.25),
        layers.Flatten(), layers.Dense(512), layers.Activation("relu"), layers.Dropout(0.5),
        layers.Dense(10), layers.Activation("softmax"),
    ])


def keras_impl(name: str, model: Any, weights: list[np.ndarray], x: np.ndarray, y: np.ndarray,
               forward: np.ndarray) -> harness.Impl:
    """Set the shared weights, check the forward pass, run the first step (timed as
    "first step s"); the Impl's call is one ``train_on_batch`` returning the loss."""
    try:
        model.set_weights(weights)
        got = np.asarray(model(x, training=False), np.float64)
        problem_text = harness.check_result(got, forward, FORWARD_RTOL, FORWARD_ATOL)
        if problem_text:
            return harness.Impl(name, None, note=f"WRONG forward pass: {problem_text}",
                                failed=True)

        def call() -> float:
            return float(model.train_on_batch(x, y, return_dict=True)["loss"])
        t0 = time.perf_counter()
        call()
        return harness.Impl(name, call, time.perf_counter() - t0)
    except Exception as e:
        return harness.failed_impl(name, "first step", e)


def xlapy_impls(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray,
                forward: np.ndarray, wanted: Sequence[str] = NAMES) -> list[harness.Impl]:
    from xlapy import keras
    impls = []
    for name, jit in (("xlapy jit", True), ("xlapy eager", False)):
        if name not in wanted:
            impls.append(harness.Impl(name, None, note="--columns"))
            continue
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        model = build_model(keras)
        model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-4, decay=1e-6),
                      loss="categorical_crossentropy", metrics=["accuracy"], jit_compile=jit)
        impls.append(keras_impl(name, model, weights, x, y, forward))
    return impls


def tf_available() -> bool:
    return importlib.util.find_spec("tensorflow") is not None


def tf_impls(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray,
             forward: np.ndarray, wanted: Sequence[str] = NAMES) -> list[harness.Impl]:
    if not tf_available():
        return [harness.Impl(n, None, note="tensorflow is not installed") for n in TF_NAMES]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf
    if keras.backend.backend() != "tensorflow":
        note = f"Keras runs on {keras.backend.backend()!r} (KERAS_BACKEND), not tensorflow"
        return [harness.Impl(n, None, note=note) for n in TF_NAMES]
    impls = []
    for name, options in (("tf graph", {"jit_compile": False}),
                          ("tf xla", {"jit_compile": True}),
                          ("tf eager", {"jit_compile": False, "run_eagerly": True})):
        if name not in wanted:
            impls.append(harness.Impl(name, None, note="--columns"))
            continue
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        tf.random.set_seed(0)
        model = build_model(keras)
        lr = keras.optimizers.schedules.InverseTimeDecay(1e-4, decay_steps=1, decay_rate=1e-6)
        model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=lr),
                      loss="categorical_crossentropy", metrics=["accuracy"], **options)
        impls.append(keras_impl(name, model, weights, x, y, forward))
    return impls


def jax_impl(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray,
             loss: float) -> harness.Impl:
    """``training.py``'s W5 step under ``jax.jit``, from the shared weights; its loss has
    no dropout, so it must match the reference loss to rtol 1e-4."""
    if not harness.jax_available():
        return harness.Impl("jax", None, note="jax is not installed")
    import jax
    import training
    names = ["c1", "b1", "c2", "b2", "c3", "b3", "c4", "b4", "d1", "e1", "d2", "e2"]
    params = dict(zip(names, weights))
    ms = {k: np.zeros_like(v) for k, v in params.items()}
    step = jax.jit(training.rmsprop_step(training.namespace("jax"), training.cnn_loss))
    args = jax.device_put((params, ms, np.float32(0.0), x, y))

    def call() -> float:
        return float(jax.block_until_ready(step(*args))[-1])
    t0 = time.perf_counter()
    try:
        first = call()
    except Exception as e:
        return harness.failed_impl("jax", "first step", e)
    compile_s = time.perf_counter() - t0
    if not np.isclose(first, loss, rtol=FORWARD_RTOL):
        return harness.Impl("jax", None, note=f"WRONG loss {first:.7g}, expected {loss:.7g}",
                            failed=True)
    return harness.Impl("jax", call, compile_s)


# -------------------------------------------------------------------------------- the run
def build_cases(s: harness.Settings, tf: bool,
                columns: Sequence[str] | None = None) -> list[harness.Case]:
    """One case: every implementation of the step on the same batch and weights (only
    ``columns`` when given; the others are not built)."""
    import xlapy
    xlapy.set_default_backend(s.backend)        # the eager column runs on the same backend
    batch = SMOKE_BATCH if s.smoke else BATCH
    weights, x, y = problem(batch)
    forward = reference_forward(weights, x)
    loss = reference_loss(forward, y)
    wanted = NAMES if columns is None else tuple(columns)
    impls = xlapy_impls(weights, x, y, forward, wanted)
    impls += tf_impls(weights, x, y, forward, wanted) if tf else \
        [harness.Impl(n, None, note="--no-tf") for n in TF_NAMES]
    impls.append(jax_impl(weights, x, y, loss) if s.jax and "jax" in wanted else
                 harness.Impl("jax", None, note="--no-jax or --columns"))
    return [harness.Case("Keras CIFAR-10 CNN train_on_batch", f"batch {batch}",
                         np.float64(loss), impls, rtol=STEP_LOSS_RTOL, atol=0.0)]


def speedups(result: harness.CaseResult) -> dict[str, float | None]:
    """How many times faster xlapy's compiled step is than each other column."""
    return {name: result.ratio(name, "xlapy jit") for name in NAMES if name != "xlapy jit"}


def format_table(results: Sequence[harness.CaseResult], backend: str) -> str:
    """One row per implementation; then xlapy jit's speed-up over each."""
    cell, first, ratio = harness.time_cell, harness.compile_cell, harness.ratio_cell
    lines = []
    for c in results:
        lines += [f"{c.workload}, {c.size}:", "",
                  "| implementation | step (median ± ½ IQR) | first step s | time / xlapy jit |",
                  "|---|---|---|---|"]
        for name in NAMES:
            r = c.results.get(name)
            lines.append(f"| {TITLES[name].format(backend=backend)} | {cell(r)} | "
                         f"{first(r)} | {ratio(c.ratio(name, 'xlapy jit'))} |")
        up = speedups(c)
        lines += ["", "xlapy jit_compile=True is faster than: " + ", ".join(
            f"{name} {ratio(v)}x" if v is not None else f"{name} -" for name, v in up.items())
            + " (acceptance: at least 3x over xlapy eager)"]
    notes = harness.notes(results)
    return "\n".join(lines + ([""] + notes if notes else []))


def tf_header() -> dict:
    """TensorFlow, Keras and oneDNN facts printed above the table (no import of TF)."""
    def version(*dists: str) -> str:
        for d in dists:
            try:
                return importlib.metadata.version(d)
            except importlib.metadata.PackageNotFoundError:
                pass
        return "not installed"
    return {"tensorflow": version("tensorflow-cpu", "tensorflow"), "keras": version("keras"),
            "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset: on)"),
            "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "(unset: tensorflow)")}


def main(argv: Sequence[str] | None = None) -> int:
    p = harness.parser(__doc__.splitlines()[0], default_repeat=7)
    p.add_argument("--no-tf", action="store_true", help="do not run the TensorFlow columns")
    p.add_argument("--columns", help="comma-separated columns to time (e.g. 'xlapy jit,tf "
                   "graph'); the others are not built")
    args = p.parse_args(argv)
    import xlapy
    from xlapy.frontend.core import default_backend
    previous = default_backend()
    peers = tf_header()
    print("# " + ", ".join(f"{k} {v}" for k, v in peers.items()))
    measured: list[harness.CaseResult] = []

    def table(results: Sequence[harness.CaseResult], backend: str) -> str:
        measured.extend(results)
        return format_table(results, backend)
    try:
        rc = harness.run(args, lambda s: build_cases(
            s, not args.no_tf, args.columns.split(",") if args.columns else None), table)
    finally:
        xlapy.set_default_backend(previous)
    if args.json:                     # harness wrote the samples; add the peers and speed-ups
        with open(args.json) as f:
            data = json.load(f)
        data["header"]["peers"] = peers
        for row, result in zip(data["rows"], measured):
            row["xlapy_jit_speedup_over"] = speedups(result)
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
