"""Dawson's integral and the sine/cosine integrals of ``jax.scipy.special``:
:func:`dawsn` and :func:`sici`.

The rational approximations are Cephes' (Cody-Paciorek-Thacher for ``dawsn``), with the
coefficients and region boundaries of JAX's ``jax/_src/scipy/special.py`` (Apache-2.0),
so the values agree with JAX's; both are loop-free and differentiate through the
composition.
"""
from __future__ import annotations

import numpy as np

from ..frontend.core import Array
from .. import numpy as xnp
from ._special_integrals import ArrayLike, _c, _real

_DAWSN_AN = np.array([
        1.13681498971755972054e-11,
        8.49262267667473811108e-10,
        1.94434204175553054283e-8,
        9.53151741254484363489e-7,
        3.07828309874913200438e-6,
        3.52513368520288738649e-4,
        -8.50149846724410912031e-4,
        4.22618223005546594270e-2,
        -9.17480371773452345351e-2,
        9.99999999999999994612e-1,
])
_DAWSN_AD = np.array([
        2.40372073066762605484e-11,
        1.48864681368493396752e-9,
        5.21265281010541664570e-8,
        1.27258478273186970203e-6,
        2.32490249820789513991e-5,
        3.25524741826057911661e-4,
        3.48805814657162590916e-3,
        2.79448531198828973716e-2,
        1.58874241960120565368e-1,
        5.74918629489320327824e-1,
        1.00000000000000000539e0,
])
# Region 2: [3.25, 6.25)    —    y = 0.5/ax * (1 + (1/ax^2)*P(1/ax^2)/Q(1/ax^2))
_DAWSN_BN = np.array([
        5.08955156417900903354e-1,
        -2.44754418142697847934e-1,
        9.41512335303534411857e-2,
        -2.18711255142039025206e-2,
        3.66207612329569181322e-3,
        -4.23209114460388756528e-4,
        3.59641304793896631888e-5,
        -2.14640351719968974225e-6,
        9.10010780076391431042e-8,
        -2.40274520828250956942e-9,
        3.59233385440928410398e-11,
])
_DAWSN_BD = np.array([
        1.00000000000000000000e0,
        -6.31839869873368190192e-1,
        2.36706788228248691528e-1,
        -5.31806367003223277662e-2,
        8.48041718586295374409e-3,
        -9.47996768486665330168e-4,
        7.81025592944552338085e-5,
        -4.55875153252442634831e-6,
        1.89100358111421846170e-7,
        -4.91324691331920606875e-9,
        7.18466403235734541950e-11,
])
# Region 3: [6.25, inf)    —    y = 0.5/ax * (1 + (1/ax^2)*P(1/ax^2)/Q(1/ax^2))
_DAWSN_CN = np.array([
        -5.90592860534773254987e-1,
        6.29235242724368800674e-1,
        -1.72858975380388136411e-1,
        1.64837047825189632310e-2,
        -4.86827613020462700845e-4,
])
_DAWSN_CD = np.array([
        1.00000000000000000000e0,
        -2.69820057197544900361e0,
        1.73270799045947845857e0,
        -3.93708582281939493482e-1,
        3.44278924041233391079e-2,
        -9.73655226040941223894e-4,
])



def _dawsn_impl(x: Array) -> Array:
    """Cody-Paciorek-Thacher rational approximations on three ranges of ``|x|``; each
    range sees safe dummy inputs outside itself so unused branches stay finite."""
    ax = xnp.abs(x)
    t = 1.0 / xnp.where(ax == 0, _c(x, 1.0), ax * ax)
    one = xnp.ones_like(ax)
    r1, r3 = ax < 3.25, ax >= 6.25
    r2 = ~r1 & ~r3

    def poly(coef: np.ndarray, v: Array) -> Array:
        return xnp.polyval(np.asarray(coef, dtype=np.dtype(x.dtype)), v)
    a1 = xnp.where(r1, ax, one)
    v1 = a1 * poly(_DAWSN_AN, a1 * a1) / poly(_DAWSN_AD, a1 * a1)
    t2, a2 = xnp.where(r2, t, one), xnp.where(r2, ax, one)
    v2 = (0.5 / a2) * (1.0 + t2 * poly(_DAWSN_BN, t2) / poly(_DAWSN_BD, t2))
    t3, a3 = xnp.where(r3, t, one), xnp.where(r3, ax, one)
    v3 = (0.5 / a3) * (1.0 + t3 * poly(_DAWSN_CN, t3) / poly(_DAWSN_CD, t3))
    return xnp.sign(x) * xnp.where(r1, v1, xnp.where(r2, v2, v3))


def dawsn(x: ArrayLike) -> Array:
    """Dawson's integral ``exp(-x^2) * integral_0^x exp(t^2) dt``."""
    (x,) = _real("dawsn", x)
    if np.dtype(x.dtype) in (np.float32, np.float64):
        return _dawsn_impl(x)
    return _dawsn_impl(x.astype(np.float32)).astype(x.dtype)


def _sici_approx(x: Array):
    # sici approximation valid for x >= 1E9
    si = (np.pi / 2) - xnp.cos(x) / x
    ci = xnp.sin(x) / x

    si = xnp.where(xnp.isposinf(x), np.pi / 2, si)
    ci = xnp.where(xnp.isposinf(x), 0.0, ci)

    return si, ci

def _sici_series(x: Array):
    # sici series valid for x >= 0 and x <= 4
    def si_series(x):
        # Cephes (misc/sici.c), as scipy
        SN = np.array([-8.39167827910303881427E-11,
            4.62591714427012837309E-8,
            -9.75759303843632795789E-6,
            9.76945438170435310816E-4,
            -4.13470316229406538752E-2,
            1.00000000000000000302E0], dtype=x.dtype)
        SD = np.array([ 2.03269266195951942049E-12,
            1.27997891179943299903E-9,
            4.41827842801218905784E-7,
            9.96412122043875552487E-5,
            1.42085239326149893930E-2,
            9.99999999999999996984E-1], dtype=x.dtype)
        t = x * x
        return (x * xnp.polyval(SN, t)) / xnp.polyval(SD, t)

    def ci_series(x):
        # Cephes (misc/sici.c), as scipy
        CN = np.array([ 2.02524002389102268789E-11,
            -1.35249504915790756375E-8,
            3.59325051419993077021E-6,
            -4.74007206873407909465E-4,
            2.89159652607555242092E-2,
            -1.00000000000000000080E0], dtype=x.dtype)
        CD = np.array([ 4.07746040061880559506E-12,
            3.06780997581887812692E-9,
            1.23210355685883423679E-6,
            3.17442024775032769882E-4,
            5.10028056236446052392E-2,
            4.00000000000000000080E0], dtype=x.dtype)
        t = x * x
        return np.euler_gamma + xnp.log(x) + t * xnp.polyval(CN, t) / xnp.polyval(CD, t)

    si = xnp.where(
        x == 0,
        0.0,
        si_series(x)
    )

    ci = xnp.where(
        x == 0,
        -np.inf,
        ci_series(x)
    )

    return si, ci

def _sici_asympt(x: Array):
    # sici asympt valid for x > 4 & x <= 1E9
    s = xnp.sin(x)
    c = xnp.cos(x)
    z = 1.0 / (x * x)

    # Cephes (misc/sici.c), as scipy
    FN4 = np.array([
        4.23612862892216586994E0,
        5.45937717161812843388E0,
        1.62083287701538329132E0,
        1.67006611831323023771E-1,
        6.81020132472518137426E-3,
        1.08936580650328664411E-4,
        5.48900223421373614008E-7,
    ], dtype=x.dtype)
    FD4 = np.array([
        1,
        8.16496634205391016773E0,
        7.30828822505564552187E0,
        1.86792257950184183883E0,
        1.78792052963149907262E-1,
        7.01710668322789753610E-3,
        1.10034357153915731354E-4,
        5.48900252756255700982E-7,
    ], dtype=x.dtype)
    GN4 = np.array([
        8.71001698973114191777E-2,
        6.11379109952219284151E-1,
        3.97180296392337498885E-1,
        7.48527737628469092119E-2,
        5.38868681462177273157E-3,
        1.61999794598934024525E-4,
        1.97963874140963632189E-6,
        7.82579040744090311069E-9,
    ], dtype=x.dtype)
    GD4 = np.array([
        1,
        1.64402202413355338886E0,
        6.66296701268987968381E-1,
        9.88771761277688796203E-2,
        6.22396345441768420760E-3,
        1.73221081474177119497E-4,
        2.02659182086343991969E-6,
        7.82579218933534490868E-9,
    ], dtype=x.dtype)

    FN8 = np.array([
        4.55880873470465315206E-1,
        7.13715274100146711374E-1,
        1.60300158222319456320E-1,
        1.16064229408124407915E-2,
        3.49556442447859055605E-4,
        4.86215430826454749482E-6,
        3.20092790091004902806E-8,
        9.41779576128512936592E-11,
        9.70507110881952024631E-14,
    ], dtype=x.dtype)
    FD8 = np.array([
        1.0,
        9.17463611873684053703E-1,
        1.78685545332074536321E-1,
        1.22253594771971293032E-2,
        3.58696481881851580297E-4,
        4.92435064317881464393E-6,
        3.21956939101046018377E-8,
        9.43720590350276732376E-11,
        9.70507110881952025725E-14,
    ], dtype=x.dtype)
    GN8 = np.array([
        6.97359953443276214934E-1,
        3.30410979305632063225E-1,
        3.84878767649974295920E-2,
        1.71718239052347903558E-3,
        3.48941165502279436777E-5,
        3.47131167084116673800E-7,
        1.70404452782044526189E-9,
        3.85945925430276600453E-12,
        3.14040098946363334640E-15,
    ], dtype=x.dtype)
    GD8 = np.array([
        1.0,
        1.68548898811011640017E0,
        4.87852258695304967486E-1,
        4.67913194259625806320E-2,
        1.90284426674399523638E-3,
        3.68475504442561108162E-5,
        3.57043223443740838771E-7,
        1.72693748966316146736E-9,
        3.87830166023954706752E-12,
        3.14040098946363335242E-15,
    ], dtype=x.dtype)

    f4 = xnp.polyval(FN4, z) / (x * xnp.polyval(FD4, z))
    g4 = z * xnp.polyval(GN4, z) / xnp.polyval(GD4, z)

    f8 = xnp.polyval(FN8, z) / (x * xnp.polyval(FD8, z))
    g8 = z * xnp.polyval(GN8, z) / xnp.polyval(GD8, z)

    mask = x < 8.0
    f = xnp.where(mask, f4, f8)
    g = xnp.where(mask, g4, g8)

    si = (np.pi / 2) - f * c - g * s
    ci = f * s - g * c

    return si, ci


def sici(x: ArrayLike) -> tuple[Array, Array]:
    """The sine and cosine integrals ``(Si(x), Ci(x))``."""
    (x,) = _real("sici", x)
    ax = xnp.abs(x)
    si_s, ci_s = _sici_series(ax)
    si_a, ci_a = _sici_asympt(xnp.where(ax > 4, ax, _c(x, 5.0)))
    si_p, ci_p = _sici_approx(ax)
    small, mid = ax <= 4, (ax > 4) & (ax <= 1e9)
    si = xnp.sign(x) * xnp.select([small, mid], [si_s, si_a], si_p)
    ci = xnp.select([small, mid], [ci_s, ci_a], ci_p)
    return si, xnp.where(xnp.isneginf(x), np.nan, ci)
