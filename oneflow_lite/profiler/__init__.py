"""``flow.profiler``: PyTorch's ``torch.profiler`` API over the Profiler dispatch key.

    with flow.profiler.profile() as prof:
        with flow.profiler.record_function("step"):
            loss = model(x).sum()
            loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))
    prof.export_chrome_trace("trace.json")

See Note [Profiler records] (interpreters/profiler.py) and Note [Profiling cycles] (profiler/profile.py).
"""

from oneflow_lite.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from oneflow_lite.profiler.profile import (  # noqa: F401  (_ExperimentalConfig: PyTorch's name)
    ProfilerAction, _ExperimentalConfig, ProfilerActivity, profile, record_function, schedule, supported_activities,
    tensorboard_trace_handler,
)

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity", "profile",
           "record_function", "schedule", "supported_activities", "tensorboard_trace_handler"]
