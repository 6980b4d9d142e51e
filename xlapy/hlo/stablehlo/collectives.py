"""Collectives and Shardy (``sdy``) ops.

``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all`` (split dimension equal
to the concat dimension), ``collective_permute`` and ``collective_broadcast`` become the
HLO collectives with XLA's attributes: ``replica_groups`` from the dense group matrix
(padding ``-1`` dropped), ``channel_id`` from a ``channel_handle`` with a positive handle,
``use_global_device_ids`` as given. ``sdy.sharding_constraint`` annotates a value for
XLA's SPMD partitioner, which xlapy does not run: it converts to the value itself. An
``sdy.manual_computation`` is inlined when its mesh has one device. A ``@main`` that is one
manual computation over every mesh axis becomes its per-device body
(``Converter.manual_entry``); any other manual computation over several devices needs the
partitioner and is refused with its line:column.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..replica_groups import ReplicaGroups
from .constants import dense_array
from .ops_regions import _body, _scalars
from .registry import OpContext, handler
from .syntax import Dense, Op, Struct


def _groups(value: Any) -> ReplicaGroups:
    if not isinstance(value, Dense):
        return ReplicaGroups.of([])
    rows = np.atleast_2d(dense_array(value)) if value.shape.dims else np.zeros((0, 0))
    return ReplicaGroups.of([[int(v) for v in row if v >= 0] for row in rows])


def _common(op: Op) -> dict[str, Any]:
    attrs: dict[str, Any] = {"replica_groups": _groups(op.attrs.get("replica_groups"))}
    handle = op.attrs.get("channel_handle")
    if isinstance(handle, Struct) and int(handle.fields.get("handle", 0)) > 0:
        attrs["channel_id"] = int(handle.fields["handle"])
    if op.attrs.get("use_global_device_ids"):
        attrs["use_global_device_ids"] = True
    return attrs


def _variadic(ctx: OpContext, opcode: str, attrs: dict[str, Any]) -> list:
    instr = ctx.add(opcode, ctx.operands(), attrs)
    return ctx.results(instr)


@handler("stablehlo.all_reduce")
def all_reduce(ctx: OpContext, op: Op) -> list:
    values = ctx.operands()
    attrs = _common(op)
    attrs["to_apply"] = _body(ctx, op, 0, _scalars(v.shape for v in values[:1]) * 2, "region")
    return _variadic(ctx, "all-reduce", attrs)


@handler("stablehlo.reduce_scatter")
def reduce_scatter(ctx: OpContext, op: Op) -> list:
    values = ctx.operands()
    attrs = _common(op)
    attrs["dimensions"] = (int(op.attrs.get("scatter_dimension", 0)),)
    attrs["to_apply"] = _body(ctx, op, 0, _scalars(v.shape for v in values[:1]) * 2, "region")
    return _variadic(ctx, "reduce-scatter", attrs)


@handler("stablehlo.all_gather")
def all_gather(ctx: OpContext, op: Op) -> list:
    attrs = _common(op)
    attrs["dimensions"] = (int(op.attrs.get("all_gather_dim", 0)),)
    return _variadic(ctx, "all-gather", attrs)


@handler("stablehlo.all_to_all")
def all_to_all(ctx: OpContext, op: Op) -> list:
    split = int(op.attrs.get("split_dimension", 0))
    concat = int(op.attrs.get("concat_dimension", split))
    if split != concat:
        raise ctx.fail(f"all_to_all with split_dimension {split} != concat_dimension "
                       f"{concat} is not supported")
    attrs = _common(op)
    attrs["dimensions"] = (split,)
    return _variadic(ctx, "all-to-all", attrs)


@handler("stablehlo.collective_permute")
def collective_permute(ctx: OpContext, op: Op) -> list:
    pairs = op.attrs.get("source_target_pairs")
    rows = dense_array(pairs).reshape(-1, 2).tolist() if isinstance(pairs, Dense) else []
    attrs: dict[str, Any] = {"source_target_pairs": tuple((int(a), int(b)) for a, b in rows)}
    handle = op.attrs.get("channel_handle")
    if isinstance(handle, Struct) and int(handle.fields.get("handle", 0)) > 0:
        attrs = {"channel_id": int(handle.fields["handle"]), **attrs}
    return [ctx.add("collective-permute", ctx.operands(), attrs)]


@handler("stablehlo.collective_broadcast")
def collective_broadcast(ctx: OpContext, op: Op) -> list:
    return [ctx.add("collective-broadcast", ctx.operands(), _common(op))]


@handler("sdy.sharding_constraint", "sdy.reshard")
def sharding_constraint(ctx: OpContext, op: Op) -> list:
    return ctx.operands()[:1]


def _mesh_devices(ctx: OpContext) -> int:
    """The device count of the module's meshes (``mhlo.num_partitions`` x replicas)."""
    attrs = ctx.conv.mod.attrs
    n = 1
    for key in ("mhlo.num_partitions", "mhlo.num_replicas"):
        value = attrs.get(key)
        if isinstance(value, int):
            n *= value
    return n


@handler("sdy.manual_computation")
def manual_computation(ctx: OpContext, op: Op) -> list:
    devices = _mesh_devices(ctx)
    axes = re.findall(r'"\w+"', op.raw.get("manual_axes", ""))
    if devices > 1:
        raise ctx.fail(f"sdy.manual_computation over {devices} devices (manual axes "
                       f"{', '.join(axes) or 'none'}) needs XLA's SPMD partitioner, which "
                       "xlapy does not run; run the partitioned module XLA compiles instead "
                       "(jax.jit(f).lower(...).compile().as_text())")
    body = op.regions[0]
    env = dict(ctx.env)
    for (key, _shape), value in zip(body.blocks[0].args, ctx.operands()):
        env[key] = value
    return ctx.conv.block(ctx.b, body.blocks[0], env, op.pos)
