"""HloPassPipeline / HloPassFix: records, pass control flags, fixed points, errors, verify, dumps."""
from __future__ import annotations

import logging
import os

import pytest

import xlapy.hlo as H
from xlapy.config import debug_options, reset_dump_numbering
from xlapy.errors import InvalidArgumentError, VerificationError
from xlapy.hlo.shape import Shape
from xlapy.backends.cpu.pipeline import cpu_pipeline
from xlapy.passes import (AlgebraicSimplifier, HloDCE, HloPass, HloPassFix, HloPassPipeline,
                          format_pass_timings)
from xlapy.passes.dump import dump_hlo_module

TEXT = """HloModule jit_f
ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(1)
  b = f32[4] broadcast(z), dimensions={}
  m = f32[4] multiply(p, b)
  dead = f32[4] negate(p)
  ROOT n = f32[4] negate(m)
}"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    reset_dump_numbering()
    yield
    reset_dump_numbering()


class Countdown(HloPass):
    """Reports a change the first ``n`` times it runs."""

    def __init__(self, name: str, n: int) -> None:
        self.name = name
        self.left = n
        self.calls = 0

    def run(self, module, ctx=None) -> bool:
        self.calls += 1
        if self.left > 0:
            self.left -= 1
            return True
        return False


class Boom(HloPass):
    name = "boom"

    def run(self, module, ctx=None) -> bool:
        raise InvalidArgumentError("operand shapes f32[2] and f32[3] do not match")


class BreakShape(HloPass):
    """Gives the root a wrong shape (the verifier must notice)."""

    name = "break-shape"

    def run(self, module, ctx=None) -> bool:
        module.entry.root.shape = Shape.array("s32", (7,))
        return True


def test_records_list_every_pass_in_order():
    m = H.parse_module(TEXT)
    a, b = Countdown("a", 1), Countdown("b", 0)
    result = HloPassPipeline("p", [a, b]).run_with_report(m)
    assert result.changed
    assert [(r.pipeline, r.name, r.changed) for r in result.records] == [("p", "a", True),
                                                                          ("p", "b", False)]
    assert all(r.seconds >= 0 for r in result.records)
    table = format_pass_timings(result)
    assert "a" in table and "total" in table.splitlines()[-1]
    assert len(table.splitlines()) == 2 + 2 + 2        # header, rule, 2 rows, rule, total


def test_fixpoint_runs_until_no_change_and_records_iterations():
    m = H.parse_module(TEXT)
    inner = Countdown("c", 3)
    result = HloPassPipeline("p", [HloPassFix(inner)]).run_with_report(m)
    assert inner.calls == 4
    assert [r.iteration for r in result.records] == [1, 2, 3, 4]
    assert [r.changed for r in result.records] == [True, True, True, False]


def test_fixpoint_of_nested_pipeline_and_iteration_limit(caplog):
    m = H.parse_module(TEXT)
    x, y = Countdown("x", 100), Countdown("y", 0)
    fix = HloPassFix(HloPassPipeline("inner", [x, y]), max_iterations=5)
    with caplog.at_level(logging.WARNING, logger="xlapy.passes"):
        result = HloPassPipeline("outer", [fix]).run_with_report(m)
    assert x.calls == 5 and y.calls == 5
    assert {r.pipeline for r in result.records} == {"inner"}
    assert "did not reach a fixed point after 5 iterations" in caplog.text


def test_disabled_passes_are_skipped_and_recorded():
    m = H.parse_module(TEXT)
    a, b = Countdown("a", 1), Countdown("b", 1)
    with debug_options(xla_disable_hlo_passes="a"):
        result = HloPassPipeline("p", [a, b]).run_with_report(m)
    assert a.calls == 0 and b.calls == 1
    assert [(r.name, r.disabled) for r in result.records] == [("a", True), ("b", False)]
    assert "disabled" in format_pass_timings(result.records)


def test_disabled_passes_from_xla_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_disable_hlo_passes=b,zzz")
    a, b = Countdown("a", 0), Countdown("b", 0)
    HloPassPipeline("p", [a, b]).run(H.parse_module(TEXT))
    assert (a.calls, b.calls) == (1, 0)


def test_enable_only_reaches_into_nested_pipelines_and_disable_all():
    a, b = Countdown("a", 0), Countdown("b", 0)
    pipe = HloPassPipeline("outer", [a, HloPassPipeline("nested", [b])])
    with debug_options(xla_enable_hlo_passes_only="b"):
        pipe.run(H.parse_module(TEXT))
    assert (a.calls, b.calls) == (0, 1)
    with debug_options(xla_disable_all_hlo_passes=True):
        assert pipe.run(H.parse_module(TEXT)) is False
    assert (a.calls, b.calls) == (0, 1)
    with debug_options(xla_disable_hlo_passes="nested"):
        pipe.run(H.parse_module(TEXT))
    assert (a.calls, b.calls) == (1, 1)


def test_pass_errors_name_the_pass():
    with pytest.raises(InvalidArgumentError) as info:
        HloPassPipeline("outer", [HloPassPipeline("inner", [Boom()])]).run(H.parse_module(TEXT))
    msg = str(info.value)
    assert msg.startswith("HLO pass 'boom' (pipeline 'inner'): operand shapes")
    assert msg.count("HLO pass") == 1


def test_verify_catches_a_broken_pass():
    with pytest.raises(VerificationError, match="after HLO pass 'break-shape'"):
        HloPassPipeline("p", [BreakShape()], verify=True).run(H.parse_module(TEXT))
    # without verify the broken module goes through
    HloPassPipeline("p", [BreakShape()]).run(H.parse_module(TEXT))


def test_real_passes_change_the_module():
    m = H.parse_module(TEXT)
    result = HloPassPipeline("p", [AlgebraicSimplifier(), HloDCE()], verify=True) \
        .run_with_report(m)
    assert [r.changed for r in result.records] == [True, True]
    assert [i.opcode for i in m.entry.instructions] == ["parameter", "negate"]


def test_per_pass_dumps_have_xla_names(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path} --xla_dump_hlo_pass_re=.*")
    m = H.parse_module(TEXT)
    unchanged = Countdown("noop", 0)
    HloPassPipeline("simp", [AlgebraicSimplifier(), unchanged, HloDCE()]).run(m)
    names = sorted(os.listdir(tmp_path))
    assert names == [
        "module_0001.jit_f.0001.simp.after_pipeline-start.before_algsimp.txt",
        "module_0001.jit_f.0002.simp.after_algsimp.before_noop.txt",
        "module_0001.jit_f.0003.simp.after_dce.before_pipeline-end.txt",
    ]
    last = H.parse_module((tmp_path / names[-1]).read_text())
    assert [i.opcode for i in last.entry.instructions] == ["parameter", "negate"]
    first = H.parse_module((tmp_path / names[0]).read_text())
    assert len(first.entry.instructions) == len(H.parse_module(TEXT).entry.instructions)


def test_pass_re_selects_passes(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path} --xla_dump_hlo_pass_re=^dce$")
    HloPassPipeline("simp", [AlgebraicSimplifier(), HloDCE()]).run(H.parse_module(TEXT))
    assert os.listdir(tmp_path) == ["module_0001.jit_f.0001.simp.after_dce.before_pipeline-end.txt"]


def test_dump_module_text_dot_html(tmp_path):
    with debug_options(xla_dump_to=str(tmp_path), xla_dump_hlo_as_text=True,
                       xla_dump_hlo_as_dot=True, xla_dump_hlo_as_html=True):
        paths = dump_hlo_module(H.parse_module(TEXT), "before_optimizations")
    assert sorted(os.path.basename(p) for p in paths) == [
        "module_0001.jit_f.before_optimizations.dot",
        "module_0001.jit_f.before_optimizations.html",
        "module_0001.jit_f.before_optimizations.txt"]
    dot = (tmp_path / "module_0001.jit_f.before_optimizations.dot").read_text()
    assert dot.startswith('digraph "jit_f"') and "->" in dot and "multiply" in dot
    page = (tmp_path / "module_0001.jit_f.before_optimizations.html").read_text()
    assert "<html>" in page and "digraph" in page


def test_slow_pipeline_warns_with_dump_hint(caplog):
    with caplog.at_level(logging.WARNING, logger="xlapy.passes"):
        HloPassPipeline("slowpipe", [Countdown("a", 0)], slow_warning_seconds=0.0) \
            .run(H.parse_module(TEXT))
    assert "slowpipe" in caplog.text and "XLA_FLAGS=--xla_dump_to=DIR" in caplog.text


def test_cpu_pipeline_order():
    pipe = cpu_pipeline()
    names = pipe.pass_names
    assert names == ["sharding-remover", "dce", "dynamic-padder", "dot_decomposer",
                     "zero_sized_hlo_elimination", "comparison-expander",
                     "reducer-operand-types", "call-inliner",
                     "dot_decomposer", "batchnorm_expander",
                     "convolution-canonicalization", "simplification", "transpose-folding", "cse",
                     "tuple-simplifier", "dce", "bf16-excess-precision", "change-op-data-type",
                     "layout-assignment",
                     "fusion", "conv-output-fusion", "reduction_consumer_fusion",
                     "multi_output_fusion", "copy-insertion",
                     "elementwise-rematerialization"]
    m = H.parse_module(TEXT)
    pipe.run(m)
    assert m.entry.root.shape.dims == (4,)
    # a memory budget adds rematerialization after copy insertion, before buffer assignment
    from xlapy.config import get_debug_options
    from xlapy.passes.context import PassContext
    budget = PassContext(get_debug_options().replace(xla_cpu_memory_limit_bytes=1 << 20))
    # (and leaves returned loop values unmerged: a merged loop holds all its inputs and
    # outputs at once)
    assert cpu_pipeline(budget).pass_names == \
        [n for n in names if n != "multi_output_fusion"] + ["rematerialization"]


def test_transposes_folded_into_several_dots_are_removed():
    """A transpose read by two dots is folded into both and then removed (it would
    otherwise run on every call, its result unused)."""
    m = H.parse_module("""HloModule m
ENTRY main {
  a = f32[5,3] parameter(0)
  b = f32[5,4] parameter(1)
  c = f32[5,2] parameter(2)
  ta = f32[3,5] transpose(a), dimensions={1,0}
  d = f32[3,4] dot(ta, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[3,2] dot(ta, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = (f32[3,4], f32[3,2]) tuple(d, e)
}""")
    cpu_pipeline().run(m)
    assert "transpose" not in [i.opcode for i in m.entry.instructions]
