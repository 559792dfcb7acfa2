"""The benchmark suite's runner (benchmarks/run.py): its table, options and correctness checks.

Timing is never asserted here (speed is shown by running the suite, not by tests); these tests
check that a run prints the table, checks results against NumPy and reports what it found.
"""

import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"


def _load_runner():
    spec = importlib.util.spec_from_file_location("benchmarks_run", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


def _run(*args):
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_quick_run_of_one_workload_prints_the_table_and_checks_it(tmp_path):
    out = tmp_path / "rows.json"
    proc = _run("--quick", "--only", "W1 relu", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("workload"))
    for column in ("oneflow_lite", "baseline", "ratio", "target", "holds", "check", "baseline is"):
        assert column in lines[header]
    assert set(lines[header + 1]) == {"-"}
    rows = [line for line in lines[header + 2:] if line.startswith("W")]
    assert len(rows) == 1 and rows[0].startswith("W1 relu")
    fields = rows[0].split()
    assert fields[3] == "us" and fields[5] == "us"  # two times in microseconds
    assert fields[6].endswith("x") and fields[7:9] == ["<=", "3.00"]
    assert fields[9] in ("yes", "NO") and fields[10] == "ok"  # the correctness check ran and passed
    assert "np.maximum(x, 0)" in rows[0]
    assert "correctness checks: 1 passed, 0 failed" in proc.stdout
    assert "1 BLAS thread" in proc.stdout and "--quick" in proc.stdout

    data = json.loads(out.read_text())
    assert data["meta"]["quick"] is True and data["meta"]["repeats"] == 3
    (row,) = data["rows"]
    assert row["name"] == "W1 relu" and row["checked"] is True and row["status"] == "ok"
    assert row["value"] > 0 and row["baseline"] > 0 and row["limit"] == 3.0
    assert row["ratio"] == row["paired_ratio"] > 0  # the median of the paired timings' ratios
    assert row["holds"] == (row["ratio"] <= 3.0)


def test_compare_takes_the_median_of_paired_ratios(monkeypatch):
    """Timings in back-to-back pairs (fn, baseline); a slow spell hits both members of a pair."""
    # calibration: fn's first loop reaches 0.2 s; the baseline's takes two (number 1, then 2); then three pairs
    loops = iter([0.25, 0.125, 0.25, 0.375, 0.125, 1.0, 0.5, 0.5, 0.125])  # pair ratios 3, 2, 4
    monkeypatch.setattr(runner, "_time_loop", lambda fn, number: next(loops) * number)
    value, baseline, ratio = runner.Timer(0.2, 3).compare(lambda: None, lambda: None)
    assert value == 0.5 and baseline == 0.125  # medians of (0.375, 1.0, 0.5) and (0.125, 0.5, 0.125)
    assert ratio == 3.0  # median of (3, 2, 4); the ratio of the medians would say 4
    row = runner.Row("W0", value, baseline, ratio, limit=3.5)
    assert row.ratio == 3.0 and row.holds is True


def test_only_takes_an_id_and_rejects_unknown_names():
    assert [name for name, _ in runner.select(["w1"])] == ["W1 relu", "W1 add", "W1 x + y"]
    assert [name for name, _ in runner.select(["W4 MATMUL", "W2"])] == ["W2 chain eager", "W2 chain graph",
                                                                       "W4 matmul"]
    proc = _run("--quick", "--only", "W9")
    assert proc.returncode != 0
    assert "unknown workload(s) w9" in proc.stderr and "W1 relu" in proc.stderr


def test_a_failed_check_is_reported_and_fails_the_run():
    def wrong(timer):
        runner.check(runner.flow.tensor(np.array([1.0, 2.0], np.float32)), np.array([1.0, 3.0], np.float32))

    rows = runner.run([("W0 wrong", wrong)], runner.Timer(0.001, 1))
    assert rows[0].status.startswith("FAILED: result differs from NumPy")
    assert "W0 wrong" in runner.format_table(rows) and "FAILED" in runner.format_table(rows)


def test_check_compares_values_shapes_and_dtypes():
    t = runner.flow.tensor(np.array([1.0, 2.0], np.float32))
    runner.check(t, np.array([1.0, 2.0], np.float32), exact=True)
    runner.check(t, np.array([1.0, 2.0000001], np.float32), rtol=1e-6)
    with pytest.raises(AssertionError, match="got float32\\[2\\], expected float64\\[2\\]"):
        runner.check(t, np.array([1.0, 2.0]))
    with pytest.raises(AssertionError):
        runner.check(t, np.array([1.0, 2.5], np.float32))


def test_rows_with_ratio_absolute_and_missing_targets():
    ratio = runner.Row("W1 relu", 2.0e-6, 1.0e-6, limit=3.0)
    assert ratio.ratio == 2.0 and ratio.holds is True
    absolute = runner.Row("W7 capture+compile", 0.060, None, limit=0.050, absolute=True)
    assert absolute.ratio is None and absolute.holds is False
    report = runner.Row("W0 report", 1.0, 2.0)
    assert report.holds is None
    failed = runner.Row("W5 MLP step eager", status="FAILED: result differs from NumPy: ...")
    table = runner.format_table([ratio, absolute, report, failed]).splitlines()
    assert table[2].split()[:9] == ["W1", "relu", "2.000", "us", "1.000", "us", "2.00x", "<=", "3.00"]
    assert "60.000 ms" in table[3] and "<= 50 ms" in table[3] and " NO " in table[3]
    assert "report" in table[4]
    assert table[5] == "W5 MLP step eager    FAILED: result differs from NumPy: ..."


def test_numpy_train_step_matches_a_finite_difference_of_its_loss():
    # The hand-written NumPy step is the baseline of W5: its gradient must be right.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6))
    t = np.array([0, 2, 1, 2])
    params = [rng.standard_normal((5, 6)), rng.standard_normal(5), rng.standard_normal((3, 5)), rng.standard_normal(3)]

    def loss(ps):
        h = np.maximum(x @ ps[0].T + ps[1], 0)
        z = h @ ps[2].T + ps[3]
        logp = z - z.max(1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
        return -logp[np.arange(4), t].mean()

    before = [p.copy() for p in params]
    assert runner.np_train_step(params, x, t) == pytest.approx(loss(before))
    eps = 1e-6
    for p, b in zip(params, before):
        numeric = np.zeros_like(b)
        for idx in np.ndindex(b.shape):
            plus, minus = [q.copy() for q in before], [q.copy() for q in before]
            k = next(i for i, q in enumerate(before) if q is b)
            plus[k][idx] += eps
            minus[k][idx] -= eps
            numeric[idx] = (loss(plus) - loss(minus)) / (2 * eps)
        np.testing.assert_allclose(p, b - runner.LR * numeric, rtol=1e-6, atol=1e-8)
