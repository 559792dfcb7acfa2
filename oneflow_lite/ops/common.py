"""Shared infer functions and dtype groups for op definitions."""

from __future__ import annotations

from oneflow_lite.framework import dtype as dt

NUMERIC_DTYPES = dt.NUMERIC_DTYPES
ALL_DTYPES = dt.ALL_DTYPES


def same_shape(ctx):
    """The output has the shape of the first input."""
    return ctx.input_metas[0].shape


def same_dtype(ctx):
    """The output has the dtype of the first input."""
    return ctx.input_metas[0].dtype


def broadcast_shapes(op_type: str, *shapes) -> tuple:
    """NumPy / PyTorch broadcasting of ``shapes``; a clear error naming the op when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d != 1:
                if size != 1 and d != size:
                    raise RuntimeError(f"{op_type}: shapes {' and '.join(str(tuple(x)) for x in shapes)} cannot be "
                                       f"broadcast together (dimension {i}: {size} vs {d})")
                size = d
        out.append(size)
    return tuple(out)


def not_implemented_row(message: str):
    """A joint gradient row (framework/derivatives.py) for an op whose derivative is not implemented: backward
    through the op raises ``NotImplementedError(message)``."""
    def joint():
        raise NotImplementedError(message)
    return joint
