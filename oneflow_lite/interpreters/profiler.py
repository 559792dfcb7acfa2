"""The handler at the Profiler key and the recorder it writes to (``flow.profiler`` is the user API).

Note [Profiler records]
While a thread profiles, the Profiler key is in its included key set and the
thread's ``Recorder`` is current. The Profiler key is the outermost
(Note [Dispatch key order]), so ``profiler_interpreter`` times each op call with
everything below it: autocast, autograd recording, Python modes, lazy capture,
the kernel. It keeps per call only what is cheap to take: the op expr, the
call's key set, the input metas (with ``record_shapes``), the attrs, two
``perf_counter_ns`` readings and the nesting depth, as one tuple appended when
the call ends (also when it raises). Names, shapes, dispatch key paths, self
times and parents are worked out from these when the events are built, after
recording. Ranges (``record_function``, the backward run, a compiled graph's
run) are records of the same form whose label is a ``Range``.

Because records are appended in the order calls *end* and carry their depth, a
record's children are exactly the records one level deeper appended since the
previous record at its own level (``nest`` in profiler/events.py): nesting needs no stack of open
events while recording.
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path

from oneflow_lite.dispatch.dispatch_key import DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import set_global_included
from oneflow_lite.interpreters.op_interp_util import redispatch

PROFILER_KEY_SET = 1 << DispatchKey.Profiler
_BELOW = keys_below(DispatchKey.Profiler)
_now = time.perf_counter_ns
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])


class Range:
    """The label of a range record: a name, a kind ("user_annotation", "backward", "graph") and args."""

    __slots__ = ("args", "kind", "name")

    def __init__(self, name: str, kind: str, args=None):
        self.name = name
        self.kind = kind
        self.args = args


class Recorder:
    """What one thread records between the start and the end of one profiling cycle
    (Note [Profiler records]). ``records``: tuples ``(label, key_set, input_metas, attrs, start_ns,
    end_ns, depth, backward, extra)``; ``extra`` is None or ``(self bytes allocated, stack)``."""

    __slots__ = ("backward", "depth", "open", "profile_memory", "record_shapes", "records", "start_ns", "thread",
                 "wants_extra", "with_stack")

    def __init__(self, record_shapes=True, profile_memory=False, with_stack=False):
        self.records = []
        self.depth = 0
        self.backward = 0  # > 0 while the autograd engine runs in this thread
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.wants_extra = bool(profile_memory or with_stack)
        self.thread = threading.get_native_id()
        self.open = True
        self.start_ns = _now()

    def extra(self, outs, outputs):
        """``(bytes the call allocated, user stack)`` when memory or stacks are recorded, else None."""
        if not self.wants_extra:
            return None
        nbytes = 0
        if self.profile_memory and outputs is None and outs:
            for t in outs:
                a = getattr(t, "_array", None)
                if a is not None and a.base is None:
                    nbytes += a.nbytes
        return nbytes, user_stack() if self.with_stack else None


class _Current(threading.local):
    recorder = None


_current = _Current()

# Note [Profiling all threads]
# A profile with ``profile_all_threads`` (PyTorch's ``_ExperimentalConfig`` option) records the ops of every
# thread: the Profiler key is included in every thread (Note [Process-wide included keys] in dispatch/tls.py),
# and ``_ALL_THREADS[0]`` is that profile's ``AllThreads``, which gives each thread that calls an op or opens a
# range its own ``Recorder`` on first use (threads never share one, so recording needs no lock). When the cycle
# ends the recorders are closed; a thread still holding one finds it closed and asks again.
_ALL_THREADS = [None]


class AllThreads:
    """The recorders of the threads of a profile that records every thread (Note [Profiling all threads])."""

    def __init__(self, make_recorder):
        self._make = make_recorder
        self._lock = threading.Lock()
        self.recorders = []

    def join(self):
        """A new recorder for the calling thread, kept in ``recorders``."""
        rec = self._make()
        with self._lock:
            self.recorders.append(rec)
        return rec

    def close(self) -> list:
        """Close every recorder; returns them."""
        with self._lock:
            for rec in self.recorders:
                rec.open = False
            return list(self.recorders)


def record_all_threads(hub) -> None:
    """Make ``hub`` (an ``AllThreads``, or None to stop) the recording of every thread."""
    _ALL_THREADS[0] = hub
    set_global_included(PROFILER_KEY_SET if hub is not None else 0)


def current_recorder():
    """This thread's recorder, or None when the thread does not profile (Note [Profiling all threads])."""
    rec = _current.recorder
    if rec is not None and rec.open:
        return rec
    hub = _ALL_THREADS[0]
    if hub is None:
        return None
    rec = _current.recorder = hub.join()
    return rec


def set_recorder(recorder) -> None:
    """Make ``recorder`` (or None) this thread's recorder; the caller includes / removes the Profiler key."""
    _current.recorder = recorder


def user_stack() -> list:
    """The calling frames outside the package, innermost first, as ``file(line): function``."""
    frames = traceback.extract_stack()[:-1]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)
            if not f.filename.startswith(_PACKAGE_DIR)]


def profiler_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Time the call with everything below the Profiler key (Note [Profiler records])."""
    rec = _current.recorder
    if rec is None or not rec.open:
        rec = current_recorder()
        if rec is None:
            return redispatch(op_expr, ks & _BELOW, inputs, attrs, outputs)
    depth = rec.depth
    rec.depth = depth + 1
    metas = tuple([t._meta for t in inputs]) if rec.record_shapes else None
    outs = None
    start = _now()
    try:
        outs = redispatch(op_expr, ks & _BELOW, inputs, attrs, outputs)
    finally:
        end = _now()
        rec.depth = depth
        rec.records.append((op_expr, ks, metas, attrs, start, end, depth, rec.backward,
                            rec.extra(outs, outputs) if rec.wants_extra else None))
    return outs


class RangeToken:
    """An open range: ``end()`` closes it (once)."""

    __slots__ = ("depth", "label", "recorder", "start")

    def __init__(self, recorder, label, depth, start):
        self.recorder = recorder
        self.label = label
        self.depth = depth
        self.start = start

    def end(self) -> None:
        rec = self.recorder
        if rec is None:
            return
        self.recorder = None
        end = _now()
        if rec.open:
            rec.depth = self.depth
            rec.records.append((self.label, 0, None, None, self.start, end, self.depth, rec.backward,
                                rec.extra(None, None)))


def begin_range(name: str, kind: str = "user_annotation", args=None):
    """Open a range in this thread's recording; None when the thread does not profile."""
    rec = current_recorder()
    if rec is None:
        return None
    depth = rec.depth
    rec.depth = depth + 1
    return RangeToken(rec, Range(name, kind, args), depth, _now())


def register():
    """Register the handler as the fallback at the Profiler key; returns the handle."""
    return DISPATCHER.register_fallback(DispatchKey.Profiler, profiler_interpreter)
