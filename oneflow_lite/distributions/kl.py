"""``kl_divergence`` and ``register_kl``: PyTorch's table of KL(p || q) by the pair of distribution types
(Normal / Normal, Categorical / Categorical, Independent / Independent, MultivariateNormal / MultivariateNormal)."""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.distributions.categorical import Categorical
from oneflow_lite.distributions.independent import Independent
from oneflow_lite.distributions.multivariate_normal import MultivariateNormal
from oneflow_lite.distributions.normal import Normal

_KL = {}


def register_kl(type_p, type_q):
    """Decorator: ``fn(p, q)`` computes KL(p || q) for distributions of these types (and their subclasses)."""
    def decorator(fn):
        _KL[type_p, type_q] = fn
        return fn
    return decorator


def kl_divergence(p, q):
    """KL(p || q), batched over the distributions' batch shape."""
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            if (tp, tq) in _KL:
                return _KL[tp, tq](p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                              f"{type(q).__name__}")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = F.where((q.probs == 0).expand_as(t), float("inf"), t)
    return F.where((p.probs == 0).expand_as(t), 0.0, t).sum(-1)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different event dims is not implemented")
    return p._sum_rightmost(kl_divergence(p.base_dist, q.base_dist))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    k = p.event_shape[0]
    m = F.linalg_solve_triangular(q.scale_tril, p.scale_tril, upper=False)
    diff = F.linalg_solve_triangular(q.scale_tril, (q.loc - p.loc).unsqueeze(-1), upper=False).squeeze(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * (m.pow(2).sum((-2, -1)) + diff.pow(2).sum(-1) - k)
