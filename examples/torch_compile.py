"""A small PyTorch CNN trained for a few steps with ``torch.compile(backend="xlapy")``,
next to the same model trained eagerly: the losses of every step agree, and the compiled
steps are timed.

``backend="xlapy"`` is found through xlapy's ``torch_dynamo_backends`` entry point once
xlapy is installed (``pip install -e '.[torch]'``); Dynamo hands each captured graph to
xlapy, AOTAutograd splits it into forward and backward graphs, and xlapy compiles both
(see docs/architecture.md, "PyTorch: torch.compile"). The data are random images of
CIFAR-10's shape with random labels (this machine cannot download data sets).

    .venv/bin/python examples/torch_compile.py --steps 5
"""
from __future__ import annotations

import argparse
import copy
import logging
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from xlapy.interop.torch_backend import ensure_registered


class SmallCNN(nn.Module):
    """conv16 - relu - pool - conv32 - relu - pool - linear 10, for 3x32x32 images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def train(model: nn.Module, run, batches: list, lr: float) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    logging.getLogger("torch").setLevel(logging.WARNING)
    ensure_registered()     # only needed when this source tree is not the installed xlapy
    torch.manual_seed(0)
    batches = [(torch.randn(args.batch_size, 3, 32, 32), torch.randint(0, 10, (args.batch_size,)))
               for _ in range(args.steps)]
    eager_model = SmallCNN()
    xlapy_model = copy.deepcopy(eager_model)
    compiled = torch.compile(xlapy_model, backend="xlapy")

    t0 = time.perf_counter()
    train(xlapy_model, compiled, batches[:1], 0.01)          # compiles forward and backward
    compile_s = time.perf_counter() - t0
    xlapy_model.load_state_dict(eager_model.state_dict())     # start both from one state
    t0 = time.perf_counter()
    got = train(xlapy_model, compiled, batches, 0.01)
    step_ms = 1e3 * (time.perf_counter() - t0) / len(batches)
    want = train(eager_model, eager_model, batches, 0.01)
    for i, (g, w) in enumerate(zip(got, want)):
        print(f"step {i}: loss xlapy {g:.5f}  eager {w:.5f}")
    worst = max(abs(g - w) / max(abs(w), 1e-6) for g, w in zip(got, want))
    print(f"first call (compile) {compile_s:.2f} s; {step_ms:.1f} ms per compiled step; "
          f"largest relative loss difference {worst:.2e}")
    if worst > 1e-4:
        raise SystemExit("the xlapy-compiled model's losses differ from eager PyTorch's")


if __name__ == "__main__":
    main()
