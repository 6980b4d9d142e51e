"""StableHLO (parsed by ``parse.py``) to an xlapy :class:`~xlapy.hlo.ir.HloModule`.

The conversion follows XLA's own (``ConvertStablehloToHlo`` / ``MlirToHlo``): the public
``@main`` becomes the ENTRY computation (one result: that value; several: a tuple), every
called private function becomes a computation reached through ``call``, and region ops
become HLO computations: ``while`` carries its operands and every value its regions use
from outside (implicit captures) in one tuple; ``case``/``if`` pass each branch a tuple of
the values it captures; ``reduce``/``sort``/``scatter``/... bodies become scalar
computations. ``tf.aliasing_output`` / ``jax.buffer_donor`` argument attributes become
``input_output_alias`` / ``buffer_donor``; ``mhlo.num_replicas`` / ``mhlo.num_partitions``
the module's ``replica_count`` / ``num_partitions`` when the program has collectives (it is
then written per device; without them it is one global program, as JAX's HLO text shows);
``mhlo.frontend_attributes``, ``mhlo.sharding`` and ``sdy.sharding`` (as the frontend
attribute ``xla.sdy.sharding``) are kept on the instructions. Dynamic dims: bounded ones
become HLO's bounded dynamic dims, unbounded ``?`` ones are specialized from the argument
shapes (``dynamic.py``).

A ``@main`` that is one ``sdy.manual_computation`` over every mesh axis (``shard_map``,
``pmap``) becomes its per-device body (:meth:`Converter.manual_entry`).

Every error names the op's ``line:column`` in the MLIR text (and its ``loc`` when the
text has one); the op handlers are in ``ops.py``, ``ops_regions.py``, ``collectives.py``
and ``chlo.py``, registered in ``registry.py``.
"""
from __future__ import annotations

import itertools
import re
from typing import Any, Sequence

from ...errors import HloParseError, XlapyError
from ..attrs import OpMetadata, RawAttr
from ..builder import XlaBuilder
from ..ir import AliasEntry, HloComputation, HloInstruction, HloModule, computations_post_order
from ..shape import ProgramShape, Shape
from ..sharding import HloSharding, ShardingParseError, parse_sharding
from .dynamic import constant_value, has_unbounded, specialize
from .registry import HANDLERS, OpContext
from .syntax import Block, Func, Loc, MlirModule, Op, Opaque, Region

_NAME_CHARS = re.compile(r"[^\w.-]")
_COLLECTIVES = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                "collective-broadcast", "replica-id", "partition-id"}


class Converter:
    """Converts one parsed module; :meth:`run` returns the HloModule."""

    def __init__(self, mod: MlirModule, arg_shapes: Sequence[Sequence[int]] | None = None
                 ) -> None:
        self.mod = mod
        self.arg_shapes = None if arg_shapes is None else [tuple(s) for s in arg_shapes]
        # set once @main's unbounded dims are specialized: values known at conversion
        # time (dimension sizes) then flow into called functions (``dynamic.py``)
        self.specializing = False
        self.known: dict[int, Any] = {}
        self.counter = itertools.count(1)
        self.functions: dict[str, HloComputation] = {}
        self.converting: set[str] = set()
        self.per_device = False       # @main is a manual computation's per-device body

    # ----- names, errors
    def name(self, base: str) -> str:
        base = _NAME_CHARS.sub("_", base.split(".")[-1] if base.startswith(
            ("stablehlo.", "chlo.", "func.")) else base) or "op"
        return f"{base}.{next(self.counter)}"

    def loc_of(self, loc: Loc | None) -> Loc | None:
        """``loc`` with ``#loc`` aliases followed: the first name on the way, and the file
        position of the first location that has one."""
        name, seen = "", 0
        while loc is not None and seen < 32:
            name = name or loc.name
            if loc.file or not loc.alias:
                break
            loc = self.mod.loc_aliases.get(loc.alias)
            seen += 1
        if loc is None:
            return Loc(name=name) if name else None
        return Loc(name or loc.name, loc.file, loc.line, loc.column)

    def error(self, message: str, pos: int, loc: Loc | None = None) -> HloParseError:
        loc = self.loc_of(loc)
        if loc is not None and loc.file:
            message += f" (at {loc.file}:{loc.line}:{loc.column})"
        elif loc is not None and loc.name:
            message += f" (at {loc.name})"
        return self.mod.scanner.error(message, pos)

    # ----- module
    def run(self) -> HloModule:
        funcs = self.mod.funcs
        main = funcs.get("main") or next((f for f in funcs.values()
                                          if f.visibility == "public"), None)
        if main is None:
            raise self.error("the module has no public function (@main)", 0)
        entry = self.manual_entry(main)
        self.per_device = entry is not None
        if entry is None:
            entry = self.function(main, entry=True)
        module = HloModule(_module_name(self.mod.name))
        for comp in computations_post_order([entry]):
            module.add_computation(comp, is_entry=comp is entry)
        self.module_attributes(module, main, entry)
        return module

    def module_attributes(self, module: HloModule, main: Func, entry: HloComputation) -> None:
        attrs = self.mod.attrs
        aliases, donors = [], []
        for i, (_key, _shape, a) in enumerate(main.args):
            out = a.get("tf.aliasing_output")
            if isinstance(out, int) and not isinstance(out, bool):
                index = (out,) if len(main.results) > 1 else ()
                aliases.append(AliasEntry(index, i, (), "may-alias"))
            elif a.get("jax.buffer_donor") is True:
                donors.append((i, ()))
        if aliases:
            module.attributes["input_output_alias"] = aliases
        if donors:
            module.attributes["buffer_donor"] = donors
        module.attributes["entry_computation_layout"] = ProgramShape(
            [p.shape.with_default_layout() for p in entry.parameters],
            entry.root.shape.with_default_layout())
        # A program without collectives is one global program (its shardings are hints for
        # a partitioner); with collectives it is written per device and runs on all of them.
        per_device = self.per_device or any(i.opcode in _COLLECTIVES for c in
                                            module.computations for i in c.instructions)
        for key, hlo_key in (("mhlo.num_replicas", "replica_count"),
                             ("mhlo.num_partitions", "num_partitions")):
            n = attrs.get(key)
            if per_device and isinstance(n, int) and n > 1:
                module.attributes[hlo_key] = n

    def manual_entry(self, main: Func) -> HloComputation | None:
        """The per-device program of a ``@main`` that is one ``sdy.manual_computation`` over
        every axis of its mesh (a ``shard_map``/``pmap`` JAX lowers): its body, with the
        local shapes, is what XLA's SPMD partitioner would give each device. None for any
        other ``@main``."""
        ops = main.body.blocks[0].ops if len(main.body.blocks) == 1 else []
        if len(ops) != 2 or ops[0].name != "sdy.manual_computation":
            return None
        mc, ret = ops
        if ret.operands != mc.results or mc.operands != [k for k, _, _ in main.args]:
            return None
        mesh = re.search(r"<@([\w$.-]+)", mc.raw.get("in_shardings", "") +
                         mc.raw.get("out_shardings", ""))
        axes = self.mod.meshes.get(mesh.group(1) if mesh else "", [])
        manual = set(re.findall(r'"([^"]+)"', mc.raw.get("manual_axes", "")))
        if not axes or {a for a, _ in axes} != manual:
            return None
        b = XlaBuilder(self.name("main"))
        env = {key: b.parameter(shape, name=self.name(f"Arg_{i}"))
               for i, (key, shape) in enumerate(mc.regions[0].blocks[0].args)}
        results = self.block(b, mc.regions[0].blocks[0], env, mc.pos)
        return b.build(results[0] if len(results) == 1 else self.tuple(b, results))

    # ----- functions and regions
    def arg_types(self, f: Func, entry: bool, operands: Sequence[Shape] | None
                  ) -> list[Shape]:
        """``f``'s parameter shapes, unbounded dims specialized (``dynamic.py``): @main's
        from the argument shapes given, a called function's from its call's operands."""
        shapes = [shape for _, shape, _ in f.args]
        if not any(has_unbounded(s) for s in shapes):
            return shapes
        given = self.arg_shapes if entry else \
            [o.dims for o in operands] if operands is not None else None
        if given is None:
            i = next(i for i, s in enumerate(shapes) if has_unbounded(s))
            raise self.error(
                f"argument {i} of @{f.name} has type {shapes[i].to_text(False)} with an "
                "unbounded dimension (?): give it a bound (#stablehlo.bounds<...>), or the "
                "argument shapes to specialize it (xlapy.run_hlo and run_hlo_module "
                "--input_data take them from the arguments; convert --arg-shapes; "
                "to_hlo_module(text, arg_shapes=...))",
                f.pos, f.loc)
        if len(given) != len(shapes):
            raise self.error(f"@{f.name} takes {len(shapes)} arguments, {len(given)} shapes "
                             "were given", f.pos, f.loc)
        try:
            types = [specialize(s, g) if has_unbounded(s) else s for s, g in zip(shapes, given)]
        except XlapyError as e:
            raise self.error(f"@{f.name}: {e}", f.pos, f.loc) from None
        self.specializing = True
        return types

    def function(self, f: Func, entry: bool = False,
                 operands: Sequence[HloInstruction] | None = None) -> HloComputation:
        """The computation of ``f`` (``operands``: a call's, whose shapes specialize
        unbounded parameter dims, and whose values, when known now (JAX passes dimension
        sizes), the function's shape computations may use; one computation per distinct
        shapes and values)."""
        types = self.arg_types(f, entry, None if operands is None else
                               [o.shape for o in operands])
        key, known = f.name, {}
        if operands and self.specializing:        # dimension sizes may be passed
            values = [constant_value(o, dict(self.known)) for o in operands]
            known = {i: v for i, v in enumerate(values) if v is not None and v.size == 1}
        if known or types != [shape for _, shape, _ in f.args]:
            key = f"{f.name}({', '.join(t.to_text(False) for t in types)}; " \
                  f"{sorted((i, v.item()) for i, v in known.items())})"
        if key in self.functions:
            return self.functions[key]
        if f.name in self.converting:
            raise self.error(f"function @{f.name} calls itself (recursion has no HLO form)",
                             f.pos, f.loc)
        self.converting.add(f.name)
        b = XlaBuilder(self.name("main" if entry else f.name))
        env: dict[str, HloInstruction] = {}
        for i, ((key_, _, attrs), shape) in enumerate(zip(f.args, types)):
            key_arg = key_
            loc = self.loc_of(attrs.get("__loc__"))
            pname = loc.name if loc is not None and loc.name else f"Arg_{i}"
            p = b.parameter(shape, name=self.name(pname))
            sharding = attrs.get("mhlo.sharding")
            if isinstance(sharding, str):
                p.attrs["sharding"] = _sharding_attr(sharding)
            sdy = attrs.get("sdy.sharding")
            if isinstance(sdy, Opaque):         # kept as XLA's export keeps it
                p.attrs["frontend_attributes"] = {"xla.sdy.sharding": sdy.text}
            env[key_arg] = p
            if i in known:
                self.known[id(p)] = known[i]
        if len(f.body.blocks) != 1:
            raise self.error(f"function @{f.name} has {len(f.body.blocks)} blocks; only "
                             "single-block functions have an HLO form", f.pos, f.loc)
        results = self.block(b, f.body.blocks[0], env, f.pos)
        want = [s for s, _ in f.results]
        if len(results) != len(want):
            raise self.error(f"function @{f.name} returns {len(results)} values but its "
                             f"type says {len(want)}", f.pos, f.loc)
        comp = b.build(results[0] if len(results) == 1 else self.tuple(b, results))
        self.converting.discard(f.name)
        self.functions[key] = comp
        return comp

    def tuple(self, b: XlaBuilder, values: list[HloInstruction]) -> HloInstruction:
        return b.add_instruction("tuple", values, name=self.name("tuple"))

    def block(self, b: XlaBuilder, block: Block, env: dict[str, HloInstruction],
              pos: int) -> list[HloInstruction]:
        """Convert the ops of ``block`` into ``b``; returns the terminator's operands."""
        for op in block.ops:
            if op.name in ("return", "func.return", "stablehlo.return", "mhlo.return",
                           "sdy.return"):
                return [self.lookup(env, key, op) for key in op.operands]
            fn = HANDLERS.get(op.name)
            if fn is None:
                raise self.error(f"unsupported op '{op.name}'", op.pos, op.loc)
            loc = self.loc_of(op.loc)
            # as in XLA's conversion, a named location names the op's instructions:
            # "jit(f)/transpose(jvp())/reduce_sum" -> reduce_sum.N
            base = _NAME_CHARS.sub("_", loc.name.rsplit("/", 1)[-1]) \
                if loc and "/" in loc.name else ""
            ctx = OpContext(self, b, env, op, base)
            b.set_op_metadata(_metadata(op.name, loc))
            try:
                outs = fn(ctx, op)
            except HloParseError:
                raise
            except (XlapyError, ValueError, TypeError, KeyError, IndexError,
                    OverflowError) as e:      # bad attribute values: named at the op
                raise self.error(f"{op.name}: {e}", op.pos, op.loc) from None
            finally:
                b.set_op_metadata(None)
            _annotate(op, outs)
            self.bind(op, outs, env)
        raise self.error("region has no terminator (return)", pos)

    def bind(self, op: Op, outs: list[HloInstruction], env: dict[str, HloInstruction]) -> None:
        if len(outs) != len(op.results):
            raise self.error(f"{op.name} gives {len(outs)} results; the text names "
                             f"{len(op.results)}", op.pos, op.loc)
        for i, (key, value) in enumerate(zip(op.results, outs)):
            if i < len(op.result_types):
                want = op.result_types[i]
                if not _same_type(value.shape, want):
                    raise self.error(
                        f"{op.name}: result {i} converts to {value.shape.to_text(False)} "
                        f"but its type is {want.to_text(False)}", op.pos, op.loc)
            if has_unbounded(value.shape):
                raise self.error(
                    f"{op.name}: result {i} has type {value.shape.to_text(False)}, whose "
                    "unbounded dimension (?) does not follow from the operands; xlapy "
                    "specializes such dims from @main's argument shapes", op.pos, op.loc)
            env[key] = value

    def lookup(self, env: dict[str, HloInstruction], key: str, op: Op) -> HloInstruction:
        value = env.get(key)
        if value is None:
            raise self.error(f"use of undefined value %{key.replace('#0', '')}", op.pos,
                             op.loc)
        return value

    def region_computation(self, region: Region, name: str, params: list[Shape],
                           pos: int, captured: dict[str, HloInstruction] | None = None,
                           tupled: bool = False, passthrough: bool = False,
                           keys: list[str] | None = None,
                           constants: dict[str, HloInstruction] | None = None
                           ) -> HloComputation:
        """A computation from a region. Its block arguments (or, with ``tupled``, the
        elements of one tuple parameter) come first, then ``captured`` values (keys
        visible inside) in the order given. ``keys`` names the arguments when the region
        has no block arguments (a while's iter args); a ``passthrough`` region (a loop
        body) returns the captured values after its own results."""
        b = XlaBuilder(self.name(name))
        env: dict[str, HloInstruction] = {}
        block = region.blocks[0]
        captured = captured or {}
        if tupled:
            shape = Shape.tuple(params + [v.shape for v in captured.values()])
            t = b.parameter(shape, name=self.name("arg_tuple"))
            values = [b.add_instruction("get-tuple-element", [t], {"index": i},
                                        name=self.name("get-tuple-element"))
                      for i in range(len(shape.tuple_shapes))]
        else:
            values = [b.parameter(s, name=self.name("Arg_")) for s in params]
        keys = [k for k, _ in block.args] or list(keys or [])
        if len(keys) != len(params) and block.args:
            raise self.error(f"region takes {len(keys)} arguments, expected {len(params)}",
                             pos)
        for k, v in zip(keys, values):
            env[k] = v
        for k, v in zip(captured, values[len(params):]):
            env[k] = v
        for k, c in (constants or {}).items():
            env[k] = b.add_instruction("constant", [], declared=c.shape.without_layout(),
                                       literal=c.literal, name=self.name("constant"))
        results = self.block(b, block, env, pos)
        if passthrough:
            root = self.tuple(b, results + values[len(params):])
        else:
            root = results[0] if len(results) == 1 else self.tuple(b, results)
        return b.build(root)


def _same_type(got: Shape, want: Shape) -> bool:
    if got.is_tuple or want.is_tuple:
        return got.is_tuple == want.is_tuple and len(got.tuple_shapes) == \
            len(want.tuple_shapes) and all(_same_type(a, b) for a, b in
                                           zip(got.tuple_shapes, want.tuple_shapes))
    if got.is_token or want.is_token:
        return got.is_token == want.is_token
    if got.element_type is not want.element_type or got.rank != want.rank:
        return False
    return all(w < 0 or g == w or dw for g, w, dw in zip(got.dims, want.dims, want.dynamic))


def _sharding_attr(text: str) -> HloSharding | RawAttr:
    """``mhlo.sharding`` text as the typed attribute (kept verbatim if it does not parse)."""
    try:
        return parse_sharding(text)
    except ShardingParseError:
        return RawAttr(text)


def _annotate(op: Op, outs: list[HloInstruction]) -> None:
    """``mhlo.frontend_attributes`` / ``mhlo.sharding`` / ``sdy.sharding`` of an op on the
    instructions it became (as XLA's export keeps them)."""
    fe = op.attrs.get("mhlo.frontend_attributes")
    sharding = op.attrs.get("mhlo.sharding")
    sdy = op.attrs.get("sdy.sharding")
    if not (isinstance(fe, dict) or isinstance(sharding, str) or isinstance(sdy, Opaque)):
        return
    for instr in {id(o): o for o in outs}.values():
        if isinstance(sharding, str) and "sharding" not in instr.attrs:
            instr.attrs["sharding"] = _sharding_attr(sharding)
        extra = {str(k): str(v) for k, v in fe.items()} if isinstance(fe, dict) else {}
        if isinstance(sdy, Opaque):
            extra["xla.sdy.sharding"] = sdy.text
        if extra and "frontend_attributes" not in instr.attrs:
            instr.attrs["frontend_attributes"] = dict(sorted(extra.items()))


def _metadata(op_name: str, loc: Loc | None) -> OpMetadata | None:
    if loc is None or not (loc.name or loc.file):
        return None
    return OpMetadata.make(op_name=loc.name or None, source_file=loc.file or None,
                           source_line=loc.line or None)


def _module_name(name: str) -> str:
    return _NAME_CHARS.sub("_", name) or "main"


def convert_module(mod: MlirModule, arg_shapes: Sequence[Sequence[int]] | None = None
                   ) -> HloModule:
    """The HloModule of a parsed StableHLO module (see the module docstring);
    ``arg_shapes`` (the dims of each of @main's arguments) specialize unbounded dims."""
    from . import chlo, collectives, dynamic, ops, ops_regions  # noqa: F401  (the handlers)
    return Converter(mod, arg_shapes).run()
