"""HLO texts of the programs the GPU tests (``test_gpu*.py``) and the prepared GPU check
(``benchmarks/gpu_check*.py``) run: ``W1`` ``sum(x + y*z)``, row softmax and layernorm, one
convolution, and the ``add``/``mx`` reducers they and the tests' own programs use;
:func:`gpu_kernels`, the kernels a GPU backend emits for a program, and
:class:`ColumnMajorGemm`, a NumPy model of cuBLAS' gemm on simulator memory."""
from __future__ import annotations

ADD = "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"
MAX = "mx {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] maximum(a, b)\n}\n"


def w1_text(n: int) -> str:
    return (f"HloModule w1\n{ADD}ENTRY e {{\n x = f32[{n}] parameter(0)\n"
            f" y = f32[{n}] parameter(1)\n z = f32[{n}] parameter(2)\n"
            f" m = f32[{n}] multiply(y, z)\n s = f32[{n}] add(x, m)\n c = f32[] constant(0)\n"
            f" ROOT r = f32[] reduce(s, c), dimensions={{0}}, to_apply=add\n}}\n")


def softmax_text(r: int, c: int) -> str:
    return (f"HloModule softmax\n{ADD}{MAX}ENTRY e {{\n x = f32[{r},{c}] parameter(0)\n"
            f" ninf = f32[] constant(-inf)\n m = f32[{r}] reduce(x, ninf), dimensions={{1}}, "
            f"to_apply=mx\n mb = f32[{r},{c}] broadcast(m), dimensions={{0}}\n"
            f" d = f32[{r},{c}] subtract(x, mb)\n e = f32[{r},{c}] exponential(d)\n"
            f" z = f32[] constant(0)\n s = f32[{r}] reduce(e, z), dimensions={{1}}, "
            f"to_apply=add\n sb = f32[{r},{c}] broadcast(s), dimensions={{0}}\n"
            f" ROOT o = f32[{r},{c}] divide(e, sb)\n}}\n")


def layernorm_text(r: int, c: int) -> str:
    return (f"HloModule layernorm\n{ADD}ENTRY e {{\n x = f32[{r},{c}] parameter(0)\n"
            f" g = f32[{c}] parameter(1)\n b = f32[{c}] parameter(2)\n z = f32[] constant(0)\n"
            f" n = f32[] constant({c})\n eps = f32[] constant(1e-5)\n"
            f" s = f32[{r}] reduce(x, z), dimensions={{1}}, to_apply=add\n"
            f" nb = f32[{r}] broadcast(n), dimensions={{}}\n mean = f32[{r}] divide(s, nb)\n"
            f" mb = f32[{r},{c}] broadcast(mean), dimensions={{0}}\n"
            f" xc = f32[{r},{c}] subtract(x, mb)\n sq = f32[{r},{c}] multiply(xc, xc)\n"
            f" v = f32[{r}] reduce(sq, z), dimensions={{1}}, to_apply=add\n"
            f" var = f32[{r}] divide(v, nb)\n eb = f32[{r}] broadcast(eps), dimensions={{}}\n"
            f" ve = f32[{r}] add(var, eb)\n rs = f32[{r}] rsqrt(ve)\n"
            f" rb = f32[{r},{c}] broadcast(rs), dimensions={{0}}\n"
            f" y = f32[{r},{c}] multiply(xc, rb)\n"
            f" gb = f32[{r},{c}] broadcast(g), dimensions={{1}}\n bb = f32[{r},{c}] broadcast(b), "
            f"dimensions={{1}}\n yg = f32[{r},{c}] multiply(y, gb)\n"
            f" ROOT o = f32[{r},{c}] add(yg, bb)\n}}\n")


def conv_text(x, w, window: str, labels: str, extra: str = "", dt: str = "f32",
              out_dt: str | None = None) -> str:
    """A module of one convolution of ``dt[x]`` and ``dt[w]`` (result shape inferred):
    ``window`` as in HLO without braces, ``extra`` e.g. ``", feature_group_count=2"``."""
    from xlapy.hlo import types as T
    from xlapy.hlo.attrs import ConvDimensionNumbers
    from xlapy.hlo.lexer import Scanner, read_window
    from xlapy.hlo.shape import Shape
    from xlapy.hlo.shape_inference import infer_shape
    attrs = {"dim_labels": ConvDimensionNumbers.from_string(labels),
             "window": read_window(Scanner("{" + window + "}"))}
    for kv in extra.split(","):
        if "=" in kv:
            k, v = kv.strip().split("=")
            attrs[k] = int(v)
    et = T.element_type(dt)
    y = infer_shape("convolution", [Shape(et, tuple(x)), Shape(et, tuple(w))], attrs)
    d = lambda v: ",".join(map(str, v))     # noqa: E731
    return (f"HloModule c\nENTRY e {{\n x = {dt}[{d(x)}] parameter(0)\n"
            f" w = {dt}[{d(w)}] parameter(1)\n"
            f" ROOT c = {out_dt or dt}[{d(y.dims)}] convolution(x, w), "
            f"window={{{window}}}, dim_labels={labels}{extra}\n}}\n")


def gpu_kernels(backend, text: str) -> dict:
    """``instruction name -> GpuKernel`` that ``backend`` emits for the module ``text``."""
    from xlapy.config import DumpConfig, get_debug_options
    from xlapy.hlo import parse_module
    em = backend._emit(parse_module(text), get_debug_options(),
                       DumpConfig(get_debug_options()), need_device=False)
    return {k.instruction.name: k for k in em.kernels.values()}


class ColumnMajorGemm:
    """cuBLAS column-major gemm semantics on host memory (the simulator's device memory)."""

    def gemm(self, dt, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, batch=1, sa=0, sb=0, sc=0):
        import ctypes

        import numpy as np
        np_t = np.float32 if dt == "f32" else np.float64
        sz = np.dtype(np_t).itemsize

        def mat(addr, ld, rows, cols, trans):
            # column-major stored op(X): X is (rows x cols) if not trans else (cols x rows)
            r, cc = (rows, cols) if not trans else (cols, rows)
            buf = (ctypes.c_char * (ld * cc * sz)).from_address(addr)
            arr = np.frombuffer(buf, np_t).reshape(cc, ld).T[:r, :]
            return arr if not trans else arr.T
        for i in range(batch):
            A = mat(a + i * sa * sz, lda, m, k, ta)
            B = mat(b + i * sb * sz, ldb, k, n, tb)
            buf = (ctypes.c_char * (ldc * n * sz)).from_address(c + i * sc * sz)
            out = np.frombuffer(buf, np_t).reshape(n, ldc).T
            out[:m, :] = A @ B
