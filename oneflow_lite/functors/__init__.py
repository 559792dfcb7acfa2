"""Functors and the functional API built from them.

Importing this package registers every functor class.
"""

from oneflow_lite.functors import activation  # noqa: F401
