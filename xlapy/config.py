"""XLA's debug options (``XLA_FLAGS``) and the dump-file helpers.

``XLA_FLAGS`` holds space-separated flags with XLA's names and syntax:
``--name=value``; a boolean flag may be given bare (``--name``, meaning true)
or as ``--name=true`` / ``--name=false`` (``1``/``0`` are accepted too).
Values may be quoted (``--xla_dump_to='my dir'``) and list flags take
comma-separated values (``--xla_disable_hlo_passes=algsimp,cse``). XLA's own
parser has no ``--noname`` form, so neither has this one.

Users share ``XLA_FLAGS`` with the real XLA (JAX, TensorFlow), so flags this
project does not know are ignored with one logged warning each; a known flag
with a value of the wrong type raises :class:`InvalidArgumentError`.

:func:`get_debug_options` returns the options for the current environment
(parsed once per ``XLA_FLAGS`` value); :func:`debug_options` overrides fields
for a ``with`` block. :class:`DumpConfig` computes XLA's dump file names
(``xla/service/dump.cc``)::

    [<timestamp>.]module_0001.jit_f.before_optimizations.txt
    module_0001.jit_f.after_optimizations.txt / .dot / .html
    module_0001.jit_f.after_optimizations-buffer-assignment.txt
    module_0001.jit_f.0003.simplification.after_algsimp.before_dce.txt

Module numbers are given out in order of first dump (``module_0001`` is the
first module this process dumped), so file names are stable between runs.
This module is layer 0: it imports nothing from xlapy but :mod:`xlapy.errors`.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import os
import re
import shlex
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator

from .errors import InvalidArgumentError

log = logging.getLogger("xlapy.config")


@dataclass(frozen=True)
class DebugOptions:
    """XLA ``DebugOptions`` fields this project reads, with XLA's defaults.

    Field names are the flag names without ``--``. Tuple fields are
    comma-separated lists in ``XLA_FLAGS``.
    """

    # --- dumping (xla/service/dump.cc)
    xla_dump_to: str = ""
    xla_dump_hlo_as_text: bool = False
    xla_dump_hlo_as_long_text: bool = True
    xla_dump_hlo_as_proto: bool = False
    xla_dump_hlo_as_dot: bool = False
    xla_dump_hlo_as_html: bool = False
    xla_dump_hlo_as_url: bool = False
    xla_dump_hlo_module_re: str = ""
    xla_dump_hlo_pass_re: str = ""
    xla_dump_emitter_re: str = ""
    xla_dump_large_constants: bool = False
    xla_dump_include_timestamp: bool = False
    xla_dump_max_hlo_modules: int = -1
    xla_dump_module_metadata: bool = False
    xla_dump_hlo_snapshots: bool = False
    xla_enable_dumping: bool = True
    # --- pass control and general (7.2)
    xla_disable_hlo_passes: tuple[str, ...] = ()
    xla_enable_hlo_passes_only: tuple[str, ...] = ()
    xla_disable_all_hlo_passes: bool = False
    xla_backend_optimization_level: int = 3
    xla_llvm_disable_expensive_passes: bool = False
    xla_backend_extra_options: str = ""
    xla_embed_ir_in_executable: bool = False
    xla_hlo_profile: bool = False
    xla_eliminate_hlo_implicit_broadcast: bool = True
    xla_allow_excess_precision: bool = True
    xla_force_host_platform_device_count: int = 1
    xla_debug_buffer_assignment_show_max: int = 15
    xla_reduce_window_rewrite_base_length: int = 16
    xla_detailed_logging: bool = True
    # --- CPU (7.3)
    xla_cpu_enable_fast_math: bool = False
    xla_cpu_fast_math_honor_nans: bool = True
    xla_cpu_fast_math_honor_infs: bool = True
    xla_cpu_fast_math_honor_division: bool = True
    xla_cpu_fast_math_honor_functions: bool = True
    xla_cpu_enable_fast_min_max: bool = True
    xla_cpu_use_thunk_runtime: bool = True          # accepted, no effect
    xla_cpu_use_fusion_emitters: bool = True
    xla_cpu_multi_thread_eigen: bool = True
    xla_cpu_parallel_codegen_split_count: int = 32
    xla_cpu_prefer_vector_width: int = 256
    xla_cpu_max_isa: str = ""
    xla_cpu_strict_dot_conv_math: bool = False
    # seconds a collective waits for its participants before failing (XLA's default is 40;
    # xlapy's is 60)
    xla_cpu_collective_call_terminate_timeout_seconds: int = 60
    # bytes an executable may hold while it runs (parameters, constants, outputs, live
    # temps); over it the rematerialization pass recomputes values (0: no limit). XLA:CPU
    # has no such flag; XLA:GPU derives the limit from the device's memory
    xla_cpu_memory_limit_bytes: int = 0
    # xlapy's own: recompute elementwise values live across the peak (an activation kept
    # for the backward pass) where that lowers the peak without extending other values
    xla_cpu_elementwise_rematerialization: bool = True
    # xlapy's own: a convolution is fused with its bias (+ relu) into a kOutput fusion whose
    # kernel applies them as it stores its output
    xla_cpu_conv_output_fusion: bool = True

    def replace(self, **changes: Any) -> "DebugOptions":
        """A copy with some fields changed (names checked, lists given as tuples or strings)."""
        return dataclasses.replace(self, **_coerce_fields(changes))

    @property
    def disabled_passes(self) -> frozenset[str]:
        return frozenset(self.xla_disable_hlo_passes)

    def pass_enabled(self, name: str) -> bool:
        """Whether a pass (or pipeline) called ``name`` may run under these options."""
        if self.xla_disable_all_hlo_passes or name in self.xla_disable_hlo_passes:
            return False
        return not self.xla_enable_hlo_passes_only or name in self.xla_enable_hlo_passes_only


_FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(DebugOptions)}
_FIELD_TYPES: dict[str, type] = {
    name: type(f.default) for name, f in _FIELDS.items()}   # bool, int, str or tuple


def _convert(name: str, value: Any) -> Any:
    """``value`` (text from XLA_FLAGS, or a Python value) as the type of field ``name``."""
    kind = _FIELD_TYPES[name]
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise InvalidArgumentError(f"XLA flag --{name} takes true or false, got {value!r}")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            return int(str(value).strip(), 10)
        except ValueError:
            raise InvalidArgumentError(
                f"XLA flag --{name} takes an integer, got {value!r}") from None
    if kind is tuple:
        if isinstance(value, (tuple, list)):
            return tuple(str(v) for v in value)
        return tuple(v for v in str(value).split(",") if v)
    return str(value)


def _coerce_fields(changes: dict[str, Any]) -> dict[str, Any]:
    unknown = [k for k in changes if k not in _FIELDS]
    if unknown:
        raise InvalidArgumentError(f"unknown debug option(s): {', '.join(sorted(unknown))}")
    return {k: _convert(k, v) for k, v in changes.items()}


_warned_unknown: set[str] = set()


def parse_xla_flags(text: str, base: DebugOptions | None = None) -> DebugOptions:
    """Parse an ``XLA_FLAGS`` string into :class:`DebugOptions` (later flags win).

    Unknown flags (and words that are not ``--flags``) are logged once each and ignored.
    """
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise InvalidArgumentError(f"cannot split XLA_FLAGS {text!r}: {e}") from None
    changes: dict[str, Any] = {}
    for word in words:
        if not word.startswith("--"):
            _warn_unknown(word)
            continue
        name, eq, value = word[2:].partition("=")
        if name not in _FIELDS:
            _warn_unknown(word)
            continue
        if not eq:
            if _FIELD_TYPES[name] is not bool:
                raise InvalidArgumentError(f"XLA flag --{name} needs a value (--{name}=...)")
            value = "true"
        changes[name] = _convert(name, value)
    return dataclasses.replace(base or DebugOptions(), **changes)


def _warn_unknown(word: str) -> None:
    if word not in _warned_unknown:
        _warned_unknown.add(word)
        log.warning("ignored unknown XLA flag %s (not used by xlapy)", word)


_cache: dict[str, DebugOptions] = {}
_overrides: contextvars.ContextVar[tuple[dict[str, Any], ...]] = contextvars.ContextVar(
    "xlapy_debug_option_overrides", default=())


def get_debug_options() -> DebugOptions:
    """The options from ``XLA_FLAGS`` (parsed once per value) with active overrides applied."""
    text = os.environ.get("XLA_FLAGS", "")
    opts = _cache.get(text)
    if opts is None:
        opts = _cache[text] = parse_xla_flags(text)
    for changes in _overrides.get():
        opts = dataclasses.replace(opts, **changes)
    return opts


@contextlib.contextmanager
def debug_options(**overrides: Any) -> Iterator[DebugOptions]:
    """Override debug options inside a ``with`` block (nests; per thread/async context).

    >>> with debug_options(xla_disable_hlo_passes="algsimp"):
    ...     get_debug_options().pass_enabled("algsimp")
    False
    """
    changes = _coerce_fields(overrides)
    token = _overrides.set(_overrides.get() + (changes,))
    try:
        yield get_debug_options()
    finally:
        _overrides.reset(token)


# --------------------------------------------------------------------------------------------
# Dumping


_MAX_FILENAME = 255


@dataclass
class _ModuleDumpState:
    number: int
    timestamp: str
    step: int = 0


class DumpConfig:
    """Where and what to dump, from :class:`DebugOptions` (XLA's ``CanonicalDebugOptions``).

    Dumping is on when ``xla_dump_to`` is set, or when an output format flag is given
    without it (then the dump goes to stdout, as XLA does); ``--xla_dump_hlo_pass_re``
    alone dumps nothing. ``-`` means stdout. When no format is chosen, text is dumped.
    """

    def __init__(self, options: DebugOptions | None = None) -> None:
        o = options or get_debug_options()
        self.options = o
        formats = (o.xla_dump_hlo_as_text or o.xla_dump_hlo_as_dot or o.xla_dump_hlo_as_html
                   or o.xla_dump_hlo_as_proto or o.xla_dump_hlo_snapshots)
        dump_to = o.xla_dump_to
        if not dump_to and formats:
            dump_to = "-"
        self.enabled = bool(dump_to) and o.xla_enable_dumping
        self.to_stdout = dump_to == "-"
        self.directory = None if self.to_stdout or not dump_to else dump_to
        self.as_text = o.xla_dump_hlo_as_text or not formats
        self.as_dot = o.xla_dump_hlo_as_dot
        self.as_html = o.xla_dump_hlo_as_html
        self.as_proto = o.xla_dump_hlo_as_proto     # HloProto files, *.hlo.pb (not to stdout)
        self.long_text = o.xla_dump_hlo_as_long_text
        self.large_constants = o.xla_dump_large_constants
        self.include_timestamp = o.xla_dump_include_timestamp
        self.max_modules = o.xla_dump_max_hlo_modules
        self.module_re = _compile(o.xla_dump_hlo_module_re, "xla_dump_hlo_module_re")
        self.pass_re = _compile(o.xla_dump_hlo_pass_re, "xla_dump_hlo_pass_re")

    def should_dump_module(self, module_name: str) -> bool:
        """Dumping is on and the module name matches ``--xla_dump_hlo_module_re``."""
        if not self.enabled:
            return False
        return self.module_re is None or self.module_re.search(module_name) is not None

    def should_dump_pass(self, pass_name: str) -> bool:
        """``--xla_dump_hlo_pass_re`` is set and matches ``pass_name``."""
        return (self.enabled and self.pass_re is not None
                and self.pass_re.search(pass_name) is not None)

    def filename(self, module_key: Any, module_name: str, suffix: str) -> str | None:
        """XLA's file name for a dump of this module, or None beyond ``--xla_dump_max_hlo_modules``."""
        state = _module_state(module_key, self.include_timestamp, self.max_modules)
        if state is None:
            return None
        prefix = f"{state.timestamp}." if state.timestamp else ""
        name = f"{prefix}module_{state.number:04d}.{module_name}.{suffix}"
        if len(name) > _MAX_FILENAME:
            name = f"{prefix}module_{state.number:04d}.{suffix}"
        return name

    def pass_dump_suffix(self, module_key: Any, pipeline: str, after_pass: str,
                         before_pass: str) -> str:
        """``0003.<pipeline>.after_<pass>.before_<next>`` with this module's next step number."""
        state = _module_state(module_key, self.include_timestamp, self.max_modules)
        step = 0
        if state is not None:
            state.step += 1
            step = state.step
        return f"{step:04d}.{pipeline}.after_{after_pass}.before_{before_pass}"

    def write(self, module_key: Any, module_name: str, suffix: str,
              contents: str | bytes) -> str | None:
        """Dump ``contents`` (text, or bytes for a binary proto) under XLA's name for
        ``suffix``; returns the path (``"-"`` for stdout).

        Returns None when the module is filtered out or over the module limit, and for
        bytes when dumping to stdout (XLA writes protos to files only).
        """
        if not self.should_dump_module(module_name):
            return None
        name = self.filename(module_key, module_name, suffix)
        if name is None:
            return None
        if self.to_stdout or self.directory is None:
            if isinstance(contents, bytes):
                if not _BINARY_TO_STDOUT_WARNED:
                    _BINARY_TO_STDOUT_WARNED.append(True)
                    log.warning("binary dumps (%s) are written only to files: set "
                                "--xla_dump_to=DIR", suffix)
                return None
            sys.stdout.write(f"*** Begin {name} ***\n{contents}\n*** End {name} ***\n")
            sys.stdout.flush()
            return "-"
        path = os.path.join(self.directory, name)
        write_file_atomically(path, contents)
        return path


_BINARY_TO_STDOUT_WARNED: list[bool] = []


def _compile(pattern: str, flag: str) -> re.Pattern | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise InvalidArgumentError(f"--{flag}={pattern!r} is not a valid regex: {e}") from None


_dump_lock = threading.Lock()
_dump_states: dict[Any, _ModuleDumpState | None] = {}


def _module_state(key: Any, include_timestamp: bool, max_modules: int) -> _ModuleDumpState | None:
    """The dump number of a module (given out on first use); None past the module limit."""
    with _dump_lock:
        if key in _dump_states:
            return _dump_states[key]
        numbered = sum(1 for s in _dump_states.values() if s is not None)
        if 0 <= max_modules <= numbered:
            _dump_states[key] = None
            return None
        stamp = str(int(time.time() * 1e6)) if include_timestamp else ""
        state = _dump_states[key] = _ModuleDumpState(numbered + 1, stamp)
        return state


def reset_dump_numbering() -> None:
    """Forget module numbers and step counters (the next module dumped is module_0001)."""
    with _dump_lock:
        _dump_states.clear()


def write_file_atomically(path: str, contents: str | bytes) -> None:
    """Write ``contents`` (text, or bytes as they are) to ``path`` via a temporary file and
    rename (creates the directory)."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    try:
        if isinstance(contents, bytes):
            with os.fdopen(fd, "wb") as fb:
                fb.write(contents)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(contents)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------------------------
# Compile caches: trust and size bounds (read by backends/cpu/cache.py and frontend/jit_cache.py)

CACHE_SHARED_ENV = "XLAPY_CACHE_SHARED"
CACHE_MAX_BYTES_ENV = "XLAPY_CACHE_MAX_BYTES"
JIT_CACHE_PER_FUNCTION_ENV = "XLAPY_JIT_CACHE_PER_FUNCTION"
JIT_CACHE_GLOBAL_ENV = "XLAPY_JIT_CACHE_GLOBAL"
EAGER_CACHE_ENV = "XLAPY_EAGER_CACHE_SIZE"


@dataclass(frozen=True)
class CacheSettings:
    """Trust and size settings of the compile caches (``cache_settings()`` reads them).

    ``shared_directory`` (``XLAPY_CACHE_SHARED=1``): the disk cache directory is shared
    by the members of its group, so it may be group-writable and owned by another user.
    It means *every user who can write the directory is trusted to run code in this
    process*: entries must still carry a valid HMAC, made with the key file in the
    directory, which the group can read (so any member can forge entries; nobody
    else can). A world-writable directory is refused even then. Off by default: the
    directory must be owned by this user and writable by nobody else.
    ``disk_max_bytes`` (``XLAPY_CACHE_MAX_BYTES``): the disk cache's total size; the
    least recently used entries are removed when a store exceeds it, and no single
    entry larger than it is stored or read. ``jit_per_function`` /
    ``jit_global`` (``XLAPY_JIT_CACHE_PER_FUNCTION`` / ``XLAPY_JIT_CACHE_GLOBAL``):
    compiled signatures kept per jitted function and over all of them (least
    recently used evicted first). ``eager_ops`` (``XLAPY_EAGER_CACHE_SIZE``): the one-op
    executables eager operations keep (one per op, parameters and operand shapes).
    """

    shared_directory: bool = False
    disk_max_bytes: int = 1 << 30
    jit_per_function: int = 64
    jit_global: int = 512
    eager_ops: int = 512


def _env_int(name: str, default: int, minimum: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgumentError(f"{name}={text!r} is not an integer") from None
    if value < minimum:
        raise InvalidArgumentError(f"{name}={value} is below the minimum {minimum}")
    return value


def _env_switch(name: str, default: bool) -> bool:
    """An on/off variable: ``1``/``true``/``yes`` turn an off-by-default switch on,
    ``0``/``false``/``no`` an on-by-default one off; anything else leaves the default."""
    value = os.environ.get(name, "").strip().lower()
    return value not in ("0", "false", "no") if default else value in ("1", "true", "yes")


def cache_settings() -> CacheSettings:
    """The :class:`CacheSettings` of the current environment (read on every call, so a
    change of the variables applies to the next compile)."""
    default = CacheSettings()
    shared = _env_switch(CACHE_SHARED_ENV, default=False)
    return CacheSettings(
        shared_directory=shared,
        disk_max_bytes=_env_int(CACHE_MAX_BYTES_ENV, default.disk_max_bytes, 0),
        jit_per_function=_env_int(JIT_CACHE_PER_FUNCTION_ENV, default.jit_per_function, 1),
        jit_global=_env_int(JIT_CACHE_GLOBAL_ENV, default.jit_global, 1),
        eager_ops=_env_int(EAGER_CACHE_ENV, default.eager_ops, 1))


__all__ = ["DebugOptions", "DumpConfig", "debug_options", "get_debug_options",
           "parse_xla_flags", "reset_dump_numbering", "write_file_atomically"]
__all__ += ["CacheSettings", "cache_settings", "env_default_backend", "env_cache_dir",
            "env_cache_disabled", "env_llvm_helpers"]


# --------------------------------------------------------------------------------------------
# xlapy's own environment variables (every one is read here)


def env_default_backend() -> str | None:
    """``XLAPY_DEFAULT_BACKEND``: the backend eager ops and jitted functions run on (None
    when unset: ``"gpu"`` when a usable NVIDIA GPU is present, else ``"cpu"``)."""
    return os.environ.get("XLAPY_DEFAULT_BACKEND") or None


def env_cache_dir() -> str | None:
    """``XLAPY_CACHE_DIR``: the CPU backend's disk-cache folder (None when unset)."""
    return os.environ.get("XLAPY_CACHE_DIR") or None


def env_cache_disabled() -> bool:
    """``XLAPY_DISABLE_CACHE=1`` (or ``true``/``yes``) turns the disk cache off."""
    return _env_switch("XLAPY_DISABLE_CACHE", default=False)


def env_llvm_helpers() -> int | None:
    """``XLAPY_LLVM_HELPERS``: how many LLVM helper processes to use (None when unset; a
    value that is not a number is logged and means none)."""
    value = os.environ.get("XLAPY_LLVM_HELPERS", "").strip()
    if not value:
        return None
    try:
        return max(0, int(value))
    except ValueError:
        log.warning("XLAPY_LLVM_HELPERS=%r is not a number; using no helper processes", value)
        return 0


def env_cpu_openmp() -> bool:
    """``XLAPY_CPU_OPENMP=0`` (or ``false``/``no``) keeps the CPU runtime's parallel work on
    its own threads even where it may share an OpenMP runtime already in the process
    (PyTorch's: ``backends/cpu/thread_pool.py``); on by default."""
    return _env_switch("XLAPY_CPU_OPENMP", default=True)


def env_cpu_process_blas() -> bool:
    """``XLAPY_CPU_PROCESS_BLAS=0`` (or ``false``/``no``) keeps the CPU runtime's products on
    OpenBLAS even where a front end offers a BLAS already loaded into the process
    (PyTorch's MKL: ``backends/cpu/process_blas.py``); on by default."""
    return _env_switch("XLAPY_CPU_PROCESS_BLAS", default=True)


def env_cpu_native_pool() -> bool:
    """``XLAPY_CPU_NATIVE_POOL=0`` (or ``false``/``no``) runs the CPU pool's kernel jobs
    and split OpenBLAS products as Python shares, one per thread, instead of native jobs
    whose ranges the threads take from a shared counter (``backends/cpu/native_pool.py``);
    on by default."""
    return _env_switch("XLAPY_CPU_NATIVE_POOL", default=True)


def env_cpu_openblas_threads() -> bool:
    """``XLAPY_CPU_OPENBLAS_THREADS=1`` (or ``true``/``yes``) runs a large single f32/f64
    product as one OpenBLAS call that OpenBLAS threads itself on the CPU pool's threads
    (``backends/cpu/openblas_threads.py``) instead of one call per thread (f32 products
    then stay in OpenBLAS rather than the generated packed GEMM unless
    ``XLAPY_F32_GEMM=packed``); off by default (docs/performance.md has the measurements)."""
    return _env_switch("XLAPY_CPU_OPENBLAS_THREADS", default=False)


def _env_choice(name: str, choices: tuple[str, ...]) -> str:
    """Variable ``name`` (lower case, ``""`` when unset), one of ``choices`` or an
    :class:`InvalidArgumentError`."""
    value = os.environ.get(name, "").strip().lower()
    if value and value not in choices:
        raise InvalidArgumentError(f"{name}={value!r}: expected one of "
                                   f"{', '.join(choices)} or unset")
    return value


#: ``XLAPY_F32_GEMM``'s values (unset: the default choice).
F32_GEMM_CHOICES = ("packed", "openblas")


def env_f32_gemm() -> str:
    """``XLAPY_F32_GEMM``: ``packed`` sends the CPU's large f32 products to the generated
    packed GEMM (``backends/cpu/packed_gemm.py``) even where another library would take
    them, ``openblas`` keeps them in OpenBLAS; ``""`` when unset (the packed GEMM on
    AVX-512 hosts). Any other value is an :class:`InvalidArgumentError`."""
    return _env_choice("XLAPY_F32_GEMM", F32_GEMM_CHOICES)


#: ``XLAPY_BF16_DOT``'s values (unset: the kernel measured faster on this CPU).
BF16_DOT_CHOICES = ("dpbf16", "fma", "off")


def env_bf16_dot() -> str:
    """``XLAPY_BF16_DOT``: which kernel takes the CPU's bf16 dots
    (``backends/cpu/bf16_dot.py``): ``dpbf16`` the AVX512-BF16 ``vdpbf16ps`` GEMM, ``fma``
    the f32 FMA GEMM on operands widened to f32 while packing, ``off`` neither (the generic
    path: f32 copies, ``sgemm``); ``""`` when unset. Any other value is an
    :class:`InvalidArgumentError`."""
    return _env_choice("XLAPY_BF16_DOT", BF16_DOT_CHOICES)


# --------------------------------------------------------------------------------------------
# TensorFlow's auto-clustering flags (``TF_XLA_FLAGS``), for ``xlapy.tf``


@dataclass(frozen=True)
class TfXlaFlags:
    """The ``TF_XLA_FLAGS`` that drive auto-clustering (TF's names and defaults):
    ``--tf_xla_auto_jit`` (0 off, 1 on, 2 on and aggressive, -1 off even under
    ``set_jit``), ``--tf_xla_cpu_global_jit``, ``--tf_xla_min_cluster_size`` (4),
    ``--tf_xla_max_cluster_size`` (no limit), ``--tf_xla_clustering_debug``. Other flags
    are kept in ``unknown`` (TF has many xlapy does not use)."""

    auto_jit: int = 0
    cpu_global_jit: bool = False
    min_cluster_size: int = 4
    max_cluster_size: int = 2 ** 31 - 1
    clustering_debug: bool = False
    unknown: tuple[str, ...] = ()


def tf_xla_flags() -> TfXlaFlags:
    """``TF_XLA_FLAGS`` of the current environment (read on every call)."""
    fields: dict[str, Any] = {}
    unknown = []
    for item in os.environ.get("TF_XLA_FLAGS", "").split():
        name, _, value = item.lstrip("-").partition("=")
        if name in ("tf_xla_cpu_global_jit", "tf_xla_clustering_debug"):
            fields[name[7:]] = value.lower() not in ("0", "false") if value else True
        elif name in ("tf_xla_auto_jit", "tf_xla_min_cluster_size", "tf_xla_max_cluster_size"):
            if value in ("single-gpu(1)", "single-gpu(2)"):       # TF's spelled forms
                value = value[-2]
            try:
                fields[name[7:]] = int(value)
            except ValueError:
                raise InvalidArgumentError(f"TF_XLA_FLAGS: --{name}={value!r} is not an "
                                           "integer") from None
        else:
            unknown.append(item)
    return TfXlaFlags(unknown=tuple(unknown), **fields)


def tf_dump_graph_prefix() -> str | None:
    """``TF_DUMP_GRAPH_PREFIX``: where TF (and ``--tf_xla_clustering_debug``) writes graph
    dumps (None when unset)."""
    return os.environ.get("TF_DUMP_GRAPH_PREFIX") or None


__all__ += ["TfXlaFlags", "tf_xla_flags", "tf_dump_graph_prefix"]
