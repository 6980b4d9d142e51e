"""Export a small classifier ahead of time: ``build/model.o``, ``build/model.h``, the link
flags, an input file and the outputs the JIT computes for it (``make -C examples/aot``
runs it; ``--no-blas``: self-contained kernels).

The weights are NumPy arrays the function closes over, so they become constants inside the
object: the C program passes only the input batch.
"""
from __future__ import annotations

import logging
import os
import sys

import numpy as np

import xlapy
import xlapy.aot
import xlapy.numpy as xnp
from xlapy import nn

log = logging.getLogger("examples.aot")

rng = np.random.default_rng(0)
W1 = (rng.standard_normal((64, 32)) / 8).astype(np.float32)
B1 = (rng.standard_normal(32) / 10).astype(np.float32)
W2 = (rng.standard_normal((32, 10)) / 6).astype(np.float32)
B2 = np.zeros(10, np.float32)


def classify(x):
    """Class probabilities of a batch of 8x8 images (flattened to 64 features)."""
    h = nn.relu(xnp.dot(x, W1) + B1)
    return nn.softmax(xnp.dot(h, W2) + B2, axis=1)


def main(out_dir: str, blas: bool = True) -> None:
    x = rng.random((4, 64), dtype=np.float32)
    result = xlapy.aot.compile(classify, x, name="model", out_dir=out_dir, blas=blas)
    with open(os.path.join(out_dir, "link_flags.txt"), "w") as f:
        f.write(" ".join(result.link) + "\n")
    x.tofile(os.path.join(out_dir, "input.bin"))
    expected = np.asarray(xlapy.jit(classify)(x))
    np.savetxt(os.path.join(out_dir, "expected.txt"), expected, fmt="%.6f")
    log.warning("wrote %s and %s (temp arena %d bytes); JIT argmax: %s",
                result.object_path, result.header_path, result.temp_bytes,
                " ".join(map(str, expected.argmax(axis=1))))


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    argv = sys.argv[1:]
    main(next((a for a in argv if not a.startswith("--")), "build"), "--no-blas" not in argv)
