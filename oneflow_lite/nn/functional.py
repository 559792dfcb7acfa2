"""``flow.nn.functional``: the functional API's neural-network functions under PyTorch's names.

Each name here is the same ``FunctionalFunction`` object as ``flow._C.<name>``.
"""

from oneflow_lite import functional as _F

# Names exposed here; each must exist in functors/functional_api.py.
_NN_NAMES = (
    "relu",
)

for _name in _NN_NAMES:
    globals()[_name] = getattr(_F, _name)

__all__ = list(_NN_NAMES)
