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
from gpu_programs import layernorm_text, softmax_text, w1_text  # noqa: E402  (in tests/)
BACKEND = os.environ.get("GPU_CHECK_BACKEND", "gpu")
SIM = BACKEND != "gpu"
OUT = os.environ.get("OUT")
LINES: list[str] = []
TABLE: list[tuple[str, str, str, str]] = []
DEADLINE = time.time() + float(os.environ.get("GPU_CHECK_SECONDS", "330"))


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
    say("== GPU tests (tests/test_gpu*.py)")
    try:
        import pytest  # noqa: F401
    except ImportError:
        say("pytest is not installed: skipped (the corpus below covers the backend)")
        return
    env = dict(os.environ, XLAPY_GPU_TEST_DEVICE="1" if not SIM else "0")
    try:
        # test_gpu.py: the device tests and the kernels' own tests (the corpus runs below);
        # each feature's own file (test_gpu_*.py) whole
        runs = [["-k", "device or split or softmax or integer or nan or jit or memory or cublas",
                 "tests/test_gpu.py"]]
        runs += [[str(p.relative_to(ROOT))] for p in sorted(ROOT.glob("tests/test_gpu_*.py"))]
        for extra in runs:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "-m", "not slow", *extra], cwd=ROOT, env=env,
                               capture_output=True, text=True,
                               timeout=max(30, min(120, left() - 150)))
            say(f"  {extra[-1]}:")
            for line in (r.stdout + r.stderr).strip().splitlines()[-15:]:
                say("    " + line)
    except subprocess.TimeoutExpired:
        say("  the GPU tests timed out")


def conformance(be):
    say(f"== conformance corpus on backend={BACKEND}")
    from conformance import CASES_DIR, all_cases, run_case
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
            exe, m = run_case(be, case)
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
    """Median of ``reps`` calls, each followed by a synchronization (dispatch included)."""
    run()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def loop_time(run, sync, k: int) -> float:
    """Per call: ``k`` calls back to back, one synchronization at the end (pipelined)."""
    run()
    sync()
    t = time.perf_counter()
    for _ in range(k):
        run()
    sync()
    return (time.perf_counter() - t) / k


def _leaves(x) -> list:
    if isinstance(x, (tuple, list)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [np.asarray(x, np.float64)]


def check_result(got, want, tol: float) -> None:
    """Norm-wise (||got - want|| / ||want||) and element-wise (max |got - want| / max |want|)
    errors against a float64 reference, per output leaf (the worst is printed)."""
    norm = elem = 0.0
    for g, w in zip(_leaves(got), _leaves(want)):
        d = g - w
        scale = max(np.linalg.norm(w), 1e-30)
        norm = max(norm, float(np.linalg.norm(d) / scale))
        elem = max(elem, float(np.max(np.abs(d), initial=0.0) /
                               max(np.max(np.abs(w), initial=0.0), 1e-30)))
    say(f"  result check vs float64: norm-wise {norm:.2e}, element-wise {elem:.2e} of max"
        + ("  WRONG RESULT" if norm > tol else ""))


def ours(be, text: str, args: list, reps: int, want=None, tol=1e-5):
    """(event, wall, loop) seconds of ``text`` on the backend's device."""
    from xlapy.hlo import parse_module
    exe = be.compile(parse_module(text))
    got = exe.execute(args)
    if want is not None:
        check_result(got, want, tol)
    kinds = sorted(set(exe.thunk_kinds().values()))
    launches = [k for k in exe.plan.walk() if k.kind == "launch"]
    for k in launches[:4]:
        say(f"  kernel {k.name}: grid {k.grid} x block {k.block}")
    fb = exe.fallback_opcodes()
    say(f"  {len(launches)} kernels; thunks: {', '.join(kinds)}"
        + (f"; on the host: {', '.join(fb)}" if fb else ""))
    sync = be.device.synchronize
    return (median_time(exe.run_on_device, timer(be), reps),
            wall_time(exe.run_on_device, sync, reps),
            loop_time(exe.run_on_device, sync, reps))


def _jax():
    import jax
    return jax


def _jnp():
    import jax.numpy as jnp
    return jnp


def jax_time(fn, args, reps: int, precision: str = "highest"):
    """(wall, loop) seconds of ``jax.jit(fn)`` (matmuls at ``precision``), None without jax."""
    try:
        import jax
        if SIM and os.environ.get("GPU_CHECK_JAX_CPU") != "1":
            return None
        with jax.default_matmul_precision(precision):
            dev = jax.device_put(args)
            f = jax.jit(fn)
            out = []
            run = lambda: out.append(f(*dev)) or (len(out) > 2 and out.pop(0))  # noqa: E731
            sync = lambda: jax.block_until_ready(out[-1])                        # noqa: E731
            return wall_time(run, sync, reps), loop_time(run, sync, reps)
    except Exception as e:  # noqa: BLE001
        say("  jax unavailable:", type(e).__name__, str(e)[:200])
        return None


def row(name: str, mine: tuple, ref: tuple | None, extra: str = "") -> None:
    """One benchmark line: xlapy's event, wall and loop times, JAX's wall and loop times,
    and xlapy's speed-ups (wall over wall, loop over loop)."""
    ev, wall, loop = mine
    ms = lambda t: f"{t * 1e3:.3f}"      # noqa: E731
    if ref:
        sp = f"{ref[0] / wall:.2f}x wall, {ref[1] / loop:.2f}x loop"
        jx = f"jax {ms(ref[0])}/{ms(ref[1])}"
    else:
        sp, jx = "-", "jax -"
    say(f"  {name}: xlapy {ms(ev)} ms events, {ms(wall)} wall, {ms(loop)} loop; {jx} ms "
        f"wall/loop; xlapy speed-up {sp} {extra}")
    TABLE.append((name, f"{ms(ev)}/{ms(wall)}/{ms(loop)}", jx, f"{sp} {extra}"))


def lowered_from_jax(fn, args) -> str | None:
    """JAX's HLO text for ``fn`` (full-precision matmuls), None without jax."""
    try:
        import jax
        with jax.default_matmul_precision("highest"):
            return jax.jit(fn).lower(*args).as_text(dialect="hlo")
    except Exception as e:  # noqa: BLE001
        say("  cannot lower with jax:", type(e).__name__, str(e)[:300])
        return None


def jax_reference(fn, args):
    """``fn`` on JAX's CPU backend in float64 (the reference for the models)."""
    import jax
    cpu = jax.devices("cpu")[0]
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        with jax.default_device(cpu), jax.default_matmul_precision("highest"):
            a64 = jax.tree_util.tree_map(
                lambda a: jax.device_put(np.asarray(a, np.float64), cpu), args)
            return jax.tree_util.tree_map(np.asarray, jax.jit(fn)(*a64))
    finally:
        jax.config.update("jax_enable_x64", before)


def mlp_step(params, x, y):
    jax, jnp = _jax(), _jnp()

    def loss(p):
        h = x
        for i, (w, b) in enumerate(p):
            h = h @ w + b
            if i < len(p) - 1:
                h = jax.nn.relu(h)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h) * y, axis=-1))
    value, grads = jax.value_and_grad(loss)(params)
    return value, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]


def transformer_block(p, x):
    jax, jnp = _jax(), _jnp()
    heads = p["heads"]

    def norm(v, g, b):
        m = jnp.mean(v, -1, keepdims=True)
        var = jnp.mean((v - m) ** 2, -1, keepdims=True)
        return (v - m) * jax.lax.rsqrt(var + 1e-5) * g + b
    bsz, seq, d = x.shape
    h = norm(x, p["g1"], p["b1"])
    q, k, v = (jnp.reshape(h @ p[w], (bsz, seq, heads, d // heads)).transpose(0, 2, 1, 3)
               for w in ("wq", "wk", "wv"))
    att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads), axis=-1)
    o = (att @ v).transpose(0, 2, 1, 3).reshape(bsz, seq, d) @ p["wo"]
    x = x + o
    h = norm(x, p["g2"], p["b2"])
    return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]


def profile_table(be, text: str, args: list, reps: int) -> None:
    """Print ``--xla_hlo_profile``'s per-thunk times of ``text`` (CUDA events per thunk, so
    the profiled calls are serialized), the mean over ``reps`` calls after a warm-up."""
    from xlapy.config import debug_options
    from xlapy.hlo import parse_module
    try:
        with debug_options(xla_hlo_profile=True):
            exe = be.compile(parse_module(text))
        exe.execute(args)
        exe.profiler.reset()
        for _ in range(reps):
            exe.run_on_device()
        be.device.synchronize()
        say(f"  per-thunk profile (--xla_hlo_profile, totals over {reps} calls):")
        for line in exe.profile_text(30).splitlines():
            say("    " + line)
    except Exception as e:  # noqa: BLE001
        say("  no profile:", type(e).__name__, str(e)[:300])


def models(be, reps: int) -> None:
    rng = np.random.default_rng(1)
    f32 = lambda *s: (rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)  # noqa: E731
    sizes = [32, 64, 64, 16] if SIM else [1024, 4096, 4096, 1024]
    batch = 16 if SIM else 1024
    params = [(f32(a, b), np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]
    x = f32(batch, sizes[0])
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    jobs = [(f"MLP step {sizes} batch {batch}", mlp_step, [params, x, y], 1e-4)]
    bsz, seq, d, heads, ff = (2, 16, 32, 4, 64) if SIM else (8, 512, 1024, 16, 4096)
    tp = {"wq": f32(d, d), "wk": f32(d, d), "wv": f32(d, d), "wo": f32(d, d),
          "w1": f32(d, ff), "w2": f32(ff, d), "g1": np.ones(d, np.float32),
          "b1": np.zeros(d, np.float32), "g2": np.ones(d, np.float32),
          "b2": np.zeros(d, np.float32)}
    xt = f32(bsz, seq, d)

    def block(p, v):
        return transformer_block(dict(p, heads=heads), v)
    jobs.append((f"transformer block [{bsz},{seq},{d}] h{heads} ff{ff}", block, [tp, xt], 1e-4))
    import jax
    for name, fn, args, tol in jobs:
        if left() < 25:
            return
        text = lowered_from_jax(fn, args)
        if text is None:
            return
        leaves = jax.tree_util.tree_leaves(args)
        try:
            want = jax_reference(fn, args)
        except Exception as e:  # noqa: BLE001
            say("  no float64 reference:", type(e).__name__, str(e)[:200])
            want = None
        mine = ours(be, text, leaves, reps, want, tol)
        row(name, mine, jax_time(fn, args, reps), "full fp32 both")
        if fn is mlp_step:
            profile_table(be, text, leaves, 3)
        tf32 = jax_time(fn, args, reps, "default")
        if tf32:
            say(f"  (jax at its default matmul precision (TF32): {tf32[0] * 1e3:.3f} ms wall, "
                f"{tf32[1] * 1e3:.3f} ms loop)")


def oom_check() -> None:
    """A device allocation larger than the free memory: a clear error, then work goes on."""
    say("== device out-of-memory")
    from xlapy.backends.gpu import GpuSimBackend
    from xlapy.backends.gpu.device import SimDevice
    from xlapy.client.backends import get_backend
    from xlapy.errors import ResourceExhaustedError
    from xlapy.hlo import parse_module
    be = GpuSimBackend(SimDevice(memory_limit=1 << 30)) if SIM else get_backend(BACKEND)
    n = (1 << 29) if SIM else 80_000_000_000
    text = (f"HloModule big\nENTRY e {{\n x = f32[{n}] parameter(0)\n"
            f" ROOT y = f32[{n}] negate(x)\n}}\n")
    try:
        be.compile(parse_module(text))
        say("  no error: the allocation succeeded (unexpected)")
        TABLE.append(("device OOM", "no error", "", ""))
    except ResourceExhaustedError as e:
        say(f"  ResourceExhaustedError: {e}")
        ok = float(be.compile(parse_module(w1_text(1000))).execute(
            [np.ones(1000, np.float32)] * 3)) == 2000.0
        say(f"  the next program runs: {ok}")
        TABLE.append(("device OOM", "clear error", "then runs" if ok else "then FAILS", ""))


def benchmarks(be):
    say("== benchmarks (medians; xlapy: CUDA events, wall = call+synchronize, loop = calls "
        "back to back then one synchronize; jax: wall and loop the same way)")
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
    want = np.sum(x.astype(np.float64) + y.astype(np.float64) * z)
    mine = ours(be, w1_text(n), [x, y, z], reps, want, tol=1e-5)
    bw = 3 * nbytes / mine[0]
    tj = jax_time(lambda a, b, d: _jnp().sum(a + b * d), [x, y, z], reps)
    row(f"W1 sum(x+y*z) N={n:.0e}", mine, tj,
        f"[{bw / 1e9:.0f} GB/s = {bw / copy_bw * 100:.0f}% of copy]")
    del x, y, z
    if left() < 30:
        return
    xs = rng.standard_normal((r, c), dtype=np.float32)
    x64 = xs.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    mine = ours(be, softmax_text(r, c), [xs], reps, e / e.sum(1, keepdims=True))
    tj = jax_time(lambda a: _jax().nn.softmax(a, axis=-1), [xs], reps)
    row(f"softmax [{r},{c}]", mine, tj)
    if left() < 20:
        return
    g = rng.standard_normal(c, dtype=np.float32)
    b = rng.standard_normal(c, dtype=np.float32)
    mu = x64.mean(1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(1, keepdims=True)
    want = (x64 - mu) / np.sqrt(var + 1e-5) * g + b

    def ln(a, gg, bb):
        jnp = _jnp()
        m = jnp.mean(a, axis=1, keepdims=True)
        v = jnp.mean((a - m) ** 2, axis=1, keepdims=True)
        return (a - m) * _jax().lax.rsqrt(v + 1e-5) * gg + bb
    mine = ours(be, layernorm_text(r, c), [xs, g, b], reps, want)
    tj = jax_time(ln, [xs, g, b], reps)
    row(f"layernorm [{r},{c}]", mine, tj)
    del xs, x64, e
    models(be, reps)


def extra_sections(be) -> list:
    """The sections of ``benchmarks/gpu_check_*.py``: each module's ``section(ctx, be)``,
    where ``ctx`` is this module (``say``, ``TABLE``, ``left``, ``ours``, ``row``,
    ``jax_time``, ``SIM``, ...), run after the built-in benchmarks in name order."""
    import importlib
    sys.path.insert(0, str(ROOT / "benchmarks"))
    ctx = sys.modules[__name__]
    found = []
    for path in sorted((ROOT / "benchmarks").glob("gpu_check_*.py")):
        mod = importlib.import_module(path.stem)
        found.append(lambda mod=mod: mod.section(ctx, be))
    return found


def main() -> int:
    start = time.time()
    try:
        be = environment()
    except Exception as e:  # noqa: BLE001
        say("NO DEVICE:", type(e).__name__, e)
        save()
        return 1
    for section in (gpu_tests, lambda: conformance(be),
                    lambda: random_programs(40 if not SIM else 10), lambda: benchmarks(be),
                    *extra_sections(be), oom_check):
        try:
            section()
        except Exception:  # noqa: BLE001 - keep going: every section reports
            say("SECTION FAILED:\n" + traceback.format_exc())
        save()
    say(f"== summary ({time.time() - start:.0f} s, backend={BACKEND})")
    for name, a, b, c in TABLE:
        say(f"{name:44s} {a:26s} {b:24s} {c}")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
