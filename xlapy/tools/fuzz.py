"""``python -m xlapy fuzz``: mutate real XLA programs and run them on both backends.

Each mutant is a conformance module (``<dir>/cases/*/*/module*.hlo``, JAX and TensorFlow
programs before and after XLA's optimizations) with one or two random edits of its text:
a dimension, an integer attribute, an opcode, an element type, an operand, a constant
or a whole line. It runs on the reference interpreter and on the CPU backend, in a
worker process (so a crash or a hang is observed, not suffered), with the module's own
arguments where their shapes still fit and seeded random ones otherwise.

Each backend's outcome is one of: ``ok``; ``typed`` (an :class:`~xlapy.errors.XlapyError`:
the parser, the verifier or an argument check refused it, as it should); ``untyped``
(any other exception: a bug); ``crash`` (the worker died, e.g. SIGSEGV); ``hang`` (no
answer within ``--timeout`` seconds). When both run, their outputs are compared with
the case's tolerances (XLA's ``Near`` rule, NaN equal to NaN): a difference is a
``disagreement``. Every mutant that is not ``ok``/``typed`` on both backends, or whose
results disagree, is saved to ``--out`` (its text, the edits and the outcome).

Mutants are a deterministic function of ``--seed``, so a campaign can be replayed.
The test suite runs a small campaign (``tests/test_fuzz_reliability.py``).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

log = logging.getLogger("xlapy.fuzz")

DEFAULT_CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"

_UNARY = ["negate", "abs", "sine", "cosine", "exponential", "log", "sqrt", "rsqrt", "tanh",
          "floor", "ceil", "sign", "not", "logistic", "is-finite", "round-nearest-even",
          "cbrt", "exponential-minus-one", "log-plus-one", "copy", "popcnt", "tan"]
_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
           "remainder", "atan2", "and", "or", "xor", "shift-left", "shift-right-logical",
           "shift-right-arithmetic"]
_TYPES = ["f32", "f16", "bf16", "f64", "s32", "s8", "u8", "u32", "pred", "s64"]
_CONSTANTS = ["0", "-1", "1", "3.4e38", "nan", "inf", "-inf", "-0", "65536", "1e-45", "7"]

_INSTR = re.compile(r"^(\s*(?:ROOT\s+)?%?)([\w.\-]+)(\s*=\s*)(.*)$")
_SHAPE_DIMS = re.compile(r"\b(pred|[sufc]\d+|bf16|f8\w*)\[([\d,]*)\]")
_ATTR_INTS = re.compile(r"\b([a-z_]+)=(\{[\d,\s]*\}|-?\d+)")
_OPCODE = re.compile(r"\]\S*\s+([a-z][a-z\-]*)\(")
_CONSTANT = re.compile(r"constant\(([^()]*)\)")


@dataclass
class Case:
    """One conformance module: its text, arguments file and tolerances."""

    name: str
    text: str
    data: Path | None
    rtol: float = 1e-3
    atol: float = 1e-3


@dataclass
class Outcome:
    """What one backend did with one mutant."""

    status: str                   # ok, typed, untyped, crash, hang
    error: str = ""


@dataclass
class Result:
    """A mutant and what both backends did with it."""

    case: str
    edits: list[str]
    text: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    disagreement: str = ""

    @property
    def failed(self) -> bool:
        bad = any(o.status not in ("ok", "typed") for o in self.outcomes.values())
        return bad or bool(self.disagreement)


# ------------------------------------------------------------------------------ cases and edits
def load_cases(root: Path) -> list[Case]:
    """Every ``module*.hlo`` under ``root/cases`` with its ``data.npz`` and tolerances."""
    cases = []
    for hlo in sorted(root.glob("cases/*/*/module*.hlo")):
        meta: dict = {}
        meta_path = hlo.parent / "case.json"
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
            except ValueError:
                meta = {}
        data = hlo.parent / "data.npz"
        cases.append(Case(f"{hlo.parent.name}/{hlo.name}", hlo.read_text(),
                          data if data.exists() else None,
                          float(meta.get("rtol", 1e-3)), float(meta.get("atol", 1e-3))))
    return cases


def _names(lines: list[str], k: int) -> list[str]:
    """Instruction names defined in the computation holding line ``k``."""
    lo = k
    while lo > 0 and "{" not in lines[lo - 1].rstrip()[-1:]:
        lo -= 1
    hi = k
    while hi < len(lines) and lines[hi].strip() != "}":
        hi += 1
    out = []
    for line in lines[lo:hi]:
        m = _INSTR.match(line)
        if m:
            out.append(m.group(2))
    return out


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """``text`` with one or two random edits, and a description of each."""
    lines = text.split("\n")
    edits: list[str] = []
    for _ in range(rng.choice((1, 1, 2))):
        candidates = [k for k, line in enumerate(lines) if _INSTR.match(line)]
        if not candidates:
            break
        k = rng.choice(candidates)
        new, what = _edit_line(lines, k, rng)
        if new is None or new == lines[k]:
            continue
        edits.append(f"line {k + 1}: {what}")
        if new == "":
            del lines[k]
        else:
            lines[k] = new
    return "\n".join(lines), edits


def _replace_span(line: str, span: tuple[int, int], value: str) -> str:
    return line[:span[0]] + value + line[span[1]:]


def _edit_line(lines: list[str], k: int, rng: random.Random) -> tuple[str | None, str]:
    line = lines[k]
    kind = rng.choice(["dim", "dim", "attr", "attr", "opcode", "type", "operand", "constant",
                       "drop"])
    if kind == "dim":
        shapes = list(_SHAPE_DIMS.finditer(line))
        shapes = [m for m in shapes if m.group(2)]
        if shapes:
            m = rng.choice(shapes)
            dims = [int(d) for d in m.group(2).split(",")]
            i = rng.randrange(len(dims))
            dims[i] = rng.choice([dims[i] + 1, max(dims[i] - 1, 0), 0, 1, dims[i] * 2])
            return (_replace_span(line, m.span(2), ",".join(map(str, dims))),
                    f"dimension {i} of {m.group(0)} -> {dims[i]}")
    if kind == "attr":
        attrs = [m for m in _ATTR_INTS.finditer(line) if m.group(1) not in ("parameter",)]
        if attrs:
            m = rng.choice(attrs)
            value = m.group(2)
            if value.startswith("{"):
                nums = [int(x) for x in re.findall(r"-?\d+", value)]
                choice = rng.randrange(3)
                if nums and choice == 0:
                    nums[rng.randrange(len(nums))] = rng.choice([-1, 0, 1, 2, 3, 5, 64])
                elif nums and choice == 1:
                    nums.pop(rng.randrange(len(nums)))
                else:
                    nums.append(rng.choice([0, 1, 2, 3]))
                new = "{" + ",".join(map(str, nums)) + "}"
            else:
                new = str(rng.choice([-1, 0, 1, 2, 3, 7, int(value) + 1]))
            return _replace_span(line, m.span(2), new), f"{m.group(1)}={value} -> {new}"
    if kind == "opcode":
        m = _OPCODE.search(line)
        if m and (m.group(1) in _UNARY or m.group(1) in _BINARY):
            pool = _UNARY if m.group(1) in _UNARY else _BINARY
            new = rng.choice(pool)
            return _replace_span(line, m.span(1), new), f"opcode {m.group(1)} -> {new}"
    if kind == "type":
        m = _SHAPE_DIMS.search(line)
        if m:
            new = rng.choice(_TYPES)
            return _replace_span(line, m.span(1), new), f"type {m.group(1)} -> {new}"
    if kind == "operand":
        m = _INSTR.match(line)
        names = _names(lines, k)
        refs = [r for r in re.finditer(r"%?([\w.\-]+)(?=[,)])", m.group(4)) if r.group(1) in names]
        if refs and names:
            r = rng.choice(refs)
            new = rng.choice(names)
            start = len(m.group(1)) + len(m.group(2)) + len(m.group(3))
            span = (start + r.start(1), start + r.end(1))
            return _replace_span(line, span, new), f"operand {r.group(1)} -> {new}"
    if kind == "constant":
        m = _CONSTANT.search(line)
        if m and "{" not in m.group(1):
            new = rng.choice(_CONSTANTS)
            return _replace_span(line, m.span(1), new), f"constant {m.group(1)} -> {new}"
    if kind == "drop" and "ROOT" not in line:
        return "", f"deleted {line.strip()[:60]!r}"
    return None, ""


def mutants(cases: Sequence[Case], seed: int) -> Iterator[tuple[Case, str, list[str], int]]:
    """An endless, deterministic stream of ``(case, mutant text, edits, argument seed)``."""
    rng = random.Random(seed)
    while True:
        case = rng.choice(cases)
        text, edits = mutate(case.text, rng)
        if edits:
            yield case, text, edits, rng.randrange(2**31)


# ------------------------------------------------------------------------------ the worker
_WORKER = r'''
import json, sys, traceback
import numpy as np
from xlapy.errors import XlapyError

def arguments(module, data, seed):
    from xlapy.tools.run_hlo_module import fake_argument
    rng = np.random.default_rng(seed)
    given = {}
    if data:
        try:
            with np.load(data, allow_pickle=False) as npz:
                given = {k: npz[k] for k in npz.files}
        except Exception:
            given = {}
    args = []
    for i, p in enumerate(module.entry.parameters):
        a = given.get(f"arg{i}")
        if (a is not None and p.shape.is_array and tuple(a.shape) == p.shape.dims
                and a.dtype == p.shape.dtype):
            args.append(a)
        else:
            args.append(fake_argument(p.shape, rng))
    return args

def run(backend, text, args):
    import xlapy
    try:
        return "ok", "", xlapy.run_hlo(text, args, backend=backend)
    except XlapyError as e:
        return "typed", f"{type(e).__name__}: {str(e)[:300]}", None
    except RecursionError as e:
        return "untyped", "RecursionError: " + str(e)[:200], None
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)[-3:]
        where = "; ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in tb)
        return "untyped", f"{type(e).__name__}: {str(e)[:300]} [{where}]", None

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    job = json.loads(line)
    from xlapy.hlo import parse_module
    try:
        module = parse_module(job["text"])
        args = arguments(module, job["data"], job["seed"])
    except XlapyError as e:
        for b in ("interpreter", "cpu"):
            send({"backend": b, "status": "typed", "error": f"{type(e).__name__}: {str(e)[:200]}"})
        send({"done": True, "disagreement": ""})
        continue
    except Exception as e:
        for b in ("interpreter", "cpu"):
            send({"backend": b, "status": "untyped", "error": f"{type(e).__name__}: {str(e)[:300]}"})
        send({"done": True, "disagreement": ""})
        continue
    results = {}
    for b in ("interpreter", "cpu"):
        status, error, out = run(b, job["text"], args)
        results[b] = out
        send({"backend": b, "status": status, "error": error})
    disagreement = ""
    if results["interpreter"] is not None and results["cpu"] is not None:
        from xlapy.client import compare_outputs
        bad = compare_outputs(results["cpu"], results["interpreter"], job["rtol"], job["atol"])
        disagreement = "; ".join(m.message for m in bad)[:600]
    send({"done": True, "disagreement": disagreement})
'''


class Worker:
    """A Python process running mutants one at a time (restarted after a crash or hang)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue[str] = queue.Queue()

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True, env=self.env)
            # a thread reads the replies: select() on a buffered pipe misses lines that
            # readline() has already pulled into the buffer
            self.lines = queue.Queue()
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                             daemon=True).start()
        return self.proc

    @staticmethod
    def _read(stream, lines: "queue.Queue[str]") -> None:
        for line in stream:
            lines.put(line)
        lines.put("")                   # end of stream: the worker exited

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def run(self, case: Case, text: str, edits: list[str], seed: int,
            timeout: float) -> Result:
        """Both backends on one mutant."""
        result = Result(case.name, edits, text)
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        job = {"text": text, "data": str(case.data) if case.data else None, "seed": seed,
               "rtol": case.rtol, "atol": case.atol}
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
        except OSError:
            self.stop()
            proc = self._start()
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                self._missing(result, "hang", f"no answer within {timeout:.0f} s")
                self.stop()
                return result
            if not line:
                code = proc.wait()
                self._missing(result, "crash", f"worker exited with status {code}")
                self.proc = None
                return result
            msg = json.loads(line)
            if msg.get("done"):
                result.disagreement = msg["disagreement"]
                return result
            result.outcomes[msg["backend"]] = Outcome(msg["status"], msg["error"])

    @staticmethod
    def _missing(result: Result, status: str, why: str) -> None:
        for b in ("interpreter", "cpu"):
            if b not in result.outcomes:
                result.outcomes[b] = Outcome(status, why)
                return                   # the backend that was running; the next never ran


# ------------------------------------------------------------------------------ the campaign
@dataclass
class Summary:
    """Counts over a campaign."""

    mutants: int = 0
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    disagreements: int = 0
    failures: list[Result] = field(default_factory=list)

    def add(self, r: Result) -> None:
        self.mutants += 1
        for b, o in r.outcomes.items():
            per = self.counts.setdefault(b, {})
            per[o.status] = per.get(o.status, 0) + 1
        if r.disagreement:
            self.disagreements += 1
        if r.failed:
            self.failures.append(r)

    def text(self) -> str:
        lines = [f"{self.mutants} mutants"]
        for b in ("interpreter", "cpu"):
            c = self.counts.get(b, {})
            lines.append(f"  {b:<12} " + ", ".join(
                f"{k} {c.get(k, 0)}" for k in ("ok", "typed", "untyped", "crash", "hang")))
        lines.append(f"  disagreements (cpu vs interpreter): {self.disagreements}")
        return "\n".join(lines)


def save(result: Result, out: Path, k: int) -> Path:
    """Write a failing mutant and its outcome to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"mutant_{k:05d}"
    stem.with_suffix(".hlo").write_text(result.text)
    report = {"case": result.case, "edits": result.edits,
              "outcomes": {b: vars(o) for b, o in result.outcomes.items()},
              "disagreement": result.disagreement}
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    return stem.with_suffix(".hlo")


def campaign(conformance: Path, *, seed: int = 0, count: int | None = None,
             minutes: float | None = None, timeout: float = 60.0,
             out: Path | None = None) -> Summary:
    """Run mutants until ``count`` are done or ``minutes`` have passed; save failures."""
    cases = load_cases(conformance)
    if not cases:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(f"no conformance modules under {conformance}/cases")
    summary = Summary()
    end = time.monotonic() + minutes * 60 if minutes is not None else None
    with tempfile.TemporaryDirectory(prefix="xlapy-fuzz-cache-") as cache:
        env = dict(os.environ, XLAPY_CACHE_DIR=cache)
        worker = Worker(env)
        try:
            for k, (case, text, edits, arg_seed) in enumerate(mutants(cases, seed)):
                if count is not None and k >= count:
                    break
                if end is not None and time.monotonic() >= end:
                    break
                r = worker.run(case, text, edits, arg_seed, timeout)
                summary.add(r)
                if r.failed:
                    where = save(r, out, k) if out is not None else None
                    log.warning("mutant %d of %s (%s): %s%s", k, case.name, "; ".join(edits),
                                {b: o.status for b, o in r.outcomes.items()},
                                f", saved to {where}" if where else "")
                if (k + 1) % 100 == 0:
                    log.info("%d mutants done", k + 1)
        finally:
            worker.stop()
    return summary


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m xlapy fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--conformance", type=Path, default=DEFAULT_CONFORMANCE,
                   help="folder with cases/*/*/module*.hlo (default: %(default)s)")
    p.add_argument("--minutes", type=float, default=None, help="stop after this long")
    p.add_argument("--count", type=int, default=None, help="stop after this many mutants")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds a mutant may take on both backends before it is a hang")
    p.add_argument("--out", type=Path, default=Path("fuzz-failures"),
                   help="folder for failing mutants (default: %(default)s)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run a campaign; exit status 1 when any mutant crashed, hung, raised an untyped error
    or made the backends disagree."""
    opts = build_parser().parse_args(argv)
    if opts.minutes is None and opts.count is None:
        opts.minutes = 1.0
    logging.getLogger("xlapy.fuzz").setLevel(logging.INFO)
    from ..errors import XlapyError
    try:
        summary = campaign(opts.conformance, seed=opts.seed, count=opts.count,
                           minutes=opts.minutes, timeout=opts.timeout, out=opts.out)
    except XlapyError as e:
        print(f"fuzz: error: {e}", file=sys.stderr)
        return 2
    print(summary.text())
    return 1 if summary.failures else 0


__all__ = ["Case", "Outcome", "Result", "Summary", "campaign", "load_cases", "main", "mutate",
           "mutants"]
