"""The seed examples in examples/ run as written and show what the seeds promise."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_model_fn_prints_its_fused_hlo():
    out = run_example("seed_model_fn.py")
    assert "reduce(" in out and "fusion(" in out
    assert "seed_model_fn.py" in out          # metadata leads back to the user's file


def test_recompiled_on_launch_compiles_twice_then_hits():
    out = run_example("seed_recompile.py")
    assert "compiles: 2, cache hits: 1" in out
    assert "shape changed f32[1,10] -> f32[1,100]" in out


def test_not_compilable_points_at_the_user_line():
    out = run_example("seed_not_compilable.py")
    assert "InvalidArgumentError: xnp.unique" in out
    assert "seed_not_compilable.py:14" in out


def test_demo_runs():
    out = run_example("demo.py")
    assert "optimized module gives the same result" in out


@pytest.mark.parametrize("loop", ["keras", "custom"])
def test_distributed_mnist_trains_on_two_local_devices(loop):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "distributed_mnist.py"),
                           "--epochs", "2", "--loop", loop], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "MirroredStrategy: 2 replicas (1 process(es) x 2 device(s))" in out
    assert "train step compiles: 1" in out and "replicas' weights identical" in out
    accuracy = float(out.split("test accuracy ")[1].split()[0])
    assert accuracy > 0.8, out


def test_jax_stablehlo_example_matches_jax():
    import pytest
    pytest.importorskip("jax")
    out = run_example("jax_stablehlo.py")
    assert "xlapy cpu         vs JAX" in out and "give JAX's results on xlapy" in out
