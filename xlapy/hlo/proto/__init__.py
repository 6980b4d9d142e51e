"""XLA's ``HloModuleProto``, binary and text form, read and written with ``protobuf``.

The messages are XLA's (``xlapy_hlo.proto`` declares them with XLA's field names and
numbers; ``xlapy_hlo_pb2.py`` is generated from it by ``make proto``), so a module that
JAX serializes (``jax.jit(f).lower(...).compiler_ir('hlo').as_serialized_hlo_module_proto()``)
or XLA dumps (``--xla_dump_hlo_as_proto`` writes ``HloProto`` files, ``*.hlo.pb``) loads
here, and what xlapy writes loads in XLA. ``to_proto.py`` and ``from_proto.py`` map the
fields; ``values.py`` shapes, literals, metadata and shardings.
"""
from __future__ import annotations

from ...errors import HloParseError
from ..ir import HloModule


def _pb():
    try:
        from . import xlapy_hlo_pb2
    except Exception as e:      # ImportError, or protobuf's VersionError for an old runtime
        raise HloParseError(f"reading or writing HloModuleProto needs the 'protobuf' "
                            f"package (>= 7.35.1): {e}") from None
    return xlapy_hlo_pb2


def module_to_proto_bytes(module: HloModule) -> bytes:
    """``module`` as a serialized ``HloModuleProto``."""
    _pb()
    from .to_proto import module_to_proto
    return module_to_proto(module).SerializeToString(deterministic=True)


def module_to_hlo_proto_bytes(module: HloModule) -> bytes:
    """``module`` as a serialized ``HloProto`` (what XLA writes to ``*.hlo.pb`` dumps)."""
    pb = _pb()
    from .to_proto import module_to_proto
    return pb.HloProto(hlo_module=module_to_proto(module)).SerializeToString(
        deterministic=True)


def module_to_proto_text(module: HloModule) -> str:
    """``module`` as an ``HloModuleProto`` in protobuf's text format (``.pbtxt``)."""
    _pb()
    from google.protobuf import text_format
    from .to_proto import module_to_proto
    return text_format.MessageToString(module_to_proto(module))


def _looks_like_module(p) -> bool:
    names = {c.name for c in p.computations}
    return bool(p.computations) and p.entry_computation_name in names


def module_from_proto_bytes(data: bytes) -> HloModule:
    """An HloModule from a serialized ``HloModuleProto`` or ``HloProto`` (detected)."""
    pb = _pb()
    from google.protobuf.message import DecodeError
    from .from_proto import module_from_proto
    try:
        p = pb.HloModuleProto.FromString(data)
        if _looks_like_module(p):
            return module_from_proto(p)
    except DecodeError:
        pass
    try:
        wrapped = pb.HloProto.FromString(data)
    except DecodeError as e:
        raise HloParseError(f"not a serialized HloModuleProto or HloProto: {e}") from None
    if not _looks_like_module(wrapped.hlo_module):
        raise HloParseError("not a serialized HloModuleProto or HloProto (no computations "
                            "with the entry computation's name)")
    return module_from_proto(wrapped.hlo_module)


def module_from_proto_text(text: str) -> HloModule:
    """An HloModule from an ``HloModuleProto`` (or ``HloProto``) in text format."""
    pb = _pb()
    from google.protobuf import text_format
    from .from_proto import module_from_proto
    errors = []
    for message in (pb.HloModuleProto, pb.HloProto):
        try:
            p = text_format.Parse(text, message(), allow_unknown_field=True)
        except text_format.ParseError as e:
            errors.append(str(e))
            continue
        p = p.hlo_module if message is pb.HloProto else p
        if _looks_like_module(p):
            return module_from_proto(p)
    raise HloParseError("not an HloModuleProto in text format: " + (errors[0] if errors
                                                                     else "no computations"))


__all__ = ["module_to_proto_bytes", "module_to_hlo_proto_bytes", "module_to_proto_text",
           "module_from_proto_bytes", "module_from_proto_text"]
