"""Why ``jit`` compiled again: readable differences between two cache keys.

``JitFunction._diff`` compares the key of a call that missed the cache with the key of
the previous compile. The pieces that are not plain shapes and dtypes are explained
here: the argument structure (which argument was added or removed, which dict key,
which tuple length changed), the static arguments (including one given for the first
time after relying on its default) and the values of must-be-constant arguments
(printed as values, never as raw bytes). Each explanation names the argument, so the
recompile-storm warning can blame it.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import numpy as np

from .pytree import TreeDef

_MAX_VALUE_TEXT = 60


def const_text(value: Any) -> str:
    """A must-be-constant value as the key holds it (a scalar, or ``(shape, dtype,
    bytes)`` for an array), printed readably: ``3``, ``[4, 2]``, ``[0, 1, 2, ...]``."""
    if isinstance(value, tuple) and len(value) == 3 and isinstance(value[2], bytes):
        shape, dtype, data = value
        arr = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape)
        text = repr(arr.tolist())
        if len(text) > _MAX_VALUE_TEXT:
            cut = text[:_MAX_VALUE_TEXT].rsplit(",", 1)[0]
            text = f"{cut}, ...] ({np.dtype(dtype).name}{list(shape)})"
        return text
    return repr(value)


_NO_DEFAULT = object()


def _default(sig: inspect.Signature | None, name: str) -> Any:
    if sig is None or name not in sig.parameters:
        return _NO_DEFAULT
    default = sig.parameters[name].default
    return _NO_DEFAULT if default is inspect.Parameter.empty else default


def _static_text(value: Any, given: bool) -> str:
    if given:
        return repr(value)
    return "not given" if value is _NO_DEFAULT else f"{value!r} (its default)"


def static_changes(old: tuple, new: tuple,
                   sig: inspect.Signature | None) -> list[tuple[str, str]]:
    """``(argument, explanation)`` for each static argument whose value differs between
    the ``(name, value)`` tuples ``old`` and ``new``; an argument missing from one of them
    was left to its default in that call."""
    before, after = dict(old), dict(new)
    out = []
    for name in list(before) + [n for n in after if n not in before]:
        v0 = before.get(name, _default(sig, name))
        v1 = after.get(name, _default(sig, name))
        in0, in1 = name in before, name in after
        try:
            same = v0 is v1 or bool(v0 == v1)
        except Exception:            # noqa: BLE001 (an __eq__ that does not give a bool)
            same = False
        if same and in0 == in1:
            continue
        if same:
            how = "given explicitly" if in1 else "left to its default"
            out.append((name, f"static argument {name!r} {how} (value {v1!r})"))
        else:
            out.append((name, f"value of static argument {name!r} changed "
                              f"{_static_text(v0, in0)} -> {_static_text(v1, in1)}"))
    return out


def _kind_text(t: TreeDef) -> str:
    if t.is_leaf:
        return "an array"
    if t.kind == "None":
        return "None"
    if t.kind in ("tuple", "list"):
        return f"a {t.kind} of {t.aux}"
    if t.kind == "dict":
        return f"a dict with keys {list(t.aux)}"
    name = t.kind if isinstance(t.kind, str) else t.kind.__name__
    return f"a {name}"


def _suffixes(t: TreeDef) -> list[str]:
    if t.kind == "dict":
        return [f"[{k!r}]" for k in t.aux]
    fields = getattr(t.kind, "_fields", None)          # namedtuples
    if fields is not None:
        return [f".{f}" for f in fields]
    if isinstance(t.kind, type) and dataclasses.is_dataclass(t.kind):
        return [f".{n}" for n in t.aux]
    return [f"[{i}]" for i in range(len(t.children))]


def _tree_changes(path: str, root: str, t0: TreeDef, t1: TreeDef,
                  out: list[tuple[str, str]]) -> None:
    if t0 == t1:
        return
    if t0.kind != t1.kind:
        out.append((root, f"argument {path!r} changed from {_kind_text(t0)} to "
                          f"{_kind_text(t1)}"))
        return
    if t0.kind == "dict" and t0.aux != t1.aux:
        added = [k for k in t1.aux if k not in t0.aux]
        removed = [k for k in t0.aux if k not in t1.aux]
        parts = ([f"key {k!r} added" for k in added] + [f"key {k!r} removed" for k in removed])
        out.append((root, f"argument {path!r}: " + ", ".join(parts)))
        if not added and not removed:
            out.append((root, f"argument {path!r}: dict keys changed"))
        return
    if t0.kind in ("tuple", "list") and t0.aux != t1.aux:
        out.append((root, f"argument {path!r}: {t0.kind} length changed {t0.aux} -> {t1.aux}"))
        return
    if t0.aux != t1.aux or len(t0.children) != len(t1.children):
        out.append((root, f"argument {path!r} structure changed {t0!r} -> {t1!r}"))
        return
    for suffix, c0, c1 in zip(_suffixes(t0), t0.children, t1.children):
        _tree_changes(path + suffix, root, c0, c1, out)


def structure_changes(old: TreeDef, new: TreeDef) -> list[tuple[str, str]]:
    """``(argument, explanation)`` for each difference between two ``args(...)`` TreeDefs
    (the dynamic arguments of two calls, named by jit's argument names)."""
    out: list[tuple[str, str]] = []
    names0, names1 = tuple(old.aux or ()), tuple(new.aux or ())
    for n in names1:
        if n not in names0:
            out.append((n, f"argument {n!r} added (the previous call did not give it)"))
    for n in names0:
        if n not in names1:
            out.append((n, f"argument {n!r} removed (this call does not give it)"))
    kids0, kids1 = dict(zip(names0, old.children)), dict(zip(names1, new.children))
    for n in names1:
        if n in kids0:
            _tree_changes(n, n, kids0[n], kids1[n], out)
    if not out:
        out.append(("<structure>", f"argument structure changed {old!r} -> {new!r}"))
    return out


__all__ = ["const_text", "static_changes", "structure_changes"]
