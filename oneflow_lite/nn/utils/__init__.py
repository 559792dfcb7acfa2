"""``flow.nn.utils``: gradient clipping, parameters to / from one vector, weight and spectral normalisation;
``flow.nn.utils.rnn``: packed and padded sequences; ``parametrize`` / ``parametrizations``: tensors computed from
others on access; ``prune``: masking parameters; ``fusion``: BatchNorm folded into the layer before it."""

from oneflow_lite.nn.utils import fusion, parametrizations, parametrize, prune, rnn, stateless  # noqa: F401
from oneflow_lite.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from oneflow_lite.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from oneflow_lite.nn.utils.weight_norm import (  # noqa: F401
    remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm,
)
