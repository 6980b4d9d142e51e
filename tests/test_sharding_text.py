"""``sharding={...}``: parse, print as XLA prints, validate, keep through clones and passes."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.errors import HloParseError, VerificationError
from xlapy.hlo.ir import clone_computation
from xlapy.hlo.parser import parse_module
from xlapy.hlo.sharding import HloSharding, ShardingParseError, find_iota, parse_sharding
from xlapy.hlo.verifier import verify_module

# (input, what XLA prints): each pair was checked against jaxlib's HloSharding.from_string.
CANONICAL = [
    ("{replicated}", "{replicated}"),
    ("{manual}", "{manual}"),
    ("{unknown}", "{unknown}"),
    ("{unreduced}", "{unreduced}"),
    ("{maximal device=3}", "{maximal device=3}"),
    ("{}", "{}"),
    ("{devices=[2,2]0,1,2,3}", "{devices=[2,2]0,1,2,3}"),
    ("{devices=[2,2]3,2,1,0}", "{devices=[2,2]3,2,1,0}"),
    ("{devices=[2,2]<=[2,2]T(1,0)}", "{devices=[2,2]<=[2,2]T(1,0)}"),
    ("{devices=[2,2]<=[2,2]T(0,1)}", "{devices=[2,2]<=[4]}"),
    ("{devices=[2,2]<=[2,1,2]T(2,1,0)}", "{devices=[2,2]<=[2,2]T(1,0)}"),
    ("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
     "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ("{devices=[2,2]<=[4] last_tile_dims={replicated}}",
     "{devices=[2,2]<=[4] last_tile_dim_replicate}"),
    ("{devices=[2,1,2,2]<=[8] last_tile_dims={replicated, manual}}",
     "{devices=[2,1,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, replicated}}"),
    ("{devices=[2,1,2,2]0,1,2,3,4,5,6,7 last_tile_dims={replicated, manual}}",
     "{devices=[2,1,2,2]0,2,1,3,4,6,5,7 last_tile_dims={manual, replicated}}"),
    ("{devices=[2,1,2,2]<=[2,2,2]T(2,0,1) last_tile_dims={unreduced, manual}}",
     "{devices=[2,1,2,2]<=[2,2,2]T(2,1,0) last_tile_dims={manual, unreduced}}"),
    ("{devices=[2,1,2]0,1,2,3 last_tile_dims={manual, replicated}}",
     "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}"),
    ("{devices=[1,1,2]0,1 last_tile_dims={manual}}", "{manual}"),
    ("{devices=[1,1,1,2]0,1 last_tile_dims={replicated, manual}}", "{manual}"),
    ("{devices=[1,1,4]<=[4] last_tile_dim_replicate}", "{replicated}"),
    ("{devices=[2,1]0,1 shard_as 3}", "{devices=[2,1]0,1 shard_as 3}"),
    ("{devices=[2,1]0,1 shard_like 3}", "{devices=[2,1]0,1 shard_like 3}"),
    ('{replicated metadata={op_name="a}"}}', "{replicated}"),
    ("{devices=[8,1]<=[2,4]T(1,0)}", "{devices=[8,1]<=[2,4]T(1,0)}"),
    ("{devices=[6]<=[2,3]T(1,0)}", "{devices=[6]<=[2,3]T(1,0)}"),
    ("{devices=[4,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}",
     "{devices=[4,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}"),
    ("{{replicated}, {maximal device=0}, {devices=[2]0,1}}",
     "{{replicated}, {maximal device=0}, {devices=[2]0,1}}"),
    ("{{replicated},{replicated},{replicated},{replicated},{replicated},{replicated},{manual}}",
     "{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, "
     "/*index=5*/{replicated}, {manual}}"),
]


@pytest.mark.parametrize("text,printed", CANONICAL)
def test_parse_prints_what_xla_prints(text, printed):
    s = parse_sharding(text)
    assert s.to_text() == printed
    assert parse_sharding(printed) == s
    assert parse_sharding(printed).to_text() == printed


def test_against_jaxlib():
    pytest.importorskip("jax")
    from jax._src.lib import xla_client as xc
    for text, _ in CANONICAL:
        assert parse_sharding(text).to_text() == str(xc.HloSharding.from_string(text)), text


def test_meaning_not_form_decides_equality():
    assert parse_sharding("{devices=[2,2]<=[4]}") == parse_sharding("{devices=[2,2]0,1,2,3}")
    assert parse_sharding("{devices=[2,2]<=[2,2]T(1,0)}") == parse_sharding(
        "{devices=[2,2]0,2,1,3}")
    assert parse_sharding("{devices=[2,2]<=[4]}") != parse_sharding("{devices=[2,2]0,2,1,3}")


def test_tile_math():
    s = parse_sharding("{devices=[4,2]<=[2,4]T(1,0)}")
    assert s.devices == (0, 4, 1, 5, 2, 6, 3, 7)
    assert s.tile_index(5) == (1, 1)
    assert s.shard_shape((10, 3)) == (3, 2)          # ceil, not floor
    p = parse_sharding("{devices=[4,1,2]<=[8] last_tile_dim_replicate}")
    assert p.data_tiles == (4, 1) and p.tile_index(3) == (1, 0)


def test_find_iota():
    assert find_iota(np.arange(8).reshape(2, 4)) == ((8,), None)
    assert find_iota(np.arange(8).reshape(2, 4).T) == ((2, 4), (1, 0))
    assert find_iota(np.array([[0, 3], [1, 2]])) is None
    arr = np.arange(12).reshape(3, 4).T.reshape(2, 6)
    r, p = find_iota(arr)
    assert np.array_equal(np.arange(12).reshape(r).transpose(p).reshape(2, 6), arr)


@pytest.mark.parametrize("text,message", [
    ("{devices=[1,1]0}", "more than one device"),
    ("{devices=[2,2]0,1,2}", "need 4 device"),
    ("{devices=[2]0,0}", "repeats"),
    ("{devices=[2,2]<=[2,2]}", "T("),
    ("{devices=[2,2]<=[8]}", "hold 8 devices"),
    ("{devices=[2,2]<=[2,2]T(0,0)}", "permutation"),
    ("{tiled}", "unknown sharding kind"),
    ("{devices=[2,2]<=[4] last_tile_dims={sideways}}", "unknown last_tile_dims"),
    ("{replicated} x", "after the sharding"),
])
def test_bad_sharding_text(text, message):
    with pytest.raises(ShardingParseError, match=message.replace("(", r"\(")):
        parse_sharding(text)


MODULE = """HloModule m, num_partitions=4

ENTRY main {
  a = f32[16,32]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  b = f32[32,8]{1,0} parameter(1), sharding={devices=[2,2]<=[2,2]T(1,0)}
  d = f32[16,8]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]0,2,1,3}
  ROOT t = (f32[16,8]{1,0}, f32[32,8]{1,0}) tuple(d, b), sharding={{replicated}, {maximal device=1}}
}
"""


def test_module_round_trip_and_clone_keep_shardings():
    m = parse_module(MODULE)
    verify_module(m)
    text = m.to_text()
    assert "sharding={devices=[2,2]<=[2,2]T(1,0)}" in text
    assert "sharding={devices=[4,1]0,2,1,3}" in text
    assert "sharding={{replicated}, {maximal device=1}}" in text
    assert parse_module(text).to_text() == text
    assert m.clone().to_text() == text
    c = clone_computation(m.entry)
    assert c.instruction("d").attrs["sharding"] == m.entry.instruction("d").attrs["sharding"]


@pytest.mark.parametrize("old,new,line,col,message", [
    ("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
     4, 46, "uses 8 device(s), but the module has 4"),
    ("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2,1]<=[4]}", 4, 46,
     "tiles 3 dimension(s), but the value f32[16,32]{1,0} has rank 2"),
    ("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[2,1]0,1,2}", 4, 60,
     "need 2 device(s), but 3"),
    ("{{replicated}, {maximal device=1}}", "{{replicated}}", 7, 67, "has 1 leaves but"),
])
def test_bad_sharding_in_module_names_line_and_column(old, new, line, col, message):
    with pytest.raises(HloParseError) as e:
        parse_module(MODULE.replace(old, new))
    assert (e.value.line, e.value.column) == (line, col)
    assert message in str(e.value)


def test_verifier_checks_built_modules():
    m = parse_module(MODULE)
    m.entry.instruction("a").attrs["sharding"] = HloSharding.iota_tile((2, 4))
    with pytest.raises(VerificationError, match="main/a: sharding .* uses 8 device"):
        verify_module(m)


def test_passes_keep_shardings():
    from xlapy.passes.cse import HloCSE
    from xlapy.passes.dce import HloDCE
    m = parse_module(MODULE)
    for p in (HloDCE(), HloCSE()):
        p.run(m)
    assert m.entry.instruction("d").attrs["sharding"].to_text() == "{devices=[4,1]0,2,1,3}"


def test_shardy_module_header_round_trips():
    """JAX's default (Shardy) lowering puts a braced, unquoted mesh in the module's
    frontend_attributes; it is kept verbatim."""
    header = ('HloModule jit_f, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, '
              '"y"=4]>}}\n\n')
    body = ("ENTRY main {\n  ROOT x = f32[8]{0} parameter(0), sharding={devices=[2,4]<=[8] "
            'last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding'
            '<@mesh, [{\\"x\\"}]>"}\n}\n')
    m = parse_module(header + body)
    text = m.to_text()
    assert text.splitlines()[0] == header.strip()
    assert parse_module(text).to_text() == text
