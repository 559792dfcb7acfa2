"""cpu kernels of shape ops.

``reshape`` returns a NumPy view when the input's strides allow it (always for a
contiguous input) and a copy otherwise, like ``torch.reshape``; ``transpose`` and
``slice`` always return views of their input.
"""

from oneflow_lite.kernels.registration import cpu_kernel


@cpu_kernel("reshape")
def reshape_cpu(ctx, x):
    return x.reshape(ctx.out_metas[0].shape)


@cpu_kernel("transpose")
def transpose_cpu(ctx, x):
    return x.transpose(ctx.attrs["perm"])


@cpu_kernel("slice")
def slice_cpu(ctx, x):
    attrs = ctx.attrs
    # The leading Ellipsis keeps a 0-d result an array view (``x[()]`` would give a NumPy scalar).
    return x[(Ellipsis, *map(slice, attrs["start"], attrs["stop"], attrs["step"]))]
