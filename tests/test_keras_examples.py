"""The Keras examples run and print what they promise (small settings)."""
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


def run_example(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / args[0]), *args[1:]],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@needs_digits
def test_mnist_tutorial_example_compiles_once_and_learns(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))          # no MNIST: digits fallback
    out = run_example("mnist_jit_compile.py", "--steps", "200")
    assert "using scikit-learn's digits" in out
    losses = [float(v) for v in re.findall(r"mean loss of the last +\d+ steps +(\S+)", out)]
    assert len(losses) == 11 and losses[-1] < 0.1 * losses[0]
    assert "compiles: 1, cache hits: 199" in out
    acc = float(re.search(r"Prediction accuracy after training: (\S+)", out).group(1))
    assert acc > 0.85


def test_cifar10_example_on_random_data():
    out = run_example("cifar10_cnn.py", "--random-data", "--steps", "1", "--batch-size", "4",
                      "--epochs", "1")
    assert "Total params: 1,250,858" in out
    assert re.search(r"^1/1 \[=+\] - \d+s \S+/step - loss: \S+ - accuracy: \S+ - val_loss",
                     out, re.M)
    assert "train step compiles: 1, cache hits: 1" in out
    assert re.search(r"speed-up of jit_compile=True over jit_compile=False: \d+\.\d+x", out)


def test_cifar10_example_without_the_data_set_says_what_to_do(tmp_path):
    env = {k: v for k, v in os.environ.items()} | {"KERAS_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "cifar10_cnn.py"),
                           "--epochs", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "CIFAR-10 data set was not found" in proc.stderr
    assert "--random-data" in proc.stderr


@needs_digits
def test_keras_digits_demo_quick():
    """``make demo`` runs the full version; its CNN accuracy is tested in
    test_keras_training.py with the same model."""
    out = run_example("keras_digits.py", "--quick")
    accs = {m: float(a) for m, a in re.findall(r"(\w+): test accuracy (\S+)", out)}
    assert accs["dense"] >= 0.8 and accs["cnn"] >= 0.5, accs
    assert len(re.findall(r"x speed-up with jit_compile=True", out)) == 2
    assert out.count("train step compiled 1 time(s)") == 2
