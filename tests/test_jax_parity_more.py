"""``xlapy.nn``, ``xlapy.random`` and ``xlapy.scipy.special`` against ``jax.nn``,
``jax.random`` and ``jax.scipy.special``, name by name (the design of
``tests/test_jax_parity_numpy.py``: a table of calls compared with JAX's recorded answers
in ``tests/data/jax_parity_more.npz``, ``test_record_is_current`` recomputing them live;
``python tests/test_jax_parity_more.py`` rewrites the record).

Random samplers are called with the same key: integer, bit-cast and exactly rounded
samplers must give JAX's bits; the float ones agree within the tolerance of the ops they
use (see ``xlapy.random``). A call's module argument is a namespace with ``nn``,
``random`` and ``special`` of one library.
"""
from __future__ import annotations

import types
from collections import defaultdict
from typing import Any, Callable

import numpy as np
import pytest

import xlapy  # noqa: E402
import xlapy.lax as xlax  # noqa: E402
import xlapy.nn as xnn  # noqa: E402
import xlapy.random as xr  # noqa: E402
import xlapy.scipy.linalg as xla  # noqa: E402
import xlapy.scipy.signal as xsig  # noqa: E402
import xlapy.scipy.special as xsp  # noqa: E402
import xlapy.scipy.stats as xst  # noqa: E402
from jax_parity import Record, check_recorded, rand, write_record  # noqa: E402
from backend_fixtures import interpreter_backend  # noqa: E402,F401

try:
    import jax
    import jax.nn as jnn
    import jax.random as jr
    import jax.scipy.linalg as jla
    import jax.scipy.signal as jsig
    import jax.scipy.special as jsp
    import jax.scipy.stats as jst
except ImportError:
    jax = None
needs_jax = pytest.mark.skipif(jax is None, reason="needs jax (the test extra)")
RECORD = Record("more")
XL = types.SimpleNamespace(nn=xnn, random=xr, special=xsp, signal=xsig, stats=xst, linalg=xla,
                           key=xr.key, lax=xlax, vmap=xlapy.vmap)
JX = None if jax is None else types.SimpleNamespace(nn=jnn, random=jr, special=jsp,
                                                     signal=jsig, stats=jst, linalg=jla,
                                                     key=jr.PRNGKey,
                                                     lax=jax.lax, vmap=jax.vmap)

F32, I32, BOOL = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_)
CASES: dict[str, list[Callable[[Any], Any]]] = defaultdict(list)



def add(name: str, *fns: Callable[[Any], Any]) -> None:
    CASES[name].extend(fns)


X, X3 = rand(F32, (3, 4), 1), rand(F32, (2, 3, 4), 2)
XI = rand(I32, (3, 4), 3)
POS = np.abs(rand(F32, (3, 4), 4)) + 0.05
UNIT = (np.abs(rand(F32, (3, 4), 5)) % 1).astype(np.float32)

# --------------------------------------------------------------------------- jax.nn
for name in ("celu elu gelu hard_sigmoid hard_silu hard_swish hard_tanh identity leaky_relu "
             "log_sigmoid mish relu relu6 selu sigmoid silu soft_sign softplus sparse_plus "
             "sparse_sigmoid squareplus swish tanh").split():
    add(f"nn.{name}", lambda m, n=name: getattr(m.nn, n)(X),
        lambda m, n=name: getattr(m.nn, n)(XI))
add("nn.gelu", lambda m: m.nn.gelu(X, approximate=False))
add("nn.leaky_relu", lambda m: m.nn.leaky_relu(X, 0.3))
add("nn.log1mexp", lambda m: m.nn.log1mexp(POS))
add("nn.glu", lambda m: m.nn.glu(X), lambda m: m.nn.glu(X3, axis=2))
for name in ("softmax", "log_softmax", "logsumexp", "logmeanexp", "standardize"):
    add(f"nn.{name}", lambda m, n=name: getattr(m.nn, n)(X3, axis=-1),
        lambda m, n=name: getattr(m.nn, n)(X3, axis=(0, 2)))
add("nn.one_hot", lambda m: m.nn.one_hot(np.int32([0, 2, 5, -1]), 4),
    lambda m: m.nn.one_hot(np.int32([[1], [3]]), 3, axis=0))
Q, K, V = rand(F32, (2, 5, 4, 8), 6), rand(F32, (2, 6, 2, 8), 7), rand(F32, (2, 6, 2, 8), 8)
add("nn.dot_product_attention", lambda m: m.nn.dot_product_attention(Q, K, V),
    lambda m: m.nn.dot_product_attention(Q, K, V, is_causal=True, scale=0.5),
    lambda m: m.nn.dot_product_attention(Q, K, V, bias=rand(F32, (2, 1, 5, 6), 9),
                                         mask=rand(BOOL, (2, 4, 5, 6), 10)),
    lambda m: m.nn.dot_product_attention(Q, K, V, local_window_size=(1, 1),
                                         key_value_seq_lengths=np.int32([4, 6])))
for name, args in (("glorot_uniform", ()), ("glorot_normal", ()), ("he_uniform", ()),
                   ("lecun_normal", ()), ("normal", (0.5,)), ("uniform", (2.0,)),
                   ("truncated_normal", (0.3,)), ("orthogonal", ()), ("constant", (3.0,)),
                   ("variance_scaling", (2.0, "fan_out", "normal"))):
    add(f"nn.initializers.{name}",
        lambda m, n=name, a=args: getattr(m.nn.initializers, n)(*a)(m.key(3), (4, 6)))
add("nn.initializers.zeros", lambda m: m.nn.initializers.zeros(m.key(0), (2, 3)))
add("nn.initializers.ones", lambda m: m.nn.initializers.ones(m.key(0), (2, 3), np.int32))
add("nn.initializers.delta_orthogonal",
    lambda m: m.nn.initializers.delta_orthogonal()(m.key(1), (3, 3, 4, 5)))

# ----------------------------------------------------------------------- jax.random
KEYED = {
    "bits": [((5,),), ((2, 3), np.uint8)], "uniform": [((3, 4),), ((5,), np.float32, -2., 3.)],
    "normal": [((3, 4),)], "truncated_normal": [(-1., 2., (6,))], "bernoulli": [(0.3, (8,))],
    "exponential": [((5,),)], "laplace": [((5,),)], "logistic": [((5,),)],
    "gumbel": [((5,),)], "cauchy": [((5,),)], "randint": [((6,), 0, 10), ((4,), -5, 5)],
    "categorical": [(X,), (X, 0)], "permutation": [(10,), (X,)], "choice": [(10, (4,))],
    "gamma": [(np.float32([0.3, 1., 2.5, 10.]), (3, 4))], "loggamma": [(POS,)],
    "beta": [(2., np.float32([0.5, 3.]), (4, 2))],
    "dirichlet": [(np.float32([0.5, 1., 2.]), (3,))], "chisquare": [(3., (5,))],
    "f": [(3., 5., (5,))], "t": [(4., (5,))], "pareto": [(2., (4,))],
    "poisson": [(np.float32([0.5, 3., 9.9, 12., 100.]), (2, 5))],
    "binomial": [(np.float32([5., 50., 200.]), np.float32([0.3, 0.7, 0.5]), (2, 3))],
    "multinomial": [(20., np.float32([0.2, 0.3, 0.5]))],
    "multivariate_normal": [(np.zeros(2, np.float32), np.float32([[2, .5], [.5, 1]]), (3,))],
    "rademacher": [((6,),)], "maxwell": [((4,),)], "double_sided_maxwell": [(1., 2., (4,))],
    "weibull_min": [(2., 1.5, (4,))], "orthogonal": [(3,)], "rayleigh": [(2., (4,))],
    "wald": [(2., (4,))], "geometric": [(0.3, (6,))], "triangular": [(0., 1., 3., (4,))],
    "lognormal": [(0.5, (4,))], "generalized_normal": [(1.5, (4,))], "ball": [(3, 2, (2,))],
}
for name, arglists in KEYED.items():
    for args in arglists:
        add(f"random.{name}", lambda m, n=name, a=args: getattr(m.random, n)(m.key(42), *a))
for seed in (0, 7, -3, 2 ** 31 + 5):
    add("random.key", lambda m, s=seed: m.key(s))
    add("random.PRNGKey", lambda m, s=seed: m.random.PRNGKey(s))
add("random.split", lambda m: m.random.split(m.key(1)), lambda m: m.random.split(m.key(1), (2, 3)))
add("random.fold_in", lambda m: m.random.fold_in(m.key(1), 17))
add("random.key_data", lambda m: m.random.key_data(m.random.PRNGKey(5)))
add("random.wrap_key_data", lambda m: m.random.key_data(
    m.random.wrap_key_data(np.uint32([1, 2]))))
add("random.clone", lambda m: m.random.key_data(m.random.clone(m.random.PRNGKey(5))))
add("random.key_impl", lambda m: str(m.random.key_impl(m.random.PRNGKey(5))))

# --------------------------------------------------------------- jax.scipy.special
for name in ("erf erfc erfcx expit gammaln gammasgn gamma digamma loggamma i0 i0e i1 i1e "
             "entr ndtr log_ndtr").split():
    add(f"special.{name}", lambda m, n=name: getattr(m.special, n)(X * 3),
        lambda m, n=name: getattr(m.special, n)(XI))
for name in ("erfinv", "logit", "ndtri"):
    add(f"special.{name}", lambda m, n=name: getattr(m.special, n)(UNIT))
add("special.erfinv", lambda m: m.special.erfinv(UNIT * 2 - 1))
for name, args in (("betainc", (POS * 3, POS[::-1] * 2, UNIT)), ("betaln", (POS, POS * 2)),
                   ("beta", (POS, POS * 2)), ("gammainc", (POS * 3, POS * 5)),
                   ("gammaincc", (POS * 3, POS * 5)), ("xlogy", (X, POS)),
                   ("xlog1py", (X, POS)), ("rel_entr", (POS, POS[::-1])),
                   ("kl_div", (POS, POS[::-1])), ("zeta", (POS + 1.5, POS)),
                   ("polygamma", (np.int32([0, 1, 2, 3]), POS[0] + 0.3)),
                   ("poch", (POS, POS[::-1])), ("boxcox", (POS, X)), ("boxcox1p", (POS, X)),
                   ("multigammaln", (POS + 2, 3)), ("factorial", (np.float32([0, 3, 5.5]),)),
                   ("comb", (np.float32([5, 10, 7]), np.float32([2, 3, 9]))),
                   ("bernoulli", (8,))):
    add(f"special.{name}", lambda m, n=name, a=args: getattr(m.special, n)(*a))
WIDE = np.float32([-50, -3, -0.5, -1e-3, 0, 1e-3, 0.3, 1, 1.5, 2, 3.2, 5, 7, 10, 30, 70,
                   1e10, np.inf, -np.inf, np.nan])
for name in ("dawsn", "expi", "exp1", "spence", "sici", "fresnel"):
    add(f"special.{name}", lambda m, n=name: getattr(m.special, n)(WIDE),
        lambda m, n=name: getattr(m.special, n)(X * 3))
add("special.expn", lambda m: m.special.expn(
    np.float32([0, 1, 2, 3, 5, 10, -1, 6000, 3.5])[:, None],
    np.float32([0, 0.2, 1, 1.5, 4, 20])))
CZ = (rand(F32, (3, 4), 19) + 1j * rand(F32, (3, 4), 20) * 2).astype(np.complex64)
add("special.wofz", lambda m: m.special.wofz(CZ), lambda m: m.special.wofz(X * 2))
BJ = np.float32([0.1, 0.5, 1, 2, 5, 10, 20])
add("special.bessel_jn", lambda m: m.special.bessel_jn(BJ, v=5),
    lambda m: m.special.bessel_jn(BJ[None, :3], v=1, n_iter=30))
add("special.owens_t", lambda m: m.special.owens_t(
    np.float32([-2, -0.3, 0, 0.5, 1, 3, np.nan])[:, None],
    np.float32([-3, -1, -0.2, 0, 0.5, 1, 2, 10])))
SHN, SHM = np.int32([0, 1, 2, 3, 4, 5, 3, 2, 5]), np.int32([0, 1, -1, 2, -3, 5, 4, 0, -2])
SHT = np.float32([0.3, 1.0, 2.0, 0.7, 2.9, 1.5, 0.4, 0.0, np.pi])
SHP = np.float32([0.1, 2.0, -1.0, 0.5, 3.0, 1.1, 0.2, 0.3, 0.9])
add("special.sph_harm_y", lambda m: m.special.sph_harm_y(SHN, SHM, SHT, SHP),
    lambda m: m.special.sph_harm_y(SHN, SHM, SHT, SHP, n_max=7))
HA = np.float32([0, 0.5, 1, 2.5, -1.5, 3])[:, None, None]
HB = np.float32([0, 1, 2.5, 4])[None, :, None]
HX = np.float32([-150, -20, -1, 0, 0.3, 2, 10, 99, 120])
add("special.hyp1f1", lambda m: m.special.hyp1f1(HA, HB, HX))
for name in ("softmax", "log_softmax"):
    add(f"special.{name}", lambda m, n=name: getattr(m.special, n)(X3, axis=1))
add("special.logsumexp", lambda m: m.special.logsumexp(X3, axis=(0, 2)),
    lambda m: m.special.logsumexp(X, axis=1, b=X > 0),
    lambda m: m.special.logsumexp(X, axis=0, b=X, return_sign=True))

# ------------------------------------------------- jax.scipy.signal spectral estimates
SIG, SIG2 = rand(F32, (2, 64), 11), rand(F32, (2, 64), 12)
add("signal.stft", lambda m: m.signal.stft(SIG, nperseg=16),
    lambda m: m.signal.stft(SIG, nperseg=16, noverlap=4, nfft=20, boundary="even"),
    lambda m: m.signal.stft(SIG, nperseg=15, boundary="odd", return_onesided=False),
    lambda m: m.signal.stft(SIG.T, nperseg=8, boundary=None, padded=False,
                            detrend="linear", axis=0))
for name, fn in (("welch", lambda m, **k: m.signal.welch(SIG, **k)),
                 ("csd", lambda m, **k: m.signal.csd(SIG, SIG2, **k))):
    add(f"signal.{name}", lambda m, f=fn: f(m, nperseg=16),
        lambda m, f=fn: f(m, nperseg=16, average="median", scaling="spectrum"),
        lambda m, f=fn: f(m, nperseg=15, nfft=17, detrend=False, return_onesided=False))
ZXX = np.asarray(np.fft.rfft(rand(F32, (2, 16, 9), 13), axis=1)[:, :9], np.complex64)
add("signal.istft", lambda m: m.signal.istft(ZXX, nperseg=16),
    lambda m: m.signal.istft(ZXX.transpose(2, 0, 1), time_axis=0, freq_axis=-1),
    lambda m: m.signal.istft(ZXX[:, :, :5].transpose(0, 2, 1) + 0j, input_onesided=False,
                             time_axis=1, freq_axis=2))

# --------------------------------------------------------- jax.scipy.stats.gaussian_kde
KDE1, KDE2 = rand(F32, (20,), 14), rand(F32, (2, 30), 15)
KW = np.abs(rand(F32, (30,), 16)) + 0.1
KPTS = rand(F32, (2, 5), 17)


def _kde(m: Any, data: Any, pts: Any, **kw: Any) -> Any:
    k = m.stats.gaussian_kde(data, **kw)
    return (k.evaluate(pts), k.logpdf(pts), k.covariance, k.integrate_kde(k),
            k.integrate_gaussian(np.zeros(k.d, np.float32), np.eye(k.d, dtype=np.float32)))


add("stats.gaussian_kde", lambda m: _kde(m, KDE1, KPTS[0]), lambda m: _kde(m, KDE2, KPTS),
    lambda m: _kde(m, KDE2, KPTS, weights=KW, bw_method="silverman"),
    lambda m: _kde(m, KDE2, KPTS, bw_method=0.3),
    lambda m: m.stats.gaussian_kde(KDE1).integrate_box_1d(-0.5, 1.0),
    lambda m: m.stats.gaussian_kde(KDE1).resample(m.key(0), (4,)))

# ------------------------------------------------------------------- jax.scipy.linalg
FA, FE = rand(F32, (4, 4), 21) * 0.5, rand(F32, (4, 4), 22)
FB, FEB = rand(F32, (2, 3, 3), 23), rand(F32, (2, 3, 3), 24)
add("linalg.expm_frechet", lambda m: m.linalg.expm_frechet(FA, FE),
    lambda m: m.linalg.expm_frechet(FB, FEB, compute_expm=False))
QM, QC = rand(F32, (5, 3), 25), (rand(F32, (5, 3), 26) + 1j * rand(F32, (5, 3), 27))
add("linalg.qr_multiply", lambda m: m.linalg.qr_multiply(QM, QM.T),
    lambda m: m.linalg.qr_multiply(QM, QM[:, 0]),
    lambda m: m.linalg.qr_multiply(QM, QM[:3, :2], mode="left"),
    lambda m: m.linalg.qr_multiply(QM.T, QM[:2], mode="right"),
    lambda m: m.linalg.qr_multiply(QC.astype(np.complex64), QM.T, conjugate=True))

HM = rand(F32, (5, 5), 28)
HC = (rand(F32, (4, 4), 29) + 1j * rand(F32, (4, 4), 30)).astype(np.complex64)
add("linalg.hessenberg", lambda m: m.linalg.hessenberg(HM, calc_q=True),
    lambda m: m.linalg.hessenberg(HC, calc_q=True), lambda m: m.linalg.hessenberg(HM[:2, :2]),
    lambda m: m.linalg.hessenberg(np.triu(HM)))

TD, TE = rand(F32, (6,), 31), rand(F32, (5,), 32)
add("linalg.eigh_tridiagonal", lambda m: m.linalg.eigh_tridiagonal(TD, TE, eigvals_only=True),
    lambda m: m.linalg.eigh_tridiagonal(TD, TE, eigvals_only=True, select="i",
                                        select_range=(1, 3)),
    lambda m: m.linalg.eigh_tridiagonal(TD.astype(np.complex64),
                                        (TE + 1j * TE[::-1]).astype(np.complex64),
                                        eigvals_only=True),
    lambda m: m.linalg.eigh_tridiagonal(TD, TE)[0])

RT = np.triu(rand(F32, (5, 5), 33))
RT[2, 1], RT[4, 3] = -1.5, 0.7               # 2x2 blocks with complex eigenvalue pairs
RT[4, 4] = RT[3, 3]
RZ = np.linalg.qr(rand(F32, (5, 5), 34))[0].astype(np.float32)
add("linalg.rsf2csf", lambda m: m.linalg.rsf2csf(RT, RZ),
    lambda m: m.linalg.rsf2csf(RT[:2, :2], RZ[:2, :2]),
    lambda m: m.linalg.rsf2csf(np.stack([RT, np.triu(RT)]), RZ))
SA = rand(F32, (3, 3), 35) + 3 * np.eye(3, dtype=np.float32)
SB, SC = rand(F32, (2, 2), 36), rand(F32, (3, 2), 37)
add("linalg.solve_sylvester", lambda m: m.linalg.solve_sylvester(SA, SB, SC),
    lambda m: m.linalg.solve_sylvester(SA, SB, SC, method="eigen"),
    lambda m: m.linalg.solve_sylvester(np.stack([SA, 2 * SA]), SB, SC),
    lambda m: m.linalg.solve_sylvester(np.eye(2, dtype=np.float32),
                                       -np.eye(2, dtype=np.float32), SC[:2]))


def test_eigh_tridiagonal_vectors():
    """The eigenvectors (defined up to phase) satisfy T v = v w for the selected w."""
    e = (TE + 1j * TE[::-1]).astype(np.complex64)
    w, v = xla.eigh_tridiagonal(TD.astype(np.complex64), e, select="i", select_range=(2, 4))
    t = np.diag(TD) + np.diag(e, -1) + np.diag(np.conj(e), 1)
    w, v = np.asarray(w), np.asarray(v)
    assert v.shape == (6, 3)
    np.testing.assert_allclose(t @ v, v * w, atol=2e-5)


# ------------------------------------------------ jax.lax gamma-function derivatives
GA = np.float32([0.01, 0.3, 1, 2.5, 10, 50, 200])
GX = np.float32([1e-3, 0.2, 1, 3, 8, 60, 190])
add("lax.igamma_grad_a", lambda m: m.lax.igamma_grad_a(GA, GX))
add("lax.random_gamma_grad", lambda m: m.lax.random_gamma_grad(GA, GX))

# ------------------------------------------- jax.lax collectives over a vmapped named axis
COLL = rand(F32, (4, 4, 3), 18)
add("lax.pshuffle", lambda m: m.vmap(lambda v: m.lax.pshuffle(v, "i", [2, 0, 3, 1]),
                                     axis_name="i")(COLL))
add("lax.pswapaxes", lambda m: m.vmap(lambda v: m.lax.pswapaxes(v, "i", 0), axis_name="i")(COLL),
    lambda m: m.vmap(lambda v: m.lax.pswapaxes(v, "i", 1),
                     axis_name="i")(COLL.transpose(0, 2, 1)[:, :, :4]))
add("lax.pbroadcast", lambda m: m.vmap(lambda v: m.lax.pbroadcast(v, "i", 2), axis_name="i")(COLL),
    lambda m: m.vmap(lambda v: m.lax.pbroadcast(v, "i", 0), axis_name="i")(XI))



def test_pbroadcast_of_booleans():
    """Booleans are broadcast through an integer psum and come back boolean."""
    got = xlapy.vmap(lambda v: xlax.pbroadcast(v > 0, "i", 1), axis_name="i")(COLL)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(got), np.broadcast_to(COLL[1] > 0, COLL.shape))


TOLERANCE = {"special.gammainc": 3e-5, "special.gammaincc": 3e-5, "special.betainc": 3e-5,
             "special.zeta": 5e-5, "special.polygamma": 5e-5, "special.ndtri": 5e-5,
             "special.i1": 5e-5, "special.i0": 5e-5, "signal.stft": 1e-5,
             "signal.istft": 1e-5, "signal.welch": 1e-5, "signal.csd": 1e-5,
             "stats.gaussian_kde": 1e-5, "special.expn": 2e-5, "special.expi": 2e-5,
             "special.exp1": 2e-5, "special.sici": 2e-5, "special.dawsn": 2e-5,
             "special.spence": 2e-5, "special.fresnel": 2e-5, "special.wofz": 2e-5,
             "special.bessel_jn": 2e-5, "special.owens_t": 2e-5, "special.hyp1f1": 3e-5,
             "special.sph_harm_y": 1e-5,
             "linalg.expm_frechet": 2e-4, "linalg.qr_multiply": 1e-5, "linalg.hessenberg": 1e-5,
             "linalg.eigh_tridiagonal": 1e-5, "linalg.rsf2csf": 1e-5,
             "linalg.solve_sylvester": 5e-5,
             "lax.igamma_grad_a": 2e-4, "lax.random_gamma_grad": 2e-4}
SKIPPED = {
    "nn": {"scaled_matmul": "JAX's needs cuDNN (no CPU lowering): tests/test_nn_extra.py "
                            "checks xlapy's against its documented formula"},
    "random": {"key_dtype": "xlapy's keys are raw uint32 data; JAX's key dtype is a typed "
                            "key type (documented in xlapy.random)",
               "random_gamma_p": "a JAX primitive object"},
}


def test_every_name_is_covered():
    from xlapy.tools.coverage import jax_names
    names = jax_names("auto")[0]
    for ns, mod in (("jax.nn", xnn), ("jax.random", xr), ("jax.scipy.special", xsp)):
        short = ns.split(".")[-1]
        for n in names[ns]:
            if not hasattr(mod, n) or n in SKIPPED.get(short, {}) or n == "initializers":
                continue
            assert f"{short}.{n}" in CASES, f"{ns}.{n} has no parity case"


def test_record_covers_the_table():
    keys = {f"{n}#{i}" for n, calls in CASES.items() for i in range(len(calls))}
    assert keys == set(RECORD.calls), ("the table changed: rewrite the record with "
                                       "python tests/test_jax_parity_more.py")


@pytest.mark.parametrize("name", sorted(CASES))
def test_parity(name):
    tol = TOLERANCE.get(name)
    for i, fn in enumerate(CASES[name]):
        check_recorded(f"{name}#{i}", lambda: fn(XL), RECORD, f"{name}#{i}", rtol=tol,
                       atol=tol)


@pytest.mark.slow
@needs_jax
def test_record_is_current():
    if RECORD.version != jax.__version__:
        pytest.skip(f"recorded with jax {RECORD.version}")
    for name, calls in CASES.items():             # a sample, as in test_jax_parity_numpy
        for i, fn in enumerate(calls):
            if (i + len(name)) % 5 == 0:
                check_recorded(f"{name}#{i}", lambda: fn(JX), RECORD, f"{name}#{i}")


if __name__ == "__main__":
    print(write_record("more", CASES, JX, jax.__version__))
