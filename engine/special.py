"""``torch.special`` over the registered ops: the same functions under their
``torch.special`` names (``expit`` is ``sigmoid``, ``psi`` is ``digamma``)."""

from __future__ import annotations

from .ops.polynomials import POLYNOMIALS
from .registry import OPS

_NAMES = {
    "erf": "erf",
    "erfc": "erfc",
    "erfinv": "erfinv",
    "expit": "sigmoid",
    "exp2": "exp2",
    "expm1": "expm1",
    "log1p": "log1p",
    "logit": "logit",
    "logsumexp": "logsumexp",
    "softmax": "softmax",
    "log_softmax": "log_softmax",
    "sinc": "sinc",
    "round": "round",
    "xlogy": "xlogy",
    "xlog1py": "xlog1py",
    "gammaln": "lgamma",
    "digamma": "digamma",
    "psi": "digamma",
    "polygamma": "polygamma",
    "multigammaln": "mvlgamma",
    "i0": "i0",
    "entr": "entr",
    "ndtr": "ndtr",
    "log_ndtr": "log_ndtr",
    "erfcx": "erfcx",
    "i0e": "i0e",
    "i1": "i1",
    "i1e": "i1e",
    "ndtri": "ndtri",
    "zeta": "zeta",
}
_NAMES.update(
    {
        name: name
        for name in [
            "airy_ai",
            "bessel_j0",
            "bessel_j1",
            "bessel_y0",
            "bessel_y1",
            "modified_bessel_i0",
            "modified_bessel_i1",
            "modified_bessel_k0",
            "modified_bessel_k1",
            "scaled_modified_bessel_k0",
            "scaled_modified_bessel_k1",
            "spherical_bessel_j0",
        ]
    }
)
_NAMES.update({name: name for name in POLYNOMIALS})
globals().update({name: OPS[op].fn for name, op in _NAMES.items() if op in OPS})
__all__ = [name for name, op in _NAMES.items() if op in OPS]
