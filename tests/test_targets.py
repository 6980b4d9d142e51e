"""Backends found by their folder (``Target``), the one optimize path, and the explicit
pass context: what a pass depends on comes in ``run(module, ctx)``, nothing else."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import xlapy
from xlapy.backends import target as target_mod
from xlapy.backends.compile import optimize_module, pass_context
from xlapy.backends.cpu.pipeline import ROW_REDUCTION_RULES, CpuTarget
from xlapy.backends.interpreter.runtime import InterpreterBackend
from xlapy.client import backends as client_backends
from xlapy.config import debug_options, env_cache_disabled, env_llvm_helpers
from xlapy.errors import InvalidArgumentError
from xlapy.hlo import parse_module
from xlapy.passes import HloConstantFolding, HloDCE, HloPass, HloPassPipeline, PassContext
from xlapy.passes.pipeline import target_independent_passes

FOLDABLE = """HloModule foldable
ENTRY main {
  p = f32[4] parameter(0)
  a = f32[] constant(2)
  b = f32[] negate(a)
  bb = f32[4] broadcast(b), dimensions={}
  ROOT r = f32[4] multiply(p, bb)
}"""


def test_backends_are_the_folders_with_a_pipeline():
    assert {"cpu", "interpreter"} <= set(target_mod.target_names())
    assert isinstance(target_mod.get_target("cpu"), CpuTarget)
    assert target_mod.get_target("Host") is target_mod.get_target("cpu")
    assert target_mod.get_target("interpreter").name == "interpreter"
    with pytest.raises(InvalidArgumentError, match="no optimization pipeline.*known: "):
        target_mod.get_target("tpu")


def test_the_cpu_target_gives_its_emitters_rules():
    from xlapy.backends.cpu import reduction_plan, thunks
    rules = target_mod.get_target("cpu").row_reduction_rules
    assert rules is ROW_REDUCTION_RULES
    assert rules.row_cache_elements == reduction_plan.ROW_CACHE_ELEMENTS
    shape = parse_module(FOLDABLE).entry.root.shape.with_default_layout()
    assert rules.major_to_minor(shape) == thunks.major_to_minor(shape) == [0]


def test_optimize_module_clones_runs_the_pipeline_and_assigns_buffers():
    source = parse_module(FOLDABLE)
    text = source.to_text()
    result = optimize_module(source, target_mod.get_target("cpu"), pass_context())
    assert source.to_text() == text                        # not modified
    assert result.module is not source
    assert "negate" not in result.module.to_text()          # folded by the interpreter
    assert result.buffers.to_text()
    assert [r.name for r in result.pipeline.records][:2] == ["sharding-remover", "dce"]
    x = np.arange(4, dtype=np.float32)
    (out,) = xlapy.run_hlo(result.module, [x], backend="interpreter")
    np.testing.assert_array_equal(out, -2 * x)


class _FakeTarget(target_mod.Target):
    """A backend that only exists in this test: DCE as its pipeline, the interpreter as
    its runtime."""

    name = "fake"

    def __init__(self) -> None:
        self.contexts: list[PassContext] = []

    def pipeline(self, ctx: PassContext) -> HloPassPipeline:
        self.contexts.append(ctx)
        return HloPassPipeline("fake", [HloDCE()])

    def create_backend(self) -> InterpreterBackend:
        return InterpreterBackend()


def _add_fake_folder(monkeypatch, **attrs) -> None:
    """Make ``xlapy/backends/fake/pipeline.py`` appear, with ``attrs`` as its contents."""
    module = types.ModuleType("xlapy.backends.fake.pipeline")
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, "xlapy.backends.fake", types.ModuleType("xlapy.backends.fake"))
    monkeypatch.setitem(sys.modules, "xlapy.backends.fake.pipeline", module)
    folders = target_mod._folders()
    monkeypatch.setattr(target_mod, "_folders", lambda: sorted(folders + ["fake"]))
    monkeypatch.setattr(client_backends, "_FACTORIES", dict(client_backends._FACTORIES))
    monkeypatch.setattr(client_backends, "_INSTANCES", dict(client_backends._INSTANCES))


def test_a_new_backend_folder_is_found_without_registration(monkeypatch):
    fake = _FakeTarget()
    _add_fake_folder(monkeypatch, TARGET=fake)
    assert "fake" in client_backends.available_backends()
    optimized = xlapy.optimize(FOLDABLE, "fake")
    assert "negate" in optimized.to_text()                   # only DCE ran
    assert fake.contexts and fake.contexts[0].constant_evaluator is not None
    x = np.ones(4, np.float32)
    (out,) = xlapy.run_hlo(FOLDABLE, [x], backend="fake")
    np.testing.assert_array_equal(out, -2 * x)
    assert isinstance(client_backends.get_backend("FAKE"), InterpreterBackend)


def test_a_folder_may_serve_several_backend_names(monkeypatch):
    fake, sim = _FakeTarget(), _FakeTarget()
    _add_fake_folder(monkeypatch, TARGETS={"fake": fake, "fake_sim": sim})
    assert {"fake", "fake_sim"} <= set(target_mod.target_names())
    assert target_mod.get_target("fake") is fake and target_mod.get_target("Fake_Sim") is sim
    xlapy.optimize(FOLDABLE, "fake_sim")
    assert sim.contexts and not fake.contexts
    with pytest.raises(InvalidArgumentError, match="unknown or unavailable backend 'nope'"):
        client_backends.get_backend("nope")


class _Spy(HloPass):
    name = "spy"

    def __init__(self) -> None:
        self.seen: list[PassContext | None] = []

    def run(self, module, ctx=None) -> bool:
        self.seen.append(ctx)
        return False


def test_every_pass_of_a_pipeline_gets_the_runs_context():
    spy = _Spy()
    ctx = pass_context(reference_mode=True)
    HloPassPipeline("outer", [HloPassPipeline("inner", [spy]), spy]).run(
        parse_module(FOLDABLE), ctx)
    assert spy.seen == [ctx, ctx]


def test_pipeline_without_a_context_takes_flags_and_its_own_settings():
    spy = _Spy()
    with debug_options(xla_disable_hlo_passes="dce"):
        HloPassPipeline("p", [spy], verify=True).run(parse_module(FOLDABLE))
    (ctx,) = spy.seen
    assert ctx.verify and "dce" in ctx.options.disabled_passes
    assert ctx.constant_evaluator is None and not ctx.reference_mode


def test_constant_folding_uses_only_the_context_evaluator():
    calls = []

    def evaluate(instr, operands):
        calls.append(instr.opcode)
        return -np.asarray(operands[0])
    m = parse_module(FOLDABLE)
    assert HloConstantFolding().run(m) is False                 # no evaluator: nothing
    assert HloConstantFolding().run(m, PassContext(constant_evaluator=evaluate))
    assert calls == ["negate"]


def test_target_independent_passes_fold_only_with_an_evaluator():
    plain, folded = parse_module(FOLDABLE), parse_module(FOLDABLE)
    HloPassPipeline("p", target_independent_passes()).run(plain)
    HloPassPipeline("p", target_independent_passes()).run(folded, pass_context())
    assert "negate" in plain.to_text() and "negate" not in folded.to_text()


def test_a_backends_pipeline_remembers_its_compilation_context():
    folded = parse_module(FOLDABLE)
    xlapy.client.pipeline_for("interpreter").run(folded)     # no context given
    assert "negate" not in folded.to_text()


def test_context_replace_follows_new_options():
    ctx = PassContext()
    with debug_options(xla_dump_to="/tmp/x-dump-test"):
        from xlapy.config import get_debug_options
        other = ctx.replace(options=get_debug_options())
    assert other.dump.enabled and not ctx.dump.enabled


def test_xlapy_environment_variables_are_read_in_config(monkeypatch):
    monkeypatch.setenv("XLAPY_LLVM_HELPERS", "three")
    assert env_llvm_helpers() == 0
    monkeypatch.setenv("XLAPY_LLVM_HELPERS", "3")
    assert env_llvm_helpers() == 3
    monkeypatch.delenv("XLAPY_LLVM_HELPERS")
    assert env_llvm_helpers() is None
    monkeypatch.setenv("XLAPY_DISABLE_CACHE", "Yes")
    assert env_cache_disabled()
    monkeypatch.setenv("XLAPY_DISABLE_CACHE", "0")
    assert not env_cache_disabled()


def test_importing_xlapy_loads_no_backend_code():
    """``import xlapy`` finds backends by name only: the interpreter's handlers, the
    verifier's shape rules and llvmlite load when a backend or pass first needs them."""
    import subprocess
    code = ("import sys, xlapy; print(' '.join(m for m in ('xlapy.backends.interpreter', "
            "'xlapy.hlo.verifier', 'xlapy.hlo.shape_inference', 'llvmlite') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()
    assert out == ""
    assert client_backends.InterpreterBackend is InterpreterBackend
