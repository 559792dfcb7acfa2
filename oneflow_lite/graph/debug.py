"""``graph.debug()``: what a graph prints while it is captured and compiled, and the Python locations of ops.

Levels (OneFlow's ``v_level``): -1 prints nothing (the default); 0 the graph's stages (capture and
compile started and done, with their times); 1 also each module called in ``build()``, with its inputs,
parameters, buffers and outputs (their metas), and the graph's inputs and outputs; 2 also every op the
capture adds, with its inputs' and outputs' metas and the Python source location that made it. Only rank 0
prints unless ``ranks`` says otherwise (``-1``: every rank); a process of oneflow_lite is rank 0.

Note [Op locations]
An op's location is the innermost ``max_py_stack_depth`` frames of the Python stack when it was captured,
skipping oneflow_lite's own frames when ``only_user_py_stack`` (the default): the line of ``build()`` or
of a module's ``forward`` that called it. Locations are recorded only while a graph or one of its modules
is in debug mode, or prints its ops with their locations (``op_repr_with_py_stack``); walking the stack
costs microseconds per op.
"""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # oneflow_lite/


class DebugOptions:
    """The debug settings of a graph or of one of its modules."""

    __slots__ = ("max_py_stack_depth", "only_user_py_stack", "op_repr_with_py_stack", "v_level")

    def __init__(self):
        self.v_level = -1
        self.max_py_stack_depth = 2
        self.only_user_py_stack = True
        self.op_repr_with_py_stack = False

    def set(self, v_level, ranks, max_py_stack_depth, only_user_py_stack, op_repr_with_py_stack, who: str) -> None:
        """Check and apply the arguments of ``debug()`` (``who`` names the caller in errors)."""
        if type(v_level) is not int or not -1 <= v_level <= 3:
            raise ValueError(f"{who}.debug(): v_level must be an int from -1 to 3, got {v_level!r}")
        if type(max_py_stack_depth) is not int or max_py_stack_depth < 0:
            raise ValueError(f"{who}.debug(): max_py_stack_depth must be an int >= 0, got {max_py_stack_depth!r}")
        for name, value in (("only_user_py_stack", only_user_py_stack), ("op_repr_with_py_stack",
                                                                            op_repr_with_py_stack)):
            if not isinstance(value, bool):
                raise TypeError(f"{who}.debug(): {name} must be a bool, got {type(value).__name__}")
        if not this_rank_in(ranks, who):
            return
        self.v_level = v_level
        self.max_py_stack_depth = max_py_stack_depth
        self.only_user_py_stack = only_user_py_stack
        self.op_repr_with_py_stack = op_repr_with_py_stack

    @property
    def records_locations(self) -> bool:
        return self.v_level >= 2 or self.op_repr_with_py_stack


def this_rank_in(ranks, who: str) -> bool:
    """Whether this process (rank 0) is one of ``ranks``: None means rank 0, -1 every rank."""
    if ranks is None:
        return True
    if isinstance(ranks, int) and not isinstance(ranks, bool):
        ranks = [ranks]
    if not isinstance(ranks, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
        raise ValueError(f"{who}.debug(): ranks must be an int or a list of ints, got {ranks!r}")
    return -1 in ranks or 0 in ranks


def emit(options: DebugOptions, v_level: int, message) -> None:
    """Print ``message`` (a string, or a function making one) when ``options`` are at ``v_level`` or above."""
    if options.v_level >= v_level:
        print(message() if callable(message) else message, flush=True)


def python_location(options: DebugOptions) -> str:
    """The Python stack where an op is being captured (Note [Op locations])."""
    frames = []
    f = sys._getframe(1)
    while f is not None and len(frames) < options.max_py_stack_depth:
        path = f.f_code.co_filename
        if not (options.only_user_py_stack and path.startswith((_PACKAGE_DIR, "<"))):
            frames.append(f"Python stack[{-len(frames) - 1}]: '{f.f_code.co_name}' at '{path}': line {f.f_lineno}")
        f = f.f_back
    return "; ".join(frames)


def meta_repr(meta, lazy: bool = True) -> str:
    """OneFlow's ``Tensor._meta_repr()``: ``tensor(..., is_lazy='True', size=(2, 3), dtype=oneflow_lite.float32)``."""
    dims = ", ".join(map(str, meta.shape))
    if len(meta.shape) == 1:
        dims += ","
    lazy_text = "is_lazy='True', " if lazy else ""
    return f"tensor(..., {lazy_text}device='{meta.device}', size=({dims}), dtype=oneflow_lite.{meta.dtype.name})"


def value_repr(value, lazy: bool = True) -> tuple:
    """(whether ``value`` is a tensor, its meta text or its type) for an input / output line."""
    meta = getattr(value, "_meta", None)
    if meta is not None:
        return True, meta_repr(meta, lazy)
    return False, str(type(value))


def blob_repr(lbn: str, meta) -> str:
    return f"{lbn}:(size=({', '.join(map(str, meta.shape))}), dtype=(oneflow_lite.{meta.dtype.name}))"


def operator_repr(conf, metas: dict, location: str | None = None) -> str:
    """``(OPERATOR: name(in_lbn:(size, dtype), ...) -> (out_lbn:(...), ...), location=(...))`` of one op conf."""
    kind = conf.WhichOneof("op_type")
    if kind == "user_conf":
        uc = conf.user_conf
        ins = [lbn for arg in uc.input_order for lbn in uc.input[arg].s]
        outs = [lbn for arg in uc.output_order for lbn in uc.output[arg].s]
    elif kind == "output_conf":
        ins, outs = [getattr(conf.output_conf, "in")], []
    else:
        ins, outs = [], [f"{conf.name}/{getattr(conf, kind).out}"]
    text = (f"(OPERATOR: {conf.name}({', '.join(blob_repr(b, metas[b]) for b in ins if b in metas)}) -> "
            f"({', '.join(blob_repr(b, metas[b]) for b in outs if b in metas)})")
    if location:
        text += f", location=({location})"
    return text + ")"


def add_indent(text: str, spaces: int) -> str:
    """Indent every line of ``text`` but the first by ``spaces`` (OneFlow's ``add_indent``)."""
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])
