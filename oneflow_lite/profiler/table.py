"""The profiler's summary table, with PyTorch's columns and formats (``EventList.table``)."""

from __future__ import annotations

import math

SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "count", "cpu_memory_usage",
             "self_cpu_memory_usage", "flops")
_SPACING = 2
_WIDTH = 12


def format_time(time_us: float, unit=None) -> str:
    """PyTorch's ``_format_time``: us, ms or s with three decimals (``unit`` forces one)."""
    if unit == "s" or (unit is None and time_us >= 1e6):
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms" or (unit is None and time_us >= 1e3):
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _check(sort_by, row_limit, time_unit):
    if sort_by is not None and sort_by not in SORT_KEYS:
        raise ValueError(f"table(sort_by={sort_by!r}): expected one of {', '.join(SORT_KEYS)} (oneflow_lite profiles "
                         f"the CPU only)")
    if time_unit not in (None, "s", "ms", "us"):
        raise ValueError(f"table(time_unit={time_unit!r}): expected None, 's', 'ms' or 'us'")
    if row_limit is not None and (not isinstance(row_limit, int) or isinstance(row_limit, bool)):
        raise TypeError(f"table(row_limit={row_limit!r}): expected an int")


def _flops_scale(events):
    """(scale, header) of the flops column from the smallest positive count (PyTorch's auto scaling)."""
    flops = [e.flops for e in events if e.flops > 0]
    if not flops:
        return None
    headers = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    level = int(max(0, min(math.log10(min(flops)) / 3, len(headers) - 1)))
    return 10.0 ** (-3 * level), f"Total {headers[level]}"


def _columns(events, max_name, max_shapes, max_src, profile_memory, flops):
    """[(header, width, align)] of the table."""
    name_width = min(max(len(e.key) for e in events) + 4, max_name)
    cols = [("Name", name_width, ">")]
    cols += [(h, _WIDTH, ">") for h in ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg")]
    if profile_memory:
        cols += [("CPU Mem", _WIDTH, ">"), ("Self CPU Mem", _WIDTH, ">")]
    cols.append(("# of Calls", _WIDTH, ">"))
    if any(e.input_shapes for e in events):
        cols.append(("Input Shapes", min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes), ">"))
    if flops is not None:
        cols.append((flops[1], _WIDTH, ">"))
    if any(e.stack for e in events):
        cols.append(("Source Location", min(max(len(s) for e in events for s in e.stack) + 4, max_src), "<"))
    return cols


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _row(evt, cols, total, max_name, time_unit, flops):
    name = evt.key
    if len(name) >= max_name - 3:
        name = name[:max_name - 3] + "..."
    values = {"Name": name, "Self CPU %": format_share(evt.self_cpu_time_total, total),
              "Self CPU": format_time(evt.self_cpu_time_total, time_unit),
              "CPU total %": format_share(evt.cpu_time_total, total),
              "CPU total": format_time(evt.cpu_time_total, time_unit),
              "CPU time avg": format_time(evt.cpu_time, time_unit),
              "CPU Mem": format_memory(evt.cpu_memory_usage), "Self CPU Mem": format_memory(evt.self_cpu_memory_usage),
              "# of Calls": evt.count}
    for header, width, _ in cols:
        if header == "Input Shapes":
            values[header] = str(evt.input_shapes)[:width]
        elif header == "Source Location":
            values[header] = _trim_path(evt.stack[0], width) if evt.stack else ""
    if flops is not None:
        values[flops[1]] = "--" if evt.flops <= 0 else f"{evt.flops * flops[0]:8.3f}"
    return [values[h] for h, _, _ in cols]


def build_table(events, sort_by=None, row_limit=100, max_name_column_width=55, max_shapes_column_width=80,
                header=None, top_level_events_only=False, max_src_column_width=75, time_unit=None,
                profile_memory=False) -> str:
    """The table of ``events`` (FunctionEvents or FunctionEventAvgs), PyTorch's ``_build_table``; the memory
    columns appear with ``profile_memory``."""
    _check(sort_by, row_limit, time_unit)
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    flops = _flops_scale(events)
    cols = _columns(events, max_name_column_width, max_shapes_column_width, max_src_column_width, profile_memory,
                    flops)
    fmt = "".join("{: " + align + str(width) + "}" + " " * _SPACING for _, width, align in cols)
    sep = "".join("-" * width + " " * _SPACING for _, width, _ in cols)
    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * (len(sep) - _SPACING), header]
    if top_level_events_only:
        lines += ["=" * (len(sep) - _SPACING), "This report only display top-level ops statistics"]
    lines += [sep, fmt.format(*[h for h, _, _ in cols]), sep]
    shown = 0
    for evt in events:
        if row_limit is not None and row_limit >= 0 and shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        lines.append(fmt.format(*_row(evt, cols, total, max_name_column_width, time_unit, flops)))
        if evt.stack and cols[-1][0] == "Source Location":
            blank = [""] * (len(cols) - 1)
            lines += [fmt.format(*blank, _trim_path(s, cols[-1][1])) for s in evt.stack[1:]]
            lines.append(fmt.format(*blank, ""))
    lines += [sep, f"Self CPU time total: {format_time(total, time_unit)}"]
    return "".join(line + "\n" for line in lines)
