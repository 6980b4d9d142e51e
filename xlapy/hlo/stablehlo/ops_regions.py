"""StableHLO ops with bodies (reduce, sort, scatter, ...), custom calls and control flow.

A region that is a scalar body (a reducer, comparator or combiner) becomes an HLO
computation of scalars; ``while``/``case``/``if`` regions become computations that take
their captured values in a tuple (``registry.free_values``), as XLA's conversion does.
"""
from __future__ import annotations

from typing import Any

from ..attrs import RawAttr, Window
from ..builder import XlaBuilder, scalar_computation
from ..shape import Layout, Shape
from .constants import dense_array, int_list, pairs
from .dynamic import fold_call, shape_assertion, static_values
from .registry import OpContext, free_values, handler
from .syntax import Dense, Enum, Op, Opaque, Struct, Symbol

# ------------------------------------------------------------------- ops with a body
def _scalars(shapes) -> list[Shape]:
    return [Shape.scalar(s.element_type) for s in shapes]


def _body(ctx: OpContext, op: Op, index: int, params: list[Shape], name: str):
    if index >= len(op.regions):
        raise ctx.fail(f"the op needs a {name} region")
    region = op.regions[index]
    captured = free_values([region], {k for k, _ in region.blocks[0].args})
    consts = {}
    for k in captured:                 # bodies capture constants only: copied in
        v = ctx.env.get(k)
        if v is None or v.opcode != "constant":
            raise ctx.fail(f"the {name} body uses %{k.replace('#0', '')} from outside; only "
                           "constants may be captured")
        consts[k] = v
    comp = ctx.conv.region_computation(region, name, params, op.pos, constants=consts)
    return comp


def _applies(ctx: OpContext, opname: str, shapes: list[Shape]):
    opcode = opname.split(".", 1)[1].replace("_", "-")
    if len(shapes) == 1:
        return scalar_computation(opcode, shapes[0].element_type)
    b = XlaBuilder(ctx.conv.name("region"))
    lhs = [b.parameter(s) for s in _scalars(shapes)]
    rhs = [b.parameter(s) for s in _scalars(shapes)]
    outs = [b.add_instruction(opcode, [x, y]) for x, y in zip(lhs, rhs)]
    return b.build(b.tuple(outs))


def _inits(op: Op) -> list[str]:
    return [v for k, v in op.positional if k == "init"]


@handler("stablehlo.reduce")
def reduce(ctx: OpContext, op: Op) -> list:
    keys = op.operands + _inits(op)
    values = [ctx.conv.lookup(ctx.env, k, op) for k in keys]
    n = len(values) // 2
    shapes = [v.shape for v in values[:n]]
    if "applies" in op.attrs:
        body = _applies(ctx, op.attrs["applies"], shapes)
    else:
        body = _body(ctx, op, 0, _scalars(shapes) * 2, "region")
    dims = int_list(op.attrs.get("dimensions", ()))
    return ctx.results(ctx.add("reduce", values, {"dimensions": dims, "to_apply": body}))


@handler("stablehlo.map")
def map_(ctx: OpContext, op: Op) -> list:
    values = ctx.operands()
    body = _body(ctx, op, 0, _scalars(v.shape for v in values), "region")
    dims = int_list(op.attrs.get("dimensions", range(values[0].shape.rank)))
    return [ctx.add("map", values, {"dimensions": dims, "to_apply": body})]


@handler("stablehlo.reduce_window")
def reduce_window(ctx: OpContext, op: Op) -> list:
    values = ctx.operands()
    n = len(values) // 2
    a = op.attrs
    size = int_list(a.get("window_dimensions", ()))
    r = len(size)
    window = Window.make(size, int_list(a.get("window_strides", (1,) * r)),
                         pairs(a.get("padding"), r),
                         int_list(a.get("base_dilations", (1,) * r)),
                         int_list(a.get("window_dilations", (1,) * r)))
    body = _body(ctx, op, 0, _scalars(v.shape for v in values[:n]) * 2, "region")
    return ctx.results(ctx.add("reduce-window", values, {"window": window, "to_apply": body}))


@handler("stablehlo.select_and_scatter")
def select_and_scatter(ctx: OpContext, op: Op) -> list:
    operand, source, init = ctx.operands()
    a = op.attrs
    size = int_list(a.get("window_dimensions", ()))
    r = len(size)
    window = Window.make(size, int_list(a.get("window_strides", (1,) * r)),
                         pairs(a.get("padding"), r))
    et = Shape.scalar(operand.shape.element_type)
    select = _body(ctx, op, 0, [et, et], "region")
    st = Shape.scalar(source.shape.element_type)
    scatter = _body(ctx, op, 1, [st, st], "region")
    return [ctx.add("select-and-scatter", [operand, source, init],
                    {"window": window, "select": select, "scatter": scatter})]


@handler("stablehlo.sort")
def sort(ctx: OpContext, op: Op) -> list:
    values = ctx.operands()
    dim = int(op.attrs.get("dimension", -1))
    rank = values[0].shape.rank
    comparator = _body(ctx, op, 0, [s for v in values for s in
                                    _scalars([v.shape]) * 2], "region")
    attrs: dict[str, Any] = {"dimensions": (dim % max(rank, 1),)}
    if op.attrs.get("is_stable"):
        attrs["is_stable"] = True
    attrs["to_apply"] = comparator
    return ctx.results(ctx.add("sort", values, attrs))


@handler("stablehlo.scatter")
def scatter(ctx: OpContext, op: Op) -> list:
    values = ctx.operands()
    n = (len(values) - 1) // 2
    f = op.attrs.get("scatter_dimension_numbers")
    f = f.fields if isinstance(f, Struct) else {}
    attrs: dict[str, Any] = {
        "update_window_dims": int_list(f.get("update_window_dims", ())),
        "inserted_window_dims": int_list(f.get("inserted_window_dims", ()))}
    if f.get("input_batching_dims"):
        attrs["input_batching_dims"] = int_list(f["input_batching_dims"])
        attrs["scatter_indices_batching_dims"] = int_list(
            f.get("scatter_indices_batching_dims", ()))
    attrs["scatter_dims_to_operand_dims"] = int_list(f.get("scatter_dims_to_operand_dims", ()))
    attrs["index_vector_dim"] = int(f.get("index_vector_dim", 0))
    if op.attrs.get("indices_are_sorted"):
        attrs["indices_are_sorted"] = True
    if op.attrs.get("unique_indices"):
        attrs["unique_indices"] = True
    attrs["to_apply"] = _body(ctx, op, 0, _scalars(v.shape for v in values[:n]) * 2,
                              "region")
    return ctx.results(ctx.add("scatter", values, attrs))


@handler("stablehlo.gather", "stablehlo.dynamic_gather")
def gather(ctx: OpContext, op: Op) -> list:
    """``gather``; ``dynamic_gather`` takes its slice sizes as a third operand, which must
    be known now (``dynamic.py``)."""
    operand, indices, *sizes = ctx.operands()
    f = op.attrs.get("dimension_numbers")
    f = f.fields if isinstance(f, Struct) else {}
    attrs: dict[str, Any] = {"offset_dims": int_list(f.get("offset_dims", ())),
                             "collapsed_slice_dims": int_list(f.get("collapsed_slice_dims",
                                                                    ()))}
    if f.get("operand_batching_dims"):
        attrs["operand_batching_dims"] = int_list(f["operand_batching_dims"])
        attrs["start_indices_batching_dims"] = int_list(
            f.get("start_indices_batching_dims", ()))
    attrs["start_index_map"] = int_list(f.get("start_index_map", ()))
    attrs["index_vector_dim"] = int(f.get("index_vector_dim", 0))
    attrs["slice_sizes"] = static_values(ctx, sizes[0], "slice_sizes") if sizes else \
        int_list(op.attrs.get("slice_sizes", ()))
    if op.attrs.get("indices_are_sorted"):
        attrs["indices_are_sorted"] = True
    return [ctx.add("gather", [operand, indices], attrs)]


# ---------------------------------------------------------------------- custom calls
_API_VERSIONS = {1: "API_VERSION_ORIGINAL", 2: "API_VERSION_STATUS_RETURNING",
                 3: "API_VERSION_STATUS_RETURNING_UNIFIED", 4: "API_VERSION_TYPED_FFI"}


def _frontend_attributes(op: Op) -> dict[str, str]:
    out = {str(k): (v if isinstance(v, str) else op.raw.get(k, str(v)))
           for k, v in (op.attrs.get("mhlo.frontend_attributes") or {}).items()}
    rule = op.attrs.get("sdy.sharding_rule")
    if isinstance(rule, Opaque):
        out["xla.sdy.sharding_rule"] = rule.text
    return out


def _with_layout(shape: Shape, layout: Any) -> Shape:
    if not isinstance(layout, Dense) or not shape.is_array:
        return shape
    m2m = tuple(int(v) for v in dense_array(layout).reshape(-1))
    return Shape(shape.element_type, shape.dims, shape.dynamic, Layout(m2m))


@handler("stablehlo.custom_call")
def custom_call(ctx: OpContext, op: Op) -> list:
    a = op.attrs
    target = a.get("callee", a.get("call_target_name"))
    if str(target) == "shape_assertion" or (isinstance(target, Symbol) and
                                            target.name == "shape_assertion"):
        return shape_assertion(ctx, op)
    operands = ctx.operands()
    results = list(op.result_types)
    layouts = a.get("result_layouts")
    if isinstance(layouts, list) and len(layouts) == len(results):
        results = [_with_layout(s, lay) for s, lay in zip(results, layouts)]
    shape = results[0] if len(results) == 1 else Shape.tuple(results)
    attrs: dict[str, Any] = {"custom_call_target": str(target)}
    op_layouts = a.get("operand_layouts")
    if isinstance(op_layouts, list) and len(op_layouts) == len(operands):
        attrs["operand_layout_constraints"] = tuple(
            _with_layout(o.shape.without_layout(), lay) for o, lay in zip(operands, op_layouts))
    if a.get("has_side_effect"):
        attrs["custom_call_has_side_effect"] = True
    aliases = []
    for al in a.get("output_operand_aliases") or []:
        if isinstance(al, Struct):
            aliases.append((int_list(al.fields.get("output_tuple_indices", ())),
                            int(al.fields.get("operand_index", 0)),
                            int_list(al.fields.get("operand_tuple_indices", ()))))
    if aliases:
        attrs["output_to_operand_aliasing"] = tuple(aliases)
    called = [s for s in a.get("called_computations") or [] if isinstance(s, Symbol)]
    if called:
        attrs["called_computations"] = tuple(ctx.conv.function(ctx.conv.mod.funcs[s.name])
                                             for s in called)
    config = a.get("mhlo.backend_config")
    version = a.get("api_version", 1)
    if isinstance(config, dict) or isinstance(a.get("backend_config"), dict):
        version = 4
    attrs["api_version"] = _API_VERSIONS.get(int(version) if not isinstance(version, Enum)
                                             else 1, "API_VERSION_ORIGINAL")
    if isinstance(version, Enum):
        attrs["api_version"] = version.value
    fe = _frontend_attributes(op)
    if fe:
        attrs["frontend_attributes"] = fe
    if isinstance(config, dict):
        attrs["backend_config"] = RawAttr(op.raw.get("mhlo.backend_config", "{}"))
    elif isinstance(a.get("backend_config"), dict):
        attrs["backend_config"] = RawAttr(op.raw.get("backend_config", "{}"))
    elif a.get("backend_config"):
        attrs["backend_config"] = str(a["backend_config"])
    if attrs["api_version"] == "API_VERSION_ORIGINAL":
        del attrs["api_version"]
    instr = ctx.add("custom-call", operands, attrs, declared=shape)
    if instr.shape != shape:
        instr.shape = shape
    return ctx.results(instr)


# --------------------------------------------------------------------- control flow
def _call(ctx: OpContext, op: Op, name: str, extra: dict | None = None) -> list:
    func = ctx.conv.mod.funcs.get(name)
    if func is None:
        raise ctx.fail(f"call to undefined function @{name}")
    operands = ctx.operands()
    comp = ctx.conv.function(func, operands=operands)
    instr = ctx.add("call", operands, {"to_apply": comp, **(extra or {})})
    outs = [instr] if len(func.results) == 1 else \
        [ctx.add("get-tuple-element", [instr], {"index": i}) for i in range(len(func.results))]
    if ctx.conv.specializing:               # a shape computation may call a function
        fold_call(ctx.conv.known, operands, comp, outs)
    return outs


@handler("func.call", "call")
def call(ctx: OpContext, op: Op) -> list:
    return _call(ctx, op, str(op.attrs.get("callee")))


@handler("stablehlo.composite")
def composite(ctx: OpContext, op: Op) -> list:
    names = [v for k, v in op.positional if k == "bare" and isinstance(v, str)]
    name = str(op.attrs.get("name", names[0] if names else ""))
    decomposition = op.attrs.get("decomposition")
    if not isinstance(decomposition, Symbol):
        raise ctx.fail("a composite needs decomposition = @function")
    fe = {"composite.attributes": op.raw.get("composite_attributes", "{}"),
          "composite.name": name, "composite.version": str(op.attrs.get("version", 0))}
    return _call(ctx, op, decomposition.name, {"is_composite": True,
                                               "frontend_attributes": fe})


@handler("stablehlo.while")
def while_(ctx: OpContext, op: Op) -> list:
    inits = ctx.operands()
    if len(op.regions) != 2:
        raise ctx.fail("stablehlo.while needs cond and body regions")
    names = [v for k, v in op.positional if k == "iter_arg"]
    keys = names or [k for k, _ in op.regions[0].blocks[0].args]
    defined = set(keys)
    captured_keys = free_values(op.regions, defined)
    captured = {k: ctx.conv.lookup(ctx.env, k, op) for k in captured_keys}
    shapes = [v.shape for v in inits]
    conv = ctx.conv
    cond = conv.region_computation(op.regions[0], "region", shapes, op.pos, captured,
                                   tupled=True, keys=keys)
    body_keys = names or [k for k, _ in op.regions[1].blocks[0].args]
    body = conv.region_computation(op.regions[1], "region", shapes, op.pos, captured,
                                   tupled=True, passthrough=True, keys=body_keys)
    init = ctx.add("tuple", inits + list(captured.values()))
    loop = ctx.add("while", [init], {"condition": cond, "body": body})
    return [ctx.add("get-tuple-element", [loop], {"index": i}) for i in range(len(inits))]


def _branches(ctx: OpContext, op: Op) -> tuple[list, list]:
    comps, args = [], []
    for region in op.regions:
        keys = free_values([region])
        captured = {k: ctx.conv.lookup(ctx.env, k, op) for k in keys}
        comps.append(ctx.conv.region_computation(region, "region", [], op.pos, captured,
                                                  tupled=True))
        args.append(ctx.add("tuple", list(captured.values())))
    return comps, args


@handler("stablehlo.case")
def case(ctx: OpContext, op: Op) -> list:
    (index,) = ctx.operands()
    comps, args = _branches(ctx, op)
    instr = ctx.add("conditional", [index, *args], {"branch_computations": tuple(comps)})
    return ctx.results(instr) if op.results else []


@handler("stablehlo.if")
def if_(ctx: OpContext, op: Op) -> list:
    (pred,) = ctx.operands()
    comps, args = _branches(ctx, op)
    if len(comps) != 2:
        raise ctx.fail("stablehlo.if needs two regions")
    instr = ctx.add("conditional", [pred, *args], {"true_computation": comps[0],
                                                   "false_computation": comps[1]})
    return ctx.results(instr) if op.results else []

