"""AutoGraph for the common forms: Python ``if`` and ``while`` on tensors become
``tf.cond`` and ``tf.while_loop``, as TensorFlow's AutoGraph converts them.

:func:`convert` rewrites a function's source (``ast``): every ``if`` statement becomes two
branch functions and a call of :func:`if_stmt`, every ``while`` loop a condition and a body
function and a call of :func:`while_stmt`; the variables a block assigns are passed in and
returned. At run time a condition that is a Python value (or a concrete array) runs the
statement as Python does; a tensor condition -- traced inside a compiled function, or one
that a graph being recorded computes -- runs ``tf.cond`` / ``tf.while_loop``. So the
converted function means the same as the original for Python conditions.

Forms it cannot convert stay as written and get a check instead: a block containing
``return``, ``break``, ``continue``, ``yield``, ``global``/``nonlocal`` or a ``while`` with
an ``else``. If such a statement meets a tensor condition, :class:`AutoGraphError` names
the line and the form. A variable that is undefined before an ``if`` and assigned in only
one branch is an error too (a tensor ``cond`` needs it from both), naming it and the
line. Functions whose source is unavailable, lambdas, generators and methods using
``super()`` are not converted (:func:`convert` returns None).
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from typing import Any, Callable, Sequence

from ..errors import InvalidArgumentError
from ..frontend.core import Array

_FORBIDDEN = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Global,
              ast.Nonlocal)


class AutoGraphError(InvalidArgumentError):
    """A statement AutoGraph cannot convert met a tensor condition."""


class _Undefined:
    def __repr__(self) -> str:
        return "<undefined>"


UNDEFINED = _Undefined()


def _is_tensor(x: Any) -> bool:
    return (isinstance(x, Array) and x.is_traced) or hasattr(x, "__xlapy_array__")


def _defined(names: Sequence[str], values: Sequence[Any], where: str, what: str) -> None:
    for n, v in zip(names, values):
        if v is UNDEFINED:
            raise AutoGraphError(f"AutoGraph: variable {n!r} must be defined before the "
                                 f"{what}, or in every branch, when its condition is a "
                                 f"tensor (at {where})")


def if_stmt(cond: Any, true_fn: Callable[..., tuple], false_fn: Callable[..., tuple],
            values: tuple, names: tuple, where: str) -> tuple:
    """``if cond:`` with the assigned ``names`` (current ``values``) as branch results."""
    if not _is_tensor(cond):
        return true_fn(*values) if cond else false_fn(*values)
    from ._function import cond as tf_cond

    def branch(fn: Callable[..., tuple]) -> Callable[[], tuple]:
        def run() -> tuple:
            out = fn(*values)
            _defined(names, out, where, "if statement")
            return out
        return run
    return tuple(tf_cond(cond, branch(true_fn), branch(false_fn)))


def while_stmt(cond_fn: Callable[..., Any], body_fn: Callable[..., tuple], values: tuple,
               names: tuple, where: str) -> tuple:
    """``while cond:`` over the loop variables ``names`` (current ``values``)."""
    first = cond_fn(*values)
    if not _is_tensor(first):
        while first:
            values = body_fn(*values)
            first = cond_fn(*values)
        return values
    _defined(names, values, where, "while loop")
    from ._function import while_loop
    if not values:
        raise AutoGraphError(f"AutoGraph: a while loop on a tensor condition changes no "
                             f"variable (at {where})")
    out = while_loop(lambda *v: cond_fn(*v), lambda *v: body_fn(*v), tuple(values))
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)


def check_python_cond(cond: Any, form: str, where: str) -> Any:
    """The condition of a statement left unconverted: a tensor is an error naming it."""
    if _is_tensor(cond):
        raise AutoGraphError(f"AutoGraph cannot convert a statement whose condition is a "
                             f"tensor: {form} (at {where}). Hint: write it with tf.cond / "
                             "tf.while_loop")
    return cond


# ------------------------------------------------------------------------------- the rewrite
def _stored(stmts: list[ast.stmt]) -> list[str]:
    """Names assigned by ``stmts`` (not inside nested functions or classes), sorted."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                             ast.Lambda)):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)
    for s in stmts:
        visit(s)
    return sorted(n for n in names if not n.startswith("__ag"))


def _forbidden(stmts: list[ast.stmt], loop: bool) -> str | None:
    """The first statement that blocks conversion, as text; None when convertible."""
    def visit(node: ast.AST, in_loop: bool) -> str | None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                             ast.Lambda)):
            return None
        if isinstance(node, (ast.Break, ast.Continue)) and in_loop:
            return None                      # belongs to a loop inside the block
        if isinstance(node, _FORBIDDEN):
            return f"its block contains '{type(node).__name__.lower()}'"
        inner = in_loop or isinstance(node, (ast.For, ast.While, ast.AsyncFor))
        for child in ast.iter_child_nodes(node):
            found = visit(child, inner)
            if found:
                return found
        return None
    for s in stmts:
        found = visit(s, False)
        if found:
            return found
    return None


class _Converter(ast.NodeTransformer):
    def __init__(self, filename: str, first_line: int) -> None:
        self.filename, self.first, self.count = filename, first_line, 0

    def _where(self, node: ast.stmt) -> ast.Constant:
        line = self.first - 1 + node.lineno
        text = linecache.getline(self.filename, line).strip()
        return ast.Constant(f"{self.filename}:{line}" + (f": {text}" if text else ""))

    def _load(self, names: list[str]) -> ast.Tuple:
        return ast.Tuple([ast.parse(f"locals().get({n!r}, __ag.UNDEFINED)", mode="eval").body
                          for n in names], ast.Load())

    def _fn(self, name: str, names: list[str], body: list[ast.stmt],
            result: ast.expr) -> ast.FunctionDef:
        args = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                             kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        return ast.FunctionDef(name, args, list(body) + [ast.Return(result)], [], None, None)

    def _names_tuple(self, names: list[str], ctx: ast.expr_context) -> ast.Tuple:
        return ast.Tuple([ast.Name(n, ctx) for n in names], ctx)

    def _assign(self, names: list[str], call: ast.expr) -> ast.stmt:
        if not names:
            return ast.Expr(call)
        return ast.Assign([self._names_tuple(names, ast.Store())], call)

    def _guard(self, node: Any, form: str) -> Any:
        node.test = ast.Call(ast.Attribute(ast.Name("__ag", ast.Load()), "check_python_cond",
                                           ast.Load()),
                             [node.test, ast.Constant(form), self._where(node)], [])
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        return node                          # nested functions are left as written

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> Any:
        self.generic_visit(node)
        why = _forbidden(node.body + node.orelse, False)
        if why:
            return self._guard(node, why)
        self.count += 1
        k = self.count
        names = _stored(node.body + node.orelse)
        result = self._names_tuple(names, ast.Load())
        t = self._fn(f"__ag_true_{k}", names, node.body, result)
        f = self._fn(f"__ag_false_{k}", names, node.orelse or [ast.Pass()], result)
        call = ast.Call(ast.Attribute(ast.Name("__ag", ast.Load()), "if_stmt", ast.Load()),
                        [node.test, ast.Name(t.name, ast.Load()), ast.Name(f.name, ast.Load()),
                         self._load(names), ast.Constant(tuple(names)), self._where(node)], [])
        return [t, f, self._assign(names, call)]

    def visit_While(self, node: ast.While) -> Any:
        self.generic_visit(node)
        why = "the loop has an 'else' block" if node.orelse else _forbidden(node.body, False)
        if why:
            return self._guard(node, why)
        self.count += 1
        k = self.count
        names = _stored(node.body)
        c = self._fn(f"__ag_cond_{k}", names, [], node.test)
        b = self._fn(f"__ag_body_{k}", names, node.body, self._names_tuple(names, ast.Load()))
        call = ast.Call(ast.Attribute(ast.Name("__ag", ast.Load()), "while_stmt", ast.Load()),
                        [ast.Name(c.name, ast.Load()), ast.Name(b.name, ast.Load()),
                         self._load(names), ast.Constant(tuple(names)), self._where(node)], [])
        return [c, b, self._assign(names, call)]


def convert(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` with its ``if``/``while`` statements converted (module docstring), or None
    when it has none or cannot be converted."""
    target = getattr(fn, "__func__", fn)
    try:
        source = textwrap.dedent(inspect.getsource(target))
        filename = inspect.getsourcefile(target) or "<unknown>"
        first = inspect.getsourcelines(target)[1]
    except (OSError, TypeError):
        return None
    tree = ast.parse(source)
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or "super" in source or any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fdef)):
        return None
    fdef.decorator_list = []
    conv = _Converter(filename, first)
    fdef.body = [s for stmt in fdef.body for s in _as_list(conv.visit(stmt))]
    if conv.count == 0 and not any(isinstance(n, (ast.If, ast.While)) for n in ast.walk(fdef)):
        return None
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, first - 1)
    namespace = dict(target.__globals__)
    if target.__closure__:
        namespace.update({name: cell.cell_contents for name, cell in
                          zip(target.__code__.co_freevars, target.__closure__)
                          if _has_contents(cell)})
    namespace["__ag"] = _runtime()
    exec(compile(tree, filename, "exec"), namespace)       # noqa: S102 - the user's own code
    new = namespace[fdef.name]
    new.__defaults__, new.__kwdefaults__ = target.__defaults__, target.__kwdefaults__
    if hasattr(fn, "__self__"):
        return new.__get__(fn.__self__)
    return new


def _as_list(x: Any) -> list:
    return x if isinstance(x, list) else [x]


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _runtime() -> Any:
    import sys
    return sys.modules[__name__]


__all__ = ["convert", "if_stmt", "while_stmt", "check_python_cond", "AutoGraphError",
           "UNDEFINED"]
