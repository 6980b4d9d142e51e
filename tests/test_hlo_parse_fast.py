"""The parser's fast paths (``*_FAST`` patterns, shape and metadata caches) change nothing.

Every module is parsed twice, with the fast paths (the default) and with the general readers
only (``parse_module(text, fast=False)``); both must give the same module, instruction by
instruction, or the same error at the same line and column.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance import all_cases
from xlapy.errors import HloParseError
from xlapy.hlo.ir import HloComputation, HloModule
from xlapy.hlo.lexer import Scanner, read_shape
from xlapy.hlo.parser import HloParser, parse_module, parse_shape

DATA = Path(__file__).parent / "data" / "hlo"


def _value(v: Any) -> Any:
    if isinstance(v, HloComputation):
        return ("computation", v.name)
    if isinstance(v, tuple):
        return tuple(_value(x) for x in v)
    return (type(v).__name__, repr(v))


def _literal(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, tuple):
        return tuple(_literal(y) for y in x)
    a = np.asarray(x)
    return a.dtype.str, a.shape, a.tobytes()


def fingerprint(module: HloModule) -> list:
    """Everything the parser decides: text, header, and each instruction's fields and links."""
    out: list = [module.to_text(), sorted((k, repr(v)) for k, v in module.attributes.items())]
    for comp in module.computations:
        out.append((comp.name, comp.root.name, comp.execution_thread, comp is module.entry,
                    [p.name for p in comp.parameters]))
        for i in comp.instructions:
            out.append((i.name, i.opcode, repr(i.shape), i.shape, [o.name for o in i.operands],
                        [c.name for c in i.control_predecessors], [u.name for u in i.users],
                        [(k, _value(v)) for k, v in i.attrs.items()], _literal(i.literal),
                        i.parameter_number))
    return out


def outcome(text: str, fast: bool) -> tuple:
    """("ok", fingerprint) or ("error", message, line, column, expected)."""
    try:
        return ("ok", fingerprint(parse_module(text, fast=fast)))
    except HloParseError as e:
        return ("error", e.bare_message, e.line, e.column, e.expected)


def assert_same(text: str) -> tuple:
    """The outcome of parsing ``text``, the same with and without the fast paths."""
    fast, general = outcome(text, True), outcome(text, False)
    assert fast == general, text[:2000]
    return fast


def corpus() -> list[tuple[str, str]]:
    files = [(f"{c.name}/{f}", (c.path / f).read_text())
             for c in all_cases() for f in ("module.hlo", "module.optimized.hlo")]
    return files + [(p.name, p.read_text()) for p in sorted(DATA.glob("*.hlo"))]


@pytest.mark.parametrize("name,text", [pytest.param(n, t, id=n) for n, t in corpus()])
def test_fast_and_general_parse_agree(name, text):
    assert assert_same(text)[0] == "ok", name


@pytest.mark.parametrize("long", [True, False])
def test_printed_text_agrees(long):
    """xlapy's own printing (what the CPU backend's disk cache stores), long and short form."""
    texts = [p.read_text() for p in sorted(DATA.glob("*.hlo"))] + [EDGE_BASE]
    texts += [c.text("module.optimized.hlo") for c in all_cases()     # two training steps
              if c.name in ("train_mlp_adam", "train_tf_mlp_momentum")]
    for text in texts:
        assert_same(parse_module(text).to_text(long=long))


def test_fast_paths_are_taken():
    """The caches fill, so the fast paths run (and the tests here compare something)."""
    sc = Scanner("f32[2,3]{1,0}")
    read_shape(sc)
    assert sc.shapes == {"f32[2,3]{1,0}": parse_shape("f32[2,3]{1,0}", fast=False)}
    parser = HloParser(EDGE_BASE)
    parser.parse_module()
    assert "(f32[2]{0}, s32[])" in parser.sc.shapes and len(parser.sc.metadata) == 2
    parser = HloParser(EDGE_BASE, fast=False)
    parser.parse_module()
    assert not parser.sc.shapes and not parser.sc.metadata


EDGE_BASE = """HloModule m, entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0), metadata={op_type="add" op_name="x/add" source_line=3}
  %b = f32[] parameter(1), metadata={op_type="add" op_name="x/add" source_line=3}
  ROOT %c = f32[] add(f32[] %a, f32[] %b), metadata={op_type="add" op_name="x/add" source_line=3}
}

ENTRY %main (p: f32[2], q: s32[]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %q = s32[] parameter(1)
  %t = (f32[2]{0}, s32[]) tuple(f32[2]{0} %p, s32[] %q)
  %g = f32[2]{0} get-tuple-element((f32[2]{0}, s32[]) %t), index=0
  %z = f32[] constant(0)
  %r = f32[] reduce(f32[2]{0} %g, f32[] %z), dimensions={0}, to_apply=%add
  ROOT %out = f32[2]{0} broadcast(f32[] %r), dimensions={}, metadata={op_name="b"}
}
"""

# Spellings at the edge of what the fast patterns accept: each must read as the general
# readers read it (or fail with the same error).
EDGE_EDITS = [
    ("f32[2]{0} parameter(0)", "f32[2] {0} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[2]/*c*/{0} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[2]{0:T(2)} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[2]{} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[2]{0}{0} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[<=2]{0} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[ 2 ]{ 0 } parameter( 0 )"),
    ("f32[2]{0} parameter(0)", "token[]{} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f33[2]{0} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[2]{1} parameter(0)"),
    ("f32[2]{0} parameter(0)", "f32[2]{0} parameter(-0)"),
    ("f32[2]{0} parameter(0)", "f32[2]{0} parameter(+0)"),
    ("f32[2]{0} parameter(0)", "f32[2]{0} parameter(0 )"),
    ("f32[2]{0} parameter(0)", "f32[2]{0} parameter(p)"),
    ("f32[2]{0} parameter(0)", "f32[2]{0} parameter (0)"),
    ("%p = f32[2]", "ROOT %p = f32[2]"),
    ("%p = f32[2]", "%p= f32[2]"),
    ("%p = f32[2]", "ROOT = f32[2]"),
    ("%p = f32[2]", "ENTRY = f32[2]"),
    ("%p = f32[2]", "ROOT ROOT = f32[2]"),
    ("%p = f32[2]", "ROOT  %p = f32[2]"),
    ("%p = f32[2]", "ENTRYx = f32[2]"),
    ("%p = f32[2]", "%p-q = f32[2]"),
    ("%p = f32[2]", "%p-> = f32[2]"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(%p, %q)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[2]{0} %p,s32[] %q)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[2]{0}%p, s32[] %q)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[2]{0}%p, s32[]%q)"),
    ("broadcast(f32[] %r)", "broadcast(f32[]%r)"),
    ("broadcast(f32[] %r)", "broadcast(f32[] r)"),
    ("broadcast(f32[] %r)", "broadcast(f32[]r)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[3]{0} %p, s32[] %q)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[2]{0} %p, s32[] %nope)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[2]{0} %p, s32[] parameter(1))"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[2]{0} %p, s32[] %q, s32[] %q)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple()"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(abcdefghijklmnopqrstuvwxyz[2] %p)"),
    ("tuple(f32[2]{0} %p, s32[] %q)", "tuple(f32[2]{0} %p, s32[] %q-)"),
    ("(f32[2]{0}, s32[]) %t)", "(f32[2]{0},s32[]) %t)"),
    ("(f32[2]{0}, s32[]) %t)", "(f32[2]{0}, /*index=1*/s32[]) %t)"),
    ("(f32[2]{0}, s32[]) %t)", "((f32[2]{0}), s32[]) %t)"),
    ("index=0", "index=0 , metadata={}"),
    ("index=0", "index=0\n  , metadata={op_name=\"x\"}"),
    ("index=0", "index=0\n  // comment\n  , metadata={op_name=\"x\"}"),
    ("index=0", "index=0, index=0"),
    ("index=0", "index=0, metadata={op_name=\"a}b\"}"),
    ("index=0", "index=0, metadata={op_name=\"a\\\\\"b\" source_line=-1}"),
    ("index=0", "index=0, metadata={op_name=\"a\\qb\"}"),
    ("index=0", "index=0, metadata={op_name=\"a\" }"),
    ("index=0", "index=0, metadata={op_name=\"a\"source_line=1}"),
    ("index=0", "index=0, metadata={source_line=12x}"),
    ("index=0", "index=0, metadata={source_line=1x=2}"),
    ("index=0", "index=0, metadata={source_line=1 op_name=\"a\"op_type=\"b\"}"),
    ("index=0", "index=0, metadata={op-name=\"a\"}"),
    ("index=0", "index=0, metadata={a={b} c=\"d\"}"),
    ("dimensions={0}", "dimensions={ 0 }"),
    ("dimensions={0}", "dimensions={+0}"),
    ("dimensions={0}", "dimensions={0,}"),
    ("dimensions={0}", "dimensions={{0}}"),
    ("metadata={op_type=\"add\" op_name=\"x/add\" source_line=3}\n  %b",
     "metadata={op_type=\"add\" op_name=\"x/add\" source_line=3} junk\n  %b"),
    ("(a: f32[], b: f32[]) -> f32[] {", "(a: f32[], b: f32[]) -> f32[]{"),
    ("(a: f32[], b: f32[]) -> f32[] {", "(a: f32[], b: f33[]) -> f32[] {"),
    ("(a: f32[], b: f32[]) -> f32[] {", "(a: f32[] b: f32[]) -> f32[] {"),
    ("(a: f32[], b: f32[]) -> f32[] {", "(a: f32[], b: f32[]) -> f32[] {}\n%x {"),
    ("(p: f32[2], q: s32[]) -> f32[2] {", "(p: f32[2], q: s32[]) -> f32[2]{0} {"),
    ("(p: f32[2], q: s32[]) -> f32[2] {", "(p: f32[2]{0}, q: s32[]) -> f32[2] {0}"),
    ("(p: f32[2], q: s32[]) -> f32[2] {", "(p: f32[2]{0}, q: s32[]) -> s32[] {}\n%x {"),
    ("(p: f32[2], q: s32[]) -> f32[2] {", "(p: f32[2]{0}, q: (f32[2]{0}, s32[])) -> s32[] {"),
]


@pytest.mark.parametrize("old,new", EDGE_EDITS)
def test_edge_spellings(old, new):
    assert old in EDGE_BASE
    assert_same(EDGE_BASE.replace(old, new, 1))


@pytest.mark.parametrize("text", ["f32[2,3]{1,0}", "f32[2,3] {1,0}", "token[]{}", "()",
                                  "(f32[], (s32[2]{0}, pred[]))", "f32[2]{0:T(2)}", "f32[?]",
                                  "f32[2]{0} junk", "(f32[], /*index=1*/s32[])", "f32[2,]"])
def test_shapes_agree(text):
    def read(fast: bool) -> Any:
        try:
            return parse_shape(text, fast=fast)
        except HloParseError as e:
            return e.bare_message, e.line, e.column
    assert read(True) == read(False)


def test_mutated_modules_agree():
    """Random edits of real modules (mostly malformed) fail or succeed alike both ways."""
    rng = random.Random(11)
    texts = [t for _, t in corpus() if len(t) < 8000] + [EDGE_BASE]
    for _ in range(300):
        t = rng.choice(texts)
        i = rng.randrange(len(t))
        c = rng.choice(['{', '}', '(', ')', '[', ']', ',', '=', '%', '"', ':', '/', '*', 'x',
                        '0', '-', '.', '<', ' ', '\n', '\\', '/*c*/', ', ', ' %'])
        j = i + rng.randrange(1, 12)
        assert_same(rng.choice([t[:i], t[:i] + c + t[i:], t[:i] + c + t[i + 1:], t[:i] + t[j:]]))
