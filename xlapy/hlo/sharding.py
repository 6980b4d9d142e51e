"""``HloSharding``: how a value is split over the devices of an SPMD program.

The ``sharding={...}`` attribute in every form XLA prints (``xla/hlo/ir/hlo_sharding.cc``,
``tile_assignment.h``):

- ``{replicated}``, ``{manual}``, ``{unknown}``, ``{unreduced}``, ``{maximal device=N}``;
- tiled, with the device array as an explicit row-major list ``{devices=[2,2]0,2,1,3}`` or in
  the iota form ``{devices=[2,2]<=[4]}`` / ``{devices=[4,2]<=[2,4]T(1,0)}``
  (``arange(prod r).reshape(r).transpose(p).reshape(dims)``);
- partially replicated ``... last_tile_dim_replicate`` and subgroups
  ``... last_tile_dims={manual, replicated}``;
- tuples ``{{replicated}, {devices=[2]0,1}}`` (one leaf per tuple leaf, pre-order);
- an optional shard group ``shard_as N`` / ``shard_like N``; ``metadata={...}`` is read and
  dropped, as XLA's default printer does.

:func:`parse_sharding` reads the text and canonicalizes it the way XLA does (subgroup dims of
one type merged and sorted manual first, size-1 subgroup dims dropped, an all-replicated
partial tile collapsed to ``{replicated}``, iota dims merged), so ``to_text`` prints what XLA
prints. Device numbers are logical (partition ids). :meth:`HloSharding.problems` is XLA's
``Validate(shape, num_devices)``.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .shape import Shape

#: Kinds of a whole sharding; ``tiled`` covers partial replication and subgroups.
KINDS = ("replicated", "maximal", "manual", "unknown", "unreduced", "tiled", "tuple")
#: Types a trailing subgroup tile dim may have, in XLA's canonical order (manual first).
SUBGROUP_TYPES = ("manual", "replicated", "unreduced", "maximal")


class ShardingParseError(ValueError):
    """Sharding text that cannot be read; ``offset`` is the character offset in the text."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class HloSharding:
    """One sharding. Tiled shardings hold the full tile-assignment ``tile_dims`` (data dims
    followed by the subgroup dims named in ``subgroups``) and the row-major ``devices``;
    ``iota`` (reshape dims, transpose perm or None) is how the device array prints, when it is
    an iota array and was given that way. Equality compares meaning, not text form."""

    kind: str
    tile_dims: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    subgroups: tuple[str, ...] = ()
    device: int = -1
    elements: tuple["HloSharding", ...] = ()
    shard_group: tuple[str, int] | None = None
    iota: tuple[tuple[int, ...], tuple[int, ...] | None] | None = field(default=None,
                                                                        compare=False)

    # ----- constructors
    @staticmethod
    def replicate() -> "HloSharding":
        return HloSharding("replicated")

    @staticmethod
    def manual() -> "HloSharding":
        return HloSharding("manual")

    @staticmethod
    def maximal(device: int) -> "HloSharding":
        return HloSharding("maximal", device=int(device))

    @staticmethod
    def tuple_of(elements: Sequence["HloSharding"]) -> "HloSharding":
        return HloSharding("tuple", elements=tuple(elements))

    @staticmethod
    def tile(array: np.ndarray, subgroups: Sequence[str] = (), iota_form: bool = True
             ) -> "HloSharding":
        """A tiled sharding from its device array (data dims then ``subgroups`` dims),
        canonicalized; ``iota_form`` prints it as ``<=[..]`` when it is an iota array."""
        return _canonical_tiled(np.asarray(array, dtype=np.int64), list(subgroups), iota_form)

    @staticmethod
    def iota_tile(dims: Sequence[int], subgroups: Sequence[str] = ()) -> "HloSharding":
        """``{devices=dims<=[prod]}`` (plus subgroups)."""
        n = int(np.prod(dims, dtype=np.int64))
        return HloSharding.tile(np.arange(n).reshape(tuple(dims)), subgroups)

    # ----- queries
    @property
    def is_tuple(self) -> bool:
        return self.kind == "tuple"

    @property
    def is_replicated(self) -> bool:
        return self.kind == "replicated" or (self.kind == "tuple" and all(
            e.is_replicated for e in self.elements))

    @property
    def is_tiled(self) -> bool:
        return self.kind == "tiled"

    @property
    def replicate_on_last_tile_dim(self) -> bool:
        return self.subgroups == ("replicated",)

    @property
    def tiled_data_rank(self) -> int:
        return len(self.tile_dims) - len(self.subgroups)

    @property
    def data_tiles(self) -> tuple[int, ...]:
        """Tiles along each data dimension."""
        return self.tile_dims[:self.tiled_data_rank]

    def device_array(self) -> np.ndarray:
        return np.asarray(self.devices, dtype=np.int64).reshape(self.tile_dims)

    def num_devices(self) -> int:
        return len(self.devices) if self.kind == "tiled" else 0

    def tile_index(self, device: int) -> tuple[int, ...]:
        """The coordinates of ``device`` in the tile array (data dims only)."""
        pos = self.devices.index(device)
        return tuple(int(i) for i in np.unravel_index(pos, self.tile_dims))[:self.tiled_data_rank]

    def shard_shape(self, dims: Sequence[int]) -> tuple[int, ...]:
        """The padded per-device shape: ``ceil(dim / tiles)`` per dimension."""
        if self.kind != "tiled":
            return tuple(dims)
        return tuple(-(-d // t) for d, t in zip(dims, self.data_tiles))

    def leaves(self) -> tuple["HloSharding", ...]:
        return self.elements if self.kind == "tuple" else (self,)

    # ----- text
    def to_text(self) -> str:
        sg = f" {self.shard_group[0]} {self.shard_group[1]}" if self.shard_group else ""
        if self.kind == "tuple":
            parts = []
            for i, e in enumerate(self.elements):
                parts.append((f"/*index={i}*/" if i and i % 5 == 0 else "") + e.to_text())
            return "{" + ", ".join(parts) + "}"
        if self.kind == "maximal":
            return "{maximal device=" + str(self.device) + sg + "}"
        if self.kind != "tiled":
            return "{" + self.kind + sg + "}"
        text = "devices=[" + ",".join(map(str, self.tile_dims)) + "]"
        if self.iota is not None:
            r, p = self.iota
            text += "<=[" + ",".join(map(str, r)) + "]"
            if p is not None:
                text += "T(" + ",".join(map(str, p)) + ")"
        else:
            text += ",".join(map(str, self.devices))
        if self.subgroups == ("replicated",):
            text += " last_tile_dim_replicate"
        elif self.subgroups:
            text += " last_tile_dims={" + ", ".join(self.subgroups) + "}"
        return "{" + text + sg + "}"

    def __str__(self) -> str:
        return self.to_text()

    # ----- validation
    def problems(self, shape: Shape | None, num_devices: int | None) -> list[str]:
        """What is wrong with this sharding for a value of ``shape`` on ``num_devices``
        partitions (XLA's ``HloSharding::Validate``); empty when it is valid."""
        out: list[str] = []
        if self.kind == "tuple":
            if shape is not None and not shape.is_tuple:
                return [f"tuple sharding {self.to_text()} on non-tuple shape {shape.to_text()}"]
            leaves = _leaf_shapes(shape) if shape is not None else None
            if leaves is not None and len(leaves) != len(self.elements) and not (
                    not leaves and len(self.elements) == 1):
                return [f"tuple sharding has {len(self.elements)} leaves but shape "
                        f"{shape.to_text()} has {len(leaves)}"]
            for i, e in enumerate(self.elements):
                sub = leaves[i] if leaves else None
                out += [f"tuple element {i}: {p}" for p in e.problems(sub, num_devices)]
            return out
        if shape is not None and shape.is_tuple and self.kind == "tiled":
            return [f"non-tuple sharding {self.to_text()} on tuple shape {shape.to_text()}"]
        if self.kind == "maximal":
            if num_devices is not None and not 0 <= self.device < num_devices:
                out.append(f"sharding {self.to_text()} names device {self.device}, but the "
                           f"module has {num_devices} partition(s)")
            return out
        if self.kind != "tiled":
            return out
        if shape is not None and self.tiled_data_rank != len(shape.dims):
            out.append(f"sharding {self.to_text()} tiles {self.tiled_data_rank} dimension(s), "
                       f"but the value {shape.to_text()} has rank {len(shape.dims)}")
        if num_devices is not None:
            if len(self.devices) != num_devices:
                out.append(f"sharding {self.to_text()} uses {len(self.devices)} device(s), but "
                           f"the module has {num_devices} partition(s)")
            bad = [d for d in self.devices if not 0 <= d < num_devices]
            if bad:
                out.append(f"sharding {self.to_text()} names device {bad[0]} out of range "
                           f"[0, {num_devices})")
        return out


def _leaf_shapes(shape: Shape) -> list[Shape]:
    if not shape.is_tuple:
        return [shape]
    return [leaf for s in shape.tuple_shapes for leaf in _leaf_shapes(s)]


# ----------------------------------------------------------------------------- canonical form
def _factor(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def find_iota(array: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...] | None] | None:
    """``(reshape_dims, perm)`` in XLA's canonical iota form for ``array`` (merged dims, perm
    None when it is the identity), or None when ``array`` is not a transposed iota."""
    flat = array.reshape(-1)
    n = flat.size
    if n == 0 or sorted(flat.tolist()) != list(range(n)):
        return None
    per_dim = [sorted(set(itertools.permutations(_factor(d)))) or [()] for d in array.shape]
    for choice in itertools.product(*per_dim):
        sizes = [f for c in choice for f in c]
        a = flat.reshape(sizes) if sizes else flat.reshape(())
        strides = []
        for k in range(len(sizes)):
            idx = [0] * len(sizes)
            idx[k] = 1
            strides.append(int(a[tuple(idx)]))
        expect = np.zeros(sizes, dtype=np.int64) if sizes else np.zeros((), np.int64)
        for k, s in enumerate(strides):
            shp = [1] * len(sizes)
            shp[k] = sizes[k]
            expect = expect + np.arange(sizes[k]).reshape(shp) * s
        if not np.array_equal(expect, a):
            continue
        # merge runs of axes that are contiguous in memory order
        groups: list[list[int]] = []
        for k in range(len(sizes)):
            if groups and strides[groups[-1][-1]] == strides[k] * sizes[k]:
                groups[-1].append(k)
            else:
                groups.append([k])
        gsize = [int(np.prod([sizes[k] for k in g])) for g in groups]
        gstride = [strides[g[-1]] for g in groups]
        order = sorted(range(len(groups)), key=lambda g: -gstride[g])   # major first
        reshape = tuple(gsize[g] for g in order)
        perm = tuple(order.index(g) for g in range(len(groups)))
        if perm == tuple(range(len(perm))):
            return (n,), None
        return reshape, perm
    return None


def _canonical_tiled(array: np.ndarray, subgroups: list[str], iota_form: bool) -> HloSharding:
    data_rank = array.ndim - len(subgroups)
    # merge subgroup dims of one type, manual first, drop size-1 subgroup dims
    order = sorted(range(len(subgroups)), key=lambda i: (SUBGROUP_TYPES.index(subgroups[i]), i))
    array = array.transpose(list(range(data_rank)) + [data_rank + i for i in order])
    types = [subgroups[i] for i in order]
    data_dims = list(array.shape[:data_rank])
    merged_types: list[str] = []
    merged_sizes: list[int] = []
    for t, s in zip(types, array.shape[data_rank:]):
        if merged_types and merged_types[-1] == t:
            merged_sizes[-1] *= s
        else:
            merged_types.append(t)
            merged_sizes.append(s)
    keep = [i for i, s in enumerate(merged_sizes) if s != 1]
    merged_types = [merged_types[i] for i in keep]
    merged_sizes = [merged_sizes[i] for i in keep]
    array = array.reshape(data_dims + merged_sizes)
    if all(d == 1 for d in data_dims):
        if merged_types == ["replicated"] or (not merged_types and array.size > 1):
            return HloSharding.replicate()
        if merged_types == ["manual"]:
            return HloSharding.manual()
    iota = find_iota(array) if iota_form else None
    return HloSharding("tiled", tuple(int(d) for d in array.shape),
                       tuple(int(d) for d in array.reshape(-1)), tuple(merged_types), iota=iota)


# ----------------------------------------------------------------------------- parser
_TOKEN = re.compile(r"\s*(/\*index=\d+\*/|\{|\}|,|<=|\[|\]|T\(|\)|=|[A-Za-z_]+|-?\d+)")


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def peek(self) -> str:
        m = _TOKEN.match(self.text, self.pos)
        return m.group(1) if m else ("" if not self.text[self.pos:].strip() else "?")

    def next(self) -> str:
        m = _TOKEN.match(self.text, self.pos)
        if not m:
            self.fail(f"unexpected {self.text[self.pos:].strip()[:10]!r} in sharding")
        self.pos = m.end()
        return m.group(1)

    def offset(self) -> int:
        m = re.compile(r"\s*").match(self.text, self.pos)
        return m.end() if m else self.pos

    def fail(self, message: str) -> None:
        raise ShardingParseError(message, self.offset())

    def expect(self, tok: str) -> None:
        at = self.offset()
        got = self.next() if self.peek() else ""
        if got != tok:
            raise ShardingParseError(f"expected '{tok}' in sharding, found "
                                     f"{repr(got) if got else 'end of text'}", at)

    def integer(self) -> int:
        at = self.offset()
        tok = self.next() if self.peek() else ""
        if not re.fullmatch(r"-?\d+", tok):
            raise ShardingParseError(f"expected an integer in sharding, found {tok!r}", at)
        return int(tok)

    def int_list(self, close: str) -> list[int]:
        out = [self.integer()]
        while self.peek() == ",":
            self.next()
            out.append(self.integer())
        self.expect(close)
        return out

    def int_list_until_word(self) -> list[int]:
        """Integers separated by ',' up to the first non-integer (an explicit device list)."""
        out = [self.integer()]
        while self.peek() == "," and re.match(r"\s*,\s*-?\d", self.text[self.pos:]):
            self.next()
            out.append(self.integer())
        return out

    def skip_balanced(self) -> None:
        """Skip one ``{...}`` group (strings inside may hold braces)."""
        text, i = self.text, self.offset()
        if not text.startswith("{", i):
            self.fail("expected '{' in sharding metadata")
        depth = 0
        while i < len(text):
            c = text[i]
            if c == '"':
                i += 1
                while i < len(text) and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    self.pos = i + 1
                    return
            i += 1
        self.fail("unbalanced '{' in sharding metadata")


def _read(r: _Reader) -> HloSharding:
    r.expect("{")
    tok = r.peek()
    if tok == "}":
        r.next()
        return HloSharding.tuple_of(())
    if tok == "{" or tok.startswith("/*"):
        elems = []
        while True:
            if r.peek().startswith("/*"):
                r.next()
            elems.append(_read(r))
            if r.peek() != ",":
                break
            r.next()
        r.expect("}")
        return HloSharding.tuple_of(elems)
    start = r.offset()
    word = r.next()
    result: HloSharding
    if word in ("replicated", "manual", "unknown", "unreduced"):
        result = HloSharding(word)
    elif word == "maximal":
        r.expect("device")
        r.expect("=")
        result = HloSharding.maximal(r.integer())
    elif word == "devices":
        result = _read_tiled(r, start)
    else:
        raise ShardingParseError(f"unknown sharding kind {word!r}", start)
    group = None
    while r.peek() != "}":
        at = r.offset()
        word = r.next()
        if word in ("shard_as", "shard_like"):
            group = (word, r.integer())
        elif word == "metadata":
            r.expect("=")
            r.skip_balanced()
        else:
            raise ShardingParseError(f"unexpected {word!r} in sharding", at)
    r.expect("}")
    if group is not None:
        result = HloSharding(result.kind, result.tile_dims, result.devices, result.subgroups,
                             result.device, result.elements, group, result.iota)
    return result


def _read_tiled(r: _Reader, start: int) -> HloSharding:
    r.expect("=")
    r.expect("[")
    dims = r.int_list("]")
    if any(d <= 0 for d in dims):
        raise ShardingParseError(f"tile dimensions must be positive, got {dims}", start)
    total = int(np.prod(dims))
    iota_form = r.peek() == "<="
    if iota_form:
        r.next()
        r.expect("[")
        at = r.offset()
        reshape = r.int_list("]")
        perm = None
        if r.peek() == "T(":
            r.next()
            perm = r.int_list(")")
        elif len(reshape) > 1:
            raise ShardingParseError("expected 'T(' to start sharding devices "
                                     "iota_transpose_perm", r.offset())
        if int(np.prod(reshape)) != total:
            raise ShardingParseError(f"iota reshape dims {reshape} hold {int(np.prod(reshape))} "
                                     f"devices, but the tile dims {dims} need {total}", at)
        if perm is not None and sorted(perm) != list(range(len(reshape))):
            raise ShardingParseError(f"T{tuple(perm)} is not a permutation of "
                                     f"0..{len(reshape) - 1}", at)
        arr = np.arange(total).reshape(reshape)
        if perm is not None:
            arr = arr.transpose(perm)
        arr = arr.reshape(dims)
    else:
        at = r.offset()
        devices = r.int_list_until_word()
        if len(devices) != total:
            raise ShardingParseError(f"tile dims {dims} need {total} device(s), but "
                                     f"{len(devices)} are listed", at)
        if len(set(devices)) != len(devices):
            raise ShardingParseError(f"device list {devices} repeats a device", at)
        arr = np.asarray(devices, dtype=np.int64).reshape(dims)
    subgroups: list[str] = []
    while r.peek() in ("last_tile_dim_replicate", "last_tile_dims"):
        word = r.next()
        if word == "last_tile_dim_replicate":
            subgroups.append("replicated")
            continue
        r.expect("=")
        r.expect("{")
        while True:
            at = r.offset()
            t = r.next()
            if t not in SUBGROUP_TYPES:
                raise ShardingParseError(f"unknown last_tile_dims type {t!r}", at)
            subgroups.append(t)
            if r.peek() != ",":
                break
            r.next()
        r.expect("}")
    if len(subgroups) > len(dims):
        raise ShardingParseError(f"{len(subgroups)} subgroup dim(s) but only {len(dims)} tile "
                                 f"dim(s)", start)
    if total == 1:
        raise ShardingParseError("non-maximal shardings must have more than one device "
                                 "assigned", start)
    return _canonical_tiled(arr, subgroups, iota_form)


def parse_sharding(text: str) -> HloSharding:
    """Parse ``{...}`` sharding text (any form XLA prints); raises :class:`ShardingParseError`
    (a ``ValueError``) with the offset of the problem."""
    r = _Reader(text)
    s = _read(r)
    if r.peek():
        raise ShardingParseError(f"unexpected text after the sharding: "
                                 f"{text[r.offset():][:20]!r}", r.offset())
    return s


__all__ = ["HloSharding", "ShardingParseError", "parse_sharding", "find_iota", "KINDS",
           "SUBGROUP_TYPES"]
