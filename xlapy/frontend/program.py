"""Recorded programs: the primitives a function applied, as equations over variables.

A :class:`Recorder` sits on the tape stack (``core._TAPES``) like an autodiff tape, but
records *every* primitive :func:`~xlapy.frontend.core.bind` applies while it is active,
not only those touching tracked values. :meth:`Recorder.finish` turns the recording into a
:class:`Program`: input variables, equations ``outs = prim[params](ins)`` and outputs, where
values the function did not compute (closed-over arrays, Python scalars) are *constants*.

Two users:

- :func:`~xlapy.frontend.abstract.make_jaxpr` prints a Program (JAX's jaxpr text form)
  recorded under a throwaway trace, so nothing runs;
- :func:`~xlapy.frontend.checkpoint.checkpoint` records the forward pass of a function and
  :func:`replay` recomputes it in the backward pass, reusing the values a policy saved.

A program holds the values of its constants and of the outputs :meth:`Program.keep` was
asked to keep, nothing else: the forward pass's intermediate arrays are released once it
is recorded.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..hlo.builder import as_element_type
from . import core
from .core import Array, Primitive, bind, new_ref


class Var:
    """A value of a program: its abstract value and, for constants and kept values, the
    value itself."""

    __slots__ = ("shape", "dtype", "weak_type", "value", "const")

    def __init__(self, x: Array, const: bool = False) -> None:
        self.shape, self.dtype, self.weak_type = x.shape, x.dtype, x.weak_type
        self.const = const
        self.value: Array | None = x if const else None

    def type_text(self) -> str:
        return f"{as_element_type(self.dtype).name}[{','.join(map(str, self.shape))}]"


class Eqn:
    """``outs = prim[params](ins)``."""

    __slots__ = ("prim", "params", "ins", "outs")

    def __init__(self, prim: Primitive, params: dict, ins: list[Var], outs: list[Var]) -> None:
        self.prim, self.params, self.ins, self.outs = prim, params, ins, outs


def rerunnable(prim: Primitive) -> bool:
    """Whether :func:`replay` can apply ``prim`` again to new operands: registered
    primitives lower, and recorded closures (``custom_jvp``, nested ``checkpoint``) that
    define ``rerun(*args, **params)``; other closures (a ``custom_vjp``'s residuals, a compiled
    function run under a tape) are replayed with their recorded outputs."""
    return core.PRIMITIVES.get(prim.name) is prim or prim is core.alias_p or hasattr(prim, "rerun")


class Program:
    """A recorded function (see the module docstring)."""

    def __init__(self, invars: list[Var], eqns: list[Eqn], outvars: list[Var]) -> None:
        self.invars, self.eqns, self.outvars = invars, eqns, outvars

    @property
    def constvars(self) -> list[Var]:
        seen: dict[int, Var] = {}
        for e in self.eqns:
            for v in e.ins:
                if v.const:
                    seen.setdefault(id(v), v)
        for v in self.outvars:
            if v.const:
                seen.setdefault(id(v), v)
        return list(seen.values())

    @property
    def in_avals(self) -> list[tuple]:
        return [(v.shape, v.dtype) for v in self.invars]

    @property
    def out_avals(self) -> list[tuple]:
        return [(v.shape, v.dtype) for v in self.outvars]

    def __str__(self) -> str:
        return format_program(self)

    __repr__ = __str__


class Recorder:
    """Records every primitive applied while it is on the tape stack (see the module
    docstring). ``inputs`` become the program's input variables."""

    def __init__(self, inputs: Sequence[Array]) -> None:
        self.vars: dict[int, Var] = {}
        self._live: list[Array] = []        # keeps ids unique while recording
        self.values: dict[int, Array] = {}  # id(Var) -> the array it held, while recording
        self.invars = [self._define(x) for x in inputs]
        self.eqns: list[Eqn] = []

    def _define(self, x: Array, const: bool = False) -> Var:
        v = Var(x, const)
        self.vars[id(x)] = v
        self._live.append(x)
        if not const:
            self.values[id(v)] = x
        return v

    def var(self, x: Array) -> Var:
        v = self.vars.get(id(x))
        return v if v is not None else self._define(x, const=True)

    # ----- the tape protocol (core.record, autodiff.tracked_by_any, Variable reads)
    def record(self, prim: Any, args: Sequence[Array], params: dict,
               outs: Sequence[Array]) -> None:
        ins = [self.var(a) for a in args]
        self.eqns.append(Eqn(prim, params, ins, [self._define(o) for o in outs]))

    def is_tracked(self, x: Any) -> bool:
        return isinstance(x, Array) and id(x) in self.vars and not self.vars[id(x)].const

    def on_variable_read(self, var: Any, value: Array) -> None:
        """Variable reads are constants of the program (nothing to track)."""

    def constants(self) -> list[Array]:
        """The values used so far that the recorded function did not compute."""
        return [v.value for v in self.vars.values() if v.const and v.value is not None]

    # ----- the result
    def finish(self, outs: Sequence[Array],
               keep: Callable[[Eqn], bool] | None = None) -> Program:
        """The program computing ``outs``; the outputs of equations ``keep`` selects (and
        of closures :func:`replay` cannot apply again) keep their values."""
        outvars = [self.var(o) for o in outs]
        for e in self.eqns:
            if (keep is not None and keep(e)) or not rerunnable(e.prim):
                for v in e.outs:
                    v.value = self.values[id(v)]
        self.values = {}
        self._live = []
        self.vars = {}
        return Program(self.invars, self.eqns, outvars)


def record_program(fn: Callable[..., Sequence[Array]], inputs: Sequence[Array],
                   keep: Callable[[Eqn], bool] | None = None) -> tuple[Program, list[Array]]:
    """Run ``fn(*inputs)`` (a flat list of Arrays out) with a :class:`Recorder` as the only
    active tape; returns the program and the outputs."""
    rec = Recorder(inputs)
    saved = list(core._TAPES)
    core._TAPES[:] = [rec]
    try:
        outs = [core.to_array(o) for o in fn(*inputs)]
    finally:
        core._TAPES[:] = saved
    return rec.finish(outs, keep), outs


def replay(program: Program, inputs: Sequence[Array], use_kept: bool = True) -> list[Array]:
    """Compute ``program`` again on ``inputs``; every primitive goes through ``bind`` (or
    :func:`core.record` for the equations whose kept outputs are reused), so active tapes
    record the replay. Returns the outputs."""
    if len(inputs) != len(program.invars):
        raise InvalidArgumentError(f"replay: {len(inputs)} inputs for a program of "
                                   f"{len(program.invars)}")
    env: dict[int, Array] = {id(v): x for v, x in zip(program.invars, inputs)}

    def read(v: Var) -> Array:
        return v.value if v.const else env[id(v)]     # type: ignore[return-value]

    for e in program.eqns:
        args = [read(v) for v in e.ins]
        kept = [v.value for v in e.outs]
        if (use_kept or not rerunnable(e.prim)) and all(k is not None for k in kept):
            outs = list(kept)
            if core._TAPES.items:
                core.record(e.prim, args, e.params, outs)
        elif e.prim is core.alias_p:
            outs = [new_ref(args[0])]
        elif hasattr(e.prim, "rerun"):
            outs = list(e.prim.rerun(*args, **e.params))   # type: ignore[attr-defined]
        else:
            res = bind(e.prim, *args, **e.params)
            outs = list(res) if e.prim.multiple_results else [res]
        for v, o in zip(e.outs, outs):
            env[id(v)] = o
    return [read(v) for v in program.outvars]


# ----------------------------------------------------------------------------- printing
def _names() -> Iterable[str]:
    n = 0
    while True:
        s, k = "", n
        while True:
            s = chr(ord("a") + k % 26) + s
            k = k // 26 - 1
            if k < 0:
                break
        yield s
        n += 1


def _param_text(v: Any) -> str | None:
    """A parameter as jaxpr text; None for those with no short text (traced branches and
    bodies, Python callables, tree structures), which are left out."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return repr(v) if isinstance(v, str) else str(v)
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return as_element_type(np.dtype(v)).name
    if isinstance(v, (tuple, list)):
        inner = [_param_text(x) for x in v]
        if any(t is None for t in inner):
            return None
        return f"({', '.join(inner)}{',' if len(v) == 1 else ''})"   # type: ignore[arg-type]
    return None


def _literal(v: Var) -> str | None:
    """Scalar constants print inline, as JAX prints literals."""
    if v.value is None or v.shape != () or v.value.is_traced:
        return None
    return f"{np.asarray(v.value._value).item()!r}:{v.type_text()}"


def format_program(p: Program) -> str:
    """JAX's jaxpr text: ``{ lambda consts ; inputs . let eqns in (outputs) }``."""
    names: dict[int, str] = {}
    gen = _names()

    def name(v: Var) -> str:
        lit = _literal(v) if v.const else None
        if lit is not None:
            return lit
        if id(v) not in names:
            names[id(v)] = next(gen)
        return names[id(v)]

    def binder(v: Var) -> str:
        return f"{name(v)}:{v.type_text()}"

    consts = [v for v in p.constvars if _literal(v) is None]
    head = " ".join(binder(v) for v in consts) + " ; " + " ".join(binder(v) for v in p.invars)
    lines = [f"{{ lambda {head.strip() if consts else '; ' + head[3:].strip()}. let"]
    for e in p.eqns:
        if e.prim is core.alias_p:              # a new reference: the same value
            names[id(e.outs[0])] = name(e.ins[0])
            continue
        texts = ((k, _param_text(v)) for k, v in e.params.items())
        params = ", ".join(f"{k}={t}" for k, t in texts if t is not None)
        lhs = " ".join(binder(v) for v in e.outs) or "_"
        call = e.prim.name + (f"[{params}]" if params else "")
        lines.append(f"    {lhs} = {call} {' '.join(name(v) for v in e.ins)}".rstrip())
    outs = ", ".join(name(v) for v in p.outvars)
    lines.append(f"  in ({outs}{',' if len(p.outvars) == 1 else ''}) }}")
    return "\n".join(lines)


__all__ = ["Var", "Eqn", "Program", "Recorder", "record_program", "replay", "rerunnable",
           "format_program"]
