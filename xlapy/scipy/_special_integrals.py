"""Exponential integrals and the dilogarithm of ``jax.scipy.special``: :func:`expi`,
:func:`exp1`, :func:`expn`, :func:`spence`.

The rational approximations and series are Cephes' (Cody-Thacher),
with the coefficients and region boundaries of JAX's ``jax/_src/scipy/special.py``
(Apache-2.0), so the values agree with JAX's. Loop-free paths differentiate through the
composition; ``expn``'s iterative paths run as masked ``while_loop`` s.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend import dtypes
from ..frontend.control_flow import while_loop
from ..frontend.core import Array
from .. import numpy as xnp
from ..numpy._elementwise import promote

ArrayLike = Any


def _c(x: Array, v: Any) -> Array:
    return xnp.asarray(v, dtype=x.dtype)


def _real(name: str, *args: Any) -> list[Array]:
    out = promote(*args, to_inexact=True)
    if dtypes.is_complex(out[0].dtype):
        raise InvalidArgumentError(f"{name} does not support complex-valued inputs")
    return out


def _expint1(x: Array) -> Array:
    # 0 < x <= 2
    A = np.array([
        -5.350447357812542947283e0,
        2.185049168816613393830e2,
        -4.176572384826693777058e3,
        5.541176756393557601232e4,
        -3.313381331178144034309e5,
        1.592627163384945414220e6,
    ], dtype=x.dtype)
    B = np.array([
        1.0,
        -5.250547959112862969197e1,
        1.259616186786790571525e3,
        -1.756549581973534652631e4,
        1.493062117002725991967e5,
        -7.294949239640527645655e5,
        1.592627163384945429726e6,
    ], dtype=x.dtype)
    f = xnp.polyval(A, x) / xnp.polyval(B, x)
    return x * f + np.euler_gamma + xnp.log(x)


def _eval_expint_k(A: ArrayLike, B: ArrayLike, x: Array) -> Array:
    # helper function for all subsequent intervals
    one = _c(x, 1.0)
    w = one / x
    f = xnp.polyval(A, w) / xnp.polyval(B, w)
    f = w * f + one
    return xnp.exp(x) * w * f


def _expint2(x: Array) -> Array:
    # 2 <= x < 4
    A = np.array([
        1.981808503259689673238e-2,
        -1.271645625984917501326e0,
        -2.088160335681228318920e0,
        2.755544509187936721172e0,
        -4.409507048701600257171e-1,
        4.665623805935891391017e-2,
        -1.545042679673485262580e-3,
        7.059980605299617478514e-5,
    ], dtype=x.dtype)
    B = np.array([
        1.0,
        1.476498670914921440652e0,
        5.629177174822436244827e-1,
        1.699017897879307263248e-1,
        2.291647179034212017463e-2,
        4.450150439728752875043e-3,
        1.727439612206521482874e-4,
        3.953167195549672482304e-5,
    ], dtype=x.dtype)
    return _eval_expint_k(A, B, x)


def _expint3(x: Array) -> Array:
    # 4 <= x <= 8
    A = np.array([
        -1.373215375871208729803e0,
        -7.084559133740838761406e-1,
        1.580806855547941010501e0,
        -2.601500427425622944234e-1,
        2.994674694113713763365e-2,
        -1.038086040188744005513e-3,
        4.371064420753005429514e-5,
        2.141783679522602903795e-6,
    ], dtype=x.dtype)
    B = np.array([
        1.0,
        8.585231423622028380768e-1,
        4.483285822873995129957e-1,
        7.687932158124475434091e-2,
        2.449868241021887685904e-2,
        8.832165941927796567926e-4,
        4.590952299511353531215e-4,
        -4.729848351866523044863e-6,
        2.665195537390710170105e-6,
    ], dtype=x.dtype)
    return _eval_expint_k(A, B, x)


def _expint4(x: Array) -> Array:
    # 8 <= x <= 16
    A = np.array([
        -2.106934601691916512584e0,
        1.732733869664688041885e0,
        -2.423619178935841904839e-1,
        2.322724180937565842585e-2,
        2.372880440493179832059e-4,
        -8.343219561192552752335e-5,
        1.363408795605250394881e-5,
        -3.655412321999253963714e-7,
        1.464941733975961318456e-8,
        6.176407863710360207074e-10,
    ], dtype=x.dtype)
    B = np.array([
        1.0,
        -2.298062239901678075778e-1,
        1.105077041474037862347e-1,
        -1.566542966630792353556e-2,
        2.761106850817352773874e-3,
        -2.089148012284048449115e-4,
        1.708528938807675304186e-5,
        -4.459311796356686423199e-7,
        1.394634930353847498145e-8,
        6.150865933977338354138e-10,
    ], dtype=x.dtype)
    return _eval_expint_k(A, B, x)


def _expint5(x):
    # 16 <= x <= 32
    A = np.array([
        -2.458119367674020323359e-1,
        -1.483382253322077687183e-1,
        7.248291795735551591813e-2,
        -1.348315687380940523823e-2,
        1.342775069788636972294e-3,
        -7.942465637159712264564e-5,
        2.644179518984235952241e-6,
        -4.239473659313765177195e-8,
    ], dtype=x.dtype)
    B = np.array([
        1.0,
        -1.044225908443871106315e-1,
        -2.676453128101402655055e-1,
        9.695000254621984627876e-2,
        -1.601745692712991078208e-2,
        1.496414899205908021882e-3,
        -8.462452563778485013756e-5,
        2.728938403476726394024e-6,
        -4.239462431819542051337e-8,
    ], dtype=x.dtype)
    return _eval_expint_k(A, B, x)


def _expint6(x):
    # 32 <= x <= 64
    A = np.array([
        1.212561118105456670844e-1,
        -5.823133179043894485122e-1,
        2.348887314557016779211e-1,
        -3.040034318113248237280e-2,
        1.510082146865190661777e-3,
        -2.523137095499571377122e-5,
    ], dtype=x.dtype)
    B = np.array([
        1.0,
        -1.002252150365854016662e0,
        2.928709694872224144953e-1,
        -3.337004338674007801307e-2,
        1.560544881127388842819e-3,
        -2.523137093603234562648e-5,
    ], dtype=x.dtype)
    return _eval_expint_k(A, B, x)


def _expint7(x):
    # x > 64
    A = np.array([
        -7.657847078286127362028e-1,
        6.886192415566705051750e-1,
        -2.132598113545206124553e-1,
        3.346107552384193813594e-2,
        -3.076541477344756050249e-3,
        1.747119316454907477380e-4,
        -6.103711682274170530369e-6,
        1.218032765428652199087e-7,
        -1.086076102793290233007e-9,
    ], dtype=x.dtype)
    B = np.array([
        1.0,
        -1.888802868662308731041e0,
        1.066691687211408896850e0,
        -2.751915982306380647738e-1,
        3.930852688233823569726e-2,
        -3.414684558602365085394e-3,
        1.866844370703555398195e-4,
        -6.345146083130515357861e-6,
        1.239754287483206878024e-7,
        -1.086076102793126632978e-9,
    ], dtype=x.dtype)
    return _eval_expint_k(A, B, x)


def _expi_pos(x: Array) -> Array:
    # x >= 0
    conds = [(_c(x, 0) < x) & (x <= _c(x, 2))] + [
        (_c(x, 2 ** i) < x) & (x <= _c(x, 2 ** (i + 1))) for i in range(1, 6)
    ]
    return xnp.piecewise(
        x,
        conds,
        [_expint1, _expint2, _expint3, _expint4, _expint5, _expint6, _expint7],
    )

def _expi_neg(x: Array) -> Array:
    # x < 0
    return -exp1(-x)


def _spence_poly(w: Array) -> Array:
    A = xnp.array([4.65128586073990045278E-5,
                                    7.31589045238094711071E-3,
                                    1.33847639578309018650E-1,
                                    8.79691311754530315341E-1,
                                    2.71149851196553469920E0,
                                    4.25697156008121755724E0,
                                    3.29771340985225106936E0,
                                    1.00000000000000000126E0,
                                    ], dtype=w.dtype)

    B = xnp.array([6.90990488912553276999E-4,
                                    2.54043763932544379113E-2,
                                    2.82974860602568089943E-1,
                                    1.41172597751831069617E0,
                                    3.63800533345137075418E0,
                                    5.03278880143316990390E0,
                                    3.54771340985225096217E0,
                                    9.99999999999999998740E-1,
                                    ],dtype=w.dtype)

    return -w * xnp.polyval(A, w) / xnp.polyval(B, w)


def _spence_calc(x: Array) -> Array:
    x2_bool = x > 2.0
    x = xnp.piecewise(x, [x2_bool],
                                        [lambda x: 1.0 / x, lambda x: x])

    x1_5_bool = x > 1.5
    x_5_bool = x < 0.5
    x2_bool = x2_bool | x1_5_bool

    w = xnp.piecewise(x,
                                        [x1_5_bool, x_5_bool],
                                        [lambda x: 1.0 / x - 1.0,
                                            lambda x: -x,
                                            lambda x: x - 1.0])

    y = _spence_poly(w)
    y_flag_one = np.pi ** 2 / 6.0 - xnp.log(x) * xnp.log(1.0 - x) - y
    y = xnp.where(x_5_bool, y_flag_one, y)
    y_flag_two = -0.5 * xnp.log(x) ** 2 - y
    return xnp.where(x2_bool, y_flag_two, y)


def _spence(x: Array) -> Array:
    return xnp.piecewise(x,
                                             [x < 0.0, x == 1.0, x == 0.0],
                                             [np.nan, 0, np.pi ** 2 / 6, _spence_calc])



def expi(x: ArrayLike) -> Array:
    """The exponential integral ``Ei(x) = integral_{-inf}^x e^t / t dt``."""
    (x,) = _real("expi", x)
    return xnp.piecewise(x, [x < 0], [_expi_neg, _expi_pos])


def _masked_loop(cond: Any, body: Any, init: dict, max_iter: int = 2000) -> dict:
    """Run ``body`` element by element while ``cond`` holds: elements whose condition
    failed keep their values, so each one stops where a per-element loop would."""
    def step(s: tuple) -> tuple:
        k, d = s
        live = cond(d)
        new = body(dict(d))
        return k + 1, {key: xnp.where(live, new[key], d[key]) for key in d}

    def go(s: tuple) -> Array:
        return xnp.any(cond(s[1])) & (s[0] < max_iter)
    return while_loop(go, step, (xnp.asarray(0, dtype=np.int32), init))[1]


def _expn1(x: Array, n: Array) -> Array:
    """Power series for ``x <= 1``."""
    from .special import digamma, gammaln
    eps = np.finfo(np.dtype(x.dtype)).eps
    zero, one = _c(x, 0.0), _c(x, 1.0)
    psi = digamma(n) - xnp.log(x)           # -euler_gamma - log(x) + sum_{i<n} 1/i
    n1 = xnp.where(n == 1, one + one, n)
    full = xnp.zeros_like(x + n)
    init = {"x": x + full, "z": -x + full, "xk": full, "yk": full + one, "pk": one - n + full,
            "ans": xnp.where(n == 1, zero, one / (one - n1)) + full, "t": full + np.inf}

    def body(d: dict) -> dict:
        d["xk"] = d["xk"] + one
        d["yk"] = d["yk"] * d["z"] / d["xk"]
        d["pk"] = d["pk"] + one
        d["ans"] = d["ans"] + xnp.where(d["pk"] != zero, d["yk"] / d["pk"], zero)
        d["t"] = xnp.where(d["ans"] != zero, xnp.abs(d["yk"] / d["ans"]), one)
        return d
    d = _masked_loop(lambda d: (d["x"] > zero) & (d["t"] > eps), body, init)
    return d["z"] ** (n - 1) * psi / xnp.exp(gammaln(n)) - d["ans"]


def _expn2(x: Array, n: Array) -> Array:
    """Continued fraction for ``x > 1``."""
    big = _c(x, 1.44115188075855872e17)
    eps = np.finfo(np.dtype(x.dtype)).eps
    zero, one = _c(x, 0.0), _c(x, 1.0)
    full = xnp.zeros_like(x + n)
    init = {"k": full + 1, "pkm2": full + one, "qkm2": x + full, "pkm1": full + one,
            "qkm1": x + n, "ans": one / (x + n), "t": full + np.inf, "r": full,
            "x": x + full}

    def body(d: dict) -> dict:
        xx = d["x"]
        d["k"] = k = d["k"] + 1
        odd = xnp.remainder(k, 2) == 1
        yk = xnp.where(odd, one, xx)
        xk = xnp.where(odd, n + (k - 1) / 2, k / 2)
        pk = d["pkm1"] * yk + d["pkm2"] * xk
        qk = d["qkm1"] * yk + d["qkm2"] * xk
        nz = qk != zero
        r = xnp.where(nz, pk / xnp.where(nz, qk, one), d["r"])
        d["r"] = r
        d["t"] = xnp.where(nz, xnp.abs((d["ans"] - r) / r), one)
        d["ans"] = xnp.where(nz, r, d["ans"])
        d["pkm2"], d["pkm1"], d["qkm2"], d["qkm1"] = d["pkm1"], pk, d["qkm1"], qk
        is_big = xnp.abs(pk) > big
        for key in ("pkm1", "pkm2", "qkm1", "qkm2"):
            d[key] = xnp.where(is_big, d[key] / big, d[key])
        return d
    d = _masked_loop(lambda d: (d["x"] > zero) & (d["t"] > eps), body, init)
    return d["ans"] * xnp.exp(-x)


def _expn3(x: Array, n: Array) -> Array:
    """Asymptotic expansion for large ``n``."""
    one = _c(x, 1.0)
    xk = x + n
    yk = one / (xk * xk)
    ans = yk * n * (6 * x * x - 8 * n * x + n * n)
    ans = yk * (ans + n * (n - 2 * x))
    ans = yk * (ans + n)
    return (ans + one) * xnp.exp(-x) / xk


def expn(n: ArrayLike, x: ArrayLike) -> Array:
    """The generalized exponential integral ``E_n(x) = integral_1^inf e^{-xt} / t^n dt``
    (with JAX's case order: of the special cases the last that applies wins)."""
    n, x = _real("expn", n, x)
    zero, one = _c(x, 0.0), _c(x, 1.0)
    n1 = xnp.where(n == 1, n + n, n)
    pos = xnp.where(x > 0, x, one)        # keeps the unused branches finite
    conds = [(n < 0) | (x < zero), (x == zero) & (n < 2), (x == zero) & (n >= 2),
             (n == 0) & (x >= zero), n >= 5000, x > one]
    vals = [xnp.full_like(x, np.nan), xnp.full_like(x, np.inf), one / n1,
            xnp.exp(-x) / x, _expn3(xnp.where(x >= 0, x, one), n),
            _expn2(xnp.where(x > one, x, 2 * one), n),
            _expn1(xnp.where(x > one, one, pos), n)]
    out = xnp.select(conds[::-1], vals[-2::-1], vals[-1])     # the last true condition wins
    return xnp.where(xnp.isnan(x) | xnp.isnan(n), np.nan, out)


def exp1(x: ArrayLike) -> Array:
    """The exponential integral ``E_1(x) = integral_1^inf e^{-xt} / t dt``."""
    (x,) = _real("exp1", x)
    return expn(xnp.ones_like(x), x)


def spence(x: ArrayLike) -> Array:
    """Spence's function (the real dilogarithm) ``integral_1^x log(t) / (1 - t) dt``
    for ``x >= 0`` (NaN below)."""
    (x,) = _real("spence", x)
    return _spence(x)
