"""``torch.compile(model, backend="xlapy")``: forward and training-step parity with eager
PyTorch, graph breaks and fallbacks, shape specialization, the entry point."""
from __future__ import annotations

import copy
import logging
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from xlapy.interop import torch_ops  # noqa: E402
from xlapy.interop.torch_backend import unsupported_ops, xlapy_backend  # noqa: E402

LOGGER = "xlapy.interop.torch"
RTOL, ATOL = 1e-4, 1e-5


class CNN(nn.Module):
    """The CIFAR-10-style CNN: conv/relu/maxpool twice, then a linear classifier."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


class Gathers(nn.Module):
    """view, permute, index_select, scatter_add, layer_norm, softmax, cross_entropy."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Parameter(torch.randn(20, 8))
        self.ln = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, idx, x, slots, target):
        e = torch.index_select(self.emb, 0, idx)                  # (6, 8)
        y = self.ln(e.view(2, 3, 8).permute(1, 0, 2) + x)         # (3, 2, 8)
        flat = y.reshape(6, 8)
        pooled = torch.zeros(4, 8).scatter_add(0, slots, flat)    # (4, 8)
        probs = self.fc(pooled).softmax(-1)
        return F.cross_entropy(self.fc(flat), target) + (probs * probs).sum()


class Recurrent(nn.Module):
    """An LSTM (Dynamo runs it with graph breaks) between compiled linear layers."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(6, 8)
        self.lstm = nn.LSTM(8, 8, batch_first=True)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h, _ = self.lstm(torch.tanh(self.inp(x)))
        return self.out(h[:, -1])


def _loss(out):
    return out if out.ndim == 0 else (out * out).mean()


def _train_step_parity(model, args, steps=2):
    """Forward outputs, gradients and parameters after SGD steps match eager PyTorch."""
    torch.manual_seed(0)
    eager = model
    compiled_model = copy.deepcopy(model)
    compiled = torch.compile(compiled_model, backend=xlapy_backend)
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(compiled_model.parameters(), lr=0.1)
    for _ in range(steps):
        out_e, out_c = eager(*args), compiled(*args)
        torch.testing.assert_close(out_c, out_e, rtol=RTOL, atol=ATOL)
        opt_e.zero_grad()
        opt_c.zero_grad()
        _loss(out_e).backward()
        _loss(out_c).backward()
        for (name, pe), pc in zip(eager.named_parameters(), compiled_model.parameters()):
            torch.testing.assert_close(pc.grad, pe.grad, rtol=RTOL, atol=ATOL, msg=name)
        opt_e.step()
        opt_c.step()
    for pe, pc in zip(eager.parameters(), compiled_model.parameters()):
        torch.testing.assert_close(pc, pe, rtol=RTOL, atol=ATOL)
    for (name, be), bc in zip(eager.named_buffers(), compiled_model.buffers()):
        torch.testing.assert_close(bc, be, rtol=RTOL, atol=ATOL, msg=name)   # running stats


def _fell_back(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and "runs in PyTorch" in r.getMessage()]


@pytest.fixture(autouse=True)
def _fresh_dynamo(caplog):
    torch._dynamo.reset()
    caplog.set_level(logging.INFO, logger=LOGGER)
    yield
    torch._dynamo.reset()


def test_mlp_training_parity(caplog):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 4))
    _train_step_parity(model, (torch.randn(5, 12),))
    assert not _fell_back(caplog)


def test_cnn_training_parity(caplog):
    torch.manual_seed(2)
    _train_step_parity(CNN(), (torch.randn(2, 3, 16, 16),))
    assert not _fell_back(caplog)


@pytest.mark.slow
def test_seed_cifar_cnn_training_parity(caplog):
    torch.manual_seed(15)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from torch_backend import CifarCNN      # the model benchmarks/torch_backend.py times
    _train_step_parity(CifarCNN(), (torch.randn(2, 3, 32, 32),), steps=1)
    assert not _fell_back(caplog)


@pytest.mark.slow
def test_transformer_encoder_layer_parity(caplog):
    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    _train_step_parity(layer, (torch.randn(2, 5, 16),), steps=1)
    assert not _fell_back(caplog)


class MaskedEncoder(nn.Module):
    """A pre-norm GELU encoder layer with a causal mask and a key padding mask."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                                norm_first=True, activation="gelu")

    def forward(self, x, pad):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.layer(x, src_mask=mask, src_key_padding_mask=pad)


@pytest.mark.slow
def test_masked_transformer_encoder_layer_parity(caplog):
    torch.manual_seed(16)
    pad = torch.zeros(2, 5)
    pad[1, 3:] = float("-inf")             # the second sequence's last two keys padded
    _train_step_parity(MaskedEncoder(), (torch.randn(2, 5, 16), pad), steps=1)
    assert not _fell_back(caplog)


def test_gather_scatter_norm_softmax_cross_entropy_parity(caplog):
    torch.manual_seed(4)
    slots = torch.tensor([0, 1, 2, 3, 0, 1]).view(6, 1).expand(6, 8).contiguous()
    args = (torch.tensor([1, 3, 5, 7, 9, 11]), torch.randn(3, 2, 8), slots,
            torch.tensor([0, 1, 2, 3, 4, 0]))
    _train_step_parity(Gathers(), args)
    assert not _fell_back(caplog)


def test_lstm_graph_break_runs_in_pytorch():
    """By default Dynamo does not capture an LSTM: a graph break, run by PyTorch."""
    torch.manual_seed(5)
    _train_step_parity(Recurrent(), (torch.randn(2, 4, 6),), steps=1)


@pytest.mark.slow
def test_lstm_captured_with_allow_rnn_compiles_whole(caplog):
    """With Dynamo's allow_rnn the LSTM is decomposed to core ATen and compiled by xlapy."""
    torch.manual_seed(5)
    with torch._dynamo.config.patch(allow_rnn=True):
        _train_step_parity(Recurrent(), (torch.randn(2, 4, 6),), steps=1)
    assert not _fell_back(caplog)


def test_max_pool_indices_match_pytorch():
    def f(x):
        return F.max_pool2d(x, 3, 2, 1, return_indices=True)
    x = torch.randn(2, 3, 9, 7)
    x[0, 0, :3, :3] = 1.0          # ties: the first maximum wins, as in PyTorch
    out, idx = torch.compile(f, backend=xlapy_backend)(x)
    ref, ref_idx = f(x)
    torch.testing.assert_close(out, ref)
    assert idx.dtype == torch.int64 and torch.equal(idx, ref_idx)


@pytest.mark.parametrize("kernel,stride,padding,hw", [
    (2, 2, 0, (13, 13)), (3, 2, 1, (9, 7)), (3, 1, 1, (8, 8)), ((2, 3), (1, 2), (1, 1), (7, 9))])
def test_max_pool_values_indices_and_gradients_match_pytorch(kernel, stride, padding, hw):
    """Tiled (stride = kernel) and overlapping windows, ties, zeros and a NaN: the same
    values and indices as PyTorch, and the gradient lands where PyTorch puts it."""
    torch._dynamo.reset()

    def f(x):
        out, idx = F.max_pool2d(x, kernel, stride, padding, return_indices=True)
        return out, idx, (out * torch.arange(out.numel()).reshape(out.shape)).sum()
    x = torch.randn(2, 3, *hw)
    x[0, 0, :3, :3] = 1.0
    x[1, 1, :4, :4] = 0.0
    x[1, 2, 1, 1] = float("nan")
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    out, idx, loss = torch.compile(f, backend=xlapy_backend)(xa)
    ref, ref_idx, ref_loss = f(xb)
    torch.testing.assert_close(out, ref, equal_nan=True)
    assert torch.equal(idx, ref_idx)
    loss.backward()
    ref_loss.backward()
    torch.testing.assert_close(xa.grad, xb.grad)


def test_saved_inputs_views_and_aliases_are_not_copied():
    """Outputs that are graph inputs, views of them or aliases of another output come
    from PyTorch views, not from copies made by the compiled program."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from xlapy.interop.torch_backend import compile_graph
    aten = torch.ops.aten

    def f(x, w):
        y = aten.relu.default(aten.mm.default(x, aten.permute.default(w, [1, 0])))
        wt = aten.permute.default(w, [1, 0])
        return y, aten.alias.default(y), wt, x, y, aten.view.default(y, [-1])
    x, w = torch.randn(4, 3), torch.randn(5, 3)
    fn = compile_graph(make_fx(f, tracing_mode="fake")(x, w), [x, w])
    y, y_alias, wt, x_out, y_again, y_flat = fn([x, w])
    assert len(fn.graph_function.plan.computed) == 1
    assert wt.data_ptr() == w.data_ptr() and torch.equal(wt, w.t())
    assert x_out is x and y_again is y and y_alias.data_ptr() == y.data_ptr()
    assert y_flat.data_ptr() == y.data_ptr() and torch.equal(y_flat, y.reshape(-1))
    torch.testing.assert_close(y, f(x, w)[0])


def test_unsupported_op_falls_back_with_one_info_line(caplog):
    def f(x):
        return torch.special.bessel_j0(x) + 1.0
    x = torch.rand(5)
    out = torch.compile(f, backend=xlapy_backend)(x)
    torch.testing.assert_close(out, f(x))
    lines = _fell_back(caplog)
    assert len(lines) == 1 and "bessel_j0" in lines[0]


def test_float64_runs_in_pytorch(caplog):
    def f(x):
        return (x * 3).sin()
    x = torch.rand(4, dtype=torch.float64)
    out = torch.compile(f, backend=xlapy_backend)(x)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, f(x), rtol=0, atol=0)
    assert any("float64" in line for line in _fell_back(caplog))


def test_shapes_are_specialized_per_call(caplog):
    def f(x, w):
        return torch.relu(x @ w).sum(0)
    cf = torch.compile(f, backend=xlapy_backend)
    w = torch.randn(4, 3)
    for n in (2, 5, 9):
        x = torch.randn(n, 4)
        torch.testing.assert_close(cf(x, w), f(x, w), rtol=RTOL, atol=ATOL)
    assert not _fell_back(caplog)    # symbolic sizes from Dynamo become static, per shape


def test_dynamic_true_training_specializes_each_shape(caplog):
    torch.manual_seed(11)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend=xlapy_backend, dynamic=True)
    for n in (3, 5):
        x = torch.randn(n, 4)
        out_c, out_e = compiled(x), eager(x)
        torch.testing.assert_close(out_c, out_e, rtol=RTOL, atol=ATOL)
        _loss(out_c).backward()
        _loss(out_e).backward()
        for pc, pe in zip(model.parameters(), eager.parameters()):
            torch.testing.assert_close(pc.grad, pe.grad, rtol=RTOL, atol=ATOL)
    assert not _fell_back(caplog)


def test_integer_and_bool_outputs_keep_pytorch_dtypes():
    def f(x):
        return x.argmax(1), x > 0, (x * 2).to(torch.int64)
    x = torch.randn(3, 4)
    got, want = torch.compile(f, backend=xlapy_backend)(x), f(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g, w)


def test_arguments_without_a_lowering_fall_back_to_pytorch(caplog):
    """max_pool2d with ceil_mode is not lowered: that graph runs in PyTorch (forward and
    backward) with the same results."""
    torch.manual_seed(7)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.MaxPool2d(2, ceil_mode=True))
    _train_step_parity(model, (torch.randn(1, 2, 8, 8),), steps=1)
    lines = _fell_back(caplog)
    assert lines and all("ceil_mode" in line for line in lines)
    with pytest.raises(torch_ops.Unsupported):
        torch_ops.LOWERINGS["aten.max_pool2d_with_indices.default"](
            torch.zeros(1, 1, 4, 4), [2, 2], [2, 2], [0, 0], [1, 1], True)


@pytest.mark.parametrize("groups,stride,padding,output_padding,dilation",
                         [(1, 2, 1, 1, 1), (2, 1, 0, 0, 2), (1, 3, 2, 2, 1)])
def test_transposed_convolution_parity(caplog, groups, stride, padding, output_padding,
                                       dilation):
    torch.manual_seed(12)
    model = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=stride, padding=padding,
                                             output_padding=output_padding, groups=groups,
                                             dilation=dilation), nn.ReLU())
    _train_step_parity(model, (torch.randn(2, 4, 5, 6),), steps=1)
    assert not _fell_back(caplog)


def test_unsupported_ops_lists_the_missing_ones():
    gm = torch.fx.symbolic_trace(lambda x: torch.special.bessel_j0(x))
    assert unsupported_ops(gm)


def test_entry_point_registers_backend_name(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parents[1]
    text = (root / "pyproject.toml").read_text()
    assert '[project.entry-points.torch_dynamo_backends]' in text
    assert 'xlapy = "xlapy.interop.torch_backend:xlapy_backend"' in text
    from importlib import metadata
    if not any(ep.name == "xlapy" for ep in metadata.entry_points(group="torch_dynamo_backends")):
        # this checkout is not the installed one: install its entry point metadata
        dist = tmp_path / "xlapy_entry-0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: xlapy-entry\nVersion: 0\n")
        (dist / "entry_points.txt").write_text(
            "[torch_dynamo_backends]\nxlapy = xlapy.interop.torch_backend:xlapy_backend\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        sys.modules.pop("xlapy_entry", None)
    from torch._dynamo.backends import registry
    registry._lazy_import.cache_clear() if hasattr(registry._lazy_import, "cache_clear") else None
    registry._discover_entrypoint_backends.cache_clear()
    fn = registry.lookup_backend("xlapy")
    x = torch.randn(3)
    torch.testing.assert_close(torch.compile(lambda t: t * 2 + 1, backend="xlapy")(x), x * 2 + 1)
    assert fn is not None


def test_wrong_dtypes_raise_pytorchs_error_at_the_users_line():
    def f(a, b):
        return a @ b                                   # int64 @ float32
    with pytest.raises(Exception) as info:
        torch.compile(f, backend=xlapy_backend)(torch.ones(2, 2, dtype=torch.int64),
                                                torch.ones(2, 2))
    assert "dtype" in str(info.value) or "expected" in str(info.value).lower()
    assert "return a @ b" in str(info.value) or any(
        "test_torch_compile.py" in str(tb.path) for tb in info.traceback)


@pytest.mark.slow
def test_example_trains_with_the_same_losses():
    import os
    import subprocess
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run([sys.executable, str(root / "examples" / "torch_compile.py"),
                           "--steps", "2", "--batch-size", "8"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "step 1: loss xlapy" in proc.stdout
    assert "largest relative loss difference" in proc.stdout


class NormPoolEmbed(nn.Module):
    """batch norm (training and eval), avg pool, embedding, gelu, leaky_relu, var."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.emb = nn.Embedding(10, 4)
        self.fc = nn.Linear(4, 3)

    def forward(self, x, i):
        y = F.avg_pool2d(self.bn(self.conv(x)), 2, 1, 1)
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        z = F.gelu(self.fc(y + self.emb(i))) + F.gelu(self.fc(y), approximate="tanh")
        return z.sum() + F.leaky_relu(y).mean() + F.silu(y).var()


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_pool_embedding_parity(caplog, training):
    torch.manual_seed(6)
    model = NormPoolEmbed().train(training)
    args = (torch.randn(2, 3, 8, 8), torch.tensor([1, 2]))
    _train_step_parity(model, args)       # running statistics compared too
    assert not _fell_back(caplog)


def test_inference_under_no_grad(caplog):
    torch.manual_seed(8)
    model = CNN().eval()
    x = torch.randn(3, 3, 16, 16)
    compiled = torch.compile(model, backend=xlapy_backend)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)
    assert not _fell_back(caplog)


def test_dropout_randomness_stays_pytorchs(caplog):
    """Random ops have no lowering: the graph runs in PyTorch and draws the same numbers."""
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)).train()
    x = torch.randn(4, 8)
    compiled = torch.compile(model, backend=xlapy_backend)
    torch.manual_seed(9)
    got = compiled(x)
    torch.manual_seed(9)
    torch.testing.assert_close(got, model(x))
    assert _fell_back(caplog)


class WithSpecialOp(nn.Module):
    """Linear layers around an op xlapy has no lowering for (bessel_j0)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 6), nn.Linear(6, 3)

    def forward(self, x):
        h = torch.tanh(self.a(x)) * 2.0
        return self.b(torch.special.bessel_j0(h) + h)


def test_unlowered_op_splits_graph_into_compiled_pieces(caplog):
    torch.manual_seed(10)
    _train_step_parity(WithSpecialOp(), (torch.randn(4, 6),))
    lines = _fell_back(caplog)
    assert lines and all("bessel_j0" in line for line in lines)
    assert any("piece(s) compiled by xlapy" in line for line in lines)


def _many_ops(x, y, i):
    p = x.abs() + 0.5
    outs = [p.exp(), p.log(), p.sqrt(), p.rsqrt(), x.sin(), x.cos(), torch.erf(x), x.sign(),
            x.floor(), x.ceil(), x.trunc(), p.reciprocal(), torch.sigmoid(x),
            x.clamp(-0.5, 0.5), p.pow(1.5), torch.remainder(x, 0.7), torch.fmod(x, 0.7),
            torch.maximum(x, y), torch.minimum(x, y), torch.atan2(x, y),
            torch.where(x > y, x, y), (x > 0) & (y < 0), ~(x > 0) | (y > 0),
            x.amax(1), x.amin(0, keepdim=True), p.prod(1), x.argmax(1), x.max(1)[0],
            x.max(1)[1], (x > 0).any(1), (x > -5).all(), torch.cat([x, y], 1),
            torch.split(x, [2, 4], 1)[1], x.flip(0), x.repeat(2, 1),
            F.pad(x, (1, 2, 0, 1), value=3.0), x[:, 1:5:2], x[1], x[i], x.index_put(
                (i,), torch.ones(3, 6), accumulate=True),
            torch.gather(x, 1, i.view(3, 1).expand(3, 2)),
            torch.zeros(4, 6).scatter(0, i.view(3, 1).expand(3, 6), y[:3]),
            x[:, :1].expand(4, 3), x.unsqueeze(1).squeeze(1), torch.arange(2, 11, 3),
            torch.full((2, 2), 7.0), x.cumsum(1), x.mean(), x.var(1), torch.div(x, 0.3,
            rounding_mode="floor"), torch.div(x, 0.3, rounding_mode="trunc"), p.log1p(),
            x.expm1(), p.log2(), torch.sort(x, 1)[0], torch.sort(x, 1, descending=True)[1],
            torch.topk(x, 2, 1)[0], torch.topk(x, 2, 0, largest=False)[1], x.tanh(),
            F.hardtanh(x * 3), F.leaky_relu(x, 0.2), F.softmax(x, 0), F.log_softmax(x, 1)]
    return outs


def test_op_table_forward_parity(caplog):
    """One graph exercising many lowerings, each result compared with PyTorch's."""
    torch.manual_seed(13)
    x, y, i = torch.randn(4, 6), torch.randn(4, 6), torch.tensor([2, 0, 3])
    got = torch.compile(_many_ops, backend=xlapy_backend)(x, y, i)
    want = _many_ops(x, y, i)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, k
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL, msg=f"output {k}")
    assert not _fell_back(caplog)


def test_options_pick_xlapy_backend_and_reject_unknown(caplog):
    torch.manual_seed(14)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = torch.randn(2, 3)
    compiled = torch.compile(model, backend=xlapy_backend, options={"backend": "interpreter"})
    torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)
    assert not _fell_back(caplog)
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:      # Dynamo wraps the backend's error
        torch.compile(model, backend=xlapy_backend, options={"fast": True})(x)
    assert "InvalidArgumentError" in str(info.value)
    assert "unknown options ['fast']" in str(info.value)


def test_views_of_inputs_stay_views_and_input_mutation_is_applied():
    def f(x, y):
        return x.t(), x.view(-1), y * 2, y[1:]
    x, y = torch.randn(3, 4), torch.randn(4, requires_grad=True)
    a, b, c, d = torch.compile(f, backend=xlapy_backend)(x, y)
    assert a.data_ptr() == x.data_ptr() and b.data_ptr() == x.data_ptr()
    x.add_(1)
    assert torch.equal(a, x.t())                       # still a view of x
    (c.sum() + d.sum()).backward()
    torch.testing.assert_close(y.grad, torch.tensor([2.0, 3.0, 3.0, 3.0]))

    def g(z):
        z.mul_(2)
        return z + 1
    z = torch.ones(3)
    out = torch.compile(g, backend=xlapy_backend)(z)
    assert torch.equal(z, torch.full((3,), 2.0)) and torch.equal(out, torch.full((3,), 3.0))


def test_int64_arithmetic_is_left_to_pytorch(caplog):
    """An int64 sum beyond 2**31 would overflow in 32 bits: such ops run in PyTorch."""
    def f(x, i):
        return (i * 3).sum(), torch.relu(x).sum()
    x, i = torch.randn(4), torch.full((4,), 2 ** 30, dtype=torch.int64)
    got, want = torch.compile(f, backend=xlapy_backend)(x, i), f(x, i)
    assert got[0].item() == want[0].item() == 3 * 2 ** 32
    torch.testing.assert_close(got[1], want[1])
    assert any("int64 arithmetic" in line for line in _fell_back(caplog))
