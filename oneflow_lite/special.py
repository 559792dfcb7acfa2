"""``flow.special`` (``torch.special``): PyTorch's special-function namespace, as names of the functional API
(``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``psi`` is ``digamma``, ``multigammaln`` is ``mvlgamma``,
``gammainc`` / ``gammaincc`` are ``igamma`` / ``igammac``). Functions PyTorch has there and oneflow_lite does not
(``ndtr``, ``erfcx``, the Bessel functions, ...) raise AttributeError naming them."""

from oneflow_lite import functional as _F

_NAMES = {"expit": "sigmoid", "gammaln": "lgamma", "psi": "digamma", "multigammaln": "mvlgamma", "gammainc": "igamma",
          "gammaincc": "igammac", **{n: n for n in ("logit", "erf", "erfc", "erfinv", "digamma", "polygamma", "xlogy",
                                                     "log1p", "expm1", "exp2", "sinc", "i0", "round", "softmax",
                                                     "log_softmax", "logsumexp")}}


def __getattr__(name):
    if name in _NAMES:
        return getattr(_F, _NAMES[name])
    raise AttributeError(f"module 'oneflow_lite.special' has no attribute '{name}'")


def __dir__():
    return sorted(_NAMES)
