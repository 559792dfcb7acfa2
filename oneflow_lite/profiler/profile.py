"""``flow.profiler.profile``, ``record_function``, ``schedule`` and ``tensorboard_trace_handler`` (PyTorch's
``torch.profiler`` API over the Profiler key, Note [Profiler records]).

Note [Profiling cycles]
A profile records in cycles. Without a ``schedule`` there is one, from ``__enter__``
to ``__exit__``. With ``schedule(wait, warmup, active, repeat, skip_first)`` each
``prof.step()`` asks the schedule for the next step's action: a cycle starts at the
first recording step and ends after its ``RECORD_AND_SAVE`` step, when
``on_trace_ready(prof)`` is called and ``prof.events()`` holds that cycle's events;
each recorded step is a ``ProfilerStep#<n>`` range. Warm-up steps record nothing
(there is no device tracer to warm up). While a cycle records, the thread that
entered the profile has the Profiler key in its included set and a recorder of
its own; between cycles, and in every other thread, nothing is recorded or paid (unless the profile records
all threads, Note [Profiling all threads] in interpreters/profiler.py).
"""

from __future__ import annotations

import enum
import functools
import gzip
import json
import os
import socket
import threading
import time
import warnings
import weakref
from collections import Counter
from contextlib import ContextDecorator, nullcontext

from oneflow_lite.autograd.engine import add_backward_observer
from oneflow_lite.dispatch.tls import set_included
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.graph.graph import add_run_observer
from oneflow_lite.interpreters.profiler import (
    PROFILER_KEY_SET, AllThreads, Recorder, begin_range, current_recorder, record_all_threads, set_recorder,
)
from oneflow_lite.profiler.events import EventList, build_events, chrome_trace
from oneflow_lite.utils.flop_counter import flop_registry


class ProfilerActivity(enum.Enum):
    """What to profile; oneflow_lite runs on the CPU, so ``CPU`` is the one recorded."""

    CPU = "CPU"
    CUDA = "CUDA"
    XPU = "XPU"
    MTIA = "MTIA"
    PrivateUse1 = "PrivateUse1"


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    """What a profile does at a step (the value a schedule returns)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def _check_count(name, value, minimum):
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"schedule(): {name} must be an int >= {minimum}, got {value!r}")


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0):
    """PyTorch's schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle steps, ``warmup`` steps and
    ``active`` recorded steps, ``repeat`` times (0: until the profile ends); ``skip_first_wait`` drops the first
    cycle's wait (Note [Profiling cycles])."""
    for name, value, minimum in (("wait", wait, 0), ("warmup", warmup, 0), ("active", active, 1),
                                 ("repeat", repeat, 0), ("skip_first", skip_first, 0),
                                 ("skip_first_wait", skip_first_wait, 0)):
        _check_count(name, value, minimum)
    return functools.partial(_scheduled_action, wait, warmup, active, repeat, skip_first, skip_first_wait)


def _scheduled_action(wait, warmup, active, repeat, skip_first, skip_first_wait, step: int) -> ProfilerAction:
    if step < skip_first:
        return ProfilerAction.NONE
    step -= skip_first
    if skip_first_wait:
        step += wait
    cycle = wait + warmup + active
    if repeat > 0 and step // cycle >= repeat:
        return ProfilerAction.NONE
    k = step % cycle
    if k < wait:
        return ProfilerAction.NONE
    if k < wait + warmup:
        return ProfilerAction.WARMUP
    return ProfilerAction.RECORD if k < cycle - 1 else ProfilerAction.RECORD_AND_SAVE


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip: bool = False):
    """An ``on_trace_ready`` that writes each cycle's chrome trace to ``dir_name`` as
    ``<worker_name>.<time in ns>.pt.trace.json`` (``.gz`` with ``use_gzip``), PyTorch's names."""
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        path = os.path.join(dir_name, f"{worker}.{time.time_ns()}.pt.trace.json")
        text = json.dumps(chrome_trace(prof.events()))
        if use_gzip:
            with gzip.open(path + ".gz", "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)
    return handler


class record_function(ContextDecorator):
    """A named range in the profile (a context manager or a decorator): the ops inside nest in it."""

    def __init__(self, name: str, args=None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(name): name must be a str, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._token = None

    def _recreate_cm(self):
        return record_function(self.name, self.args)  # a decorated function may recurse: one range per call

    def __enter__(self):
        self._token = begin_range(self.name, "user_annotation", {"args": self.args} if self.args else None)
        return self

    def __exit__(self, *exc):
        token, self._token = self._token, None
        if token is not None:
            token.end()
        return False


def _check_activities(activities) -> bool:
    """Whether the CPU is profiled; warns about the activities oneflow_lite has nothing to record for."""
    if activities is None:
        return True
    activities = list(activities)
    for a in activities:
        if not isinstance(a, ProfilerActivity):
            raise TypeError(f"profile(activities=...): expected ProfilerActivity values, got {a!r}")
    others = [a.name for a in activities if a is not ProfilerActivity.CPU]
    if others:
        warnings.warn(f"profile(activities=...): {', '.join(others)} is not available in oneflow_lite (it runs on "
                      f"the CPU); only CPU activity is recorded", stacklevel=3)
    return ProfilerActivity.CPU in activities


class _ExperimentalConfig:
    """PyTorch's ``torch.profiler._ExperimentalConfig``, with its one option that applies here:
    ``profile_all_threads`` records the ops of every thread, not only the thread that entered the profile
    (Note [Profiling all threads]); each event keeps its thread's native id (the chrome trace's ``tid``)."""

    def __init__(self, *, profile_all_threads: bool = False):
        if not isinstance(profile_all_threads, bool):
            raise TypeError(f"_ExperimentalConfig(profile_all_threads=...): expected a bool, got "
                            f"{profile_all_threads!r}")
        self.profile_all_threads = profile_all_threads


class profile:
    """Record the op calls of this thread (PyTorch's ``torch.profiler.profile``; Note [Profiling cycles]).

    Each op call is an event: its functional name where available, op type, dispatch keys, input shapes and
    dtypes (``record_shapes``), wall time and self time (without the op calls nested in it); ops run by
    backward are marked ``is_backward``; each compiled nn.Graph run is one event with its op counts;
    ``record_function`` ranges nest events. ``profile_memory`` records the bytes each call allocates,
    ``with_stack`` the user frames of each call, ``with_flops`` the FLOPs of the ops FlopCounterMode counts.
    ``with_modules`` is accepted for PyTorch code (which records TorchScript module scopes with it) and does
    nothing. ``experimental_config=_ExperimentalConfig(profile_all_threads=True)`` records every thread's ops,
    each with its thread id (Note [Profiling all threads]); by default, as PyTorch's, only this thread's.

        with flow.profiler.profile() as prof:
            model(x).sum().backward()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
        prof.export_chrome_trace("trace.json")
    """

    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None, record_shapes=True,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None):
        self._cpu = _check_activities(activities)
        if experimental_config is not None and not isinstance(experimental_config, _ExperimentalConfig):
            raise TypeError(f"profile(experimental_config=...): expected a flow.profiler._ExperimentalConfig, got "
                            f"{type(experimental_config).__name__}")
        self._all_threads = experimental_config is not None and experimental_config.profile_all_threads
        self._hub = None
        if schedule is not None and not callable(schedule):
            raise TypeError(f"profile(schedule=...): expected a callable step -> ProfilerAction such as "
                            f"flow.profiler.schedule(wait=..., warmup=..., active=...), got {schedule!r}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"profile(on_trace_ready=...): expected a callable taking the profile, got "
                            f"{on_trace_ready!r}")
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.step_num = 0
        self.current_action = None
        self._recorder = None
        self._events = None
        self._next_id = 0
        self._step_range = None
        self._observers = ()
        self._thread = None

    # ---- lifecycle ----------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        """Start profiling (``__enter__``)."""
        if self._thread is not None:
            raise RuntimeError("profile.start(): this profile has already started")
        if current_recorder() is not None:
            raise RuntimeError("profile.start(): a profiler is already recording on this thread; profiles do not "
                               "nest")
        action = self.schedule(0)
        self._thread = threading.get_ident()
        self.step_num = 0
        self.current_action = action
        self._observers = (add_backward_observer(self._backward_range), add_run_observer(self._graph_range))
        if self.current_action in _RECORDING:
            self._start_cycle()
        self._enter_step()

    def stop(self) -> None:
        """Stop profiling (``__exit__``): the last cycle ends and ``on_trace_ready`` sees it."""
        if self._thread is None:
            return
        self._check_thread("stop")
        self._exit_step()
        if self._recorder is not None:
            self._end_cycle()
        for handle in self._observers:
            handle.remove()
        self._observers = ()
        self._thread = None

    def step(self) -> None:
        """End the current step: the schedule's action for the next one starts or ends a cycle."""
        if self._thread is None:
            raise RuntimeError("profile.step(): the profile is not running; call it inside 'with profile(...)'")
        self._check_thread("step")
        self._exit_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = action = self.schedule(self.step_num)
        if not isinstance(action, ProfilerAction):
            raise TypeError(f"profile: the schedule returned {action!r} for step {self.step_num}; expected a "
                            f"ProfilerAction")
        if self._recorder is not None and (previous is ProfilerAction.RECORD_AND_SAVE or action not in _RECORDING):
            self._end_cycle()
        if self._recorder is None and action in _RECORDING:
            self._start_cycle()
        self._enter_step()

    def _check_thread(self, what):
        if threading.get_ident() != self._thread:
            raise RuntimeError(f"profile.{what}(): call it in the thread that started the profile")

    def _enter_step(self):
        if self.record_steps and self._recorder is not None:
            self._step_range = begin_range(f"ProfilerStep#{self.step_num}", "user_annotation")

    def _exit_step(self):
        token, self._step_range = self._step_range, None
        if token is not None:
            token.end()

    def _start_cycle(self):
        if not self._cpu:
            return
        self._recorder = self._new_recorder()
        set_recorder(self._recorder)
        set_included(_tls.included | PROFILER_KEY_SET)
        if self._all_threads:
            self._hub = AllThreads(self._new_recorder)
            record_all_threads(self._hub)

    def _new_recorder(self):
        return Recorder(self.record_shapes, self.profile_memory, self.with_stack)

    def _end_cycle(self):
        rec, self._recorder = self._recorder, None
        others = ()
        if self._hub is not None:
            record_all_threads(None)
            others, self._hub = self._hub.close(), None
        set_included(_tls.included & ~PROFILER_KEY_SET)
        set_recorder(None)
        rec.open = False
        self._events = self._build(rec, others)
        self._next_id += len(self._events)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _build(self, rec, others=()) -> EventList:
        """The events of ``rec`` then of the other threads' recorders ``others``, on ``rec``'s time base."""
        flops = flop_registry if self.with_flops else None
        events = build_events(list(rec.records), rec.start_ns, rec.thread, self._next_id, flops)
        for other in others:
            events += build_events(list(other.records), rec.start_ns, other.thread, self._next_id + len(events),
                                   flops)
        return EventList(events, self.profile_memory)

    # ---- observers (Note [Backward observers], Note [Graph run observers]) --------------------
    def _backward_range(self):
        return _BackwardRange(self._recorder_here())

    def _graph_range(self, entry):
        if self._recorder_here() is None:
            return _NO_RANGE
        return _GraphRange(entry)

    def _recorder_here(self):
        """The calling thread's recorder when it records for this profile, else None."""
        rec = self._recorder
        if rec is None:
            return None
        here = current_recorder()
        if here is rec or (self._hub is not None and here in self._hub.recorders):
            return here
        return None

    # ---- results --------------------------------------------------------------------------------
    def events(self) -> EventList:
        """The events of the last finished cycle (of the cycle so far while it records)."""
        if self._recorder is not None:
            return self._build_snapshot()
        if self._events is None:
            raise RuntimeError("profile.events(): nothing was recorded yet (no cycle has ended)")
        return self._events

    def _build_snapshot(self) -> EventList:
        return self._build(self._recorder, list(self._hub.recorders) if self._hub is not None else ())

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events grouped by name (and by input shapes / the first stack frames): ``.table(...)``."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, **kwargs) -> str:
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path) -> None:
        """Write the events as trace-event JSON that Perfetto and chrome://tracing load."""
        self.events().export_chrome_trace(path)


class _BackwardRange:
    """Marks the ops of one backward run in the recording thread as backward, inside one range."""

    __slots__ = ("_rec", "_token")

    def __init__(self, rec):
        self._rec = rec  # the calling thread's recorder for the profile, or None
        self._token = None

    def __enter__(self):
        rec = self._rec
        if rec is not None:
            rec.backward += 1
            self._token = begin_range("autograd::engine::backward", "backward")
        return self

    def __exit__(self, *exc):
        rec = self._rec
        if rec is not None:
            self._token.end()
            rec.backward -= 1
        return False


_graph_args = weakref.WeakKeyDictionary()  # JobIR -> the args of its runs' events


class _GraphRange:
    """One event per compiled nn.Graph run, with the plan's op counts."""

    __slots__ = ("_entry", "_token")

    def __init__(self, entry):
        self._entry = entry
        self._token = None

    def __enter__(self):
        ir = self._entry.ir
        args = _graph_args.get(ir)
        if args is None:
            types = Counter(n.op_type for n in ir.nodes_of("user"))
            args = _graph_args[ir] = {"Graph": ir.name, "Ops": sum(types.values()),
                                      "Op Types": dict(sorted(types.items()))}
        self._token = begin_range(f"nn.Graph: {ir.name}", "graph", args)
        return self

    def __exit__(self, *exc):
        if self._token is not None:
            self._token.end()
        return False


_NO_RANGE = nullcontext()
