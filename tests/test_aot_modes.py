"""Ahead-of-time link modes and threading: the BLAS-calling dot/convolution kernels against
the self-contained ones and the interpreter, the object's thread pool (also under
concurrent calls), the shared-library output and the command-line flags."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import xlapy
import xlapy.aot as aot
import xlapy.numpy as xnp
from xlapy import nn
from xlapy.aot.driver import driver_source
from xlapy.errors import InvalidArgumentError
from xlapy.hlo import parse_module

from aot_harness import CC, ROOT, aot_matches_interpreter, build_driver, run_driver

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")

rng = np.random.default_rng(7)
K1 = (rng.standard_normal((3, 3, 3, 8)) / 5).astype(np.float32)
K2 = (rng.standard_normal((3, 3, 8, 16)) / 9).astype(np.float32)
WD = (rng.standard_normal((8 * 8 * 16, 10)) / 30).astype(np.float32)


def cifar_cnn(x):
    """A CIFAR-10-style CNN forward pass (32x32x3 input): two 3x3 conv + relu + 2x2
    max-pool, then a dense layer to 10 logits."""
    h = nn.max_pool(xnp.maximum(nn.conv(x, K1, padding="same"), 0.0), (2, 2))
    h = nn.max_pool(xnp.maximum(nn.conv(h, K2, padding="same"), 0.0), (2, 2))
    return xnp.dot(xnp.reshape(h, (h.shape[0], -1)), WD)


def _undefined(obj: str) -> set[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    out = subprocess.run([nm, "-u", obj], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


@pytest.mark.parametrize("blas,threads", [(True, 1), (False, 1), (True, 3), (False, 2)])
def test_cifar_cnn_forward(tmp_path, blas, threads):
    x = rng.random((8, 32, 32, 3), dtype=np.float32)
    module = xlapy.jit(cifar_cnn).lower(x).hlo_module
    aot_matches_interpreter(module, [x], tmp_path, blas=blas, threads=threads,
                            rtol=2e-5, atol=2e-5)
    meta = json.loads((tmp_path / "m_meta.json").read_text())
    assert meta["blas"] is blas and meta["threads"] == threads
    undefined = _undefined(str(tmp_path / "m.o"))
    assert ("scipy_cblas_sgemm" in undefined) is blas
    if not blas:        # libc/libm only (and pthreads for the pool)
        assert not any(s.startswith("scipy_") for s in undefined)
        assert meta["link_flags"] == ["-lm"] + (["-lpthread"] if threads > 1 else [])
    assert ("pthread_create" in undefined) is (threads > 1)


CONVS = {
    # input, kernel, output, window, dim labels (+ attributes)
    "nhwc_same": ("f32[2,7,6,3]", "f32[3,3,3,4]", "f32[2,7,6,4]",
                  "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"),
    "nchw_oihw_stride": ("f32[2,3,9,8]", "f32[5,3,3,2]", "f32[2,5,4,4]",
                         "size=3x2 stride=2x2 pad=0_1x0_1", "bf01_oi01->bf01"),
    "rhs_dilated_reversed": ("f32[1,10,10,2]", "f32[3,3,2,3]", "f32[1,6,6,3]",
                             "size=3x3 rhs_dilate=2x2 rhs_reversal=1x1", "b01f_01io->b01f"),
    "negative_padding": ("f32[2,8,8,2]", "f32[2,2,2,3]", "f32[2,5,6,3]",
                         "size=2x2 pad=-1_-1x0_-1", "b01f_01io->b01f"),
    "conv1d": ("f64[3,20,4]", "f64[5,4,6]", "f64[3,16,6]", "size=5", "b0f_0io->b0f"),
    "conv3d": ("f32[1,5,4,6,2]", "f32[2,2,3,2,3]", "f32[1,4,3,4,3]", "size=2x2x3",
               "b012f_012io->b012f"),
    "output_nchw": ("f32[2,6,6,3]", "f32[3,3,3,4]", "f32[2,4,6,6]", "size=3x3 pad=1_1x1_1",
                    "b01f_01io->bf01"),
    # vector strips of the self-contained kernel: full and short position blocks, a tail
    "wide_features": ("f32[2,9,7,3]", "f32[3,3,3,37]", "f32[2,9,7,37]",
                      "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"),
    "wide_f64_strided": ("f64[1,9,10,2]", "f64[2,3,2,16]", "f64[1,4,8,16]",
                         "size=2x3 stride=2x1", "b01f_01io->b01f"),
    # one output column: rows of one position, blocked by the batch and the first dim
    "single_column": ("f32[3,6,2,2]", "f32[3,2,2,5]", "f32[3,4,1,5]", "size=3x2",
                      "b01f_01io->b01f"),
    # declined by the BLAS kernel: the self-contained one takes them
    "lhs_dilated": ("f32[1,4,4,2]", "f32[3,3,2,2]", "f32[1,9,9,2]",
                    "size=3x3 pad=2_2x2_2 lhs_dilate=2x2", "b01f_01io->b01f"),
    "grouped": ("f32[2,5,5,4]", "f32[3,3,2,6]", "f32[2,3,3,6]", "size=3x3",
                "b01f_01io->b01f, feature_group_count=2"),
}


@pytest.mark.parametrize("blas", [True, False])
@pytest.mark.parametrize("which", sorted(CONVS))
def test_convolutions_match_the_interpreter(tmp_path, which, blas):
    x, w, y, window, labels = CONVS[which]
    text = (f"HloModule c\n\nENTRY main {{\n  x = {x} parameter(0)\n  w = {w} parameter(1)\n"
            f"  ROOT y = {y} convolution(x, w), window={{{window}}}, dim_labels={labels}\n}}\n")
    module = parse_module(text)
    args = [rng.standard_normal(p.shape.dims).astype(p.shape.dtype)
            for p in module.entry.parameters]
    res_threads = 2 if which in ("nhwc_same", "conv3d") else 1
    aot_matches_interpreter(text, args, tmp_path, blas=blas, threads=res_threads)
    uses = json.loads((tmp_path / "m_meta.json").read_text())["blas"]
    assert uses is (blas and which not in ("lhs_dilated", "grouped"))


def test_dot_layouts_through_blas(tmp_path):
    """Transposed operands, a batch of products and a matrix-vector product."""
    text = """HloModule d

ENTRY main {
  a = f32[3,40,17] parameter(0)
  b = f32[3,9,17] parameter(1)
  v = f32[40] parameter(2)
  w = f32[40,130] parameter(3)
  d = f32[3,40,9] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0},
      lhs_contracting_dims={2}, rhs_contracting_dims={2}
  m = f32[130] dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT r = (f32[3,40,9], f32[130]) tuple(d, m)
}
"""
    module = parse_module(text)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    aot_matches_interpreter(text, args, tmp_path, threads=2)
    assert json.loads((tmp_path / "m_meta.json").read_text())["blas"] is True


def test_concurrent_calls_share_the_pool(tmp_path):
    """Two host threads call the threaded object at once, each with its own arena."""
    x = rng.random((16, 32, 32, 3), dtype=np.float32)
    res = aot.compile(cifar_cnn, x, name="cnn", out_dir=str(tmp_path), threads=3)
    expected = np.asarray(xlapy.jit(cifar_cnn)(x))
    x.tofile(tmp_path / "x.bin")
    (tmp_path / "two.c").write_text(r"""
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cnn.h"
#ifndef REPS
#define REPS 20
#endif
static float* x;
static float* out[2];
static int bad = 0;
static void* work(void* arg) {
  long t = (long)arg;
  void* temp; float* y;
  if (posix_memalign(&temp, 64, cnn_temp_bytes) || posix_memalign((void**)&y, 64,
      cnn_result_bytes[0])) return NULL;
  const void* args[1] = {x};
  void* results[1] = {y};
  for (int r = 0; r < REPS; ++r) {
    if (cnn_run(args, results, temp) != 0) bad = 1;
    if (r > 0 && memcmp(y, out[t], cnn_result_bytes[0]) != 0) bad = 1;
    memcpy(out[t], y, cnn_result_bytes[0]);
  }
  return NULL;
}
int main(int argc, char** argv) {
  x = malloc(cnn_arg_bytes[0]);
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, 1, cnn_arg_bytes[0], f) != cnn_arg_bytes[0]) return 2;
  fclose(f);
  pthread_t th[2];
  for (long t = 0; t < 2; ++t) {
    out[t] = malloc(cnn_result_bytes[0]);
    pthread_create(&th[t], NULL, work, (void*)t);
  }
  for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
  f = fopen(argv[2], "wb");
  fwrite(out[0], 1, cnn_result_bytes[0], f);
  fwrite(out[1], 1, cnn_result_bytes[0], f);
  fclose(f);
  return bad;
}
""")
    exe = tmp_path / "two"
    subprocess.run([CC, "-O1", "-pthread", "-o", str(exe), str(tmp_path / "two.c"),
                    res.object_path, *res.link], check=True, capture_output=True)
    proc = subprocess.run([str(exe), str(tmp_path / "x.bin"), str(tmp_path / "y.bin")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = np.fromfile(tmp_path / "y.bin", np.float32).reshape(2, *expected.shape)
    for g in got:
        np.testing.assert_allclose(g, expected, rtol=2e-5, atol=2e-5)


def test_shared_library(tmp_path):
    x = rng.random((4, 32, 32, 3), dtype=np.float32)
    res = aot.compile(cifar_cnn, x, name="net", out_dir=str(tmp_path), shared=True)
    assert res.shared_path == str(tmp_path / "net.so")
    (tmp_path / "main.c").write_text(driver_source("net"))
    exe = tmp_path / "driver"
    subprocess.run([CC, "-O1", "-o", str(exe), str(tmp_path / "main.c"), f"-L{tmp_path}",
                    "-l:net.so", f"-Wl,-rpath,{tmp_path}"], check=True, capture_output=True)
    expected = np.asarray(xlapy.jit(cifar_cnn)(x))
    proc, (got,) = run_driver(exe, [x], [(np.float32, expected.shape)])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5)


def test_shared_without_a_compiler_is_a_typed_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-xyz")
    with pytest.raises(InvalidArgumentError, match="no-such-compiler-xyz"):
        aot.compile(lambda a: a * 2.0, np.ones(3, np.float32), name="s",
                    out_dir=str(tmp_path), shared=True)


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2", True, 1000])
def test_bad_thread_counts(threads):
    with pytest.raises(InvalidArgumentError, match="threads"):
        aot.compile(lambda a: a * 2.0, np.ones(3, np.float32), threads=threads)


def test_command_line_modes(tmp_path):
    text = """HloModule mm

ENTRY main {
  a = f32[64,48] parameter(0)
  b = f32[48,32] parameter(1)
  ROOT d = f32[64,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    src = tmp_path / "mm.hlo"
    src.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "xlapy", "aot", str(src), "--name", "mm",
                           "--out_dir", str(out), "--no-blas", "--threads", "2", "--shared"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(out / f) for f in ("mm.o", "mm.h", "mm_meta.json",
                                                          "mm.so")]
    meta = json.loads((out / "mm_meta.json").read_text())
    assert meta["blas"] is False and meta["threads"] == 2
    assert "pool of 2 threads" in (out / "mm.h").read_text()
    exe = build_driver(out, "mm")
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((64, 48), (48, 32)))
    proc, (got,) = run_driver(exe, [a, b], [(np.float32, (64, 32))])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
    bad = subprocess.run([sys.executable, "-m", "xlapy", "aot", str(src), "--threads", "0",
                          "--out_dir", str(tmp_path / "x")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1 and "threads" in bad.stderr


@pytest.mark.slow
def test_benchmark_script_runs(tmp_path):
    """benchmarks/aot.py --quick: every variant builds, agrees with the JIT and is timed."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "aot.py"), "--quick",
                           "--rounds", "1"], capture_output=True, text=True, env=env,
                          timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| MNIST")
            or line.startswith("| CNN")]
    assert len(rows) == 10
    assert all(" us |" in row for row in rows)
