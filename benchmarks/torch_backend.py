"""PyTorch training steps under ``torch.compile``: backend "xlapy" vs "inductor" vs eager.

Models (float32, CPU): an MLP 784-512-512-10 (batch 256), the CIFAR-10 CNN of the seeds
(conv32 same, conv32, pool, conv64 same, conv64, pool, dense512, dense10; batch 64) and one
``nn.TransformerEncoderLayer`` (d_model 128, 4 heads, feed-forward 256, sequence 64,
batch 16, dropout 0). A step is forward, cross-entropy loss, ``loss.backward()`` and an
SGD step (the optimizer runs eagerly for every backend).

- compile s: the first step of a fresh ``torch.compile`` (Dynamo, AOTAutograd and the
  backend's compile of the forward and backward graphs) less the median eager step. The
  compile is cold: xlapy's disk cache (``XLAPY_CACHE_DIR``) and all of Inductor's on-disk
  caches (``TORCHINDUCTOR_CACHE_DIR``: the FX graph and AOTAutograd caches, the compiled
  C++ kernels and precompiled headers) point at a new, empty directory, set before
  PyTorch is imported (importing ``torch._dynamo`` fixes Inductor's directory for the
  process: setting the variable later has no effect). The "hits" column counts the disk
  cache hits of the model's compile (xlapy's modules; Inductor's FX graphs and
  AOTAutograd entries), 0 when cold. The models' graphs differ, so a later model finds
  nothing of an earlier one on disk; what a process sets up once (xlapy's LLVM helper
  processes, Inductor's compile workers and C++ prefix) the first model pays for both.
  ``--cache-dir DIR`` uses (and keeps) DIR instead: run the command twice with the same
  DIR and the second run's compile s is the warm-cache compile;
- step ms: the median (and interquartile range) of ``--repeat`` samples, taken
  round-robin over the backends after ``--warmup`` untimed steps; each sample is one step
  taken ``--gap`` seconds after the previous backend's (0.05 s: a step after a pause);
  ``--gap 0 --untimed 1`` times a step that follows one of its own, as in a training loop
  (PyTorch's OpenMP threads still spinning from it);
- every backend starts from the same parameters; the losses of its first step must agree
  with eager's (rtol 1e-4) or the row says WRONG;
- ``--cpu-time``: the samples are the process's CPU time per step instead of wall time
  (with ``taskset -c 0`` and ``--threads 1``: each backend's work, which other load on
  the machine barely changes; compile s stays the first step's wall time less the
  median step).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/torch_backend.py
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time


def _cache_root(argv) -> str:
    """The compile caches' directory, set in the environment before PyTorch is imported
    (``torch._dynamo``'s import pins ``TORCHINDUCTOR_CACHE_DIR`` to its default)."""
    args = list(sys.argv[1:] if argv is None else argv)
    for i, a in enumerate(args):
        if a.startswith("--cache-dir="):
            return os.path.abspath(a.split("=", 1)[1])
        if a == "--cache-dir" and i + 1 < len(args):
            return os.path.abspath(args[i + 1])
    return tempfile.mkdtemp(prefix="torch-backend-bench-")


def _point_caches(root: str) -> None:
    os.environ["XLAPY_CACHE_DIR"] = os.path.join(root, "xlapy")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, "inductor")
    os.environ.pop("XLAPY_DISABLE_CACHE", None)


_CACHE_ROOT = None
if "torch" not in sys.modules:
    _CACHE_ROOT = _cache_root(None)
    _point_caches(_CACHE_ROOT)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from machine import check_openblas_env, cpu_model  # noqa: E402
from xlapy.interop.torch_backend import ensure_registered  # noqa: E402


class CifarCNN(nn.Module):
    """The seeds' CIFAR-10 CNN in PyTorch: conv32 same, conv32, pool, conv64 same, conv64,
    pool, dense512, dense10 (dropout left out: its randomness is PyTorch's)."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 32, 3)
        self.c3, self.c4 = nn.Conv2d(32, 64, 3, padding=1), nn.Conv2d(64, 64, 3)
        self.fc1, self.fc2 = nn.Linear(64 * 6 * 6, 512), nn.Linear(512, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c2(F.relu(self.c1(x)))), 2)
        x = F.max_pool2d(F.relu(self.c4(F.relu(self.c3(x)))), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


def _models():
    torch.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10)),
                torch.randn(256, 784), torch.randint(0, 10, (256,))),
        "cnn": (CifarCNN(), torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))),
        "transformer": (Encoder(), torch.randn(16, 64, 128), torch.randint(0, 10, (16,))),
    }


def _stepper(model, backend):
    run = model if backend == "eager" else torch.compile(model, backend=backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _cache_hits(backend):
    """Disk-cache hits so far of ``backend``'s compiles in this process."""
    if backend == "xlapy":
        from xlapy.client import get_backend
        stats = getattr(getattr(get_backend("cpu"), "disk_cache", None), "stats", None)
        return stats.hits if stats is not None else 0
    if backend == "inductor":
        from torch._dynamo.utils import counters
        return counters["inductor"]["fxgraph_cache_hit"] + \
            counters["aot_autograd"]["autograd_cache_hit"]
    return 0


def _bench(name, model, x, y, backends, repeat, warmup, clock=time.perf_counter, gap=0.05,
           untimed=0):
    steppers, first, rows, hits = {}, {}, {}, {}
    for b in backends:
        m = copy.deepcopy(model)
        steppers[b] = _stepper(m, b)
        before = _cache_hits(b)
        t = time.perf_counter()
        first[b] = (steppers[b](x, y), time.perf_counter() - t)
        hits[b] = _cache_hits(b) - before
    for b in backends:
        for _ in range(warmup):
            steppers[b](x, y)
    samples = {b: [] for b in backends}
    for _ in range(repeat):
        for b in backends:
            time.sleep(gap)
            for _ in range(untimed):
                steppers[b](x, y)
            t = clock()
            steppers[b](x, y)
            samples[b].append(clock() - t)
    ref_loss = first["eager"][0] if "eager" in first else None
    eager_ms = statistics.median(samples["eager"]) if "eager" in samples else 0.0
    for b in backends:
        s = sorted(samples[b])
        q = statistics.quantiles(s, n=4) if len(s) > 1 else [s[0]] * 3
        ok = ref_loss is None or torch.allclose(first[b][0], ref_loss, rtol=1e-4, atol=1e-5)
        rows[b] = {"step_ms": 1e3 * statistics.median(s), "q1_ms": 1e3 * q[0],
                   "q3_ms": 1e3 * q[2], "compile_s": max(first[b][1] - eager_ms, 0.0),
                   "cache_hits": hits[b],
                   "loss": float(first[b][0]), "ok": bool(ok)}
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mlp,cnn,transformer")
    ap.add_argument("--backends", default="eager,xlapy,inductor")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave)")
    ap.add_argument("--gap", type=float, default=0.05,
                    help="seconds of pause before each sample (0.05)")
    ap.add_argument("--untimed", type=int, default=0,
                    help="untimed steps of the same backend right before each sample (0)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time steps by the process's CPU time instead of wall time")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--cache-dir", help="the compile caches' directory, kept (default: a new "
                    "empty one): the second run with the same one measures warm compiles")
    ap.add_argument("--allow-openblas-env", action="store_true")
    args = ap.parse_args(argv)
    check_openblas_env(args.allow_openblas_env)
    global _CACHE_ROOT
    if _CACHE_ROOT is None or (args.cache_dir and
                               _CACHE_ROOT != os.path.abspath(args.cache_dir)):
        # imported after PyTorch (not run as a script): Inductor reads the variable on
        # each use, but an import could already have made xlapy's backend
        _CACHE_ROOT = _cache_root(argv)
        _point_caches(_CACHE_ROOT)
    if args.threads:
        torch.set_num_threads(args.threads)
    backends = args.backends.split(",")
    ensure_registered()     # only needed when this source tree is not the installed xlapy
    print(f"cpu: {cpu_model()}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"load average {os.getloadavg()[0]:.2f}; compile caches in "
          f"{_CACHE_ROOT}")
    if args.cpu_time:
        print("step ms: process CPU time per step")
    print(f"{'model':12} {'backend':9} {'step ms':>9} {'(q1-q3)':>15} {'compile s':>10} "
          f"{'hits':>4}  loss")
    models, results = _models(), {}
    for name in args.models.split(","):
        model, x, y = models[name]
        results[name] = rows = _bench(name, model, x, y, backends, args.repeat, args.warmup,
                                      time.process_time if args.cpu_time else time.perf_counter,
                                      args.gap, args.untimed)
        for b, r in rows.items():
            flag = "" if r["ok"] else "  WRONG (loss differs from eager)"
            print(f"{name:12} {b:9} {r['step_ms']:9.2f} {r['q1_ms']:7.2f}-{r['q3_ms']:<7.2f} "
                  f"{r['compile_s']:10.2f} {r['cache_hits']:4d}  {r['loss']:.5f}{flag}")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_model(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
