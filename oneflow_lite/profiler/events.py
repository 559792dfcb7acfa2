"""Profiler events: ``FunctionEvent`` (one recorded call or range), ``FunctionEventAvg`` (the events of one
key, summed), ``EventList`` with ``key_averages()``, ``table()`` and ``export_chrome_trace()``, PyTorch's
names and columns; times are in microseconds.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

from oneflow_lite.dispatch.dispatch_key import BACKEND_KEY_SET, DispatchKey, keys_of
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.interpreters.profiler import Range
from oneflow_lite.profiler.names import functional_names
from oneflow_lite.profiler.table import build_table


class Interval:
    """``start`` and ``end`` in microseconds since the profile started."""

    __slots__ = ("end", "start")

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class FunctionEvent:
    """One op call (``kind == "op"``) or range (``"user_annotation"``, ``"backward"``, ``"graph"``).

    ``name``: the functional API name of an op call where one function builds the op expr, else its op type;
    ``op_type``; ``dispatch_keys``: the keys that handled the call, outermost first; ``input_shapes`` and
    ``input_dtypes`` (with ``record_shapes``); ``is_backward``: run by the autograd engine; ``cpu_parent`` and
    ``cpu_children``: the enclosing event and the events directly inside; ``args``: extra values of a range
    (a graph run's op counts).
    """

    def __init__(self, id, name, kind, start_ns, end_ns, thread, *, op_type=None, dispatch_keys=(),
                 input_shapes=None, input_dtypes=None, is_backward=False, args=None, memory=0, stack=None, flops=0):
        self.id = id
        self.name = name
        self.kind = kind
        self.op_type = op_type
        self.dispatch_keys = dispatch_keys
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_dtypes = input_dtypes if input_dtypes is not None else []
        self.is_backward = is_backward
        self.args = args or {}
        self.thread = thread
        self.time_range = Interval(start_ns / 1000.0, end_ns / 1000.0)
        self._start_ns, self._end_ns = start_ns, end_ns
        self.self_cpu_memory_usage = memory
        self.stack = stack or []
        self.flops = flops
        self.count = 1
        self.cpu_parent = None
        self.cpu_children = []

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return (self._end_ns - self._start_ns) / 1000.0

    cpu_time = cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return (self._end_ns - self._start_ns - sum(c._end_ns - c._start_ns for c in self.cpu_children)) / 1000.0

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} kind={self.kind} cpu_time={self.cpu_time_total:.3f}us "
                f"self_cpu_time={self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes} "
                f"is_backward={self.is_backward}>")


class FunctionEventAvg:
    """The events sharing one key (name; with the input shapes and stack when grouped by them), summed."""

    def __init__(self, key, input_shapes=None, stack=None):
        self.key = key
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack or []
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.flops = 0
        self.is_backward = False
        self.cpu_parent = None

    def add(self, evt) -> None:
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.cpu_memory_usage += evt.cpu_memory_usage
        self.self_cpu_memory_usage += evt.self_cpu_memory_usage
        self.flops += evt.flops
        self.is_backward = self.is_backward or evt.is_backward

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us "
                f"self_cpu_time_total={self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's summaries; ``profile_memory``: show the memory columns."""

    def __init__(self, events=(), profile_memory=False):
        super().__init__(events)
        self.profile_memory = profile_memory

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events grouped by name (and input shapes / the first ``group_by_stack_n`` stack frames)."""
        groups = {}
        for evt in self:
            key = (evt.key, str(evt.input_shapes) if group_by_input_shape else None,
                   tuple(evt.stack[:group_by_stack_n]) if group_by_stack_n > 0 else None)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(evt.key, evt.input_shapes if group_by_input_shape else None,
                                                     evt.stack[:group_by_stack_n] if group_by_stack_n > 0 else None)
            avg.add(evt)
        return EventList(groups.values(), self.profile_memory)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, max_shapes_column_width=80,
              header=None, top_level_events_only=False, max_src_column_width=75, time_unit=None) -> str:
        """PyTorch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls (and the
        memory, input shapes, flops and source location columns when recorded)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit, max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           top_level_events_only=top_level_events_only, max_src_column_width=max_src_column_width,
                           time_unit=time_unit, profile_memory=self.profile_memory)

    def export_chrome_trace(self, path) -> None:
        """Write the events as trace-event JSON (complete events, ``"ph": "X"``) for Perfetto or
        chrome://tracing."""
        with open(path, "w") as f:
            json.dump(chrome_trace(self), f)


_CATEGORIES = {"op": "cpu_op", "user_annotation": "user_annotation", "backward": "cpu_op", "graph": "graph"}


def chrome_trace(events) -> dict:
    """The trace-event JSON object of ``events`` (a list of FunctionEvent)."""
    pid = os.getpid()
    trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "oneflow_lite"}}]
    for tid in sorted({e.thread for e in events}):
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}})
    for e in sorted(events, key=lambda e: (e._start_ns, -e._end_ns)):
        args = {"External id": e.id}
        if e.op_type is not None:
            args["Op Type"] = e.op_type
            args["Dispatch Keys"] = " > ".join(e.dispatch_keys)
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
            args["Input type"] = e.input_dtypes
        if e.is_backward:
            args["Backward"] = True
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if e.self_cpu_memory_usage:
            args["Self CPU Mem"] = e.self_cpu_memory_usage
        if e.flops:
            args["FLOPs"] = e.flops
        args.update(e.args)
        trace.append({"ph": "X", "cat": _CATEGORIES[e.kind], "name": e.name, "pid": pid, "tid": e.thread,
                      "ts": e._start_ns / 1000.0, "dur": (e._end_ns - e._start_ns) / 1000.0, "args": args})
    return {"traceEvents": trace, "displayTimeUnit": "ms"}


# ---- building events from records -----------------------------------------------------------------
def dispatch_path(ks: int) -> tuple:
    """The keys that handle a call with key set ``ks``: its functionality keys, outermost first, then the
    backend that runs it (the highest backend key)."""
    keys = [k.name for k in keys_of(ks & ~BACKEND_KEY_SET)]
    backends = ks & BACKEND_KEY_SET
    if backends:
        keys.append(DispatchKey(backends.bit_length() - 1).name)
    return tuple(keys)


def _op_fields(op_expr, ks, metas, attrs, flop_rules):
    """(name, op type, dispatch keys, input shapes, dtypes, flops) of one op call."""
    op_type = getattr(op_expr, "op_type_name", None) or type(op_expr).__name__
    name = functional_names().get(op_expr, op_type) if type(op_expr) is UserOpExpr else op_type
    shapes = [list(m.shape) for m in metas] if metas is not None else None
    dtypes = [m.dtype.name for m in metas] if metas is not None else None
    flops = 0
    if flop_rules is not None and metas is not None and type(op_expr) is UserOpExpr:
        rule = flop_rules.get(op_type)
        if rule is not None and not getattr(rule, "_get_raw", False):
            res = op_expr.infer(metas, attrs)
            outs = tuple(m.shape for m in res.out_metas)
            flops = rule(*[m.shape for m in metas], out_shape=outs[0] if len(outs) == 1 else outs, **dict(res.attrs))
    return name, op_type, dispatch_path(ks), shapes, dtypes, flops


def build_events(records, base_ns: int, thread: int, first_id: int = 0, flop_rules=None) -> list:
    """The events of a recorder's records, with parents and children (``nest``), in start order."""
    events = []
    for i, (label, ks, metas, attrs, start, end, depth, backward, extra) in enumerate(records):
        memory, stack = extra if extra is not None else (0, None)
        common = {"is_backward": backward > 0, "memory": memory, "stack": stack}
        if type(label) is Range:
            evt = FunctionEvent(first_id + i, label.name, label.kind, start - base_ns, end - base_ns, thread,
                                args=label.args, **common)
        else:
            name, op_type, keys, shapes, dtypes, flops = _op_fields(label, ks, metas, attrs, flop_rules)
            evt = FunctionEvent(first_id + i, name, "op", start - base_ns, end - base_ns, thread, op_type=op_type,
                                dispatch_keys=keys, input_shapes=shapes, input_dtypes=dtypes, flops=flops, **common)
        events.append((evt, depth))
    nest(events)
    return sorted((e for e, _ in events), key=lambda e: (e._start_ns, -e._end_ns, e.id))


def nest(events_and_depths) -> None:
    """Link parents and children: the records arrive in the order their calls ended, so the children of a
    record at depth d are the records at depth d + 1 since the previous record at depth d (Note [Profiler
    records])."""
    waiting = defaultdict(list)  # depth -> ended events whose parent has not ended yet
    for evt, depth in events_and_depths:
        children = waiting.pop(depth + 1, None)
        if children:
            evt.cpu_children = children
            for c in children:
                c.cpu_parent = evt
        waiting[depth].append(evt)
