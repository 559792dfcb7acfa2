"""cpu kernels of shape ops.

Note [Shape ops and views]
The ops PyTorch returns as views return NumPy views of their input here, so the
result shares memory (and, through the eager interpreter, the version counter)
with the input: ``transpose`` (also permute / t), ``slice`` (also narrow),
``expand`` (a read-only broadcast view, as writing to it would write one element
many times), ``split`` and ``unbind`` (one view per output), and ``reshape``,
``flatten``, ``squeeze``, ``expand_dims`` when the input's strides allow it
(always for a contiguous input; otherwise a copy, like ``torch.reshape``). The
others copy, as in PyTorch: ``cat``, ``stack``, ``repeat``, ``flip``, ``roll``,
``tril``, ``triu``, ``pad``, ``pad_grad``.
"""

import numpy as np

from oneflow_lite.framework.dtype import float16
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


def _reshape_to_output(ctx, x):
    return x.reshape(ctx.out_metas[0].shape)


for _op in ("flatten", "squeeze", "expand_dims"):
    cpu_kernel(_op)(_reshape_to_output)


@cpu_kernel("expand")
def expand_cpu(ctx, x):
    return np.broadcast_to(x, ctx.out_metas[0].shape)


@cpu_kernel("repeat")
def repeat_cpu(ctx, x):
    return np.tile(x, ctx.attrs["repeats"])


@cpu_kernel("cat")
def cat_cpu(ctx, *xs):
    return np.concatenate(xs, axis=ctx.attrs["axis"])


@cpu_kernel("stack")
def stack_cpu(ctx, *xs):
    return np.stack(xs, axis=ctx.attrs["axis"])


def _outputs(arrays):
    """A kernel's result: the array itself for one output, else the tuple."""
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


@cpu_kernel("split")
def split_cpu(ctx, x):
    attrs = ctx.attrs
    return _outputs(np.split(x, np.cumsum(attrs["sizes"][:-1]), axis=attrs["axis"]))


@cpu_kernel("unbind")
def unbind_cpu(ctx, x):
    return _outputs(list(np.moveaxis(x, ctx.attrs["axis"], 0)))


@cpu_kernel("flip")
def flip_cpu(ctx, x):
    return np.flip(x, ctx.attrs["dims"]).copy()


@cpu_kernel("roll")
def roll_cpu(ctx, x):
    attrs = ctx.attrs
    dims = attrs["dims"]
    return np.roll(x, attrs["shifts"] if dims else attrs["shifts"][0], axis=dims or None)


@cpu_kernel("tril")
def tril_cpu(ctx, x):
    return np.tril(x, ctx.attrs["diagonal"])


@cpu_kernel("triu")
def triu_cpu(ctx, x):
    return np.triu(x, ctx.attrs["diagonal"])


def _constant_regions(shape, before, after):
    """(region of the unpadded tensor, region of the padded one) that hold the same values."""
    inner, outer = [], []
    for s, b, a in zip(shape, before, after):
        lo, hi = max(0, -b), s - max(0, -a)  # negative padding crops
        inner.append(slice(lo, max(lo, hi)))
        outer.append(slice(max(0, b), max(0, b) + max(0, hi - lo)))
    return tuple(inner), tuple(outer)


def _source_index(mode, n, before, after):
    """For each position of a dim of size ``n`` padded by ``before`` / ``after``, the input index it copies."""
    p = np.arange(-before, n + after)
    if mode == "reflect":
        p = np.abs(p)
        return np.where(p >= n, 2 * (n - 1) - p, p)
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    return p % n  # circular


@cpu_kernel("pad")
def pad_cpu(ctx, x):
    """See Note [Pad modes]."""
    attrs = ctx.attrs
    before, after = attrs["padding_before"], attrs["padding_after"]
    mode = attrs["mode"]
    if mode == "constant":
        m = ctx.out_metas[0]
        y = np.full(m.shape, attrs["value"], dtype=m.np_dtype)  # cast as Tensor.fill_ does (checked by infer)
        inner, outer = _constant_regions(x.shape, before, after)
        y[outer] = x[inner]
        return y
    y = x
    for d, (n, b, a) in enumerate(zip(x.shape, before, after)):
        if b or a:
            y = np.take(y, _source_index(mode, n, b, a), axis=d)
    return y.copy() if y is x else y


@cpu_kernel("pad_grad")
def pad_grad_cpu(ctx, dy):
    """The gradient of ``pad``: each element of ``dy`` is added to the input element it was copied from."""
    attrs = ctx.attrs
    before, after = attrs["padding_before"], attrs["padding_after"]
    m = ctx.out_metas[0]
    if attrs["mode"] == "constant":
        dx = np.zeros(m.shape, m.np_dtype)
        inner, outer = _constant_regions(m.shape, before, after)
        dx[inner] = dy[outer]
        return dx
    acc_dtype = np.float32 if m.dtype is float16 else m.np_dtype
    g = dy
    for d, (n, b, a) in enumerate(zip(m.shape, before, after)):
        if b or a:
            moved = np.moveaxis(g, d, 0)
            acc = np.zeros((n, *moved.shape[1:]), acc_dtype)
            np.add.at(acc, _source_index(attrs["mode"], n, b, a), moved)
            g = np.moveaxis(acc, 0, d)
    return g.astype(m.np_dtype)  # a copy: never dy itself


@cpu_kernel("slice_grad")
def slice_grad_cpu(ctx, dy):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    dx = np.zeros(m.shape, m.np_dtype)
    dx[tuple(map(slice, attrs["start"], attrs["stop"], attrs["step"]))] = dy
    return dx
