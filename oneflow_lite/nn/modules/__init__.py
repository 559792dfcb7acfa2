"""The layers of ``flow.nn``: every class named in a submodule's ``__all__``."""

from oneflow_lite.nn.modules import (
    activation,
    channelshuffle,
    container,
    conv,
    dropout,
    flatten,
    fold,
    linear,
    loss,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)

_SUBMODULES = (activation, container, conv, dropout, flatten, linear, loss, normalization, pooling, rnn, sparse,
               transformer, channelshuffle, fold, padding, pixelshuffle, upsampling)
for _m in _SUBMODULES:
    globals().update((name, getattr(_m, name)) for name in _m.__all__)

__all__ = [name for _m in _SUBMODULES for name in _m.__all__]

