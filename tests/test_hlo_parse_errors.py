"""Malformed HLO text raises HloParseError at the offending token with a message naming the problem."""
from __future__ import annotations

import pytest

from xlapy.errors import HloParseError
from xlapy.hlo.parser import parse_module, parse_shape

H = "HloModule m\n\n"

# name -> (text, line, column, words the message must contain)
CASES = {
    "unknown_opcode": (H + "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] foo(p)\n}\n",
                       5, 18, ["unknown opcode", "'foo'"]),
    "unknown_operand": (H + "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] negate(q)\n}\n",
                        5, 25, ["unknown operand", "'q'"]),
    "operand_of_other_computation": (
        H + "c {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}\n\n"
        "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, y)\n}\n",
        10, 25, ["unknown operand 'y'", "computation 'c'"]),
    "undefined_computation": (
        H + "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=%nothere\n}\n",
        6, 57, ["undefined computation", "'nothere'"]),
    "bad_element_type": (H + "ENTRY e {\n  ROOT p = f33[4] parameter(0)\n}\n",
                         4, 12, ["unknown element type", "'f33'"]),
    "missing_close_brace_before_next_computation": (
        H + "c {\n  ROOT x = f32[] parameter(0)\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n",
        6, 1, ["missing '}'", "'c'"]),
    "missing_close_brace_at_end": (H + "ENTRY e {\n  ROOT p = f32[] parameter(0)\n",
                                   5, 1, ["missing '}'", "'e'", "line 3"]),
    "extra_close_brace": (H + "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n}\n",
                          6, 1, ["unbalanced '}'"]),
    "missing_equals": (H + "ENTRY e {\n  p f32[] parameter(0)\n}\n",
                       4, 5, ["expected '='", "'p'"]),
    "duplicate_name": (H + "ENTRY e {\n  p = f32[] parameter(0)\n  p = f32[] negate(p)\n}\n",
                       5, 3, ["duplicate instruction name", "'p'"]),
    "two_roots": (H + "ENTRY e {\n  ROOT p = f32[] parameter(0)\n  ROOT q = f32[] negate(p)\n}\n",
                  5, 3, ["more than one ROOT"]),
    "wrong_arity": (H + "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] add(p, p, p)\n}\n",
                    5, 18, ["'add' takes 2 operands", "has 3"]),
    "missing_required_attribute": (
        H + "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[] reduce(p, z), dimensions={0}\n}\n",
        6, 18, ["missing required attribute", "'to_apply'", "'reduce'"]),
    "literal_wrong_element_count": (
        H + "ENTRY e {\n  ROOT c = f32[2,3] constant({ {1, 2, 3}, {4, 5} })\n}\n",
        4, 43, ["has 2 elements", "expected 3", "f32[2,3]"]),
    "literal_out_of_range": (H + "ENTRY e {\n  ROOT c = s8[3] constant({1, 300, 2})\n}\n",
                             4, 31, ["300", "out of range", "s8"]),
    "literal_not_a_number": (H + "ENTRY e {\n  ROOT c = f32[2] constant({1, abc})\n}\n",
                             4, 32, ["'abc'", "floating-point"]),
    "unterminated_string": (
        H + "ENTRY e {\n  ROOT p = f32[] parameter(0), metadata={op_name=\"abc}\n}\n",
        4, 50, ["unterminated string"]),
    "trailing_garbage_on_line": (
        H + "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] negate(p) junk\n}\n",
        5, 28, ["unexpected 'junk'"]),
    "garbage_after_module": (H + "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n\n@@@\n",
                             7, 1, ["expected a computation name", "'@'"]),
    "bad_dim_labels": (
        H + "ENTRY e {\n  a = f32[1,2,2,1] parameter(0)\n  ROOT c = f32[1,2,2,1] convolution(a, a), "
        "window={size=1x1}, dim_labels=b01f_01xo->b01f\n}\n",
        5, 74, ["dim_labels", "'x'"]),
    "no_module_header": ("ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n",
                         1, 1, ["expected 'HloModule'"]),
    "parameter_gap": (H + "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] parameter(2)\n}\n",
                      5, 18, ["parameter(2)", "no parameter(1)"]),
    "bad_layout": (H + "ENTRY e {\n  ROOT p = f32[2,3]{0,0} parameter(0)\n}\n",
                   4, 20, ["layout {0,0}", "permutation"]),
    "operand_shape_mismatch": (
        H + "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT q = f32[3] negate(f32[3] p)\n}\n",
        5, 33, ["operand 'p'", "f32[2]", "f32[3]"]),
    "bad_window_field": (
        H + "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[2] "
        "reduce-window(p, z), window={size=2 strde=2}, to_apply=e\n}\n",
        6, 55, ["unknown window field", "'strde'"]),
    "empty_computation": (H + "ENTRY e {\n}\n", 3, 7, ["'e' has no instructions"]),
    "nested_instruction_without_shape": (
        H + "ENTRY e {\n  ROOT r = f32[] negate(parameter(0))\n}\n",
        4, 25, ["nested instruction", "shape"]),
    "unknown_attribute_unbalanced_bracket": (
        H + "ENTRY e {\n  ROOT p = f32[] parameter(0), sharding={{replicated}\n}\n",
        4, 41, ["unbalanced", "sharding"]),
    "duplicate_attribute": (
        H + "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT t = f32[2] transpose(p), dimensions={0}, "
        "dimensions={0}\n}\n",
        5, 49, ["duplicate attribute", "'dimensions'"]),
    "bad_bool": (H + "ENTRY e {\n  ROOT p = f32[2] parameter(0), parameter_replication={yes}\n}\n",
                 4, 56, ["expected true or false"]),
    "two_entries": (H + "ENTRY a {\n  ROOT p = f32[] parameter(0)\n}\n\nENTRY b {\n"
                    "  ROOT p = f32[] parameter(0)\n}\n",
                    7, 7, ["more than one ENTRY"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_parse_error_position_and_message(name):
    text, line, column, words = CASES[name]
    with pytest.raises(HloParseError) as info:
        parse_module(text)
    err = info.value
    assert (err.line, err.column) == (line, column), err.bare_message
    for w in words:
        assert w in err.bare_message, err.bare_message
    assert err.source_line == text.splitlines()[line - 1] if line <= len(text.splitlines()) \
        else err.source_line == ""
    assert f"{line}:{column}:" in str(err)


@pytest.mark.parametrize("text,column,words", [
    ("f32[2,3", 8, ["expected ','"]),
    ("f32[2]{1,0}", 7, ["not a permutation"]),
    ("q7[2]", 1, ["unknown element type 'q7'"]),
    ("(f32[], s32[]", 14, ["expected ')'"]),
    ("f32[2] extra", 8, ["unexpected 'extra'"]),
    ("", 1, ["expected a shape"]),
])
def test_shape_errors(text, column, words):
    with pytest.raises(HloParseError) as info:
        parse_shape(text)
    assert info.value.column == column, info.value.bare_message
    for w in words:
        assert w in info.value.bare_message


@pytest.mark.parametrize("text", [
    "HloModule", "HloModule m,", "HloModule m, entry_computation_layout={(f32[]->f32[]}",
    "HloModule m\nENTRY e {\n  ROOT c = f32[2] constant({1, 2\n}\n",
    "HloModule m\nENTRY e {\n  ROOT c = (f32[], s32[]) constant((1, 2, 3))\n}\n",
    "HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1), metadata={op_name=\"a\\q\"}\n}\n",
    "HloModule m\nENTRY e {\n  ROOT c = c64[] constant((1, ))\n}\n",
    "HloModule m\nENTRY e {\n  ROOT c = f32[2] constant({1, 2,})\n}\n",
    "HloModule m\nENTRY e {\n  ROOT c = f32[] constant(nan(0xffffffff))\n}\n",
    "HloModule m\nFileNames\n2 \"x\"\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n",
    "HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(-1)\n}\n",
    "HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}, execution_threads=\"x\"\n",
    "HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n  /* never closed\n}\n",
    "\x00\x01garbage",
])
def test_other_malformed_inputs_raise_parse_errors(text):
    with pytest.raises(HloParseError) as info:
        parse_module(text)
    assert info.value.line >= 1 and "internal parser error" not in info.value.bare_message


def test_mutated_inputs_never_leak_python_exceptions():
    """Random truncations/insertions of valid modules give HloParseError or a valid module."""
    import random
    from pathlib import Path
    rng = random.Random(7)
    texts = [p.read_text() for p in sorted((Path(__file__).parent / "data" / "hlo").glob("*.hlo"))]
    assert texts
    for _ in range(400):
        t = rng.choice(texts)
        i = rng.randrange(len(t))
        c = rng.choice('{}()[],=%":/*x0-.<')
        mutated = rng.choice([t[:i], t[:i] + c + t[i:], t[:i] + c + t[i + 1:],
                              t[:i] + t[i + rng.randrange(1, 12):]])
        try:
            m = parse_module(mutated)
        except HloParseError as e:
            assert "internal parser error" not in e.bare_message, (e, mutated)
            assert 1 <= e.line <= mutated.count("\n") + 1
        else:
            assert parse_module(m.to_text()).to_text() == m.to_text()
