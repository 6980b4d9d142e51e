"""A small, deterministic fuzz campaign (``xlapy/tools/fuzz.py``): mutated conformance
modules run on the interpreter and the CPU backend in a worker process; none may crash,
hang, raise an untyped error or make the backends disagree. ``python -m xlapy fuzz
--minutes N`` runs the long campaign."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from xlapy.tools import fuzz

CONFORMANCE = fuzz.DEFAULT_CONFORMANCE
needs_cases = pytest.mark.skipif(not (CONFORMANCE / "cases").is_dir(),
                                 reason=f"no conformance modules at {CONFORMANCE}")


def test_default_conformance_path_is_next_to_the_repository():
    repo = Path(fuzz.__file__).resolve().parents[2]
    assert fuzz.DEFAULT_CONFORMANCE == repo.parent / "shared" / "conformance"


def test_mutations_are_deterministic_and_edit_the_text():
    text = ("HloModule m\nENTRY e {\n  a = f32[4,3] parameter(0)\n  b = f32[4,3] negate(a)\n"
            "  c = f32[] constant(2)\n  ROOT r = f32[4,3] add(a, b)\n}\n")
    first = [fuzz.mutate(text, random.Random(s)) for s in range(40)]
    again = [fuzz.mutate(text, random.Random(s)) for s in range(40)]
    assert first == again
    changed = [(t, e) for t, e in first if e]
    assert len(changed) > 20 and all(t != text for t, _ in changed)
    kinds = {e.split(": ", 1)[1].split()[0] for _, edits in changed for e in edits}
    assert {"dimension", "opcode", "type"} <= kinds, kinds


@needs_cases
def test_short_campaign_has_no_crash_untyped_error_or_disagreement(tmp_path):
    summary = fuzz.campaign(CONFORMANCE, seed=2026, count=12, timeout=300, out=tmp_path)
    assert summary.mutants == 12
    for backend in ("interpreter", "cpu"):
        counts = summary.counts[backend]
        assert sum(counts.values()) == 12
        assert not any(counts.get(k) for k in ("untyped", "crash", "hang")), summary.text()
    assert summary.disagreements == 0, summary.text()
    assert not list(tmp_path.iterdir())


def test_worker_reports_hangs_and_typed_errors(tmp_path):
    """A module that never finishes is a hang (the worker is replaced); one the verifier
    rejects is a typed error on both backends."""
    forever = ("HloModule w\ncond {\n  p = s32[] parameter(0)\n  ROOT t = pred[] constant(true)\n"
               "}\nbody {\n  p = s32[] parameter(0)\n  o = s32[] constant(1)\n"
               "  ROOT n = s32[] add(p, o)\n}\nENTRY e {\n  x = s32[] parameter(0)\n"
               "  ROOT w = s32[] while(x), condition=cond, body=body\n}\n")
    bad = "HloModule b\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT r = f32[5] negate(a)\n}\n"
    case = fuzz.Case("inline", forever, None)
    worker = fuzz.Worker(dict(__import__("os").environ, XLAPY_CACHE_DIR=str(tmp_path)))
    try:
        hung = worker.run(case, forever, ["none"], 0, timeout=8)
        assert hung.outcomes["interpreter"].status == "hang" and hung.failed
        rejected = worker.run(case, bad, ["none"], 0, timeout=120)
        assert {o.status for o in rejected.outcomes.values()} == {"typed"}
        assert not rejected.failed
    finally:
        worker.stop()
    path = fuzz.save(hung, tmp_path / "saved", 3)
    assert path.read_text() == forever and path.with_suffix(".json").exists()
