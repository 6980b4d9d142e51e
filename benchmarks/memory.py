"""Peak memory of training steps, xlapy vs JAX vs TensorFlow, and the largest batch that fits
a memory budget (issue 19: "peak memory per batch size").

Workloads (float32):

- **W5**: the seed's CIFAR-10 CNN training step (``training.py``'s RMSprop step for xlapy and
  JAX; for TensorFlow the same Keras model as ``keras_cifar.py``, ``train_on_batch`` in
  TF's default graph mode), batch 256;
- **W7s**: a BERT-style encoder step: 2 pre-layernorm blocks of ``transformer.py`` (hidden
  256, 4 heads, MLP 1024), sequence 128, batch 16, mean-squared loss, Adam (TensorFlow:
  the same functions on ``tf.experimental.numpy`` under ``tf.function``).

Every measurement runs in a fresh subprocess (``--child``): it imports the framework and
builds the data and model, reads its resident set (``/proc/self/statm``), then compiles
and runs ``--steps`` steps. Columns:

- **RSS growth**: ``ru_maxrss`` at the end minus the resident set before the first step,
  i.e. everything the first compile and the steps made resident (compiler memory
  included: it is part of what a batch size costs);
- **runtime counter**: the framework's own account: xlapy's ``xlapy.profiler`` high-water
  mark of bytes held (``peak_bytes_in_use``, arenas + output pool + a call's arguments)
  and the step's ``memory_analysis().peak_memory_in_bytes``; JAX's
  ``compiled.memory_analysis()`` (temp + argument + output bytes); TensorFlow keeps no
  count for the CPU (``get_memory_info('CPU:0')`` stays 0), so "n/a".

With ``--warm-up`` each child first compiles and runs a tiny unrelated program in its
framework before reading the base, so the libraries a framework's first compile loads (for
xlapy LLVM and OpenBLAS, which TensorFlow has loaded by the time its model is built) are
not counted as the workload's; the first compile of the workload itself still is.

``--fit`` then searches, per framework, the largest batch whose RSS growth stays within
``--budget`` (default 2 GiB): the batch doubles from the workload's batch until a run goes
over (the parent kills a child as soon as its resident set passes the budget, so no run
holds much more), then ``--bisect`` halvings between the last fit and the first miss.

``xlapy+remat`` is xlapy compiled with ``--xla_cpu_memory_limit_bytes`` (rematerialization):
in the table at ``--remat-fraction`` (0.5) of the plain xlapy step's bytes; in the search at
``--remat-share`` (0.6) of the budget (the limit covers the executable's own bytes; the rest
of the budget is left to the compiler, library scratch arrays and Python).

TensorFlow runs with ``/work/tfvenv/bin/python`` (``--tf-python``) when that interpreter
exists and imports tensorflow; otherwise its columns say why they are empty.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/memory.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/memory.py --fit
    .venv/bin/python benchmarks/memory.py --smoke          # tiny sizes, seconds
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
GIB = 1 << 30
FRAMEWORKS = ("xlapy", "xlapy+remat", "jax", "tf")
WORKLOADS = {"W5": 256, "W7s": 16}
SMOKE = {"W5": 4, "W7s": 2}
TF_PYTHON = "/work/tfvenv/bin/python"
#: ``--warm-up`` (set once by ``main``): children warm their framework up before the base.
WARM_UP = [False]


# ---------------------------------------------------------------------------- the child
def rss_bytes() -> int:
    """The resident set now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def bert_dims(smoke: bool) -> dict[str, int]:
    if smoke:
        return {"layers": 1, "seq": 8, "d": 16, "heads": 2, "mlp": 32}
    return {"layers": 2, "seq": 128, "d": 256, "heads": 4, "mlp": 1024}


def bert_problem(batch: int, smoke: bool) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    import transformer
    dims = bert_dims(smoke)
    cfg = transformer.Config(batch, dims["seq"], dims["d"], dims["heads"], dims["mlp"])
    params: list[np.ndarray] = []
    x = None
    for layer in range(dims["layers"]):
        inputs = transformer.make_inputs(cfg)
        x = inputs[0] if x is None else x
        params.extend(p * (0.5 if layer else 1.0) for p in inputs[1:])
    rng = np.random.default_rng(7)
    target = rng.standard_normal(x.shape).astype(np.float32)
    return [np.asarray(p, np.float32) for p in params], x, target


def bert_loss(xp: Any, heads: int, layers: int) -> Callable[..., Any]:
    import transformer
    block = transformer.make_block(heads)
    per = len(transformer.PARAMS)

    def loss(params: list, x: Any, target: Any) -> Any:
        h = x
        for i in range(layers):
            h = block(xp, h, *params[i * per:(i + 1) * per])
        d = h - target
        return xp.mean(d * d)
    return loss


def child_step(framework: str, workload: str, batch: int, smoke: bool) -> tuple:
    """(step callable returning the loss, runtime-counter callable) for one run."""
    sys.path.insert(0, str(HERE))
    import training
    if framework == "tf":
        return _tf_step(workload, batch, smoke)
    kind = "jax" if framework == "jax" else "xlapy"
    ns = training.namespace(kind)
    if workload == "W5":
        step = training.rmsprop_step(ns, training.cnn_loss)
        args: tuple = training.cnn_problem(batch)
    else:
        dims = bert_dims(smoke)
        params, x, target = bert_problem(batch, smoke)
        fn = bert_loss(ns.np, dims["heads"], dims["layers"])
        step = training.adam_step(ns, lambda _ns, p, a, b: fn(p, a, b))
        zeros = [np.zeros_like(p) for p in params]
        args = (params, zeros, [np.zeros_like(p) for p in params], np.float32(0.0), x, target)
    if kind == "jax":
        import jax
        jitted = jax.jit(step)
        dargs = jax.device_put(args)
        holder: dict[str, Any] = {"args": dargs}

        def run_jax() -> float:
            out = jax.block_until_ready(jitted(*holder["args"]))
            holder["args"] = (*out[:-1], *holder["args"][len(out) - 1:])
            return float(out[-1])

        def jax_counter() -> dict[str, Any]:
            ma = jitted.lower(*dargs).compile().memory_analysis()
            step_bytes = ma.temp_size_in_bytes + ma.argument_size_in_bytes + \
                ma.output_size_in_bytes - ma.alias_size_in_bytes
            return {"step_bytes": step_bytes, "held_peak": None}
        return run_jax, jax_counter
    import xlapy
    import xlapy.profiler as profiler
    jitted = xlapy.jit(step)
    holder = {"args": args}

    def run_xlapy() -> float:
        out = jitted(*holder["args"])
        holder["args"] = (*out[:-1], *holder["args"][len(out) - 1:])
        return float(np.asarray(out[-1]))

    def xlapy_counter() -> dict[str, Any]:
        step_mem = profiler.largest_step_memory()
        return {"step_bytes": step_mem.peak_memory_in_bytes if step_mem else None,
                "held_peak": profiler.peak_memory_bytes()}
    return run_xlapy, xlapy_counter


def _tf_step(workload: str, batch: int, smoke: bool) -> tuple:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf
    import training

    def no_counter() -> dict[str, Any]:
        return {"step_bytes": None, "held_peak": None}
    if workload == "W5":
        import keras
        import keras_cifar
        params, _, _, x, y = training.cnn_problem(batch)
        model = keras_cifar.build_model(keras)
        lr = keras.optimizers.schedules.InverseTimeDecay(1e-4, decay_steps=1, decay_rate=1e-6)
        model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=lr),
                      loss="categorical_crossentropy", jit_compile=False)

        def run_keras() -> float:
            return float(model.train_on_batch(x, y, return_dict=True)["loss"])
        return run_keras, no_counter
    import tensorflow.experimental.numpy as tnp
    dims = bert_dims(smoke)
    params, x, target = bert_problem(batch, smoke)
    fn = bert_loss(tnp, dims["heads"], dims["layers"])
    variables = [tf.Variable(p) for p in params]
    ms = [tf.Variable(tf.zeros_like(p)) for p in params]
    vs = [tf.Variable(tf.zeros_like(p)) for p in params]
    t = tf.Variable(0.0)
    xt, yt = tf.constant(x), tf.constant(target)

    @tf.function
    def step() -> Any:
        with tf.GradientTape() as tape:
            value = fn(variables, xt, yt)
        grads = tape.gradient(value, variables)
        t.assign_add(1.0)
        scale = 1e-3 * tf.sqrt(1.0 - 0.999 ** t) / (1.0 - 0.9 ** t)
        for p, m, v, g in zip(variables, ms, vs, grads):
            m.assign(0.9 * m + 0.1 * g)
            v.assign(0.999 * v + 0.001 * g * g)
            p.assign_sub(scale * m / (tf.sqrt(v) + 1e-7))
        return value

    def run_tf() -> float:
        return float(step())
    return run_tf, no_counter


def warm_up(framework: str) -> None:
    """Compile and run a tiny unrelated program in ``framework`` (a product, a reduction, a
    transcendental), so that the libraries its first compile loads (LLVM, OpenBLAS, XLA's
    compiler, TensorFlow's graph runtime) are resident before the base is read."""
    a = np.ones((8, 8), np.float32)
    if framework == "tf":
        import tensorflow as tf
        float(tf.function(lambda t: tf.reduce_sum(tf.sin(t @ t)))(tf.constant(a)))
        return
    if framework == "jax":
        import jax
        import jax.numpy as jnp
        float(jax.jit(lambda t: jnp.sum(jnp.sin(t @ t)))(a))
        return
    import xlapy
    import xlapy.numpy as xnp
    float(np.asarray(xlapy.jit(lambda t: xnp.sum(xnp.sin(t @ t)))(a)))


def child_main(framework: str, workload: str, batch: int, steps: int, smoke: bool,
               warm: bool = False) -> None:
    run, counter = child_step(framework, workload, batch, smoke)
    if warm:
        warm_up(framework)
    base = rss_bytes()
    print(json.dumps({"base": base}), flush=True)
    times, losses = [], []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        losses.append(run())
        times.append(time.perf_counter() - t0)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = {"base": base, "maxrss": maxrss, "rss_growth": maxrss - base,
           "first_s": times[0], "step_s": statistics.median(times[1:]) if steps else None,
           "loss": losses[0], **counter()}
    print(json.dumps(out), flush=True)


# --------------------------------------------------------------------------- the parent
def tf_python(path: str) -> tuple[str | None, str]:
    """The interpreter to run TensorFlow with, or None and the reason."""
    if not Path(path).exists():
        return None, f"{path} does not exist"
    probe = subprocess.run([path, "-c", "import tensorflow"], capture_output=True, text=True,
                           timeout=300)
    if probe.returncode:
        return None, f"tensorflow does not import in {path}"
    return path, ""


def run_child(python: str, framework: str, workload: str, batch: int, steps: int,
              smoke: bool, budget: int | None, timeout: float,
              limit: int | None = None) -> dict[str, Any]:
    """One measurement in a subprocess; with ``budget``, the child is killed as soon as its
    resident set grows past it (then ``{"over": True}``); ``limit``: xlapy's
    ``--xla_cpu_memory_limit_bytes``."""
    cmd = [python, str(Path(__file__).resolve()), "--child", framework, workload, str(batch),
           "--steps", str(steps)] + (["--smoke"] if smoke else []) + \
        (["--warm-up"] if WARM_UP[0] else [])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parent), str(HERE),
                                                    env.get("PYTHONPATH", "")) if p)
    if limit is not None:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            f" --xla_cpu_memory_limit_bytes={limit}").strip()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    errors: list[str] = []
    err_reader = threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True)
    err_reader.start()
    start, over = time.time(), False
    while proc.poll() is None:
        time.sleep(0.05)
        base = next((json.loads(x)["base"] for x in lines if x.startswith('{"base"')), None)
        if budget is not None and base is not None and _hwm(proc.pid) - base > budget:
            over = True
            proc.kill()
        elif time.time() - start > timeout:
            proc.kill()
            proc.wait()
            return {"error": f"timed out after {timeout:.0f} s"}
    proc.wait()
    reader.join(timeout=5)
    err_reader.join(timeout=5)
    if over:
        return {"over": True}
    results = [json.loads(x) for x in lines if x.startswith("{") and '"maxrss"' in x]
    if proc.returncode or not results:
        tail = "".join(errors).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {"error": tail[0][:160]}
    return results[-1]


def _hwm(pid: int) -> int:
    """A process's peak resident set (VmHWM), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def mib(n: Any) -> str:
    return "n/a" if n is None else f"{n / (1 << 20):.0f}"


def python_for(framework: str, tf_exe: str | None) -> str | None:
    return tf_exe if framework == "tf" else sys.executable


def measure(args: argparse.Namespace, tf_exe: str | None, tf_why: str) -> list[str]:
    rows = ["| workload | batch | framework | RSS growth MiB | runtime step MiB | "
            "runtime held peak MiB | step s | loss |", "|---|---|---|---|---|---|---|---|"]
    sizes = SMOKE if args.smoke else WORKLOADS
    for workload, batch in sizes.items():
        plain_step = None
        for fw in args.frameworks:
            python = python_for(fw, tf_exe)
            if python is None:
                rows.append(f"| {workload} | {batch} | {fw} | skipped: {tf_why} | | | | |")
                continue
            limit = None
            if fw == "xlapy+remat":
                if plain_step is None:
                    continue
                limit = int(args.remat_fraction * plain_step)
            r = run_child(python, fw, workload, batch, args.steps, args.smoke, None,
                          args.timeout, limit)
            if fw == "xlapy" and "error" not in r:
                plain_step = r["step_bytes"]
            if "error" in r:
                rows.append(f"| {workload} | {batch} | {fw} | error: {r['error']} | | | | |")
                continue
            if limit is not None:
                fw = f"xlapy, limit {mib(limit)} MiB"
            rows.append(f"| {workload} | {batch} | {fw} | {mib(r['rss_growth'])} | "
                        f"{mib(r['step_bytes'])} | {mib(r['held_peak'])} | "
                        f"{r['step_s']:.3f} | {r['loss']:.5g} |")
            print(rows[-1], flush=True)
    return rows


def fits(args: argparse.Namespace, python: str, fw: str, workload: str, batch: int,
         log: list[str]) -> bool:
    limit = int(args.remat_share * args.budget) if fw == "xlapy+remat" else None
    r = run_child(python, fw, workload, batch, 0, args.smoke, args.budget, args.timeout, limit)
    ok = "over" not in r and "error" not in r and r["rss_growth"] <= args.budget
    what = "over budget" if "over" in r else r.get("error") or f"{mib(r['rss_growth'])} MiB"
    log.append(f"  {workload} {fw} batch {batch}: {what} -> {'fits' if ok else 'does not fit'}")
    print(log[-1], flush=True)
    return ok


def largest_batch(args: argparse.Namespace, python: str, fw: str, workload: str,
                  log: list[str]) -> tuple[int, int | None]:
    """(largest batch found to fit, smallest found not to; None if none missed)."""
    start = (SMOKE if args.smoke else WORKLOADS)[workload]
    lo, hi = 0, None
    batch = start
    while batch <= args.max_batch:
        if not fits(args, python, fw, workload, batch, log):
            hi = batch
            break
        lo, batch = batch, batch * 2
    if lo == 0 and hi is not None:            # even the first batch misses: halve down
        b = hi // 2
        while b >= 1 and not fits(args, python, fw, workload, b, log):
            hi, b = b, b // 2
        lo = max(b, 0)
    for _ in range(args.bisect):
        if hi is None or hi - lo <= 1 or lo == 0:
            break
        mid = (lo + hi) // 2
        if fits(args, python, fw, workload, mid, log):
            lo = mid
        else:
            hi = mid
    return lo, hi


def fit_table(args: argparse.Namespace, tf_exe: str | None, tf_why: str) -> list[str]:
    rows = [f"| workload | framework | largest batch within {args.budget / GIB:.3g} GiB | "
            "first miss |", "|---|---|---|---|"]
    log: list[str] = []
    for workload in (SMOKE if args.smoke else WORKLOADS):
        for fw in args.frameworks:
            python = python_for(fw, tf_exe)
            if python is None:
                rows.append(f"| {workload} | {fw} | skipped: {tf_why} | |")
                continue
            lo, hi = largest_batch(args, python, fw, workload, log)
            rows.append(f"| {workload} | {fw} | {lo} | "
                        f"{hi if hi is not None else f'> {args.max_batch}'} |")
    return rows + [""] + log


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", nargs=3, metavar=("FRAMEWORK", "WORKLOAD", "BATCH"))
    p.add_argument("--steps", type=int, default=2, help="timed steps after the first")
    p.add_argument("--smoke", action="store_true", help="tiny sizes (a quick check)")
    p.add_argument("--fit", action="store_true", help="search the largest batch in --budget")
    p.add_argument("--budget", type=float, default=2.0, help="GiB (--fit)")
    p.add_argument("--bisect", type=int, default=2,
                   help="halvings after the doubling (1 saves a run per framework)")
    p.add_argument("--max-batch", type=int, default=8192)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--remat-fraction", type=float, default=0.5,
                   help="xlapy+remat's limit as a share of xlapy's step bytes (table)")
    p.add_argument("--remat-share", type=float, default=0.6,
                   help="xlapy+remat's limit as a share of --budget (--fit)")
    p.add_argument("--tf-python", default=TF_PYTHON)
    p.add_argument("--warm-up", action="store_true",
                   help="run a tiny program in the framework before reading the base, so "
                        "its libraries' first load is not counted as the workload's")
    args = p.parse_args(argv)
    if args.child:
        fw, workload, batch = args.child
        child_main(fw.replace("+remat", ""), workload, int(batch), args.steps, args.smoke,
                   args.warm_up)
        return 0
    WARM_UP[0] = args.warm_up
    args.frameworks = [f for f in args.frameworks.split(",") if f]
    args.budget = int(args.budget * GIB)
    sys.path.insert(0, str(HERE))
    from machine import machine_header
    tf_exe, tf_why = tf_python(args.tf_python) if "tf" in args.frameworks else (None, "")
    print(json.dumps(machine_header(), default=str))
    print("\n".join(measure(args, tf_exe, tf_why)))
    if args.fit:
        print()
        print("\n".join(fit_table(args, tf_exe, tf_why)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
