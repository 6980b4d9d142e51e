"""One prepared check of the GPU backend on a machine with an NVIDIA GPU.

Run from the repository root (``benchmarks/gpu_check.sh`` sets ``PYTHONPATH``)::

    python3 benchmarks/gpu_check.py            # backend "gpu"
    GPU_CHECK_BACKEND=gpu_sim python3 benchmarks/gpu_check.py   # rehearsal, no GPU

Sections: the driver and libraries found; the GPU tests (``tests/test_gpu.py``, when
pytest is installed); the real-XLA conformance corpus on the backend (pass/fail per case,
the ops that fell back to the host, a total); a sample of random programs against the
interpreter; the benchmarks against JAX's GPU backend on the same card in the same run
(W1 ``sum(x + y*z)`` vs the backend's own device-to-device copy bandwidth and
``jax.jit``; row softmax and layernorm; medians of timed runs, CUDA events on the GPU).
Everything goes to ``$OUT/gpu_check.txt`` (when ``$OUT`` is set) and the table is printed
last. The simulator rehearsal uses small sizes.
"""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# JAX must not take 75% of the GPU's memory before xlapy allocates its buffers
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, str(ROOT / "tests"))
BACKEND = os.environ.get("GPU_CHECK_BACKEND", "gpu")
SIM = BACKEND != "gpu"
OUT = os.environ.get("OUT")
LINES: list[str] = []
TABLE: list[tuple[str, str, str, str]] = []
DEADLINE = time.time() + float(os.environ.get("GPU_CHECK_SECONDS", "280"))


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    LINES.append(line)


def save() -> None:
    if OUT:
        Path(OUT).mkdir(parents=True, exist_ok=True)
        (Path(OUT) / "gpu_check.txt").write_text("\n".join(LINES) + "\n")


def left() -> float:
    return DEADLINE - time.time()


# ----------------------------------------------------------------------------- sections
def environment():
    say("== environment")
    say("date", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "python",
        platform.python_version(), "backend", BACKEND)
    import llvmlite
    say("numpy", np.__version__, "llvmlite", llvmlite.__version__)
    from xlapy.client.backends import get_backend
    be = get_backend(BACKEND)
    dev = be.device
    if not SIM:
        free, total = dev.memory_info()
        say("device", dev.device_name, "cc", dev.compute_capability, "sm", dev.sm,
            f"memory free {free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB")
        from xlapy.backends.gpu.cublas import cublas
        say("cuBLAS", "found" if cublas(dev) is not None else "NOT found (dots on the host)")
    from xlapy.backends.gpu.ptx import ptxas_path
    say("ptxas", ptxas_path() or "not installed")
    return be


def gpu_tests():
    say("== GPU tests (tests/test_gpu.py)")
    try:
        import pytest  # noqa: F401
    except ImportError:
        say("pytest is not installed: skipped (the corpus below covers the backend)")
        return
    env = dict(os.environ, XLAPY_GPU_TEST_DEVICE="1" if not SIM else "0")
    try:
        # the device tests and the kernels' own tests (the corpus runs below)
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-m", "not slow", "-k",
                            "device or split or softmax or integer or nan or jit or memory",
                            "tests/test_gpu.py"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=max(30, min(120, left() - 150)))
        tail = (r.stdout + r.stderr).strip().splitlines()[-15:]
        for line in tail:
            say("  " + line)
    except subprocess.TimeoutExpired:
        say("  the GPU tests timed out")


def conformance(be):
    say(f"== conformance corpus on backend={BACKEND}")
    from conformance import CASES_DIR, all_cases
    from xlapy.client import compare_outputs
    from xlapy.client.run import flatten_result, prepare_argument
    from xlapy.hlo import parse_module
    cases = all_cases()
    if not cases:
        say(f"no conformance cases at {CASES_DIR} (set XLAPY_CONFORMANCE_DIR)")
        TABLE.append(("conformance", "no cases", "", ""))
        return
    ok = bad = 0
    fails = []
    for case in cases:
        if left() < 100:
            say("  (stopped: time budget)")
            break
        try:
            module = parse_module(case.text("module.hlo"))
            params = module.entry.parameters
            args, expected = case.inputs_and_outputs([p.shape for p in params])
            args = [prepare_argument(a, p.shape, f"argument {i}")
                    for i, (a, p) in enumerate(zip(args, params))]
            exe = be.compile(module)
            got = flatten_result(exe.execute(args))
            m = compare_outputs(got, expected, case.rtol, case.atol)
            if m:
                raise AssertionError(m[0].message)
            ok += 1
            fb = exe.fallback_opcodes()
            say(f"  PASS {case.name}" + (f"  (host: {', '.join(fb)})" if fb else ""))
        except Exception as e:  # noqa: BLE001 - every failure is reported
            bad += 1
            fails.append(case.name)
            say(f"  FAIL {case.name}: {type(e).__name__}: {str(e)[:400]}")
    say(f"conformance: {ok} passed, {bad} failed of {len(cases)}")
    TABLE.append(("conformance", f"{ok}/{ok + bad} pass", ",".join(fails)[:60], ""))


def random_programs(count: int):
    say(f"== {count} random programs on backend={BACKEND} vs the interpreter")
    try:
        import hlo_gen_wide as G
    except Exception as e:  # noqa: BLE001
        say("random program generator not importable:", e)
        return
    ok = bad = 0
    for seed in range(count):
        if left() < 80:
            say("  (stopped: time budget)")
            break
        try:
            case = G.generate(seed, "small")
            m = G.check_case(case, (BACKEND,))
        except Exception as e:  # noqa: BLE001
            m = [f"{type(e).__name__}: {e}"]
        if m:
            bad += 1
            say(f"  FAIL seed {seed}: {str(m[0])[:300]}")
        else:
            ok += 1
    say(f"random programs: {ok} passed, {bad} failed")
    TABLE.append(("random programs", f"{ok}/{ok + bad} pass", "", ""))


# ----------------------------------------------------------------------------- benchmarks
ADD = "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"
MAX = ("max {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
       " ROOT s = f32[] maximum(a, b)\n}\n")


def w1_text(n: int) -> str:
    return (f"HloModule w1\n{ADD}ENTRY e {{\n x = f32[{n}] parameter(0)\n"
            f" y = f32[{n}] parameter(1)\n z = f32[{n}] parameter(2)\n"
            f" m = f32[{n}] multiply(y, z)\n s = f32[{n}] add(x, m)\n c = f32[] constant(0)\n"
            f" ROOT r = f32[] reduce(s, c), dimensions={{0}}, to_apply=add\n}}\n")


def softmax_text(r: int, c: int) -> str:
    return (f"HloModule softmax\n{ADD}{MAX}ENTRY e {{\n x = f32[{r},{c}] parameter(0)\n"
            f" ninf = f32[] constant(-inf)\n m = f32[{r}] reduce(x, ninf), dimensions={{1}}, "
            f"to_apply=max\n mb = f32[{r},{c}] broadcast(m), dimensions={{0}}\n"
            f" d = f32[{r},{c}] subtract(x, mb)\n e = f32[{r},{c}] exponential(d)\n"
            f" z = f32[] constant(0)\n s = f32[{r}] reduce(e, z), dimensions={{1}}, "
            f"to_apply=add\n sb = f32[{r},{c}] broadcast(s), dimensions={{0}}\n"
            f" ROOT o = f32[{r},{c}] divide(e, sb)\n}}\n")


def layernorm_text(r: int, c: int) -> str:
    return (f"HloModule layernorm\n{ADD}ENTRY e {{\n x = f32[{r},{c}] parameter(0)\n"
            f" g = f32[{c}] parameter(1)\n b = f32[{c}] parameter(2)\n z = f32[] constant(0)\n"
            f" n = f32[] constant({c})\n eps = f32[] constant(1e-5)\n"
            f" s = f32[{r}] reduce(x, z), dimensions={{1}}, to_apply=add\n"
            f" nb = f32[{r}] broadcast(n), dimensions={{}}\n mean = f32[{r}] divide(s, nb)\n"
            f" mb = f32[{r},{c}] broadcast(mean), dimensions={{0}}\n"
            f" xc = f32[{r},{c}] subtract(x, mb)\n sq = f32[{r},{c}] multiply(xc, xc)\n"
            f" v = f32[{r}] reduce(sq, z), dimensions={{1}}, to_apply=add\n"
            f" var = f32[{r}] divide(v, nb)\n eb = f32[{r}] broadcast(eps), dimensions={{}}\n"
            f" ve = f32[{r}] add(var, eb)\n rs = f32[{r}] rsqrt(ve)\n"
            f" rb = f32[{r},{c}] broadcast(rs), dimensions={{0}}\n y = f32[{r},{c}] multiply(xc, rb)\n"
            f" gb = f32[{r},{c}] broadcast(g), dimensions={{1}}\n bb = f32[{r},{c}] broadcast(b), "
            f"dimensions={{1}}\n yg = f32[{r},{c}] multiply(y, gb)\n"
            f" ROOT o = f32[{r},{c}] add(yg, bb)\n}}\n")


def timer(be):
    if SIM:
        class Wall:
            def start(self):
                self.t = time.perf_counter()

            def stop(self):
                return time.perf_counter() - self.t
        return Wall()
    return be.device.event_timer()


def median_time(run, t, reps: int) -> float:
    run()
    times = []
    for _ in range(reps):
        t.start()
        run()
        times.append(t.stop())
    return statistics.median(times)


def wall_time(run, sync, reps: int) -> float:
    run()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def ours(be, text: str, args: list, reps: int, want=None, rtol=1e-4):
    """(event time, wall time, thunk kinds) of ``text`` on the backend's device."""
    from xlapy.hlo import parse_module
    exe = be.compile(parse_module(text))
    got = exe.execute(args)
    if want is not None:
        err = np.max(np.abs(np.asarray(got, np.float64) - want) / (np.abs(want) + 1e-3))
        say(f"  result check: max relative error {err:.2e}" + ("  WRONG RESULT" if err > rtol
                                                               else ""))
    kinds = sorted(set(exe.thunk_kinds().values()))
    for k in exe.plan.walk():
        if k.kind == "launch":
            say(f"  kernel {k.name}: grid {k.grid} x block {k.block}")
    t_event = median_time(exe.run_on_device, timer(be), reps)
    t_wall = wall_time(exe.run_on_device, be.device.synchronize, reps)
    return t_event, t_wall, kinds


def _jax():
    import jax
    return jax


def _jnp():
    import jax.numpy as jnp
    return jnp


def jax_time(fn, args, reps: int):
    try:
        import jax
        if SIM and os.environ.get("GPU_CHECK_JAX_CPU") != "1":
            return None
        if not SIM:
            say(f"  jax {jax.__version__} on {jax.devices()[0]}")
        dev = [jax.device_put(a) for a in args]
        f = jax.jit(fn)
        f(*dev).block_until_ready()
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            f(*dev).block_until_ready()
            times.append(time.perf_counter() - t)
        return statistics.median(times)
    except Exception as e:  # noqa: BLE001
        say("  jax unavailable:", type(e).__name__, str(e)[:200])
        return None


def row(name: str, times: tuple, t_ref: float | None, ref_name: str, extra: str = "") -> None:
    """One benchmark line: xlapy's event and wall times, the reference's wall time, and
    the speed-up wall over wall (both include the launch from Python)."""
    t_event, t_wall = times
    ratio = f"{t_ref / t_wall:.2f}x" if t_ref else "-"
    ref = f"{t_ref * 1e3:.3f} ms" if t_ref else "-"
    say(f"  {name}: xlapy {t_event * 1e3:.3f} ms (events), {t_wall * 1e3:.3f} ms (wall); "
        f"{ref_name} {ref} (wall); xlapy speed-up {ratio} {extra}")
    TABLE.append((name, f"{t_event * 1e3:.3f}/{t_wall * 1e3:.3f} ms",
                   f"{ref_name} {ref}", f"{ratio} {extra}"))


def benchmarks(be):
    say("== benchmarks (medians; CUDA events for xlapy, block_until_ready for jax)")
    reps = 3 if SIM else 10
    n = 1_000_000 if SIM else 100_000_000
    r, c = (64, 4096) if SIM else (16384, 4096)
    rng = np.random.default_rng(0)
    # device-to-device copy bandwidth of the backend itself
    nbytes = n * 4
    dev = be.device
    src, dst = dev.alloc(nbytes), dev.alloc(nbytes)
    t_copy = median_time(lambda: dev.d2d(dst, src, nbytes), timer(be), reps)
    dev.free(src)
    dev.free(dst)
    copy_bw = 2 * nbytes / t_copy
    say(f"  d2d copy of {nbytes / 1e6:.0f} MB: {t_copy * 1e3:.3f} ms = {copy_bw / 1e9:.1f} GB/s")
    TABLE.append(("d2d copy", f"{t_copy * 1e3:.3f} ms", f"{copy_bw / 1e9:.1f} GB/s", ""))
    if left() < 40:
        return
    x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    want = float(np.sum(x.astype(np.float64) + y.astype(np.float64) * z))
    t, tw, kinds = ours(be, w1_text(n), [x, y, z], reps, np.float64(want), rtol=1e-3)
    bw = 3 * nbytes / t
    tj = jax_time(lambda a, b, d: _jnp().sum(a + b * d), [x, y, z], reps)
    row(f"W1 sum(x+y*z) N={n:.0e}", (t, tw), tj, "jax",
        f"[{bw / 1e9:.0f} GB/s = {bw / copy_bw * 100:.0f}% of copy; {','.join(kinds)}]")
    del x, y, z
    if left() < 30:
        return
    xs = rng.standard_normal((r, c), dtype=np.float32)
    e = np.exp(xs - xs.max(1, keepdims=True))
    t, tw, kinds = ours(be, softmax_text(r, c), [xs], reps, e / e.sum(1, keepdims=True))
    tj = jax_time(lambda a: _jax().nn.softmax(a, axis=-1), [xs], reps)
    row(f"softmax [{r},{c}]", (t, tw), tj, "jax", ",".join(kinds))
    if left() < 20:
        return
    g = rng.standard_normal(c, dtype=np.float32)
    b = rng.standard_normal(c, dtype=np.float32)
    mu = xs.mean(1, keepdims=True)
    var = ((xs - mu) ** 2).mean(1, keepdims=True)
    want = (xs - mu) / np.sqrt(var + 1e-5) * g + b

    def ln(a, gg, bb):
        jnp = _jnp()
        m = jnp.mean(a, axis=1, keepdims=True)
        v = jnp.mean((a - m) ** 2, axis=1, keepdims=True)
        return (a - m) * _jax().lax.rsqrt(v + 1e-5) * gg + bb
    t, tw, kinds = ours(be, layernorm_text(r, c), [xs, g, b], reps, want, rtol=1e-3)
    tj = jax_time(ln, [xs, g, b], reps)
    row(f"layernorm [{r},{c}]", (t, tw), tj, "jax", ",".join(kinds))


def main() -> int:
    start = time.time()
    try:
        be = environment()
    except Exception as e:  # noqa: BLE001
        say("NO DEVICE:", type(e).__name__, e)
        save()
        return 1
    for section in (gpu_tests, lambda: conformance(be),
                    lambda: random_programs(40 if not SIM else 10), lambda: benchmarks(be)):
        try:
            section()
        except Exception:  # noqa: BLE001 - keep going: every section reports
            say("SECTION FAILED:\n" + traceback.format_exc())
        save()
    say(f"== summary ({time.time() - start:.0f} s, backend={BACKEND})")
    for name, a, b, c in TABLE:
        say(f"{name:32s} {a:18s} {b:28s} {c}")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
