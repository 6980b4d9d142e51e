"""Ahead-of-time compilation: objects + headers linked into C programs that run without
Python, checked against the reference interpreter."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy.aot as aot
import xlapy.numpy as xnp
from xlapy.errors import InvalidArgumentError, UnimplementedError
from xlapy.hlo import parse_module

from aot_harness import CC, ROOT, aot_matches_interpreter, build_driver, run_driver
from conformance import all_cases

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")


def test_seed_sum_xyz(tmp_path):
    def f(x, y, z):
        return xnp.sum(x + y * z)
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    res = aot.compile(f, x, y, z, name="seed", out_dir=str(tmp_path))
    exe = build_driver(tmp_path, "seed")
    proc, (got,) = run_driver(exe, [x, y, z], [(np.float32, ())])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(got, np.sum(x + y * z, dtype=np.float64), rtol=1e-5)
    assert res.kernels >= 1


def _mlp(x, w1, b1, w2, b2):
    h = xnp.maximum(xnp.dot(x, w1) + b1, 0.0)
    logits = xnp.dot(h, w2) + b2
    e = xnp.exp(logits - xnp.max(logits, axis=1, keepdims=True))
    return e / xnp.sum(e, axis=1, keepdims=True)


def _mlp_ref(args):
    x, w1, b1, w2, b2 = (a.astype(np.float64) for a in args)
    logits = np.maximum(x @ w1 + b1, 0.0) @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_mlp_forward(tmp_path):
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((5, 64)).astype(np.float32),
            (rng.standard_normal((64, 32)) * 0.1).astype(np.float32),
            rng.standard_normal(32).astype(np.float32),
            (rng.standard_normal((32, 10)) * 0.1).astype(np.float32),
            rng.standard_normal(10).astype(np.float32)]
    import xlapy
    module = xlapy.jit(_mlp).lower(*args).hlo_module
    (got,) = aot_matches_interpreter(module, args, tmp_path, name="mlp")
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


WHILE_COND = """HloModule loop_and_branch

cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  c = f32[] constant(1.5)
  cb = f32[4] broadcast(c), dimensions={}
  v1 = f32[4] multiply(v, cb)
  ROOT t = (s32[], f32[4]) tuple(i1, v1)
}

neg {
  p = f32[4] parameter(0)
  ROOT r = f32[4] negate(p)
}

twice {
  p = f32[4] parameter(0)
  ROOT r = f32[4] add(p, p)
}

ENTRY main {
  x = f32[4] parameter(0)
  sel = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  v = f32[4] get-tuple-element(w), index=1
  ROOT out = f32[4] conditional(sel, v, v), branch_computations={neg, twice}
}
"""


@pytest.mark.parametrize("selector", [0, 1, 7])
def test_while_and_conditional(tmp_path, selector):
    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    sel = np.array(selector, np.int32)
    (got,) = aot_matches_interpreter(WHILE_COND, [x, sel], tmp_path)
    scaled = x * np.float32(1.5) ** 5
    np.testing.assert_allclose(got, -scaled if selector == 0 else 2 * scaled, rtol=1e-6)


# every conformance-corpus module but those with a step the CPU backend runs in the
# interpreter (fft, LAPACK custom-calls, topk): test_unplaceable_conformance_modules
UNPLACEABLE = {"misc_complex_fft": "fft", "misc_custom_call_cholesky": "custom-call",
               "misc_custom_call_lu_qr_eigh": "custom-call", "shape_top_k": "topk"}
CONFORMANCE = [c.path.name for c in all_cases() if c.path.name not in UNPLACEABLE]


# the linear-algebra ones run again with the self-contained kernels
SELF_CONTAINED = [c for c in CONFORMANCE if c.startswith("la_")]


@pytest.mark.parametrize("case_name,blas", [(c, True) for c in CONFORMANCE]
                         + [(c, False) for c in SELF_CONTAINED])
def test_conformance_modules(tmp_path, case_name, blas):
    cases = {c.path.name: c for c in all_cases()}
    if case_name not in cases:
        pytest.skip("conformance corpus not present")
    case = cases[case_name]
    text = case.text()
    args, _ = case.inputs_and_outputs([p.shape for p in parse_module(text).entry.parameters])
    aot_matches_interpreter(text, args, tmp_path, rtol=max(case.rtol, 1e-5),
                            atol=max(case.atol, 1e-5), blas=blas)


@pytest.mark.parametrize("case_name", sorted(UNPLACEABLE))
def test_unplaceable_conformance_modules(tmp_path, case_name):
    cases = {c.path.name: c for c in all_cases()}
    if case_name not in cases:
        pytest.skip("conformance corpus not present")
    with pytest.raises(UnimplementedError, match=rf"cannot place %\S+ \({UNPLACEABLE[case_name]}"):
        aot.compile(cases[case_name].text(), name="m", out_dir=str(tmp_path / "no"))
    assert not (tmp_path / "no").exists()


def _mlp_object(tmp_path):
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((2, 8)).astype(np.float32),
            rng.standard_normal((8, 4)).astype(np.float32), np.zeros(4, np.float32),
            rng.standard_normal((4, 3)).astype(np.float32), np.zeros(3, np.float32)]
    res = aot.compile(_mlp, *args, name="net", out_dir=str(tmp_path))
    return res, args


def test_null_and_misaligned_buffers_get_error_codes(tmp_path):
    res, args = _mlp_object(tmp_path)
    exe = build_driver(tmp_path, "net")
    proc, _ = run_driver(exe, args, [(np.float32, (2, 3))], "--null-arg", "1")
    assert proc.returncode == 3
    assert "args[1]" in proc.stderr and "null pointer" in proc.stderr
    proc, _ = run_driver(exe, args, [(np.float32, (2, 3))], "--misalign-arg", "0")
    assert proc.returncode == 3
    assert "args[0]" in proc.stderr and "not aligned to 4 bytes" in proc.stderr
    # null arrays and a null arena, straight from C
    (tmp_path / "nulls.c").write_text("""
#include <stdio.h>
#include <string.h>
#include "net.h"
int main(void) {
  static float in[64][64] __attribute__((aligned(64)));
  static float outb[64] __attribute__((aligned(64)));
  const void* args[NET_NUM_ARGS]; void* results[NET_NUM_RESULTS];
  for (int k = 0; k < NET_NUM_ARGS; ++k) args[k] = in[k];
  results[0] = outb;
  int a = net_run(NULL, results, NULL), b = net_run(args, NULL, NULL);
  int c = net_run(args, results, NULL);
  int d = net_run(args, results, (char*)outb + 4);
  printf("%d %d %d %d\\n%s\\n%s\\n%s\\n%s\\n%s\\n", a, b, c, d, net_error_message(a),
         net_error_message(b), net_error_message(c), net_error_message(d),
         net_error_message(12345));
  return 0;
}
""")
    exe2 = tmp_path / "nulls"
    subprocess.run([CC, "-o", str(exe2), str(tmp_path / "nulls.c"), str(tmp_path / "net.o"),
                    *res.link], check=True, capture_output=True)
    lines = subprocess.run([str(exe2)], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    codes = [int(c) for c in lines[0].split()]
    assert res.temp_bytes > 0
    assert all(c != 0 for c in codes) and len(set(codes)) == 4
    assert "args is a null pointer" in lines[1]
    assert "results is a null pointer" in lines[2]
    assert "temp is a null pointer" in lines[3]
    assert "temp is not aligned to 64 bytes" in lines[4]
    assert "unknown error code" in lines[5]


def test_header_meta_and_exports(tmp_path):
    res, args = _mlp_object(tmp_path)
    header = Path(res.header_path).read_text()
    for line in ["#define NET_NUM_ARGS 5", "#define NET_NUM_RESULTS 1",
                 "extern const size_t net_arg_bytes[NET_NUM_ARGS];",
                 "extern const size_t net_result_bytes[NET_NUM_RESULTS];",
                 "extern const size_t net_temp_bytes;",
                 "int net_run(const void* const* args, void* const* results, void* temp);",
                 "const char* net_error_message(int code);",
                 "args[1] = Arg_1: f32[8,4], 128 bytes", "results[0] = result: f32[2,3]"]:
        assert line in header, line
    meta = json.loads(Path(res.meta_path).read_text())
    assert [a["shape"] for a in meta["args"]] == [[2, 8], [8, 4], [4], [4, 3], [3]]
    assert meta["results"][0]["dtype"] == "f32" and meta["temp_bytes"] == res.temp_bytes
    assert len(meta["hlo_fingerprint_sha256"]) == 64 and meta["target"]["cpu"]
    nm = shutil.which("nm")
    if nm:
        out = subprocess.run([nm, "-g", "--defined-only", res.object_path], capture_output=True,
                             text=True, check=True).stdout
        exported = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
        assert exported == ["net_arg_bytes", "net_error_message", "net_result_bytes",
                            "net_run", "net_temp_bytes"]
    # a C++ compiler accepts the header too, and its class runs the object
    cxx = shutil.which("c++")
    if cxx:
        (tmp_path / "use.cc").write_text(r"""
#include <cstdio>
#include <cstring>
#include "net.h"
int main(int argc, char** argv) {
  NetComputation m;
  static_assert(NetComputation::kNumArgs == NET_NUM_ARGS, "args");
  for (int i = 0; i < m.kNumArgs; ++i) {
    std::FILE* f = std::fopen(argv[1 + i], "rb");
    if (!f || std::fread(m.arg_data(i), 1, m.arg_size(i), f) != m.arg_size(i)) return 2;
    std::fclose(f);
  }
  if (!m.Run()) { std::fprintf(stderr, "%s\n", m.error_msg()); return 3; }
  std::FILE* f = std::fopen(argv[1 + m.kNumArgs], "wb");
  std::fwrite(m.result_data(0), 1, m.result_size(0), f);
  std::fclose(f);
  return 0;
}
""")
        exe = tmp_path / "use"
        subprocess.run([cxx, "-std=c++17", "-Wall", "-Werror", "-o", str(exe),
                        str(tmp_path / "use.cc"), res.object_path, *res.link],
                       check=True, capture_output=True)
        proc, (got,) = run_driver(exe, args, [(np.float32, (2, 3))])
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_allclose(got, _mlp_ref(args), rtol=1e-5, atol=1e-6)


def test_unplaceable_host_callback_is_named_with_its_line(tmp_path):
    text = """HloModule cb

ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] exponential(x)
  ROOT c = f32[4] custom-call(y), custom_call_target="xla_python_cpu_callback"
}
"""
    with pytest.raises(UnimplementedError, match=r"%c \(custom-call\).*line 6"):
        aot.compile(text, name="cb", out_dir=str(tmp_path / "not-written"))
    assert not (tmp_path / "not-written").exists()


def test_bad_name_and_input():
    with pytest.raises(InvalidArgumentError, match="C identifier"):
        aot.compile(WHILE_COND, name="1bad-name")
    with pytest.raises(InvalidArgumentError, match="not int"):
        aot.compile(42)


def test_command_line(tmp_path):
    src = tmp_path / "loop.hlo"
    src.write_text(WHILE_COND)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    x86 = os.uname().machine == "x86_64"
    proc = subprocess.run([sys.executable, "-m", "xlapy", "aot", str(src), "--name", "loop",
                           "--out_dir", str(tmp_path / "out")]
                          + (["--target_cpu", "x86-64"] if x86 else []),
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    assert (out / "loop.o").exists() and (out / "loop.h").exists()
    meta = json.loads((out / "loop_meta.json").read_text())
    if x86:
        assert meta["target"]["cpu"] == "x86-64"
    exe = build_driver(out, "loop")
    x = np.arange(4, dtype=np.float32)
    proc, (got,) = run_driver(exe, [x, np.array(1, np.int32)], [(np.float32, (4,))])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(got, 2 * x * np.float32(1.5) ** 5, rtol=1e-6)
    bad = subprocess.run([sys.executable, "-m", "xlapy", "aot", str(tmp_path / "missing.hlo")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1 and "xlapy aot" in bad.stderr


@pytest.mark.parametrize("blas", [1, pytest.param(0, marks=pytest.mark.slow)])
def test_example_program(tmp_path, blas):
    """examples/aot: export, link with the documented line, run; same classes as the JIT."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([make, "-s", "-C", str(ROOT / "examples" / "aot"),
                           f"BUILD={tmp_path}", f"PY={sys.executable}", f"BLAS={blas}"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if "-> class" in line]
    expected = np.loadtxt(tmp_path / "expected.txt")
    link = (tmp_path / "link_flags.txt").read_text()
    # BLAS=1 links OpenBLAS only when a product is left to it (this model's small dots and
    # convolutions are generated kernels); BLAS=0 never does
    assert blas or "scipy_openblas" not in link
    assert len(rows) == len(expected) == 4
    for line, want in zip(rows, expected):
        probs = np.array(line.split("->")[0].split(), dtype=np.float64)
        np.testing.assert_allclose(probs, want, atol=2e-6)
        assert int(line.split("class")[1]) == int(want.argmax())


DOTS = {
    # (lhs, rhs, result, dimension numbers): both kernel shapes, other element types
    "matmul_f32": ("f32[3,5]", "f32[5,4]", "f32[3,4]",
                   "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    "matvec_f64": ("f64[6]", "f64[6,2]", "f64[2]",
                   "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
    "batched_transposed_rhs": ("f32[2,3,5]", "f32[2,4,5]", "f32[2,3,4]",
                               "lhs_batch_dims={0}, rhs_batch_dims={0}, "
                               "lhs_contracting_dims={2}, rhs_contracting_dims={2}"),
    "two_contracting": ("f32[3,4,2]", "f32[2,4,5]", "f32[3,5]",
                        "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}"),
    "int32": ("s32[4,3]", "s32[3,2]", "s32[4,2]",
              "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    "batched_int32": ("s32[2,3,4]", "s32[2,4,5]", "s32[2,3,5]",
                      "lhs_batch_dims={0}, rhs_batch_dims={0}, "
                      "lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
    "f16": ("f16[2,8]", "f16[8,3]", "f16[2,3]",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    # operands converted to the result's type before the products
    "s8_to_s32": ("s8[3,4]", "s8[4,2]", "s32[3,2]",
                  "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    "f64_to_f32": ("f64[3,4]", "f64[4,2]", "f32[3,2]",
                   "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    "empty_contraction": ("f32[2,0]", "f32[0,3]", "f32[2,3]",
                          "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    # register blocks of the self-contained kernel: full and short row blocks, column
    # strips and a tail, a batch
    "blocked_f32": ("f32[9,7]", "f32[7,37]", "f32[9,37]",
                    "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    "blocked_batched_f64": ("f64[2,8,5]", "f64[2,5,20]", "f64[2,8,20]",
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, "
                            "lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
    "blocked_lhs_transposed": ("f32[6,5]", "f32[6,16]", "f32[5,16]",
                               "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
}


@pytest.mark.parametrize("blas", [True, False])
@pytest.mark.parametrize("which", sorted(DOTS))
def test_dot_kernels_match_the_interpreter(tmp_path, which, blas):
    lhs, rhs, out, dnums = DOTS[which]
    text = (f"HloModule d\n\nENTRY main {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n"
            f"  ROOT d = {out} dot(a, b), {dnums}\n}}\n")
    module = parse_module(text)
    rng = np.random.default_rng(3)
    args = []
    for p in module.entry.parameters:
        a = rng.integers(-5, 6, p.shape.dims) if p.shape.dtype.kind == "i" else \
            rng.standard_normal(p.shape.dims)
        args.append(np.asarray(a).astype(p.shape.dtype))
    tol = 2e-3 if which == "f16" else 1e-5
    aot_matches_interpreter(text, args, tmp_path, rtol=tol, atol=tol, blas=blas)


# LLVM feature -> /proc/cpuinfo flag, for features a test CPU may lack
_RARE = {"amx-tile": "amx_tile", "avx512vp2intersect": "avx512_vp2intersect",
         "avx512fp16": "avx512_fp16", "sha": "sha_ni"}


@pytest.mark.skipif(os.uname().machine != "x86_64" or not os.path.exists("/proc/cpuinfo"),
                    reason="x86-64 Linux only")
def test_missing_cpu_feature_is_an_error_code_not_a_crash(tmp_path):
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    absent = [f for f, flag in _RARE.items() if flag not in flags]
    if not absent:
        pytest.skip("this CPU has every feature the test could ask for")
    x = np.arange(6, dtype=np.float32)
    aot.compile(lambda a: a * 2.0, x, name="feat", out_dir=str(tmp_path),
                target_cpu="x86-64", target_features="+" + absent[0])
    meta = json.loads((tmp_path / "feat_meta.json").read_text())
    assert meta["target"] == {**meta["target"], "cpu": "x86-64",
                              "features": "+" + absent[0]}
    exe = build_driver(tmp_path, "feat")
    proc, _ = run_driver(exe, [x], [(np.float32, (6,))])
    assert proc.returncode == 3
    assert f"this CPU lacks {absent[0]}" in proc.stderr
    # the portable level this CPU has runs
    if {"avx2", "fma", "bmi2"} <= flags:
        aot.compile(lambda a: a * 2.0, x, name="feat", out_dir=str(tmp_path / "v3"),
                    target_cpu="x86-64-v3")
        exe = build_driver(tmp_path / "v3", "feat")
        proc, (got,) = run_driver(exe, [x], [(np.float32, (6,))])
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(got, 2 * x)
