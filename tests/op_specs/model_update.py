"""Optimizer update ops: sgd_update (OneFlow's formula), called out of place: the new value of the model.

The reference computes in float64 and rounds to the model's dtype. In-place use (optim.SGD) is tested in
test_optim.py and test_train_step_ops.py.
"""

import numpy as np
from opinfo import OpSpec, Sample, make, register

from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.interpreters.op_interp_util import dispatch

_SGD = OpBuilder("sgd_update").input("model").input("model_diff").output("out").build()
_SGD_LR = OpBuilder("sgd_update").input("model").input("model_diff").input("learning_rate").output("out").build()


def _sgd_update(model, model_diff, learning_rate=None, **attrs):
    if learning_rate is None:
        return dispatch(_SGD, (model, model_diff), AttrMap(attrs))[0]
    return dispatch(_SGD_LR, (model, model_diff, learning_rate), AttrMap(attrs))[0]


def _sgd_update_ref(model, model_diff, learning_rate=None, learning_rate_val=0.0, scale=1.0, l1=0.0, l2=0.0,
                    weight_decay=0.0):
    m, d = model.astype(np.float64), model_diff.astype(np.float64)
    lr = learning_rate_val if learning_rate is None else float(np.asarray(learning_rate, model.dtype).reshape(()))
    diff = scale * d
    for coef, term in ((l1, np.sign(m)), (l2, m), (weight_decay, m)):
        if coef:  # a term that is off is left out, not added as 0 * m (NaN for an Inf weight)
            diff = diff + coef * term
    return (m - lr * diff).astype(model.dtype)


def _sgd_update_samples(dtype):
    m, d = make((3, 4), dtype), make((3, 4), dtype)
    yield Sample((m, d), {"learning_rate_val": 0.1}, name="plain")
    yield Sample((m, d), {"learning_rate_val": 0.1, "scale": -1.0}, name="maximize")
    yield Sample((m, d), {"learning_rate_val": 0.05, "scale": 0.5, "l1": 0.01, "l2": 0.02, "weight_decay": 0.1},
                 name="every term")
    yield Sample((make((), dtype), make((), dtype)), {"learning_rate_val": 0.3}, name="0-d")
    yield Sample((make((0, 2), dtype), make((0, 2), dtype)), {"learning_rate_val": 0.3}, name="empty")
    yield Sample((m, d, np.array(0.2, dtype.np_dtype)), {"weight_decay": 0.1}, name="0-d learning_rate tensor")
    yield Sample((m, d, np.array([0.2], np.float64)), {}, name="float64 (1,) learning_rate, cast to the model's")


register(
    OpSpec("sgd_update", _sgd_update_ref, _sgd_update_samples, op=_sgd_update, differentiable=False),
)
