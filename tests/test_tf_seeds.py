"""The seeds' TensorFlow code runs with ``import xlapy.tf as tf`` and shows what the seeds
promise (examples/seed_tf_*.py, small settings)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xlapy.keras.datasets import digits

ROOT = Path(__file__).resolve().parents[1]
needs_digits = pytest.mark.skipif(digits._locate() is None,
                                  reason="scikit-learn (digits data) is not installed")


def run_example(*args: str, env: dict | None = None) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / args[0]), *args[1:]],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def _line_of(example: str, text: str) -> int:
    lines = (ROOT / "examples" / example).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_overview_seed_blocks():
    out = run_example("seed_tf_overview.py")
    # model_fn: reduce_sum(x + y * z) is one fusion, and gives the eager result
    assert "eager: Array(168., dtype=float32)  compiled: Array(168., dtype=float32)" in out
    assert "fusions in the optimized HLO: 1" in out
    # the MNIST step compiles once; its Variables are aliased in and out
    assert "optimizer steps: 3  compiles: 1" in out
    assert re.search(r"HloModule jit_train_mnist, .*input_output_alias=\{ \{0\}: \(2, \{\}, "
                     r"may-alias\)", out)
    # not_compilable: a graph as written; jit_compile=True names the user's line
    assert "as written (a graph): Array([3, 1, 2], dtype=int32)" in out
    line = _line_of("seed_tf_overview.py", "def not_compilable_jit") + 1
    assert re.search(r"jit_compile=True: InvalidArgumentError: tf\.unique has a "
                     r"data-dependent output shape and cannot be compiled \(at "
                     rf"examples/seed_tf_overview\.py:{line}: return tf\.unique\(x\)", out)
    # set_jit(True): the seed's function is auto-clustered, saying why, at INFO
    assert re.search(r"INFO xlapy\.jit: function 'not_compilable' is not compiled whole for "
                     r"\(x: s32\[5\]\) \(auto-jit\): tf\.unique", out)
    assert "INFO xlapy.tf: not_compilable: auto-clustering: 0 cluster(s)" in out
    assert "set_jit(True): Array([3, 1, 2], dtype=int32)" in out
    # recompiled_on_launch: two compiles, then a cache hit
    assert "compiles: 2, cache hits: 1" in out
    assert "shape changed f32[1,10] -> f32[1,100]" in out
    # all_reduce: one replica; the compiled step has an HLO all-reduce
    assert "run_fn(): (100,) sum 100.0" in out
    assert re.search(r"HLO all-reduce: \['ROOT %replica-all-reduce\.1 = f32\[100\]\{0\} "
                     r"all-reduce\(f32\[100\]\{0\} %\S+\), channel_id=1, "
                     r"replica_groups=\{\{0\}\}, to_apply=%add_f32", out)


@needs_digits
def test_mnist_tutorial_seed_trains(tmp_path):
    out = run_example("seed_tf_mnist_tutorial.py", "--steps", "30",
                      env={"KERAS_HOME": str(tmp_path)})          # no MNIST: digits
    assert "MNIST not available; using scikit-learn's digits" in out
    before = float(re.search(r"test loss before training: (\S+)", out).group(1))
    after = float(re.search(r"test loss after training: (\S+)", out).group(1))
    assert after < 0.25 * before, (before, after)
    # `optimizer.iterations > TRAIN_STEPS` stops after TRAIN_STEPS + 1 steps, as in TF;
    # the epoch's last, partial batch compiles a second program (as TF's jit_compile does)
    assert "steps: 31, compiles: 2, cache hits: 29" in out
    assert "shape changed u8[100,28,28] -> u8[" in out
    acc = float(re.search(r"Prediction accuracy after training: Array\((\S+), dtype=float32\)",
                          out).group(1))
    assert acc > 0.6
    assert re.search(r"HloModule jit_train_mnist, .*input_output_alias=", out)
    assert "seed_tf_mnist_tutorial.py" in out                     # metadata: the user's file


def test_cifar10_seed_on_random_data():
    out = run_example("seed_tf_cifar10.py", "--random-data", "--steps", "1", "--batch-size",
                      "4", "--epochs", "1")
    assert "tf.test.gpu_device_name() is '': no GPU" in out
    epochs = re.findall(r"^1/1 \[=+\] - \S+ \S+/step - loss: (\S+) - accuracy: \S+ - "
                        r"val_loss: \S+", out, re.M)
    assert len(epochs) == 4                          # warm-up + training, twice
    assert "set_jit(False): 1 epochs in" in out and "train step compiled: False" in out
    assert re.search(r"set_jit\(True\): 1 epochs in \S+s \(wall time, after warm-up\); "
                     r"train step compiled: True", out)
    assert "set_jit(True): train step compiles: 1, cache hits: 1" in out
    assert re.search(r"^Test accuracy: \S+", out, re.M)
    assert re.search(r"speed-up of set_jit\(True\) over set_jit\(False\): \d+\.\d+x", out)


def test_cifar10_seed_under_tf_xla_auto_jit():
    out = run_example("seed_tf_cifar10.py", "--random-data", "--steps", "1", "--batch-size",
                      "4", "--epochs", "1", env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"})
    # TF_XLA_FLAGS overrides set_jit(False), as in TF: both trainings are clustered
    assert "set_jit(False): auto-clustering summary: 1 cluster, the whole train step" in out
    assert "set_jit(True): auto-clustering summary: 1 cluster, the whole train step" in out
