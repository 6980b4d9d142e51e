"""Helpers for pass tests: run passes on HLO text and check the program computes the same."""
from __future__ import annotations

import numpy as np

import xlapy.hlo as H
from xlapy.backends.interpreter import Evaluator, evaluate_module
from xlapy.hlo.verifier import verify_module
from xlapy.passes import HloDCE, PassContext


def interpreter_evaluate(instr, operands):
    """The constant-folding evaluator backed by the reference interpreter."""
    return Evaluator().evaluate(instr, operands)


def folding_context() -> PassContext:
    """A pass context whose constant evaluator is the reference interpreter (as a
    compilation's)."""
    return PassContext(constant_evaluator=interpreter_evaluate)


def random_args(module, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    args = []
    for p in module.entry.parameters:
        s = p.shape
        et = s.element_type
        if et.is_pred:
            a = rng.random(s.dims) < 0.5
        elif et.is_floating:
            a = rng.normal(size=s.dims) * 3
        elif et.is_signed_integral:
            a = rng.integers(-20, 20, size=s.dims)
        else:
            a = rng.integers(0, 40, size=s.dims)
        args.append(np.asarray(a).astype(s.dtype))
    return args


def _flat(v) -> list:
    if isinstance(v, tuple):
        return [x for item in v for x in _flat(item)]
    return [np.asarray(v)]


def assert_same_bits(before, after) -> None:
    """Results equal bit for bit (so -0.0 vs +0.0 and NaN payload differences fail)."""
    b, a = _flat(before), _flat(after)
    assert len(a) == len(b)
    for x, y in zip(b, a):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes(), (x, y)


def run_passes(text: str, passes, args=None, dce: bool = True, seed: int = 0,
               compare: bool = True):
    """Parse ``text``, run ``passes`` (then dce) with :func:`folding_context`, verify, and
    check results are unchanged (``compare=False``: the caller checks the results
    itself). Returns (module, changed).
    """
    module = H.parse_module(text)
    args = random_args(module, seed) if args is None else args
    before = evaluate_module(module, args) if compare else None
    changed = False
    ctx = folding_context()
    for p in passes:
        changed |= p.run(module, ctx)
    if dce:
        HloDCE().run(module)
    verify_module(module)
    after = evaluate_module(H.parse_module(module.to_text()), args)
    if compare:
        assert_same_bits(before, after)
    return module, changed


def opcodes(module) -> list[str]:
    return [i.opcode for i in module.entry.instructions]
