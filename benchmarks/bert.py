"""W7 BERT-style encoder training step (Adam), float32 and bf16 mixed precision.

Token and position embeddings, an embedding layernorm, 2 post-layernorm encoder layers
(4-head self-attention, GELU FFN 1024), hidden 256, seq 128, batch 16, and an MLM-style
head over a 1024-token vocabulary (a softmax cross-entropy at every position). One step
is forward, loss, gradients and an Adam update, as one function of (params, Adam state,
tokens, one-hot labels), written once against a small namespace of ops (:func:`ops`)
and run by

- xlapy ``jit`` (``xlapy.numpy``, ``xlapy.value_and_grad``) on ``--backend``;
- JAX ``jax.jit`` (when jax is importable);
- TensorFlow ``tf.function(jit_compile=True)`` (XLA) and ``tf.function`` (graph mode,
  oneDNN), with ``tf.GradientTape``, when tensorflow is importable (else those columns
  are left out).

The bf16 variant is mixed precision as Keras's ``mixed_bfloat16`` policy does it: the
variables and the Adam state stay f32; each layer casts its weights and inputs to bf16,
matrix products and elementwise work run in bf16, layernorm statistics, the attention
softmax and the loss run in f32.

Every implementation starts from the same parameters and must give the same first loss
(f32: rtol 2e-4 against xlapy's; bf16: rtol 2e-2 against the f32 loss). ``--curve N``
trains N steps from the same start in f32 and in bf16 (xlapy, and JAX when present) and
reports the largest relative difference of the two loss curves.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bert.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. /work/tfvenv/bin/python \\
        benchmarks/bert.py           # with the TensorFlow columns
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bert.py \\
        --curve 200 --no-time
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bert.py \
        --profile bf16 --repeat 3
"""
from __future__ import annotations

import importlib.util
import math
import sys
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

import harness


@dataclass(frozen=True)
class Config:
    batch: int
    seq: int
    hidden: int
    heads: int
    ffn: int
    layers: int
    vocab: int

    def __str__(self) -> str:
        return (f"B={self.batch} S={self.seq} D={self.hidden} H={self.heads} F={self.ffn} "
                f"L={self.layers} V={self.vocab}")


FULL = Config(16, 128, 256, 4, 1024, 2, 1024)
SMOKE = Config(2, 8, 16, 2, 32, 2, 32)


# ------------------------------------------------------------------------- namespaces
def ops(kind: str) -> SimpleNamespace:
    """The ops the model uses, for "xlapy", "jax" or "tf"."""
    if kind == "tf":
        import tensorflow as tf

        def reduction(fn: Callable) -> Callable:
            return lambda x, axis=None, keepdims=False: fn(x, axis=axis, keepdims=keepdims)
        tnp = SimpleNamespace(                  # the NumPy-style calls, as plain TF ops
            matmul=tf.linalg.matmul, transpose=tf.transpose, reshape=tf.reshape,
            mean=reduction(tf.reduce_mean), sum=reduction(tf.reduce_sum),
            max=reduction(tf.reduce_max), sqrt=tf.sqrt, tanh=tf.tanh, exp=tf.exp,
            log=tf.math.log)
        return SimpleNamespace(np=tnp, cast=tf.cast, take=lambda t, i: tf.gather(t, i),
                               f32=tf.float32, bf16=tf.bfloat16,
                               tree_map=tf.nest.map_structure)
    if kind == "jax":
        import jax
        import jax.numpy as jnp
        return SimpleNamespace(np=jnp, cast=lambda x, d: x.astype(d),
                               take=lambda t, i: jnp.take(t, i, axis=0), f32=jnp.float32,
                               bf16=jnp.bfloat16, tree_map=jax.tree_util.tree_map,
                               value_and_grad=jax.value_and_grad)
    import xlapy
    import xlapy.numpy as xnp
    return SimpleNamespace(np=xnp, cast=lambda x, d: x.astype(d),
                           take=lambda t, i: xnp.take(t, i, axis=0), f32=xnp.float32,
                           bf16=xnp.bfloat16, tree_map=xlapy.tree_map,
                           value_and_grad=xlapy.value_and_grad)


# ----------------------------------------------------------------------------- model
def layernorm(ns: Any, x: Any, g: Any, b: Any) -> Any:
    """Layernorm in f32 (mixed precision keeps its statistics in f32)."""
    x = ns.cast(x, ns.f32)
    mean = ns.np.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = ns.np.mean(d * d, axis=-1, keepdims=True)
    return d / ns.np.sqrt(var + 1e-12) * g + b


def gelu(ns: Any, x: Any) -> Any:
    return 0.5 * x * (1.0 + ns.np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def dense(ns: Any, x: Any, w: Any, b: Any, cd: Any) -> Any:
    """``x @ w + b`` in the compute dtype ``cd`` (weights cast at the call, as Keras)."""
    return ns.np.matmul(ns.cast(x, cd), ns.cast(w, cd)) + ns.cast(b, cd)


def attention(ns: Any, x: Any, p: dict, i: int, heads: int, cd: Any) -> Any:
    bsz, seq, d = x.shape
    hd = d // heads
    qkv = dense(ns, x, p[f"qkv{i}"], p[f"qkv_b{i}"], cd)

    def split(t: Any) -> Any:                     # [B, S, D] -> [B, H, S, hd]
        return ns.np.transpose(ns.np.reshape(t, (bsz, seq, heads, hd)), (0, 2, 1, 3))
    q, k, v = split(qkv[:, :, :d]), split(qkv[:, :, d:2 * d]), split(qkv[:, :, 2 * d:])
    scores = ns.np.matmul(q, ns.np.transpose(k, (0, 1, 3, 2)))
    scores = ns.cast(scores, ns.f32) * (1.0 / math.sqrt(hd))
    e = ns.np.exp(scores - ns.np.max(scores, axis=-1, keepdims=True))
    probs = ns.cast(e / ns.np.sum(e, axis=-1, keepdims=True), cd)
    ctx = ns.np.matmul(probs, v)
    ctx = ns.np.reshape(ns.np.transpose(ctx, (0, 2, 1, 3)), (bsz, seq, d))
    return dense(ns, ctx, p[f"out{i}"], p[f"out_b{i}"], cd)


def make_loss(cfg: Config, bf16: bool) -> Callable:
    """``loss(ns, params, tokens, labels)``: the mean MLM cross-entropy (f32)."""
    def loss(ns: Any, p: dict, tokens: Any, labels: Any) -> Any:
        cd = ns.bf16 if bf16 else ns.f32
        h = ns.take(p["tok"], tokens) + p["pos"]
        x = ns.cast(layernorm(ns, h, p["ln_g"], p["ln_b"]), cd)
        for i in range(cfg.layers):
            a = attention(ns, x, p, i, cfg.heads, cd)
            x = ns.cast(layernorm(ns, x + a, p[f"ln1_g{i}"], p[f"ln1_b{i}"]), cd)
            f = dense(ns, gelu(ns, dense(ns, x, p[f"ff1{i}"], p[f"ff1_b{i}"], cd)),
                      p[f"ff2{i}"], p[f"ff2_b{i}"], cd)
            x = ns.cast(layernorm(ns, x + f, p[f"ln2_g{i}"], p[f"ln2_b{i}"]), cd)
        logits = ns.cast(dense(ns, x, p["head"], p["head_b"], cd), ns.f32)
        shifted = logits - ns.np.max(logits, axis=-1, keepdims=True)
        logp = shifted - ns.np.log(ns.np.sum(ns.np.exp(shifted), axis=-1, keepdims=True))
        return -ns.np.mean(ns.np.sum(logp * labels, axis=-1))
    return loss


def adam(ns: Any, params: dict, m: dict, v: dict, t: Any, g: dict, lr: float = 1e-3
         ) -> tuple:
    t = t + 1.0
    m = ns.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
    v = ns.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
    scale = lr * ns.np.sqrt(1.0 - 0.999 ** t) / (1.0 - 0.9 ** t)
    params = ns.tree_map(lambda p, a, b: p - scale * a / (ns.np.sqrt(b) + 1e-7), params, m, v)
    return params, m, v, t


def make_step(cfg: Config, bf16: bool, ns: Any) -> Callable:
    """``step(params, m, v, t, tokens, labels) -> (params, m, v, t, loss)`` (xlapy, JAX)."""
    loss = make_loss(cfg, bf16)

    def step(params, m, v, t, tokens, labels):
        value, g = ns.value_and_grad(lambda p: loss(ns, p, tokens, labels))(params)
        return (*adam(ns, params, m, v, t, g), value)
    return step


def make_tf_step(cfg: Config, bf16: bool, jit_compile: bool) -> Callable:
    """The same step for TensorFlow: ``tf.GradientTape`` over the parameter tensors."""
    import tensorflow as tf
    ns = ops("tf")
    loss = make_loss(cfg, bf16)

    @tf.function(jit_compile=jit_compile)
    def step(params, m, v, t, tokens, labels):
        with tf.GradientTape() as tape:
            tape.watch(params)
            value = loss(ns, params, tokens, labels)
        # the embedding's gradient is IndexedSlices: dense, as the other columns' Adam
        g = tf.nest.map_structure(tf.convert_to_tensor, tape.gradient(value, params))
        return (*adam(ns, params, m, v, t, g), value)
    return step


# ------------------------------------------------------------------------------ data
def problem(cfg: Config) -> tuple:
    """(params, m, v, t, tokens, labels): random weights, a fixed batch whose labels are
    the tokens with 15% of the inputs replaced by token 0 (the mask)."""
    rng = np.random.default_rng(0)
    d, f = cfg.hidden, cfg.ffn

    def glorot(shape: tuple) -> np.ndarray:
        lim = math.sqrt(6.0 / (shape[0] + shape[1]))
        return rng.uniform(-lim, lim, shape).astype(np.float32)

    zeros = lambda n: np.zeros(n, np.float32)          # noqa: E731
    p = {"tok": (0.02 * rng.standard_normal((cfg.vocab, d))).astype(np.float32),
         "pos": (0.02 * rng.standard_normal((cfg.seq, d))).astype(np.float32),
         "ln_g": np.ones(d, np.float32), "ln_b": zeros(d),
         "head": glorot((d, cfg.vocab)), "head_b": zeros(cfg.vocab)}
    for i in range(cfg.layers):
        p.update({f"qkv{i}": glorot((d, 3 * d)), f"qkv_b{i}": zeros(3 * d),
                  f"out{i}": glorot((d, d)), f"out_b{i}": zeros(d),
                  f"ff1{i}": glorot((d, f)), f"ff1_b{i}": zeros(f),
                  f"ff2{i}": glorot((f, d)), f"ff2_b{i}": zeros(d),
                  f"ln1_g{i}": np.ones(d, np.float32), f"ln1_b{i}": zeros(d),
                  f"ln2_g{i}": np.ones(d, np.float32), f"ln2_b{i}": zeros(d)})
    truth = rng.integers(1, cfg.vocab, (cfg.batch, cfg.seq)).astype(np.int32)
    tokens = np.where(rng.random(truth.shape) < 0.15, 0, truth).astype(np.int32)
    labels = np.eye(cfg.vocab, dtype=np.float32)[truth]
    zero_like = {k: np.zeros_like(a) for k, a in p.items()}
    return p, zero_like, {k: a.copy() for k, a in zero_like.items()}, np.float32(0.0), \
        tokens, labels


# --------------------------------------------------------------------- implementations
def _loss_of(result: Any) -> np.ndarray:
    return np.asarray(result[-1], np.float64)


def available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def xlapy_impl(name: str, cfg: Config, bf16: bool, args: tuple, backend: str) -> harness.Impl:
    import xlapy
    impl = harness.jitted_impl(xlapy.jit(make_step(cfg, bf16, ops("xlapy")), backend=backend),
                               args, backend, _loss_of)
    impl.name = name
    return impl


def jax_impl(name: str, cfg: Config, bf16: bool, args: tuple) -> harness.Impl:
    if not available("jax"):
        return harness.Impl(name, None, note="jax is not installed")
    import jax
    step = jax.jit(make_step(cfg, bf16, ops("jax")))
    dargs = jax.device_put(args)
    t0 = time.perf_counter()
    try:
        step.lower(*dargs).compile()
    except Exception as e:
        return harness.failed_impl(name, "compile", e)
    return harness.Impl(name, lambda: _loss_of(jax.block_until_ready(step(*dargs))),
                        time.perf_counter() - t0)


def tf_impl(name: str, cfg: Config, bf16: bool, args: tuple, jit_compile: bool
            ) -> harness.Impl:
    if not available("tensorflow"):
        return harness.Impl(name, None, note="tensorflow is not installed")
    import tensorflow as tf
    step = make_tf_step(cfg, bf16, jit_compile)
    targs = tf.nest.map_structure(tf.convert_to_tensor, args)
    t0 = time.perf_counter()
    try:
        step(*targs)                    # traces and compiles (first call)
    except Exception as e:
        return harness.failed_impl(name, "compile", e)
    return harness.Impl(name, lambda: _loss_of(step(*targs)), time.perf_counter() - t0)


NAMES = ("xlapy f32", "xlapy bf16", "jax f32", "jax bf16", "tf xla f32", "tf xla bf16",
         "tf graph f32", "tf graph bf16")


def build_cases(s: harness.Settings, use_tf: bool) -> list[harness.Case]:
    """One case holding every implementation, so all are sampled round-robin."""
    cfg = SMOKE if s.smoke else FULL
    args = problem(cfg)
    impls = [xlapy_impl("xlapy f32", cfg, False, args, s.backend),
             xlapy_impl("xlapy bf16", cfg, True, args, s.backend)]
    if s.jax:
        impls += [jax_impl("jax f32", cfg, False, args), jax_impl("jax bf16", cfg, True, args)]
    if use_tf:
        impls += [tf_impl(f"tf {kind} {prec}", cfg, prec == "bf16", args, kind == "xla")
                  for kind in ("xla", "graph") for prec in ("f32", "bf16")]
    first = {i.name: float(i.call()) for i in impls if i.call is not None}
    ref = first.get("xlapy f32", next(iter(first.values()), 0.0))
    for i in impls:
        if i.name in first:
            tol = 2e-2 if "bf16" in i.name else 2e-4
            agree = abs(first[i.name] - ref) <= tol * abs(ref)
            i.note = (f"first loss {first[i.name]:.6f}" +
                      ("" if agree else f" (DISAGREES with xlapy f32 {ref:.6f})"))
    # the harness checks against one reference: the bf16 columns set the tolerance, the
    # f32 agreement is checked above and printed in the notes
    return [harness.Case("W7 BERT-style step", "smoke" if s.smoke else str(cfg),
                         np.float64(ref), impls, rtol=2e-2, atol=1e-5)]


def format_table(results: Sequence[harness.CaseResult], backend: str) -> str:
    cell, comp, ratio = harness.time_cell, harness.compile_cell, harness.ratio_cell
    lines = ["| implementation | step | compile s | /xlapy f32 | vs same-precision peers |",
             "|---|---|---|---|---|"]
    for c in results:
        for name in NAMES:
            r = c.results.get(name)
            if r is None:
                continue
            prec = name.split()[-1]
            peers = ", ".join(f"{p}: {ratio(c.ratio(name, f'{p} {prec}'))}"
                              for p in ("jax", "tf xla", "tf graph")
                              if not name.startswith(p) and c.median(f"{p} {prec}"))
            lines.append(f"| {name} | {cell(r)} | {comp(r)} | "
                         f"{ratio(c.ratio(name, 'xlapy f32'))} | {peers or '-'} |")
    lines += ["", "ratios are time/time: < 1 is faster"]
    notes = harness.notes(results)
    return "\n".join(lines + ([""] + notes if notes else []))


# ----------------------------------------------------------------------- loss curves
def loss_curve(kind: str, cfg: Config, bf16: bool, steps: int, backend: str) -> list[float]:
    """The losses of ``steps`` training steps from :func:`problem`'s start."""
    if kind == "jax":
        import jax
        step = jax.jit(make_step(cfg, bf16, ops("jax")))
    else:
        import xlapy
        step = xlapy.jit(make_step(cfg, bf16, ops("xlapy")), backend=backend)
    params, m, v, t, tokens, labels = problem(cfg)
    out = []
    for _ in range(steps):
        params, m, v, t, value = step(params, m, v, t, tokens, labels)
        out.append(float(np.asarray(value)))
    return out


def print_curves(cfg: Config, steps: int, backend: str, use_jax: bool) -> int:
    kinds = ["xlapy"] + (["jax"] if use_jax and available("jax") else [])
    status = 0
    for kind in kinds:
        t0 = time.perf_counter()
        f32 = loss_curve(kind, cfg, False, steps, backend)
        bf = loss_curve(kind, cfg, True, steps, backend)
        rel = [abs(a - b) / abs(a) for a, b in zip(f32, bf)]
        worst = int(np.argmax(rel))
        print(f"# {kind}: {steps} steps in {time.perf_counter() - t0:.1f} s; loss f32 "
              f"{f32[0]:.4f} -> {f32[-1]:.4f}, bf16 {bf[0]:.4f} -> {bf[-1]:.4f}; largest "
              f"relative difference {rel[worst]:.4f} at step {worst + 1}"
              f"{'' if rel[worst] <= 0.02 else ' (above 2%)'}")
        marks = sorted({0, 9, 49, 99, steps - 1} & set(range(steps)))
        print("| step | " + " | ".join(str(i + 1) for i in marks) + " |")
        print("|---|" + "---|" * len(marks))
        print(f"| {kind} f32 | " + " | ".join(f"{f32[i]:.4f}" for i in marks) + " |")
        print(f"| {kind} bf16 | " + " | ".join(f"{bf[i]:.4f}" for i in marks) + " |")
        status |= int(rel[worst] > 0.02)
    return status


def print_profile(cfg: Config, bf16: bool, backend: str, calls: int, rows: int | None) -> None:
    """The xlapy step compiled with ``--xla_hlo_profile``: its profile over ``calls``."""
    import xlapy
    from xlapy.client import get_backend
    from xlapy.config import debug_options
    args = problem(cfg)
    module = xlapy.jit(make_step(cfg, bf16, ops("xlapy")), backend=backend).lower(
        *args).hlo_module
    with debug_options(xla_hlo_profile=True):
        exe = get_backend(backend).compile(module)
    flat = [np.asarray(a) for a in xlapy.tree_flatten(args)[0]]
    exe.execute(flat)
    exe.reset_profile()
    for _ in range(max(1, calls)):
        exe.execute(flat)
    print(f"# W7 {'bf16' if bf16 else 'f32'} {cfg}: --xla_hlo_profile")
    print(exe.profile_text(rows))


def main(argv: Sequence[str] | None = None) -> int:
    p = harness.parser(__doc__.splitlines()[0], default_repeat=7)
    p.add_argument("--no-tf", action="store_true", help="do not run the TensorFlow peers")
    p.add_argument("--curve", type=int, default=0, metavar="N",
                   help="also train N steps in f32 and bf16 and compare the loss curves")
    p.add_argument("--no-time", action="store_true", help="only the loss curves")
    p.add_argument("--profile", choices=("f32", "bf16"),
                   help="print the xlapy step's per-instruction profile instead")
    p.add_argument("--profile-rows", type=int, default=30, metavar="N")
    args = p.parse_args(argv)
    status = 0
    if args.profile:
        backend = harness.setup(args)
        print_profile(SMOKE if args.smoke else FULL, args.profile == "bf16", backend,
                      1 if args.smoke else args.repeat, args.profile_rows)
        return 0
    if not args.no_time:
        use_tf = not args.no_tf and available("tensorflow")
        status = harness.run(args, lambda s: build_cases(s, use_tf), format_table)
    if args.curve:
        backend = harness.setup(args)
        cfg = SMOKE if args.smoke else FULL
        status |= print_curves(cfg, args.curve, backend, not args.no_jax)
    return status


if __name__ == "__main__":
    sys.exit(main())
