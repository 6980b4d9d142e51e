"""Run a JAX program on xlapy: lower it to StableHLO, convert, run, compare with JAX.

JAX exchanges programs as StableHLO (``jax.jit(f).lower(*args).as_text()``); xlapy reads
that text as XLA does (``xlapy.hlo.parse_module`` detects it) and runs the HLO it becomes
on its interpreter and its CPU backend. The same program also travels as the serialized
``HloModuleProto`` JAX writes. Needs ``jax`` (the test extra)::

    .venv/bin/python examples/jax_stablehlo.py
"""
from __future__ import annotations

import numpy as np

import xlapy
from xlapy.hlo import parse_module


def main() -> None:
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except ImportError:
        print("this example needs jax: pip install 'jax==0.10.2'")
        return

    def train_step(w1, w2, x, labels):
        """One SGD step of a 2-layer MLP with a while loop of 3 inner refinements."""
        def loss(params):
            a, b = params
            h = jax.nn.gelu(x @ a)
            logits = h @ b
            return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, 4) * jax.nn.log_softmax(logits),
                                     axis=-1))

        def body(i, params):
            g = jax.grad(loss)(params)
            return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)

        new = lax.fori_loop(0, 3, body, (w1, w2))
        return loss(new), new[0], new[1], jnp.sort(jnp.abs(jnp.linalg.eigvalsh(w2 @ w2.T)))

    rs = np.random.RandomState(0)
    args = [(rs.randn(8, 16) * 0.3).astype(np.float32), (rs.randn(16, 4) * 0.3).astype(np.float32),
            rs.randn(5, 8).astype(np.float32), rs.randint(0, 4, size=5).astype(np.int32)]

    lowered = jax.jit(train_step).lower(*args)
    text = lowered.as_text()                                       # StableHLO (MLIR)
    print(f"StableHLO from JAX: {len(text.splitlines())} lines, e.g.")
    print("  " + next(line.strip() for line in text.splitlines() if "stablehlo.while" in line))

    module = parse_module(text)                                    # converted as XLA does
    ops = sorted({i.opcode for c in module.computations for i in c.instructions})
    print(f"HLO module {module.name}: {len(module.computations)} computations; ops: "
          + ", ".join(ops))

    expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(jax.jit(train_step)(*args))]
    for backend in ("interpreter", "cpu"):
        got = xlapy.run_hlo(module, args, backend=backend)
        worst = max(float(np.max(np.abs(g - e))) for g, e in zip(got, expected))
        print(f"xlapy {backend:11s} vs JAX: max abs difference {worst:.2e}")
        assert worst < 1e-4, worst

    proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    got = xlapy.run_hlo(proto, args)                              # JAX's HloModuleProto
    worst = max(float(np.max(np.abs(g - e))) for g, e in zip(got, expected))
    print(f"xlapy from JAX's HloModuleProto ({len(proto)} bytes): max abs difference {worst:.2e}")
    print("StableHLO and HloModuleProto from JAX give JAX's results on xlapy.")


if __name__ == "__main__":
    main()
