"""XLA_FLAGS parsing, programmatic overrides and dump file naming (xlapy.config)."""
from __future__ import annotations

import logging
import os
import re

import pytest

from xlapy import config
from xlapy.config import (DebugOptions, DumpConfig, debug_options, get_debug_options,
                          parse_xla_flags, reset_dump_numbering)
from xlapy.errors import InvalidArgumentError


@pytest.fixture(autouse=True)
def _fresh_numbering():
    reset_dump_numbering()
    yield
    reset_dump_numbering()


def test_defaults_match_xla():
    o = DebugOptions()
    assert o.xla_dump_hlo_as_long_text is True
    assert o.xla_dump_hlo_as_text is False
    assert o.xla_dump_max_hlo_modules == -1
    assert o.xla_backend_optimization_level == 3
    assert o.xla_cpu_enable_fast_min_max is True
    assert o.xla_cpu_enable_fast_math is False
    assert o.xla_force_host_platform_device_count == 1
    assert o.xla_disable_hlo_passes == ()


def test_parse_values_of_every_kind():
    o = parse_xla_flags("--xla_dump_to=/tmp/d --xla_dump_hlo_as_text "
                        "--xla_disable_hlo_passes=algsimp,cse --xla_dump_max_hlo_modules=2 "
                        "--xla_force_host_platform_device_count=8 "
                        "--xla_dump_hlo_pass_re=.* --xla_cpu_use_thunk_runtime=false")
    assert o.xla_dump_to == "/tmp/d"
    assert o.xla_dump_hlo_as_text is True
    assert o.xla_disable_hlo_passes == ("algsimp", "cse")
    assert o.xla_dump_max_hlo_modules == 2
    assert o.xla_force_host_platform_device_count == 8
    assert o.xla_dump_hlo_pass_re == ".*"
    assert o.xla_cpu_use_thunk_runtime is False


@pytest.mark.parametrize("text,value", [
    ("--xla_hlo_profile", True), ("--xla_hlo_profile=true", True),
    ("--xla_hlo_profile=1", True), ("--xla_hlo_profile=false", False),
    ("--xla_hlo_profile=0", False), ("--xla_hlo_profile --xla_hlo_profile=false", False),
])
def test_bool_flag_forms(text, value):
    assert parse_xla_flags(text).xla_hlo_profile is value


@pytest.mark.parametrize("text", ["--xla_hlo_profile=yes", "--xla_dump_max_hlo_modules=two",
                                  "--xla_dump_max_hlo_modules"])
def test_bad_values_of_known_flags_raise(text):
    with pytest.raises(InvalidArgumentError, match=text.split("=")[0].lstrip("-")):
        parse_xla_flags(text)


def test_quoted_value_with_spaces():
    o = parse_xla_flags("--xla_dump_to='/tmp/my dumps' --xla_dump_hlo_module_re=\"jit_(f|g)\"")
    assert o.xla_dump_to == "/tmp/my dumps"
    assert o.xla_dump_hlo_module_re == "jit_(f|g)"


def test_unknown_flags_warn_once_each(caplog):
    config._warned_unknown.clear()
    with caplog.at_level(logging.WARNING, logger="xlapy.config"):
        o = parse_xla_flags("--xla_gpu_autotune_level=0 --xla_dump_to=x --xla_gpu_autotune_level=0 "
                            "--xla_tpu_thing")
        parse_xla_flags("--xla_tpu_thing")
    assert o.xla_dump_to == "x"
    messages = [r.getMessage() for r in caplog.records]
    assert sum("ignored unknown XLA flag --xla_gpu_autotune_level=0" in m for m in messages) == 1
    assert sum("--xla_tpu_thing" in m for m in messages) == 1


def test_get_debug_options_reads_and_caches_env(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_max_hlo_modules=3")
    a = get_debug_options()
    assert a.xla_dump_max_hlo_modules == 3
    assert get_debug_options() is a
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_max_hlo_modules=4")
    assert get_debug_options().xla_dump_max_hlo_modules == 4
    monkeypatch.delenv("XLA_FLAGS")
    assert get_debug_options() == DebugOptions()


def test_override_context_manager_nests_and_restores(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_disable_hlo_passes=cse")
    with debug_options(xla_dump_to="/x") as o:
        assert o.xla_dump_to == "/x" and o.xla_disable_hlo_passes == ("cse",)
        with debug_options(xla_disable_hlo_passes="algsimp,dce"):
            assert get_debug_options().xla_disable_hlo_passes == ("algsimp", "dce")
            assert get_debug_options().xla_dump_to == "/x"
        assert get_debug_options().xla_disable_hlo_passes == ("cse",)
    assert get_debug_options().xla_dump_to == ""


def test_override_rejects_unknown_names_and_bad_types():
    with pytest.raises(InvalidArgumentError, match="xla_no_such_flag"):
        with debug_options(xla_no_such_flag=1):
            pass
    with pytest.raises(InvalidArgumentError, match="integer"):
        DebugOptions().replace(xla_dump_max_hlo_modules="many")
    assert DebugOptions().replace(xla_hlo_profile="true").xla_hlo_profile is True


def test_pass_enabled():
    o = DebugOptions()
    assert o.pass_enabled("algsimp")
    assert not o.replace(xla_disable_hlo_passes=("algsimp",)).pass_enabled("algsimp")
    only = o.replace(xla_enable_hlo_passes_only="dce")
    assert only.pass_enabled("dce") and not only.pass_enabled("algsimp")
    assert not o.replace(xla_disable_all_hlo_passes=True).pass_enabled("dce")


def test_dump_file_names_follow_xla(tmp_path):
    cfg = DumpConfig(DebugOptions(xla_dump_to=str(tmp_path)))
    assert cfg.enabled and cfg.as_text and not cfg.as_dot
    p = cfg.write("m1", "jit_f", "before_optimizations.txt", "HloModule jit_f")
    assert os.path.basename(p) == "module_0001.jit_f.before_optimizations.txt"
    assert open(p).read() == "HloModule jit_f"
    p2 = cfg.write("m2", "jit_g", "after_optimizations.txt", "x")
    assert os.path.basename(p2) == "module_0002.jit_g.after_optimizations.txt"
    # the same module keeps its number
    assert cfg.filename("m1", "jit_f", "after_optimizations-buffer-assignment.txt") == \
        "module_0001.jit_f.after_optimizations-buffer-assignment.txt"
    assert cfg.pass_dump_suffix("m1", "simplification", "algsimp", "dce") == \
        "0001.simplification.after_algsimp.before_dce"
    assert cfg.pass_dump_suffix("m1", "simplification", "dce", "cse") == \
        "0002.simplification.after_dce.before_cse"
    assert cfg.pass_dump_suffix("m2", "p", "a", "b").startswith("0001.")


def test_dump_creates_directory_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "a" / "b"
    cfg = DumpConfig(DebugOptions(xla_dump_to=str(target)))
    cfg.write("k", "m", "before_optimizations.txt", "text")
    assert [f.name for f in target.iterdir()] == ["module_0001.m.before_optimizations.txt"]


def test_dump_module_filter_and_limit(tmp_path):
    cfg = DumpConfig(DebugOptions(xla_dump_to=str(tmp_path), xla_dump_hlo_module_re="^jit_f",
                                  xla_dump_max_hlo_modules=1))
    assert cfg.write("a", "jit_g", "x.txt", "") is None
    assert cfg.write("b", "jit_f1", "x.txt", "") is not None
    assert cfg.write("c", "jit_f2", "x.txt", "") is None        # over the limit
    assert sorted(f.name for f in tmp_path.iterdir()) == ["module_0001.jit_f1.x.txt"]


def test_dump_to_stdout(capsys):
    cfg = DumpConfig(DebugOptions(xla_dump_to="-"))
    assert cfg.write("k", "jit_f", "before_optimizations.txt", "HloModule jit_f") == "-"
    out = capsys.readouterr().out
    assert "module_0001.jit_f.before_optimizations.txt" in out and "HloModule jit_f" in out


def test_format_flag_alone_dumps_to_stdout_and_nothing_dumps_by_default():
    assert DumpConfig(DebugOptions(xla_dump_hlo_as_dot=True)).to_stdout
    dot_only = DumpConfig(DebugOptions(xla_dump_to="/d", xla_dump_hlo_as_dot=True))
    assert dot_only.as_dot and not dot_only.as_text
    assert not DumpConfig(DebugOptions()).enabled
    assert not DumpConfig(DebugOptions(xla_dump_hlo_pass_re=".*")).enabled


def test_timestamp_prefix_and_long_names(tmp_path):
    cfg = DumpConfig(DebugOptions(xla_dump_to=str(tmp_path), xla_dump_include_timestamp=True))
    name = cfg.filename("k", "jit_f", "before_optimizations.txt")
    assert re.fullmatch(r"\d{16,}\.module_0001\.jit_f\.before_optimizations\.txt", name)
    long = cfg.filename("k2", "m" * 300, "after_optimizations.txt")
    assert re.fullmatch(r"\d+\.module_0002\.after_optimizations\.txt", long)


def test_pass_re_matching():
    cfg = DumpConfig(DebugOptions(xla_dump_to="/d", xla_dump_hlo_pass_re="alg|cse"))
    assert cfg.should_dump_pass("algsimp") and cfg.should_dump_pass("cse")
    assert not cfg.should_dump_pass("dce")
    with pytest.raises(InvalidArgumentError, match="xla_dump_hlo_pass_re"):
        DumpConfig(DebugOptions(xla_dump_to="/d", xla_dump_hlo_pass_re="("))
