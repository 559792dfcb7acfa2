"""``flow.sbp``: how a global tensor's logical value is laid over the ranks of one placement dimension.

- ``split(dim)``: each rank holds a slice along ``dim``; the slices, concatenated in rank order, are the
  logical tensor. Uneven sizes follow OneFlow's balanced splitter: the first ``size % n`` ranks hold one
  more row (Note [Balanced splits]).
- ``broadcast``: every rank holds the whole logical tensor.
- ``partial_sum``: every rank holds a tensor of the logical shape; the logical value is their sum.
- ``partial_max`` (internal, as in OneFlow: a max over a split dim gives it; users do not make it): every rank
  holds a tensor of the logical shape; the logical value is their elementwise maximum. ``partial_min``: the
  same with the minimum (a min over a split dim gives it).

An nd-SBP is a tuple with one SBP per placement dimension. SBP objects are interned and compare by
identity.
"""

from __future__ import annotations

__all__ = ["broadcast", "partial_sum", "sbp", "split"]


class sbp:
    """One SBP: ``split(dim)``, ``broadcast`` or ``partial_sum`` (made by those names, never directly)."""

    __slots__ = ("dim", "kind")

    def __repr__(self):
        if self.kind == "S":
            return f"oneflow_lite.sbp.split(dim={self.dim})"
        return {"B": "oneflow_lite.sbp.broadcast", "P": "oneflow_lite.sbp.partial_sum",
                "M": "oneflow_lite.sbp.partial_max", "m": "oneflow_lite.sbp.partial_min"}[self.kind]

    def __call__(self):
        """``flow.sbp.broadcast()`` is ``flow.sbp.broadcast`` (OneFlow accepts both spellings)."""
        return self

    def __reduce__(self):
        return (split, (self.dim,)) if self.kind == "S" else (_named, (self.kind,))

    @property
    def is_split(self) -> bool:
        return self.kind == "S"

    @property
    def is_partial(self) -> bool:
        """partial_sum, partial_max or partial_min: every rank holds the logical shape, reduced to get the value."""
        return self.kind in "PMm"

    def short(self) -> str:
        """``S(0)``, ``B``, ``P``, ``P(max)`` or ``P(min)`` (for error messages and job annotations)."""
        return f"S({self.dim})" if self.kind == "S" else _SHORT.get(self.kind, self.kind)


def _make(kind: str, dim: int | None) -> sbp:
    s = object.__new__(sbp)
    s.kind = kind
    s.dim = dim
    return s


broadcast = _make("B", None)
partial_sum = _make("P", None)
partial_max = _make("M", None)
partial_min = _make("m", None)
_SHORT = {"M": "P(max)", "m": "P(min)"}
_splits = [_make("S", d) for d in range(8)]


def _named(kind: str) -> sbp:
    return {"B": broadcast, "P": partial_sum, "M": partial_max, "m": partial_min}[kind]


def split(dim: int) -> sbp:
    """The SBP splitting dimension ``dim`` (a non-negative int) over the ranks."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
        raise ValueError(f"flow.sbp.split: dim must be a non-negative int, got {dim!r}")
    while dim >= len(_splits):
        _splits.append(_make("S", len(_splits)))
    return _splits[dim]


def as_nd_sbp(value, ndim: int, what: str = "sbp") -> tuple:
    """``value`` (one SBP or a sequence of them) as an nd-SBP of ``ndim`` entries."""
    if isinstance(value, sbp):
        value = (value,)
    elif isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple) or not all(isinstance(s, sbp) for s in value):
        raise TypeError(f"{what}: expected flow.sbp.split(d), flow.sbp.broadcast or flow.sbp.partial_sum, or a "
                        f"tuple of them (one per placement dimension), got {value!r}")
    if len(value) != ndim:
        raise ValueError(f"{what}: a placement of {ndim} dimension(s) needs {ndim} SBP(s), got {len(value)}: "
                         f"{format_nd_sbp(value)}")
    return value


def parse_short(text: str) -> sbp:
    """The SBP that :meth:`sbp.short` wrote as ``text`` (a ValueError otherwise)."""
    if text.startswith("S(") and text.endswith(")") and text[2:-1].isdigit():
        return split(int(text[2:-1]))
    found = {"B": broadcast, "P": partial_sum, "P(max)": partial_max, "P(min)": partial_min}.get(text)
    if found is None:
        raise ValueError(f"not an SBP: {text!r} (expected S(d), B, P, P(max) or P(min))")
    return found


def format_nd_sbp(nd_sbp) -> str:
    return "(" + ", ".join(s.short() for s in nd_sbp) + ")"


# Note [Balanced splits]
# n ranks split a dim of ``size`` as OneFlow's BalancedSplitter does: part i has ``size // n`` rows plus one
# for the first ``size % n`` parts, and starts at ``i * (size // n) + min(i, size % n)``. An nd-SBP splits
# one placement dimension after the other: the part of the first dimension is split again by the second.
def part(size: int, n: int, i: int) -> tuple:
    """``(start, length)`` of part ``i`` of ``n`` of a dim of ``size`` (Note [Balanced splits])."""
    base, rem = divmod(size, n)
    return i * base + min(i, rem), base + (1 if i < rem else 0)


def part_sizes(size: int, n: int) -> list:
    base, rem = divmod(size, n)
    return [base + (1 if i < rem else 0) for i in range(n)]


def local_slices(shape: tuple, nd_sbp: tuple, hierarchy: tuple, coord: tuple) -> tuple:
    """The slice of the logical tensor of ``shape`` held at ``coord`` of the placement (one slice per dim)."""
    starts = [0] * len(shape)
    sizes = list(shape)
    for s, n, i in zip(nd_sbp, hierarchy, coord):
        if s.kind == "S":
            d = s.dim
            off, sizes[d] = part(sizes[d], n, i)
            starts[d] += off
    return tuple(slice(a, a + b) for a, b in zip(starts, sizes))


def local_shape(shape: tuple, nd_sbp: tuple, hierarchy: tuple, coord: tuple) -> tuple:
    """The shape of the piece of the logical tensor of ``shape`` held at ``coord`` (its physical shape)."""
    sizes = list(shape)
    for s, n, i in zip(nd_sbp, hierarchy, coord):
        if s.kind == "S":
            sizes[s.dim] = part(sizes[s.dim], n, i)[1]
    return tuple(sizes)


def check_nd_sbp(shape: tuple, nd_sbp: tuple, what: str) -> None:
    """Every split dim of ``nd_sbp`` must exist in ``shape``."""
    for s in nd_sbp:
        if s.kind == "S" and s.dim >= len(shape):
            raise ValueError(f"{what}: {s!r} splits dim {s.dim} of a tensor of {len(shape)} dim(s) "
                             f"(shape {list(shape)})")


# ---- the Job proto's NdSbp (OneFlow's SbpParallel: split_parallel.axis, broadcast_parallel, partial_sum_parallel)
_PROTO_KINDS = {"B": "broadcast_parallel", "P": "partial_sum_parallel", "M": "partial_max_parallel",
                "m": "partial_min_parallel"}
_FROM_PROTO = {"broadcast_parallel": broadcast, "partial_sum_parallel": partial_sum,
               "partial_max_parallel": partial_max, "partial_min_parallel": partial_min}


def nd_sbp_to_proto(nd_sbp: tuple, out) -> None:
    """Append ``nd_sbp`` to the ``NdSbp`` proto ``out``."""
    for s in nd_sbp:
        p = out.sbp_parallel.add()
        if s.kind == "S":
            p.split_parallel.axis = s.dim
        else:
            getattr(p, _PROTO_KINDS[s.kind]).SetInParent()


def nd_sbp_from_proto(nd_sbp_proto) -> tuple:
    """The nd-SBP an ``NdSbp`` proto records."""
    out = []
    for p in nd_sbp_proto.sbp_parallel:
        kind = p.WhichOneof("parallel_type")
        out.append(split(p.split_parallel.axis) if kind == "split_parallel" else _FROM_PROTO[kind])
    return tuple(out)
