"""``flow.profiler``: the events of op calls, ranges, backward and graph runs; self times and nesting; the
table; the chrome trace; schedules; the key sets left as they were."""

import gzip
import json
import os
import threading
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey as K
from oneflow_lite.interpreters.profiler import current_recorder
from oneflow_lite.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule

PROFILER = 1 << K.Profiler


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    assert (tls.included(), tls.excluded(), current_recorder()) == (0, 0, None)


def _run_in_a_thread(fn):
    t = threading.Thread(target=fn)
    t.start()
    t.join()


def _ops(events):
    return [e for e in events if e.kind == "op"]


def test_op_events_names_keys_shapes_and_dtypes():
    x = flow.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    i = flow.tensor([1, 0])
    with profile() as prof:
        y = flow.relu(x)
        flow.bmm(y.unsqueeze(0), y.unsqueeze(0))
        flow.index_select(y, 0, i)
    events = _ops(prof.events())
    names = [e.name for e in events]
    assert names == ["relu", "unsqueeze", "unsqueeze", "bmm", "index_select"]
    relu, bmm = events[0], events[3]
    assert relu.op_type == "relu" and bmm.op_type == "matmul"  # functional names where one function owns the op
    assert relu.dispatch_keys == ("Profiler", "Autograd", "CPU")
    assert relu.input_shapes == [[2, 2]] and relu.input_dtypes == ["float32"]
    assert bmm.input_shapes == [[1, 2, 2], [1, 2, 2]]
    assert events[4].input_shapes == [[2, 2], [2]] and events[4].input_dtypes == ["float32", "int64"]
    with flow.no_grad():
        with profile(record_shapes=False) as prof:
            flow.relu(x)
    (e,) = prof.events()
    assert e.dispatch_keys == ("Profiler", "CPU") and e.input_shapes == [] and e.input_dtypes == []
    assert not e.is_backward and e.cpu_parent is None and e.count == 1


def test_times_and_self_times_nest():
    x = flow.randn(64, 64)
    with profile() as prof:
        with record_function("outer"):
            flow.relu(x)
            with record_function("inner"):
                flow.exp(x)
                flow.neg(x)
    events = prof.events()
    assert [e.name for e in events] == ["outer", "relu", "inner", "exp", "neg"]
    outer, relu, inner, exp, neg = events
    assert outer.kind == inner.kind == "user_annotation"
    assert outer.cpu_children == [relu, inner] and inner.cpu_children == [exp, neg]
    assert relu.cpu_parent is outer and exp.cpu_parent is inner and outer.cpu_parent is None
    for parent in (outer, inner):
        children = sum(c.cpu_time_total for c in parent.cpu_children)
        assert parent.self_cpu_time_total == pytest.approx(parent.cpu_time_total - children, abs=1e-6)
        for c in parent.cpu_children:
            assert parent.time_range.start <= c.time_range.start <= c.time_range.end <= parent.time_range.end
    assert exp.self_cpu_time_total == exp.cpu_time_total > 0
    assert events.self_cpu_time_total == pytest.approx(outer.cpu_time_total, abs=1e-6)


def test_record_function_decorator_nests_each_call():
    @record_function("fib")
    def fib(n):
        return flow.tensor(1.0) if n < 2 else flow.add(fib(n - 1), fib(n - 2))

    with profile() as prof:
        assert fib(3).item() == 3.0
    ranges = [e for e in prof.events() if e.name == "fib"]
    assert len(ranges) == 5  # fib(3), fib(2), fib(1), fib(0), fib(1)
    top = [e for e in ranges if e.cpu_parent is None]
    assert len(top) == 1 and [c.name for c in top[0].cpu_children] == ["fib", "fib", "add"]
    fib(1)  # outside a profile: no range, no error
    with pytest.raises(TypeError, match=r"record_function\(name\): name must be a str, got int"):
        record_function(3)


def test_backward_ops_are_marked():
    w = flow.randn(3, 4, requires_grad=True)
    x = flow.randn(2, 3)
    with profile() as prof:
        loss = flow.relu(x @ w).sum()
        loss.backward()
    events = prof.events()
    forward = [e.name for e in _ops(events) if not e.is_backward]
    assert forward[:3] == ["matmul", "relu", "sum"]
    (run,) = [e for e in events if e.kind == "backward"]
    assert run.name == "autograd::engine::backward" and run.is_backward
    backward = [e for e in _ops(events) if e.is_backward]
    assert "relu_grad" in [e.op_type for e in backward] and "matmul" in [e.op_type for e in backward]
    for e in backward:
        p = e
        while p.cpu_parent is not None:
            p = p.cpu_parent
        assert p is run
    assert w.grad is not None


def test_graph_runs_are_one_event_each_with_op_counts():
    lin = flow.nn.Linear(4, 3)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def build(self, x):
            return flow.relu(self.lin(x)).sum()

    g = G()
    x = flow.randn(5, 4)
    g(x)  # capture and compile outside the profile
    with profile() as prof:
        with record_function("runs"):
            for _ in range(3):
                g(x)
    runs = [e for e in prof.events() if e.kind == "graph"]
    assert len(runs) == 3 and len(prof.events()) == 4  # the range and the runs: no op is dispatched
    assert runs[0].name == f"nn.Graph: {g.name}" and runs[0].cpu_parent.name == "runs"
    assert runs[0].args == {"Graph": g.name, "Ops": 3, "Op Types": {"linear": 1, "reduce_sum": 1, "relu": 1}}
    trace = prof.events()
    assert prof.key_averages().table().count("nn.Graph: ") == 1  # grouped: 3 calls
    assert [a.count for a in trace.key_averages() if a.key.startswith("nn.Graph")] == [3]
    g2 = G()
    with profile() as prof:
        g2(x)  # the capture dispatches lazily
    lazy = _ops(prof.events())
    assert [e.name for e in lazy] == ["linear", "relu", "sum"]
    assert all("Lazy" in e.dispatch_keys for e in lazy)


def test_key_averages_and_table():
    x, y = flow.randn(8, 8), flow.randn(4, 4)
    with profile() as prof:
        for _ in range(3):
            flow.relu(x)
        flow.relu(y)
        flow.exp(x)
    avgs = prof.key_averages()
    by_key = {a.key: a for a in avgs}
    assert set(by_key) == {"relu", "exp"} and by_key["relu"].count == 4 and by_key["exp"].count == 1
    relus = [e for e in prof.events() if e.name == "relu"]
    assert by_key["relu"].cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in relus))
    assert by_key["relu"].cpu_time == pytest.approx(by_key["relu"].cpu_time_total / 4)
    shaped = prof.key_averages(group_by_input_shape=True)
    assert sorted((a.key, str(a.input_shapes), a.count) for a in shaped) == [
        ("exp", "[[8, 8]]", 1), ("relu", "[[4, 4]]", 1), ("relu", "[[8, 8]]", 3)]

    table = avgs.table(sort_by="self_cpu_time_total", row_limit=20)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total", "CPU",
                                "time", "avg", "#", "of", "Calls"]
    assert lines[0] == lines[2] == lines[-2] and set(lines[0]) == {"-", " "}
    assert lines[-1].startswith("Self CPU time total: ")
    rows = lines[3:-2]
    assert len(rows) == 2 and rows[0].split()[0] in ("relu", "exp") and rows[0].split()[-1] in ("4", "1")
    first = rows[0].split()
    assert first[1].endswith("%") and first[2].endswith("us") or first[2].endswith("ms")
    assert len(avgs.table(row_limit=1).splitlines()) == 6
    assert "Input Shapes" in shaped.table(sort_by="count").splitlines()[1]
    assert prof.table(sort_by="count").splitlines()[3].split()[0] == "relu"
    with pytest.raises(ValueError, match=r"table\(sort_by='cuda_time_total'\): expected one of cpu_time, "):
        avgs.table(sort_by="cuda_time_total")


def test_table_time_and_percent_formats():
    from oneflow_lite.profiler.table import format_memory, format_share, format_time
    assert [format_time(t) for t in (12.3456, 1234.5, 2.5e6)] == ["12.346us", "1.234ms", "2.500s"]
    assert format_time(1234.5, "us") == "1234.500us"
    assert format_share(1.0, 4.0) == "25.00%" and format_share(0.0, 0.0) == "NaN"
    assert [format_memory(b) for b in (512, 4096, 3 * 1024 ** 2)] == ["512 B", "4.00 KB", "3.00 MB"]


def test_chrome_trace(tmp_path):
    w = flow.randn(3, 4, requires_grad=True)
    with profile() as prof:
        with record_function("step"):
            flow.relu(flow.randn(2, 3) @ w).sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(prof.events())
    for e in complete:
        assert set(e) >= {"name", "ts", "dur", "pid", "tid", "args", "cat"}
        assert isinstance(e["ts"], float) and e["dur"] >= 0 and e["pid"] == os.getpid()
    by_id = {e["args"]["External id"]: e for e in complete}
    for evt in prof.events():
        if evt.cpu_parent is not None:
            child, parent = by_id[evt.id], by_id[evt.cpu_parent.id]
            assert parent["ts"] <= child["ts"] + 1e-6
            assert child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 1e-6
    matmul = next(e for e in complete if e["name"] == "matmul")
    assert matmul["args"]["Input Dims"] == [[2, 3], [3, 4]] and matmul["args"]["Input type"] == ["float32"] * 2
    assert matmul["args"]["Dispatch Keys"] == "Profiler > Autograd > CPU" and matmul["cat"] == "cpu_op"
    assert any(e["args"].get("Backward") for e in complete)
    assert {e["name"] for e in trace["traceEvents"] if e["ph"] == "M"} == {"process_name", "thread_name"}


def test_schedule_cycles_and_on_trace_ready():
    cycles = []

    def ready(prof):
        cycles.append(([e.name for e in prof.events()], prof.step_num))

    x = flow.randn(2)
    sched = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    with profile(schedule=sched, on_trace_ready=ready) as prof:
        for step in range(12):
            flow.reshape(x, (1, 2)) if step % 2 else flow.relu(x)
            prof.step()
    # steps: 0 skipped, 1 wait, 2 warmup, 3-4 recorded; 5 wait, 6 warmup, 7-8 recorded; then nothing
    assert cycles == [(["ProfilerStep#3", "reshape", "ProfilerStep#4", "relu"], 5),
                      (["ProfilerStep#7", "reshape", "ProfilerStep#8", "relu"], 9)]
    assert [sched(s) for s in range(6)] == [ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP,
                                            ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
                                            ProfilerAction.NONE]
    early = schedule(wait=2, warmup=1, active=1, skip_first_wait=1)
    assert [early(s) for s in range(5)] == [ProfilerAction.WARMUP, ProfilerAction.RECORD_AND_SAVE,
                                            ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP]
    steps = [e for e in prof.events() if e.name.startswith("ProfilerStep")]
    assert [c.name for c in steps[0].cpu_children] == ["reshape"]


def test_schedule_cycle_ended_by_exit_and_errors():
    seen = []
    with profile(schedule=schedule(wait=0, warmup=0, active=3), on_trace_ready=lambda p: seen.append(
            [e.name for e in p.events()])) as prof:
        flow.relu(flow.randn(2))
        prof.step()
        flow.neg(flow.randn(2))
    assert seen == [["ProfilerStep#0", "randn", "relu", "ProfilerStep#1", "randn", "neg"]]
    for kwargs, message in [({"wait": -1, "warmup": 0, "active": 1}, "wait must be an int >= 0, got -1"),
                            ({"wait": 0, "warmup": 0, "active": 0}, "active must be an int >= 1, got 0"),
                            ({"wait": 0, "warmup": 1.5, "active": 1}, "warmup must be an int >= 0, got 1.5")]:
        with pytest.raises(ValueError, match=rf"schedule\(\): {message}"):
            schedule(**kwargs)
    with pytest.raises(TypeError, match=r"profile\(schedule=...\): expected a callable"):
        profile(schedule=3)
    with pytest.raises(RuntimeError, match=r"profile.step\(\): the profile is not running"):
        profile().step()
    with pytest.raises(TypeError, match=r"the schedule returned 'record' for step 1; expected a ProfilerAction"):
        with profile(schedule=lambda step: ProfilerAction.RECORD if step == 0 else "record") as prof:
            prof.step()


def test_tensorboard_trace_handler(tmp_path):
    handler = flow.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0", use_gzip=True)
    with profile(schedule=schedule(wait=0, warmup=0, active=1, repeat=2), on_trace_ready=handler) as prof:
        for _ in range(3):
            flow.relu(flow.randn(3))
            prof.step()
    files = sorted(os.listdir(tmp_path / "tb"))
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json.gz") for f in files)
    with gzip.open(tmp_path / "tb" / files[0], "rt") as f:
        names = [e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    assert names == ["ProfilerStep#0", "randn", "relu"]


def test_activities():
    assert flow.profiler.supported_activities() == {ProfilerActivity.CPU}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            flow.relu(flow.randn(2))
    assert "CUDA is not available in oneflow_lite" in str(caught[0].message)
    assert [e.name for e in prof.events()] == ["randn", "relu"]
    with pytest.warns(UserWarning):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            flow.relu(flow.randn(2))
    with pytest.raises(RuntimeError, match="nothing was recorded yet"):
        prof.events()
    with pytest.raises(TypeError, match=r"profile\(activities=...\): expected ProfilerActivity values, got 'cpu'"):
        profile(activities=["cpu"])


def test_key_sets_restored_and_profiles_do_not_nest():
    with profile() as prof:
        assert tls.included() == PROFILER and current_recorder() is not None
        with pytest.raises(RuntimeError, match="a profiler is already recording on this thread"):
            profile().start()
        prof.events()  # the events so far, while recording
    with pytest.raises(ZeroDivisionError):
        with profile():
            flow.tensor(1.0).item() / 0
    with pytest.raises(RuntimeError, match="this profile has already started"):
        with profile() as p:
            p.start()


def test_failing_op_is_recorded_and_keeps_nesting():
    x = flow.randn(2, 3)
    with profile() as prof:
        with record_function("outer"):
            with pytest.raises(RuntimeError):
                flow.matmul(x, x)
            flow.relu(x)
    outer = prof.events()[0]
    assert [c.name for c in outer.cpu_children] == ["matmul", "relu"]


def test_other_threads_are_not_recorded():
    x = flow.randn(2)
    seen = {}

    def worker():
        seen["keys"] = (tls.included(), current_recorder())
        flow.neg(x)

    with profile() as prof:
        _run_in_a_thread(worker)
        flow.relu(x)
    assert seen["keys"] == (0, None) and [e.name for e in prof.events()] == ["relu"]


def test_profile_memory_with_stack_and_flops():
    x = flow.randn(1000)
    a, b = flow.randn(4, 5), flow.randn(5, 6)
    with profile(profile_memory=True, with_stack=True, with_flops=True) as prof:
        with record_function("r"):
            flow.relu(x)
            x.reshape(10, 100)  # a view allocates nothing
        flow.matmul(a, b)
    r, relu, reshape, matmul = prof.events()
    assert relu.self_cpu_memory_usage == 4000 and reshape.self_cpu_memory_usage == 0
    assert r.self_cpu_memory_usage == 0 and r.cpu_memory_usage == 4000
    assert matmul.flops == 2 * 4 * 5 * 6 and relu.flops == 0
    assert any("test_profiler.py" in s and "test_profile_memory_with_stack_and_flops" in s for s in relu.stack)
    assert not any("oneflow_lite" + os.sep + "functional" in s for s in relu.stack)
    table = prof.key_averages().table()
    header = table.splitlines()[1]
    assert "CPU Mem" in header and "Self CPU Mem" in header and "Total FLOPs" in header
    assert "Source Location" not in header  # as PyTorch: averages keep stacks when grouped by them
    grouped = prof.key_averages(group_by_stack_n=2)
    assert all(len(a.stack) <= 2 for a in grouped) and any(a.stack for a in grouped)
    table = grouped.table()
    assert "Source Location" in table.splitlines()[1] and "test_profiler.py" in table


def test_profiler_and_mode_together_see_each_op_once():
    class Count(flow.DispatchMode):
        n = 0

        def __flow_dispatch__(self, op, types, args, kwargs):
            Count.n += 1
            return op(*args, **kwargs)

    x = flow.randn(3, requires_grad=True)
    with profile() as prof, Count():
        flow.relu(x).sum().backward()
    ops = _ops(prof.events())
    assert Count.n == len(ops) and ops[0].dispatch_keys == ("Profiler", "Autograd", "Python", "CPU")
    np.testing.assert_array_equal(x.grad.numpy(), (x.numpy() > 0).astype(np.float32))


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
@pytest.mark.parametrize("kwargs", [{"wait": 1, "warmup": 1, "active": 2, "repeat": 2, "skip_first": 1},
                                    {"wait": 2, "warmup": 0, "active": 3}, {"wait": 3, "warmup": 2, "active": 1,
                                                                            "skip_first_wait": 1}])
def test_schedule_equals_pytorch(kwargs):
    torch_profiler = pytest.importorskip("torch.profiler")
    ours, theirs = schedule(**kwargs), torch_profiler.schedule(**kwargs)
    assert [ours(s).name for s in range(20)] == [theirs(s).name for s in range(20)]


# ---- profile_all_threads (Note [Profiling all threads]) --------------------------------------------------------------
def _all_threads():
    return profile(experimental_config=flow.profiler._ExperimentalConfig(profile_all_threads=True))


def test_all_threads_records_a_thread_started_inside_with_its_thread_id(tmp_path):
    x = flow.randn(2, 3)
    w = flow.randn(3, 4, requires_grad=True)
    seen = {}

    def worker():
        seen["tid"] = threading.get_native_id()
        with record_function("worker step"):
            flow.neg(x)
            flow.relu(x @ w).sum().backward()
        flow.exp(x)

    with _all_threads() as prof:
        _run_in_a_thread(worker)
        flow.relu(x)
    main_tid, worker_tid = threading.get_native_id(), seen["tid"]
    events = prof.events()
    by_thread = {}
    for e in events:
        by_thread.setdefault(e.thread, []).append(e)
    assert set(by_thread) == {main_tid, worker_tid}
    assert [e.name for e in by_thread[main_tid]] == ["relu"]
    worker_events = by_thread[worker_tid]
    step = next(e for e in worker_events if e.name == "worker step")
    assert [c.name for c in step.cpu_children][:3] == ["neg", "matmul", "relu"]
    assert "autograd::engine::backward" in [c.name for c in step.cpu_children]
    assert any(e.is_backward for e in worker_events) and worker_events[-1].name == "exp"
    assert all(e.cpu_parent is None or e.cpu_parent.thread == e.thread for e in events)  # nesting per thread
    assert len({e.id for e in events}) == len(events)
    # the chrome trace: each event on its thread's tid, one thread_name per thread, nested per thread
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["tid"] for e in complete} == {main_tid, worker_tid} and len(complete) == len(events)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(names) == {main_tid, worker_tid}
    by_id = {e["args"]["External id"]: e for e in complete}
    for evt in events:
        if evt.cpu_parent is not None:
            child, parent = by_id[evt.id], by_id[evt.cpu_parent.id]
            assert child["tid"] == parent["tid"] and parent["ts"] <= child["ts"] + 1e-6
            assert child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 1e-6
    worker_ops = [e for e in complete if e["tid"] == worker_tid and e["name"] == "neg"]
    assert worker_ops and worker_ops[0]["ts"] >= 0  # on the profile's time base


def test_all_threads_stops_recording_and_leaves_no_state():
    x = flow.randn(2)
    go, done = threading.Event(), threading.Event()
    seen = {}

    def worker():  # started before the profile, runs ops during and after it
        go.wait()
        flow.neg(x)
        seen["during"] = current_recorder() is not None
        done.wait()
        flow.exp(x)
        seen["after"] = (tls.included(), tls.global_included(), current_recorder())

    t = threading.Thread(target=worker)
    t.start()
    active = tls.ACTIVE[0]
    with _all_threads() as prof:
        assert tls.global_included() == PROFILER and tls.included() == PROFILER
        go.set()
        while "during" not in seen:
            pass
    done.set()
    t.join()
    assert seen["during"] and seen["after"] == (0, 0, None)
    assert sorted(e.name for e in prof.events()) == ["neg"]  # a thread started before the profile too
    assert tls.global_included() == 0 and tls.ACTIVE[0] == active
    with pytest.raises(TypeError, match=r"profile\(experimental_config=...\): expected a "
                                        r"flow.profiler._ExperimentalConfig, got dict"):
        profile(experimental_config={"profile_all_threads": True})
    with pytest.raises(TypeError, match=r"_ExperimentalConfig\(profile_all_threads=...\): expected a bool"):
        flow.profiler._ExperimentalConfig(profile_all_threads=1)
