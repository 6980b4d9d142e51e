"""NumPy (float64) reference implementations of Keras layers, for tests/test_keras_*.py."""
from __future__ import annotations

import numpy as np


def same_pads(n: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """TensorFlow's 'SAME' padding: output ceil(n / s), the odd pixel at the end."""
    span = (k - 1) * d + 1
    out = -(-n // s)
    total = max((out - 1) * s + span - n, 0)
    return total // 2, total - total // 2


def conv2d(x, k, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """NHWC input, HWIO kernel; cross-correlation like Keras."""
    n, h, w, c = x.shape
    kh, kw, ci, co = k.shape
    (sh, sw), (dh, dw) = strides, dilation
    if padding == "same":
        ph, pw = same_pads(h, kh, sh, dh), same_pads(w, kw, sw, dw)
    else:
        ph, pw = (0, 0), (0, 0)
    xp = np.pad(x, ((0, 0), ph, pw, (0, 0)))
    oh = (xp.shape[1] - ((kh - 1) * dh + 1)) // sh + 1
    ow = (xp.shape[2] - ((kw - 1) * dw + 1)) // sw + 1
    out = np.zeros((n, oh, ow, co))
    for a in range(kh):
        for b in range(kw):
            patch = xp[:, a * dh: a * dh + (oh - 1) * sh + 1: sh,
                       b * dw: b * dw + (ow - 1) * sw + 1: sw, :]
            out += np.einsum("nhwc,co->nhwo", patch, k[a, b])
    return out


def pool2d(x, size, strides, padding, kind):
    """Max or average pooling over NHWC; 'same' averages count only real inputs."""
    n, h, w, c = x.shape
    (ph_, pw_), (sh, sw) = size, strides
    if padding == "same":
        ph, pw = same_pads(h, ph_, sh), same_pads(w, pw_, sw)
    else:
        ph, pw = (0, 0), (0, 0)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), ph, pw, (0, 0)), constant_values=fill)
    ones = np.pad(np.ones((h, w)), (ph, pw))
    oh = (xp.shape[1] - ph_) // sh + 1
    ow = (xp.shape[2] - pw_) // sw + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, i * sh:i * sh + ph_, j * sw:j * sw + pw_, :]
            if kind == "max":
                out[:, i, j] = win.max(axis=(1, 2))
            else:
                count = ones[i * sh:i * sh + ph_, j * sw:j * sw + pw_].sum()
                out[:, i, j] = win.sum(axis=(1, 2)) / count
    return out


def batch_norm(x, gamma, beta, mean, var, eps):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def layer_norm(x, gamma, beta, eps, axis=-1):
    m = x.mean(axis=axis, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axis, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * gamma + beta


def numerical_gradient(f, arrays, index, eps=1e-6):
    """d f(*arrays) / d arrays[index] by central differences (float64)."""
    arrays = [np.array(a, np.float64) for a in arrays]
    base = arrays[index]
    grad = np.zeros_like(base)
    for pos in np.ndindex(base.shape):
        old = base[pos]
        base[pos] = old + eps
        hi = f(*arrays)
        base[pos] = old - eps
        lo = f(*arrays)
        base[pos] = old
        grad[pos] = (hi - lo) / (2 * eps)
    return grad
