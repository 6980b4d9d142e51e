"""The demo's digits CNN, trained, exported ahead of time and run by a C program without
Python on the whole test set; checks it predicts the same classes as the JIT model.

Run: ``make -C examples/aot digits`` or
``PYTHONPATH=. .venv/bin/python examples/aot/digits_cnn.py [--epochs N] [--no-blas]
[--threads N] [--out DIR]``. Trains ``examples/keras_digits.py``'s CNN as the demo does
(12 epochs by default), exports ``model(x, training=False)`` for a batch of the whole
test set with ``model.export_aot``, links the generic C driver (``xlapy.aot.driver``)
against it with the link flags the export reports, runs it on the test images written
to a file and compares its logits and classes with ``model.predict``. Exit status 1 when
a class differs.
"""
from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from keras_digits import BATCH, cnn_model, compiled  # noqa: E402

from xlapy import keras  # noqa: E402
from xlapy.aot.driver import driver_source  # noqa: E402

log = logging.getLogger("examples.aot.digits")


def run(out: str, epochs: int, blas: bool = True, threads: int = 1,
        cc: str = "cc") -> dict:
    """Train, export, link, run; returns the agreement figures."""
    (x, y), (xt, yt) = keras.datasets.digits.load_data(test_split=0.2, seed=113)
    x = (x.astype(np.float32) / 16)[..., None]
    xt = (xt.astype(np.float32) / 16)[..., None]
    model = compiled(cnn_model, True, 0.005)
    model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0)
    jit_logits = model.predict(xt, verbose=0)
    os.makedirs(out, exist_ok=True)
    res = model.export_aot(name="digits", out_dir=out, example=xt, blas=blas, threads=threads)
    main_c = os.path.join(out, "main.c")
    with open(main_c, "w") as f:
        f.write(driver_source("digits"))
    exe = os.path.join(out, "digits")
    subprocess.run([cc, "-O2", "-o", exe, main_c, res.object_path, *res.link], check=True)
    images, logits = os.path.join(out, "test_images.bin"), os.path.join(out, "logits.bin")
    np.ascontiguousarray(xt).tofile(images)
    subprocess.run([exe, images, logits], check=True, env={"PATH": os.environ.get("PATH", "")})
    aot_logits = np.fromfile(logits, np.float32).reshape(jit_logits.shape)
    same = int((aot_logits.argmax(1) == jit_logits.argmax(1)).sum())
    return {"test_images": len(xt), "same_class": same,
            "max_abs_logit_diff": float(np.abs(aot_logits - jit_logits).max()),
            "jit_accuracy": float((jit_logits.argmax(1) == yt).mean()),
            "aot_accuracy": float((aot_logits.argmax(1) == yt).mean()),
            "object_bytes": os.path.getsize(res.object_path), "blas": res.uses_blas}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--out", default="build/digits")
    ap.add_argument("--no-blas", dest="blas", action="store_false")
    ap.add_argument("--threads", type=int, default=1)
    ns = ap.parse_args()
    r = run(ns.out, ns.epochs, ns.blas, ns.threads)
    log.warning("digits CNN (%d epochs): the C program and the JIT model agree on %d of %d "
                "test images; accuracy %.4f (AOT) vs %.4f (JIT); largest logit difference "
                "%.2e; object %d bytes, BLAS %s", ns.epochs, r["same_class"], r["test_images"],
                r["aot_accuracy"], r["jit_accuracy"], r["max_abs_logit_diff"],
                r["object_bytes"], r["blas"])
    return 0 if r["same_class"] == r["test_images"] else 1


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    sys.exit(main())
