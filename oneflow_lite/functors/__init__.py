"""Functors and the functional API built from them.

Importing this package registers every functor (classes, rule instances and composites).
"""

from oneflow_lite.functors import activation  # noqa: F401
from oneflow_lite.functors import math  # noqa: F401
from oneflow_lite.functors import unary  # noqa: F401
from oneflow_lite.functors import binary  # noqa: F401
from oneflow_lite.functors import shape  # noqa: F401
from oneflow_lite.functors import linalg  # noqa: F401
from oneflow_lite.functors import conversion  # noqa: F401
from oneflow_lite.functors import creation  # noqa: F401
from oneflow_lite.functors import indexing  # noqa: F401
from oneflow_lite.functors import index  # noqa: F401
from oneflow_lite.functors import nn  # noqa: F401
from oneflow_lite.functors import rnn  # noqa: F401
from oneflow_lite.functors import fake_quant  # noqa: F401
from oneflow_lite.functors import conv  # noqa: F401
from oneflow_lite.functors import reduce  # noqa: F401
from oneflow_lite.functors import global_cast  # noqa: F401
from oneflow_lite.functors import global_creation  # noqa: F401
