"""Reading whole StableHLO modules: ``module``, ``func.func``, ops and their regions.

An op is read in the generic form (``"stablehlo.case"(%0) ({...}) : (...) -> ...``) or in
its custom form. The custom forms share one shape, read by :meth:`ModuleReader.custom_op`:
an optional ``@callee`` and ``(...)`` group, then comma-separated items (values ``%x``,
``key = value`` pairs, bare words such as ``LT`` or ``SIGNED``, lists such as a slice's
``[0:4:2]``), an optional attribute dictionary and the ``:`` type signature. The few ops
whose custom form differs (``reduce``, ``while``, ``func.call``'s relatives) have their own
readers here.
"""
from __future__ import annotations

import re

from .syntax import (BLOCK_LABEL, RESULT, VALUE, Block, Func, Loc, MlirModule, MlirReader, Op,
                     Region, loc_from_text, value_key)


class ModuleReader(MlirReader):
    """Reads one module; see the module docstring."""

    def module(self) -> MlirModule:
        sc = self.sc
        self.meshes: dict[str, list[tuple[str, int]]] = {}
        name = "main"
        attrs: dict = {}
        funcs: dict[str, Func] = {}
        aliases: dict[str, Loc] = {}
        self.read_loc_aliases(aliases)
        if self.keyword("module"):
            if sc.at("@"):
                name = self.symbol()
            if self.keyword("attributes"):
                attrs = self.attr_dict()
            sc.expect("{", "opening the module body")
            self.module_body(funcs, "}")
            self.trailing_loc()
        else:
            self.module_body(funcs, "")
        self.read_loc_aliases(aliases)
        if not sc.at_end():
            self.fail(f"unexpected {sc.describe()} after the module")
        if not funcs:
            self.fail("the module has no func.func", 0)
        return MlirModule(name, attrs, funcs, aliases, sc, self.meshes)

    def read_loc_aliases(self, aliases: dict[str, Loc]) -> None:
        """``#loc1 = loc("x")`` lines (printed with debug info)."""
        sc = self.sc
        while sc.at("#loc"):
            p = sc.skip()
            alias = sc.text[p + 1:sc.text.index("=", p)].strip() if "=" in sc.text[p:] else ""
            sc.pos = sc.text.index("=", p) + 1
            if not self.keyword("loc"):
                self.fail("expected loc(...) after a location alias", p)
            start = sc.skip()
            self.balanced_from_paren()
            aliases[alias] = loc_from_text(sc.text[start:sc.pos])

    def balanced_from_paren(self) -> None:
        self.sc.expect("(", "after 'loc'")
        self.balanced_to(")")

    def module_body(self, funcs: dict[str, Func], closer: str) -> None:
        sc = self.sc
        while True:
            if closer and sc.accept(closer):
                return
            if not closer and (sc.at_end() or sc.at("#loc")):
                return
            if sc.at_end():
                self.fail("missing '}' closing the module")
            p = sc.skip()
            if self.keyword("func.func"):
                f = self.func(p)
                if f.name in funcs:
                    self.fail(f"function @{f.name} is defined twice", p)
                funcs[f.name] = f
            else:                       # sdy.mesh (its axes kept) and other module-level ops
                end = sc.text.find("\n", p)
                line = sc.text[p:len(sc.text) if end < 0 else end]
                mesh = _MESH.match(line)
                if mesh:
                    self.meshes[mesh.group(1)] = [(a, int(n)) for a, n in
                                                  _AXIS.findall(mesh.group(2))]
                sc.pos = len(sc.text) if end < 0 else end

    def trailing_loc(self) -> Loc | None:
        if self.same_line() and self.keyword("loc"):
            return self.loc()
        return None

    def func(self, pos: int) -> Func:
        sc = self.sc
        visibility = "public"
        for word in ("public", "private", "nested"):
            if self.keyword(word):
                visibility = word
        name = self.symbol()
        sc.expect("(", "opening the function's arguments")
        args = []
        while not sc.accept(")"):
            key = self.value()
            sc.expect(":", "after an argument name")
            shape = self.type()
            attrs = self.attr_dict() if sc.at("{") else {}
            if self.keyword("loc"):
                attrs["__loc__"] = self.loc()
            args.append((key, shape, attrs))
            if not sc.accept(","):
                sc.expect(")", "closing the function's arguments")
                break
        results = []
        if sc.accept("->"):
            if sc.accept("("):
                while not sc.accept(")"):
                    shape = self.type()
                    attrs = self.attr_dict() if sc.at("{") else {}
                    if self.keyword("loc"):
                        self.loc()
                    results.append((shape, attrs))
                    if not sc.accept(","):
                        sc.expect(")", "closing the result types")
                        break
            else:
                results.append((self.type(), {}))
        if self.keyword("attributes"):
            self.attr_dict()
        body = self.region()
        loc = self.trailing_loc()
        return Func(name, pos, visibility, args, results, body, loc)

    # ----- regions
    def region(self) -> Region:
        sc = self.sc
        sc.expect("{", "opening a region")
        blocks: list[Block] = []
        block = Block()
        while not sc.accept("}"):
            if sc.at_end():
                self.fail("missing '}' closing a region")
            if sc.at("^"):
                if block.ops or block.args:
                    blocks.append(block)
                block = Block()
                sc.match(BLOCK_LABEL)
                if sc.accept("("):
                    while not sc.accept(")"):
                        key = self.value()
                        sc.expect(":", "after a block argument")
                        block.args.append((key, self.type()))
                        if self.keyword("loc"):
                            self.loc()
                        if not sc.accept(","):
                            sc.expect(")", "closing the block arguments")
                            break
                sc.expect(":", "after the block label")
                continue
            block.ops.append(self.op({}))
        blocks.append(block)
        return Region(blocks)

    # ----- ops
    def op(self, _scope: dict) -> Op:
        sc = self.sc
        pos = sc.skip()
        results: list[str] = []
        if sc.at("%"):
            while True:
                m = sc.match(RESULT)
                if not m:
                    self.fail(f"expected a result name, found {sc.describe()}")
                count = int(m.group(2) or 1)
                results.extend(value_key(m.group(1), i) for i in range(count))
                if not sc.accept(","):
                    break
            sc.expect("=", "after the op's results")
        p = sc.skip()
        if sc.text.startswith('"', p):
            op = Op(sc.string(), p, results)
            self.generic_op(op)
        else:
            name = self.ident("an op name")
            op = Op(name, p, results)
            reader = CUSTOM_READERS.get(name, ModuleReader.custom_op)
            reader(self, op)
        op.pos = pos
        op.loc = self.trailing_loc()
        return op

    def operand_list(self, op: Op) -> None:
        """``(%a, %b#1, ...)`` into ``op.operands``."""
        sc = self.sc
        sc.expect("(", "opening the operands")
        while not sc.accept(")"):
            op.operands.append(self.value())
            if not sc.accept(","):
                sc.expect(")", "closing the operands")
                break

    def generic_op(self, op: Op) -> None:
        sc = self.sc
        self.operand_list(op)
        if sc.accept("<{"):              # properties
            sc.pos -= 1
            props = self.attr_dict()
            op.attrs.update(props)
            op.raw.update(self.last_raw)
            sc.expect(">", "closing the properties")
        if sc.accept("("):
            while not sc.accept(")"):
                op.regions.append(self.region())
                if not sc.accept(","):
                    sc.expect(")", "closing the regions")
                    break
        if sc.at("{"):
            op.attrs.update(self.attr_dict())
            op.raw.update(self.last_raw)
        sc.expect(":", "before the op's type")
        self.signature(op)

    def custom_op(self, op: Op) -> None:
        sc = self.sc
        if sc.at("@") and self.same_line():
            op.attrs["callee"] = self.symbol()
        if sc.at("(") and self.same_line():
            sc.accept("(")
            while not sc.accept(")"):
                self.item(op)
                if not sc.accept(","):
                    sc.expect(")", "closing the operands")
                    break
        if self.same_line() and self.item_starts():
            while True:
                last = self.item(op)
                if sc.at("<") and self.same_line():      # sdy: %x <@mesh, [...]>
                    op.positional.append(("angle", self.balanced_angle()))
                if sc.accept(","):
                    continue
                if last == "string" and self.same_line() and self.item_starts():
                    continue                # composite "name" %a, %b
                break
        if self.keyword("attributes") or (sc.at("{") and self.same_line()):
            op.attrs.update(self.attr_dict())
            op.raw.update(self.last_raw)
        if sc.accept(":"):
            self.signature(op)
        if op.name == "stablehlo.while":
            self.while_regions(op)

    def item_starts(self) -> bool:
        sc = self.sc
        p = sc.skip()
        c = sc.text[p:p + 1]
        if c in ("%", "[", '"', "#", "@") or c.isdigit() or c == "-":
            return not sc.text.startswith("->", p)
        return c.isalpha() or c == "_"

    def item(self, op: Op) -> str:
        """One custom-form item: a value (maybe with ``[...]`` after it), ``key = value``,
        ``%iterArg = %init`` (while), ``%x init: %y`` (reduce) or a bare value."""
        sc = self.sc
        p = sc.skip()
        if sc.text.startswith("%", p):
            key = self.value()
            if sc.accept("="):                            # while: %iterArg = %init
                op.positional.append(("iter_arg", key))
                op.operands.append(self.value())
                return "value"
            if self.keyword("init"):                     # reduce: %x init: %y
                sc.expect(":", "after 'init'")
                op.positional.append(("init", self.value()))
            op.operands.append(key)
            if sc.at("[") and self.same_line():          # slice [0:4], gte [1]
                op.positional.append(("brackets", self.attr()))
            return "value"
        m = self.sc.match(_KEY)
        if m:
            key = m.group(1)
            start = sc.skip()
            value = self.attr()
            if key == "dim_numbers":
                value = self.conv_dim_numbers(start)
            op.attrs[key] = value
            op.raw[key] = sc.text[start:sc.pos]
            return "key"
        value = self.attr()
        op.positional.append(("bare", value))
        return "string" if isinstance(value, str) and sc.text[p] == '"' else "bare"

    def conv_dim_numbers(self, start: int) -> str:
        """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`` as text (the attr reader has read the
        first lists; the rest is read here)."""
        sc = self.sc
        sc.expect("->", "in the convolution's dim_numbers")
        self.attr()
        return sc.text[start:sc.pos]

    def while_regions(self, op: Op) -> None:
        if not self.keyword("cond"):
            self.fail("expected 'cond' after stablehlo.while's types")
        op.regions.append(self.region())
        if not self.keyword("do"):
            self.fail("expected 'do' after stablehlo.while's cond region")
        op.regions.append(self.region())

    def reduce_op(self, op: Op) -> None:
        """``stablehlo.reduce(%a init: %x), ... applies stablehlo.add across dimensions =
        [..] : (...) -> (...)`` or, with a body, ``... reducer(%a: T, %b: T) ... { ... }``."""
        sc = self.sc
        while sc.accept("("):
            self.item(op)
            sc.expect(")", "closing 'operand init: value'")
            if not sc.accept(","):
                break
        if self.keyword("applies"):
            op.attrs["applies"] = self.ident("the reducer op")
        if not self.keyword("across"):
            self.fail("expected 'across dimensions = [...]' in stablehlo.reduce")
        if not self.keyword("dimensions"):
            self.fail("expected 'dimensions' after 'across'")
        sc.expect("=", "after 'dimensions'")
        op.attrs["dimensions"] = self.attr()
        if sc.at("{") and self.same_line():
            op.attrs.update(self.attr_dict())
        sc.expect(":", "before stablehlo.reduce's type")
        self.signature(op)
        if self.keyword("reducer"):
            block = Block()
            while sc.accept("("):
                pair = []
                while not sc.accept(")"):
                    key = self.value()
                    sc.expect(":", "after a reducer argument")
                    pair.append((key, self.type()))
                    if self.keyword("loc"):
                        self.loc()
                    if not sc.accept(","):
                        sc.expect(")", "closing the reducer arguments")
                        break
                block.args.extend(pair)
            # printed pairs are (lhs_i, rhs_i); the block takes all lhs, then all rhs
            lhs = block.args[0::2]
            rhs = block.args[1::2]
            body = self.region()
            body.blocks[0].args = lhs + rhs
            op.regions.append(body)


_KEY = re.compile(r"([A-Za-z_][\w.]*)\s*=(?!=)")
_MESH = re.compile(r'sdy\.mesh\s+@([\w$.-]+)\s*=\s*<\[([^\]]*)\]')
_AXIS = re.compile(r'"([^"]+)"\s*=\s*(\d+)')


def _manual_computation(reader: ModuleReader, op: Op) -> None:
    """``sdy.manual_computation(%x) in_shardings=[...] out_shardings=[...]
    manual_axes={...} (%arg: T) { ... } : (T) -> T``."""
    sc = reader.sc
    reader.operand_list(op)
    while not sc.at("("):
        p = sc.skip()
        key = reader.ident("an attribute name")
        sc.expect("=", f"after {key}")
        start = sc.skip()
        op.attrs[key] = reader.attr()
        op.raw[key] = sc.text[start:sc.pos]
        if sc.pos == p:
            reader.fail("expected an attribute")
    sc.expect("(", "opening the body's arguments")
    args = []
    while not sc.accept(")"):
        key = reader.value()
        sc.expect(":", "after a body argument")
        args.append((key, reader.type()))
        if not sc.accept(","):
            sc.expect(")", "closing the body's arguments")
            break
    body = reader.region()
    body.blocks[0].args = args
    op.regions.append(body)
    sc.expect(":", "before the op's type")
    reader.signature(op)


CUSTOM_READERS = {"stablehlo.reduce": ModuleReader.reduce_op,
                  "sdy.manual_computation": _manual_computation}


def read_module(text: str) -> MlirModule:
    """Parse StableHLO MLIR text (raises HloParseError with line:column)."""
    return ModuleReader(text).module()


__all__ = ["read_module", "ModuleReader", "VALUE"]
