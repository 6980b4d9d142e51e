"""``xlapy.jit`` and ``xlapy.function(jit_compile=True)``: trace once per signature, compile, cache.

A call computes a key from the arguments: their pytree structure, each array leaf's
shape, dtype and weak type, the values of static arguments, and the values of
*must-be-constant* leaves (arguments an op needed as a compile-time value, found while
tracing; TensorFlow's behaviour). A miss traces the Python function once into an
HloModule named ``jit_<fn>``, compiles it on the default backend and caches it; every
compile records a human-readable reason (``argument 'x' shape changed f32[8] -> f32[16]``).
When a function recompiles more than ``recompile_warning_threshold`` times a warning
names the argument responsible (a recompilation storm). The cache is bounded per function
and over all functions (``jit_cache.py``, least recently used evicted); a compile of an
evicted signature says so, and so does the warning.

A cached call has a fast path: a cheap signature of the arguments (per leaf its type,
shape and dtype; see ``jit_signature``) maps straight to the compiled entry, skipping the
pytree flattening and key building of the full path. The first call of each signature,
calls under an active ``GradientTape`` and argument structures with must-be-constant
leaves take the full path; both paths count hits and misses the same way.

Errors raised while tracing (ops that cannot be compiled, Python control flow on traced
values) reach the caller with xlapy's own frames removed from the traceback.

TensorFlow's ``function(jit_compile=...)`` and the auto-jit setting are in
``tf_function``; ``Lowered`` (``lower()``'s result, ``get_compiler_ir``) in ``lowered``.
"""
from __future__ import annotations

import collections
import contextlib
import inspect
import logging
import re
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import InvalidArgumentError, XlapyError
from ..hlo.builder import as_element_type, build_module
from ..hlo.ir import AliasEntry
from ..hlo.shape import Shape
from ..threadlocal import PerThreadList
from . import core
from . import donation, resident
from .core import Array, default_backend, to_array
from .jit_cache import CLOCK, JitCache
from .jit_reasons import const_text, static_changes, structure_changes
from .jit_records import (_ALWAYS_STATIC, CacheInfo, CompileRecord, _aval_text, _Args,
                          _const_value, _Entry, _Key, _leaf_aval)
from .lowered import Lowered
from .replicas import executable_for, replica_count
from .jit_signature import CallBinding, fast_signature, make_binding
from .pytree import TreeDef, tree_flatten, tree_flatten_with_path, tree_unflatten
from .source_info import filter_traceback
from .tracing import NeedsConstant, Trace, trace_context
from .variables import Variable, commit_values, trace_slots

log = logging.getLogger("xlapy.jit")

RECOMPILE_WARNING_THRESHOLD = [8]
_FAST_PATH = [True]
_JIT_DISABLED = PerThreadList()       # one entry per active ``disable_jit()`` block


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Within the block, jitted functions run their Python op by op (``jax.disable_jit``),
    so values can be printed and inspected; ``disable_jit(False)`` re-enables jit inside."""
    _JIT_DISABLED.append(bool(disable))
    try:
        yield
    finally:
        _JIT_DISABLED.pop()


def set_recompile_warning_threshold(n: int) -> None:
    """Warn when one jitted function has compiled more than ``n`` times (default 8)."""
    RECOMPILE_WARNING_THRESHOLD[0] = int(n)


def set_fast_path_enabled(enabled: bool) -> None:
    """Turn the fast path of cached calls on (the default) or off, for every jitted
    function; with it off every call takes the full path (a debugging aid)."""
    _FAST_PATH[0] = bool(enabled)


class JitFunction:
    """A jit-compiled function (see the module docstring); call it like the original."""

    def __init__(self, fn: Callable[..., Any], static_argnums: Sequence[int] = (),
                 static_argnames: Sequence[str] = (), donate_argnums: Sequence[int] = (),
                 backend: str | None = None,
                 recompile_warning_threshold: int | None = None) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "fn")
        self._module_name = "jit_" + re.sub(r"[^A-Za-z0-9_.\-]", "_", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        self._backend = backend
        self._threshold = recompile_warning_threshold
        try:
            self._sig: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self._sig = None
        names = list(self._sig.parameters) if self._sig else []
        self._static_names = set(static_argnames)
        for i in ([static_argnums] if isinstance(static_argnums, int) else static_argnums):
            if i < len(names) and self._sig.parameters[names[i]].kind in (
                    inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
                self._static_names.add(names[i])
            else:
                self._static_names.add(f"args[{i}]")
        donate = [donate_argnums] if isinstance(donate_argnums, int) else list(donate_argnums)
        self._donate_names = {names[i] if i < len(names) else f"args[{i}]" for i in donate}
        self._cache = JitCache(self._forget_entry)             # LRU-bounded (jit_cache.py)
        self._bindings: dict[Any, CallBinding] = {}      # by (number of args, kwarg names)
        self._backward: dict[_Key, JitFunction] = {}     # compiled vjps, for tapes
        self._last_key: _Key | None = None
        self._constant_leaves: dict[TreeDef, set[int]] = {}
        self._info = CacheInfo()
        self._changed_args: collections.Counter = collections.Counter()
        self._evicted_recompiles = 0
        self._warned = False
        # Threads: a miss takes its key's lock (made under ``_locks_lock``), so one thread
        # traces and compiles a key while the others asking for it wait, then hit.
        self._locks_lock = threading.Lock()
        self._key_locks: dict[_Key, Any] = {}     # RLocks: a trace may look itself up

    # ----- public API
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if (core._TRACE_STACK.items or core._RECORDERS.items          # tracing/recording: inline
                or (_JIT_DISABLED.items and _JIT_DISABLED.items[-1])):  # disable_jit: op by op
            return self.fn(*args, **kwargs)
        if _FAST_PATH[0] and not core._TAPES.items and replica_count() == 1:
            binding = self._bindings.get((len(args), tuple(kwargs)) if kwargs else len(args))
            found = None if binding is None else fast_signature(binding, args, kwargs)
            entry = None if found is None else binding.calls.get(found[0])
            if entry is not None:
                self._info.hits += 1
                entry.used = next(CLOCK)
                try:
                    if entry.donates:       # device Arrays donated (remembered only so)
                        return entry.unflatten(resident.donating_call(
                            entry, found[1], f"jit({self.__name__})"))
                    return entry.unflatten(self._execute(entry, found[1]))
                except XlapyError as e:
                    e.with_traceback(filter_traceback(e.__traceback__))
                    raise
            found = None        # no reference to the arguments' arrays (see donation.py)
        try:
            return self._call_full(args, kwargs)
        except XlapyError as e:
            # The API boundary: a bare ``raise`` adds no frame, so the caller sees only
            # the user's frames (the call site, then the traced function's own lines).
            e.with_traceback(filter_traceback(e.__traceback__))
            raise

    def _call_full(self, args: tuple, kwargs: dict) -> Any:
        """A call through the full path: bind, flatten, key, look up (or compile), run.
        (``__call__``, the API boundary, filters the traceback of errors.)"""
        entry, a = self._lookup(args, kwargs)
        tapes = core._TAPES.items             # this thread's, read once
        if tapes and (entry.variables or any(isinstance(x, Variable) for x in a.leaves)):
            # A tape records Variable reads: run op by op so that it sees every read.
            log.debug("%s runs eagerly: a tape records Variable reads", self.__name__)
            return self.fn(*args, **kwargs)
        inputs = [to_array(a.leaves[i]) for i in entry.param_leaves]
        owned, donated = ([], []) if tapes else \
            donation.donated_arrays(entry, a.leaves, inputs)
        try:
            outs = self._execute(entry, [core.device_argument(x) for x in inputs]
                                 if entry.resident else [np.asarray(x._value) for x in inputs],
                                 owned)
        except BaseException:       # the arrays handed over may be half written
            donation.delete([inputs[p] for p in owned], f"jit({self.__name__})")
            raise
        donation.delete(donated, f"jit({self.__name__})")
        if tapes:
            self._record(entry, a, inputs, outs)
        else:
            self._remember_fast(a, entry, args, kwargs)
        return entry.unflatten(outs)

    @staticmethod
    def _execute(entry: _Entry, values: list[Any], owned: Sequence[int] = ()) -> list[Array]:
        """Run ``entry`` on its parameters' NumPy values (the Variables' values are added
        here); store assigned Variables; return the results as Arrays. ``owned``: donated
        parameters whose arrays are handed over (``donation.py``)."""
        if entry.resident:
            return resident.execute(entry, values, owned)
        if entry.variables:     # never handed over: a Variable's array is never written
            values = values + [v._value._value for v in entry.variables]
        exe = entry.executable if entry.replicas == 1 else executable_for(entry.executable)
        result = exe.execute(values, owned) if owned else exe.execute(values)
        flat = (result,) if entry.n_results == 1 else tuple(result)
        if entry.assigned:          # all or none: an interrupt never splits the commit
            commit_values(entry.assigned,
                          [Array(np.asarray(v)) for v in flat[len(entry.out_weak):]])
        return [Array(np.asarray(v), weak_type=w) for v, w in zip(flat, entry.out_weak)]

    def _remember_fast(self, a: _Args, entry: _Entry, args: tuple, kwargs: dict) -> None:
        """Let later calls with this call's fast signature go straight to ``entry``."""
        if not _FAST_PATH[0] or self._constant_leaves.get(a.treedef) or entry.replicas > 1:
            return
        if donation.has_donated_array(entry, a.leaves):     # they must be deleted
            if not resident.fast_donation(entry, a.leaves):
                return
            entry.donates = True
        found = fast_signature(a.binding, args, kwargs)
        if found is not None and len(found[1]) == len(entry.param_leaves):
            a.binding.calls[found[0]] = entry

    def _forget_fast(self) -> None:
        for binding in self._bindings.values():
            binding.calls.clear()

    def _forget_entry(self, key: _Key, entry: _Entry) -> None:
        """The jit cache evicted ``entry``: drop every other reference to it, so that its
        executable (and native code) can be released."""
        for binding in self._bindings.values():
            for sig in [s for s, e in binding.calls.items() if e is entry]:
                del binding.calls[sig]
        self._backward.pop(key, None)

    def _record(self, entry: _Entry, a: _Args, inputs: list[Array], outs: list[Array]) -> None:
        """Under a tape: record one node whose vjp is another compiled function."""
        from .autodiff import ClosureNode, tracked_by_any
        if not tracked_by_any(inputs):
            return
        backward = self._backward_function(a, entry)

        def rule(cts: list[Array], ans: list[Array], *xs: Array) -> tuple:
            return tuple(backward(list(xs), list(cts)))
        core.record(ClosureNode(f"jit({self.__name__})", rule), inputs, {}, outs)

    def _backward_function(self, a: _Args, entry: _Entry) -> "JitFunction":
        """``(inputs, cotangents) -> input cotangents``, compiled (one per call signature)."""
        key = self._key(a)
        cache = self._backward
        if key not in cache:
            from .autodiff import vjp
            leaves, params = list(a.leaves), list(entry.param_leaves)

            def flat(*xs: Array) -> list[Array]:
                vals = list(leaves)
                for i, x in zip(params, xs):
                    vals[i] = x
                return tree_flatten(self._call_fn(a, self._rebuild(a, vals)))[0]

            def backward(xs: list[Array], cts: list[Array]) -> Any:
                return vjp(flat, *xs)[1](list(cts))
            backward.__name__ = f"{self.__name__}_vjp"
            cache[key] = JitFunction(backward, backend=self._backend)
        return cache[key]

    def cache_info(self) -> CacheInfo:
        """Hits, misses and one :class:`CompileRecord` (with its reason) per compile."""
        return CacheInfo(self._info.hits, self._info.misses, list(self._info.compiles))

    def clear_cache(self) -> None:
        """Forget every compiled signature (and compiled vjp); their executables are
        released once nothing else holds them."""
        self._cache.clear()
        self._backward.clear()
        self._forget_fast()
        self._last_key = None

    def lower(self, *args: Any, **kwargs: Any) -> "Lowered":
        """Trace for these arguments (cached like a call) without running."""
        try:
            entry, _ = self._lookup(args, kwargs, count=False)
        except XlapyError as e:
            e.with_traceback(filter_traceback(e.__traceback__))
            raise
        return Lowered(entry.module, self._backend, entry.variables, entry.assigned,
                       call=self)

    def get_compiler_ir(self, *args: Any, **kwargs: Any) -> Callable[..., str | bytes]:
        """TF's API: ``f.get_compiler_ir(x)(stage="hlo" | "optimized_hlo" |
        "hlo_serialized" | ...)`` (the ``*_serialized`` stages give HloModuleProto bytes)."""
        try:
            lowered = self.lower(*args, **kwargs)
        except XlapyError as e:
            e.with_traceback(filter_traceback(e.__traceback__))
            raise
        return lowered.compiler_ir

    experimental_get_compiler_ir = get_compiler_ir

    # ----- arguments and keys
    def _binding(self, args: tuple, kwargs: dict) -> CallBinding:
        """The binding plan of calls shaped like this one (made on the first such call)."""
        shape = (len(args), tuple(kwargs)) if kwargs else len(args)
        binding = self._bindings.get(shape)
        if binding is None:
            try:
                binding = make_binding(self._sig, self._static_names, len(args),
                                       tuple(kwargs))
            except TypeError as e:
                raise InvalidArgumentError(f"{self.__name__}: {e}") from None
            self._bindings[shape] = binding
        return binding

    def _split(self, args: tuple, kwargs: dict) -> _Args:
        binding = self._binding(args, kwargs)
        statics, dyn = [], []
        for slot, value in binding.values(args, kwargs):
            if slot.static or isinstance(value, _ALWAYS_STATIC):
                try:
                    hash(value)
                except TypeError:
                    raise InvalidArgumentError(
                        f"static argument {slot.name!r} of {self.__name__} must be hashable, "
                        f"got {type(value).__name__}") from None
                statics.append((slot.name, value))
            else:
                dyn.append((slot.name, value))
        leaves, paths, treedefs = [], [], []
        for name, value in dyn:
            lv, ps, td = tree_flatten_with_path(value, name)
            leaves += lv
            paths += ps
            treedefs.append(td)
        treedef = TreeDef("args", tuple(n for n, _ in dyn), tuple(treedefs))
        return _Args(tuple(statics), leaves, paths, treedef, [n for n, _ in dyn], binding)

    def _key(self, a: _Args) -> _Key:
        consts = self._constant_leaves.get(a.treedef, set())
        avals = tuple(("const", _const_value(x)) if i in consts else _leaf_aval(x, p)
                      for i, (x, p) in enumerate(zip(a.leaves, a.paths)))
        return _Key(a.treedef, avals, a.statics, replica_count())

    def _lookup(self, args: tuple, kwargs: dict, count: bool = True) -> tuple[_Entry, _Args]:
        a = self._split(args, kwargs)
        key = self._key(a)
        entry = self._cache.get(key)
        if entry is None:
            with self._locks_lock:
                lock = self._key_locks.setdefault(key, threading.RLock())
            with lock:
                try:
                    return self._miss(a, count)
                finally:
                    with self._locks_lock:
                        if self._key_locks.get(key) is lock:
                            del self._key_locks[key]
        if count:
            self._info.hits += 1
        return entry, a

    def _miss(self, a: _Args, count: bool) -> tuple[_Entry, _Args]:
        """Trace and compile for ``a`` (holding its key's lock), unless another thread
        did while this one waited: its key is computed again (that thread may have found
        must-be-constant arguments), and a hit is counted as one."""
        key = self._key(a)
        entry = self._cache.get(key)
        if entry is not None:
            if count:
                self._info.hits += 1
            return entry, a
        evicted = self._cache.eviction_reason(key)
        if evicted is not None:
            self._evicted_recompiles += 1
        reasons = [f"signature seen before was evicted from the jit cache ({evicted})"
                   if evicted is not None else self._diff(key, a)]
        while True:
            try:
                entry = self._trace(a, key)
                break
            except NeedsConstant as nc:
                self._constant_leaves.setdefault(a.treedef, set()).update(nc.leaves)
                self._forget_fast()          # keys of this structure now hold values
                names = ", ".join(repr(a.paths[k]) for k in nc.leaves)
                values = ", ".join(const_text(_const_value(a.leaves[k])) for k in nc.leaves)
                reasons.append(
                    f"{nc.what} needs the value of argument {names}: specializing on its "
                    f"value {values}" if len(nc.leaves) == 1 else
                    f"{nc.what} needs the values of arguments {names}: specializing on "
                    f"their values {values}")
                key = self._key(a)
                hit = self._cache.get(key)
                if hit is not None:
                    entry = hit
                    break
        self._cache[key] = entry
        self._last_key = key
        self._info.misses += 1
        sig = ", ".join(f"{p}: {_aval_text(v)}" for p, v in zip(a.paths, key.avals))
        self._info.compiles.append(CompileRecord("; ".join(reasons), sig))
        self._check_storm()
        return entry, a

    def _diff(self, key: _Key, a: _Args) -> str:
        old = self._last_key
        if old is None:
            return "first call"
        changes = static_changes(old.statics, key.statics, self._sig)
        if old.treedef != key.treedef:
            changes += structure_changes(old.treedef, key.treedef)
        for name, _ in changes:
            self._changed_args[name] += 1
        parts = [text for _, text in changes]
        if old.replicas != key.replicas:
            parts.append(f"replica count changed {old.replicas} -> {key.replicas}")
        if old.treedef != key.treedef:
            return "; ".join(parts)
        for path, a0, a1 in zip(a.paths, old.avals, key.avals):
            if a0 == a1:
                continue
            self._changed_args[path] += 1
            if a0[0] == "const" and a1[0] == "const":
                parts.append(f"value of must-be-constant argument {path!r} changed "
                             f"{const_text(a0[1])} -> {const_text(a1[1])}")
            elif a0[0] == "const" or a1[0] == "const":
                parts.append(f"argument {path!r} became a compile-time constant")
            elif a0[0] == "var" or a1[0] == "var":
                other = " (another Variable)" if a0[0] == a1[0] else ""
                parts.append(f"argument {path!r} changed {_aval_text(a0)} -> "
                             f"{_aval_text(a1)}{other}")
            else:
                what = "shape" if a0[0] != a1[0] else ("dtype" if a0[1] != a1[1]
                                                       else "weak type")
                parts.append(f"argument {path!r} {what} changed {_aval_text(a0)} -> "
                             f"{_aval_text(a1)}")
        return "; ".join(parts) or "signature seen before was evicted"

    def _check_storm(self) -> None:
        limit = self._threshold if self._threshold is not None else \
            RECOMPILE_WARNING_THRESHOLD[0]
        if self._info.misses > limit and not self._warned:
            self._warned = True
            culprit = ", ".join(f"{name!r} ({n} times)"
                                for name, n in self._changed_args.most_common(2))
            evicted = self._evicted_recompiles
            cause = (f"changes of argument {culprit or '(unknown)'}"
                     if culprit or not evicted else "")
            if evicted:
                cause += (" and " if cause else "") + (
                    f"{evicted} compiles of signatures the jit cache had evicted (raise "
                    f"XLAPY_JIT_CACHE_PER_FUNCTION or XLAPY_JIT_CACHE_GLOBAL to keep more)")
            log.warning("function %r has been compiled %d times (more than %d); recompiles "
                        "were caused by %s. Pass values that change "
                        "often as arrays of a fixed shape, or pad shapes to a few sizes.",
                        self.__name__, self._info.misses, limit, cause or "(unknown)")

    # ----- tracing and compiling
    def _trace(self, a: _Args, key: _Key) -> _Entry:
        trace = Trace("main", f"jit({self.__name__})")
        consts = self._constant_leaves.get(a.treedef, set())
        with trace_context(trace):
            vals, param_leaves = [], []
            for i, (x, path) in enumerate(zip(a.leaves, a.paths)):
                if i in consts or isinstance(x, Variable):
                    vals.append(x if isinstance(x, Variable) else to_array(x))
                    continue
                shape, dtype, weak = key.avals[i]
                shp = Shape.array(as_element_type(dtype), shape)
                vals.append(trace.new_param(shp, name=f"Arg_{len(param_leaves)}",
                                            op_name=path, weak_type=weak, leaf=i))
                param_leaves.append(i)
            dyn = self._rebuild(a, vals)
            out = self._call_fn(a, dyn)
            out_leaves, out_tree = tree_flatten(out)
            outs = [to_array(o) for o in out_leaves]
            slots = list(trace_slots(trace).values())
            assigned = [s for s in slots if s.assigned]
            b = trace.builder
            with trace.tag("tuple" if len(outs) + len(assigned) != 1 else "constant"):
                instrs = [trace.instr_for(o) for o in outs]
                instrs += [trace.instr_for(s.current) for s in assigned]
                root = instrs[0] if len(instrs) == 1 else b.tuple(instrs)
        module = build_module(b.build(root), self._module_name)
        if key.replicas > 1:        # every replica runs this program (``replicas.py``)
            module.attributes["replica_count"] = key.replicas
        aliases = self._donation_aliases(a, param_leaves, outs, len(instrs) > 1)
        aliases += self._variable_aliases(slots, len(param_leaves), len(outs), len(instrs) > 1)
        if aliases:
            module.attributes["input_output_alias"] = aliases
        backend = self._backend or default_backend()
        if self._donate_names and backend.startswith("gpu"):
            donation.warn_unusable(self.__name__, self._donate_names, a.paths,
                                   param_leaves, aliases)
        from ..client import get_backend
        spmd = getattr(trace, "spmd_partitions", 0)
        if spmd:                    # the partition count, as XLA's compiled module has it
            module.attributes["num_partitions"] = spmd
        exe = SPMD_COMPILE[0](module, spmd, self._backend) if spmd else \
            get_backend(backend).compile(module)
        return _Entry(module, exe, out_tree, [o.weak_type for o in outs], param_leaves,
                      [s.variable for s in slots], [s.variable for s in assigned],
                      replicas=key.replicas)

    @staticmethod
    def _variable_aliases(slots: list, n_params: int, n_outs: int,
                          tuple_root: bool) -> list[AliasEntry]:
        """Each assigned Variable's output aliases the Variable's parameter."""
        aliases, k = [], n_outs
        for p, slot in enumerate(slots):
            if slot.assigned:
                aliases.append(AliasEntry((k,) if tuple_root else (), n_params + p))
                k += 1
        return aliases

    @staticmethod
    def _rebuild(a: _Args, vals: list[Array]) -> list[Any]:
        out, pos = [], 0
        for td in a.treedef.children:
            n = td.num_leaves
            out.append(tree_unflatten(td, vals[pos:pos + n]))
            pos += n
        return out

    def _call_fn(self, a: _Args, dyn_values: list[Any]) -> Any:
        """Call the Python function as the user did, with ``dyn_values`` for the arrays."""
        values = dict(a.statics)
        values.update(zip(a.dyn_names, dyn_values))
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for slot in a.binding.slots:        # positional slots come first, in order
            if isinstance(slot.source, int):
                args.append(values[slot.name])
            else:
                kwargs[slot.source] = values[slot.name]
        return self.fn(*args, **kwargs)

    def _donation_aliases(self, a: _Args, param_leaves: list[int], outs: list[Array],
                          tuple_root: bool) -> list[AliasEntry]:
        """Aliases of donated parameters with an output of the same type."""
        if not self._donate_names:
            return []
        taken: set[int] = set()
        aliases = []
        for p, leaf in enumerate(param_leaves):
            root = a.paths[leaf].split("[")[0].split(".")[0]
            if root not in self._donate_names:
                continue
            x = a.leaves[leaf]
            for k, o in enumerate(outs):
                if k not in taken and o.shape == np.shape(x) and o.dtype == _leaf_aval(x, "")[1]:
                    taken.add(k)
                    aliases.append(AliasEntry((k,) if tuple_root else (), p))
                    break
        return aliases


#: ``jit`` with shardings builds ``SHARDED_JIT[0](fn, in_shardings, out_shardings, backend,
#: **jit_options)``; ``xlapy.frontend.sharding`` (imported with the front end) installs its
#: ``ShardedFunction`` here.
SHARDED_JIT: list[Callable[..., Any]] = []
#: A trace that contains a ``shard_map`` (its root trace has ``spmd_partitions`` = the mesh
#: size) is an SPMD program: ``SPMD_COMPILE[0](module, n, backend)`` gives the executable
#: (``xlapy.frontend.sharding.SpmdExecutable``: global arguments in, global results out;
#: ``backend`` None when the jit named none).
SPMD_COMPILE: list[Callable[..., Any]] = []


def jit(fn: Callable[..., Any] | None = None, *, static_argnums: Sequence[int] | int = (),
        static_argnames: Sequence[str] | str = (), donate_argnums: Sequence[int] | int = (),
        backend: str | None = None, recompile_warning_threshold: int | None = None,
        shape_buckets: Any = None, in_shardings: Any = None, out_shardings: Any = None) -> Any:
    """Compile ``fn`` with XLA semantics (usable as ``@jit`` or ``@jit(static_argnums=...)``).

    ``shape_buckets`` (``{"x": {1: "pow2"}}``, ``"auto"``) compiles once per bucket of
    sizes instead of once per shape (``buckets.py``). ``in_shardings``/``out_shardings``
    (``xlapy.sharding.NamedSharding``, one or one per argument) compile an SPMD program run on
    the mesh's devices (:class:`xlapy.frontend.sharding.ShardedFunction`)."""
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)

    def wrap(f: Callable[..., Any]) -> Any:
        if in_shardings is not None or out_shardings is not None:
            return SHARDED_JIT[0](f, in_shardings, out_shardings, backend,
                                  static_argnums=static_argnums, static_argnames=names,
                                  donate_argnums=donate_argnums)
        if shape_buckets is not None:
            from .buckets import BucketedFunction
            return BucketedFunction(f, shape_buckets, JitFunction,
                                    static_argnums=static_argnums, static_argnames=names,
                                    backend=backend,
                                    recompile_warning_threshold=recompile_warning_threshold)
        return JitFunction(f, static_argnums, names, donate_argnums, backend,
                           recompile_warning_threshold)
    return wrap if fn is None else wrap(fn)


__all__ = ["jit", "disable_jit", "JitFunction", "Lowered", "CacheInfo", "CompileRecord",
           "set_recompile_warning_threshold", "set_fast_path_enabled"]
