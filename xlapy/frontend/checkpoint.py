"""Rematerialization: :func:`checkpoint` (``remat``), its policies, :func:`checkpoint_name`
(with ``lax.optimization_barrier`` from ``primitives_misc``).

``checkpoint(f)`` trades compute for memory in reverse mode. Called while a tape is
active, it records ``f``'s forward pass as a :class:`~xlapy.frontend.program.Program`
(the tapes see one node, whose operands are the arguments and the closed-over values a
tape tracks), keeps only the values the *policy* saves, and releases the rest. The
node's reverse rule **replays** the program on its operands (recomputing what was not
saved, reusing what was) under a fresh tape, then runs that tape backward. Under ``jit``
the replay is new HLO instructions in the backward pass: the forward pass's intermediate
values die right after the forward pass, the recomputed ones live only during the
backward pass of ``f``. With ``prevent_cse`` (the default) the operands and the incoming
cotangents go through one ``opt-barrier`` before the replay, so CSE cannot merge the
recomputation into the forward pass and the scheduler cannot hoist it before the
cotangents exist.

Policies are JAX's (``checkpoint_policies``): ``policy(prim, *avals, **params) -> bool``
says whether an equation's outputs are saved (avals have ``shape`` and ``dtype``).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from ..errors import InvalidArgumentError
from . import core
from .autodiff import Tape, active, paused_recording, tracked_by_any
from .autodiff_forward import propagate
from .core import Array, Primitive, new_ref, to_array
from .primitives_misc import optimization_barrier
from .program import Eqn, Program, record_program, replay
from .pytree import tree_flatten, tree_unflatten

# ----------------------------------------------------------------------------- primitives
class _NamePrimitive(Primitive):
    """``checkpoint_name``'s label: the identity, seen only by tapes (it never lowers to
    an instruction, like ``alias``)."""

    def __init__(self) -> None:
        super().__init__("name")
        self.def_lowering(lambda ctx, x, name: x)
        self.def_vjp(lambda ct, ans, x, name: (ct,))
        self.def_jvp(lambda tangents, outs, x, name: [tangents[0]])
        self.def_batching(lambda args, dims, name: (args[0], dims[0]))

    def rerun(self, x: Array, name: str) -> list[Array]:
        return [_label(x, name)]


name_p = _NamePrimitive()


def _label(a: Array, name: str) -> Array:
    y = Array(a._value, weak_type=a.weak_type) if a._value is not None else \
        Array(instr=a._instr, trace=a._trace, weak_type=a.weak_type)
    core.record(name_p, [a], {"name": name}, [y])
    return y


def checkpoint_name(x: Any, name: str) -> Any:
    """``x`` (a pytree) labelled ``name`` for the name-based policies
    (``save_only_these_names`` ...); the label costs nothing when no tape records."""
    if not core._TAPES.items:
        return x
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [_label(to_array(v), name) for v in leaves])


# ------------------------------------------------------------------------------- policies
Policy = Callable[..., bool]


def _is_dot(prim: Any) -> bool:
    return getattr(prim, "name", None) == "dot_general"


class checkpoint_policies:
    """JAX's rematerialization policies (``jax.checkpoint_policies``)."""

    @staticmethod
    def everything_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        return True

    @staticmethod
    def nothing_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        return False

    @staticmethod
    def dots_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        return _is_dot(prim)

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        return _is_dot(prim) and not any(params.get("batch", ((), ())))

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names: str) -> Policy:
        keep = set(names)
        return lambda prim, *avals, **params: prim is name_p and params["name"] in keep

    @staticmethod
    def save_any_names_but_these(*names: str) -> Policy:
        skip = set(names)
        return lambda prim, *avals, **params: prim is name_p and params["name"] not in skip

    @staticmethod
    def save_anything_except_these_names(*names: str) -> Policy:
        skip = set(names)
        return lambda prim, *avals, **params: not (prim is name_p and params["name"] in skip)

    @staticmethod
    def save_from_both_policies(left: Policy, right: Policy) -> Policy:
        return lambda prim, *avals, **params: (left(prim, *avals, **params)
                                               or right(prim, *avals, **params))


# ---------------------------------------------------------------------------- checkpoint
class _RematNode(Primitive):
    """The recorded call of a checkpointed function (not in the primitive table)."""

    def __init__(self, program: Program, prevent_cse: bool, name: str) -> None:
        super().__init__(f"checkpoint[{name}]", multiple_results=True)
        self.program, self.prevent_cse, self.fname = program, prevent_cse, name
        self.def_vjp(self._vjp)
        self.def_jvp(self._jvp)

    def _replay_under(self, ins: Sequence[Array]) -> tuple[Tape, list[Array], list[Array]]:
        tape = Tape()
        fresh = [new_ref(x) for x in ins]
        for f in fresh:
            tape.watch(f)
        with active(tape):
            outs = replay(self.program, fresh)
        return tape, fresh, outs

    def _vjp(self, cts: list[Array], ans: list[Array], *ins: Array) -> tuple:
        if self.prevent_cse:
            both = optimization_barrier(list(ins) + list(cts))
            ins, cts = tuple(both[:len(ins)]), list(both[len(ins):])
        tape, fresh, outs = self._replay_under(ins)
        acc = tape.backward(outs, cts)
        return tuple(acc.get(id(f)) for f in fresh)

    def _jvp(self, tangents: list[Array | None], outs: list[Array], *ins: Array) -> list:
        tape, fresh, r_outs = self._replay_under(ins)
        tans = {id(f): t for f, t in zip(fresh, tangents) if t is not None}
        propagate(tape, tans)
        return [tans.get(id(o)) for o in r_outs]

    def rerun(self, *ins: Array, **params: Any) -> list[Array]:
        """The call again on new operands (an enclosing checkpoint's recomputation)."""
        with paused_recording():
            outs = replay(self.program, list(ins))
        outs = [new_ref(o, keep_gradient=False) for o in outs]
        core.record(_RematNode(self.program, self.prevent_cse, self.fname),
                    list(ins), {}, outs)
        return outs


def _keep(policy: Policy | None) -> Callable[[Eqn], bool] | None:
    if policy is None:
        return None
    return lambda e: bool(policy(e.prim, *e.ins, **e.params))


def _remat_call(fun: Callable[..., Any], args: tuple, kwargs: dict,
                static_argnums: tuple[int, ...], prevent_cse: bool,
                policy: Policy | None) -> Any:
    n = len(args)
    statics = {i % n for i in static_argnums if -n <= i < n}
    dyn = [a for i, a in enumerate(args) if i not in statics]
    leaves, in_tree = tree_flatten((dyn, kwargs))
    xs = [to_array(x) for x in leaves]
    out_tree: list[Any] = []

    def flat(*vals: Array) -> list[Array]:
        d, kw = tree_unflatten(in_tree, list(vals))
        it = iter(d)
        out = fun(*[args[i] if i in statics else next(it) for i in range(n)], **kw)
        out_leaves, tree = tree_flatten(out)
        out_tree.append(tree)
        return out_leaves

    program, outs = record_program(flat, xs, _keep(policy))
    # Closed-over values a tape tracks become operands of the node (their gradients
    # flow through it), in the order they were first used.
    captured = [v for v in program.constvars
                if v.value is not None and tracked_by_any([v.value])]
    cap_values = [v.value for v in captured]
    for v in captured:
        v.const, v.value = False, None
    program.invars = program.invars + captured
    ins = xs + cap_values                                     # type: ignore[operator]
    if tracked_by_any(ins):
        outs = [new_ref(o, keep_gradient=False) for o in outs]
        name = getattr(fun, "__name__", "fun")
        core.record(_RematNode(program, prevent_cse, name), ins, {}, outs)
    return tree_unflatten(out_tree[-1], outs)


def checkpoint(fun: Callable[..., Any] | None = None, *, prevent_cse: bool = True,
               policy: Policy | None = None,
               static_argnums: int | Sequence[int] = ()) -> Any:
    """``fun`` recomputed in the backward pass instead of keeping its intermediate values
    (``jax.checkpoint`` / ``jax.remat``; see the module docstring). ``policy`` chooses
    values to save anyway (``checkpoint_policies``); ``static_argnums`` arguments are
    passed through untouched. Usable as ``@checkpoint`` or ``@checkpoint(policy=...)``."""
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if policy is not None and not callable(policy):
        raise InvalidArgumentError(f"checkpoint: policy must be callable, got "
                                   f"{type(policy).__name__}")

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def remat_f(*args: Any, **kwargs: Any) -> Any:
            if not core._TAPES.items:           # nothing differentiates: just call it
                return f(*args, **kwargs)
            return _remat_call(f, args, kwargs, nums, prevent_cse, policy)
        return remat_f
    return wrap if fun is None else wrap(fun)


remat = checkpoint

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_name", "name_p"]
