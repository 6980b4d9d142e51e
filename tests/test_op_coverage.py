"""Every op the table calls executable has its whole story: a shape rule and interpreter semantics."""
from __future__ import annotations

from xlapy.backends.interpreter import HANDLERS
from xlapy.hlo.opcodes import OPCODES
from xlapy.hlo.shape_inference import has_rule

EXECUTABLE = sorted(op for op, info in OPCODES.items() if info.executable)


def test_every_executable_op_has_a_shape_rule():
    missing = [op for op in EXECUTABLE if not has_rule(op)]
    assert not missing, f"executable ops without a shape rule: {missing}"


def test_every_executable_op_has_interpreter_semantics():
    # parameters are bound by the evaluator itself, not by a handler
    missing = [op for op in EXECUTABLE if op not in HANDLERS and op != "parameter"]
    assert not missing, f"executable ops the interpreter cannot run: {missing}"


def test_handlers_only_for_executable_ops():
    extra = [op for op in HANDLERS if op in OPCODES and not OPCODES[op].executable]
    assert not extra, f"handlers for ops the table marks non-executable: {extra}"
