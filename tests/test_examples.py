"""Smoke tests of examples/: each script runs with a tiny epoch count and prints what it should."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(script, *args):
    """Run ``script`` with this checkout's package first on the path (not an installed copy)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(EXAMPLES.parent),
                                                                      os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], check=False, capture_output=True,
                          text=True, timeout=300, cwd=EXAMPLES.parent, env=env)


def _percent(pattern, out) -> float:
    m = re.search(pattern, out)
    assert m, f"missing {pattern!r} in:\n{out}"
    return float(m.group(1))


def test_train_digits_eager(tmp_path):
    checkpoint = tmp_path / "checkpoint.npz"
    r = _run("train_digits.py", "--epochs", "2", "--checkpoint", str(checkpoint))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "data: 1237 training, 200 validation and 360 test images"
    for epoch, line in enumerate(lines[1:3], 1):
        assert re.fullmatch(rf"epoch {epoch}/2: lr [\d.]+  loss \d+\.\d{{4}}  train acc \d+\.\d\d%  "
                            r"val acc \d+\.\d\d%", line), line
    assert lines[1].startswith("epoch 1/2: lr 0.1 ")
    m = re.fullmatch(r"checkpoint of epoch 2 saved to (.+) and loaded: test accuracy (\S+)% \(before saving: "
                     r"(\S+)%\), next lr ([\d.]+)", lines[3])
    assert m and m.group(1) == str(checkpoint) and m.group(2) == m.group(3)
    assert float(m.group(4)) == pytest.approx(0.1 * 0.3 ** 2)  # StepLR(step_size=2 // 3 -> 1, gamma=0.3), 2 steps
    assert checkpoint.exists()
    accuracy = _percent(r"^test accuracy of the best model \(epoch [12], val acc [\d.]+%\): (\d+\.\d\d)%$", lines[4])
    assert accuracy > 50  # two epochs: far above chance (10%)
    assert len(lines) == 5


def test_train_digits_graph(tmp_path):
    saved = tmp_path / "eval_graph.npz"
    r = _run("train_digits_graph.py", "--epochs", "1", "--save-graph", str(saved))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    epoch = re.search(r"^epoch 1/1: loss (\d+\.\d{4})  train acc (\d+\.\d\d)%  test acc (\d+\.\d\d)%  lr (\S+)$", out,
                      re.MULTILINE)
    assert epoch and float(epoch.group(1)) < math.log(10) and float(epoch.group(3)) > 50
    assert float(epoch.group(4)) == pytest.approx(0, abs=1e-12)  # cosine schedule over one epoch ends at 0
    m = re.search(r"^training graph: (\d+) ops captured, (\d+) after the compiler's passes:$", out, re.MULTILINE)
    assert m and int(m.group(1)) >= int(m.group(2)) > 0
    for report in ("  common-subexpression elimination: ", "  constant folding: ", "  dead-code elimination: ",
                   "  elementwise fusion: ", "  memory plan: ", "  plan: "):
        assert f"\n{report}" in out, report
    assert re.search(rf"\n  plan: \d+ kernel step\(s\) for {m.group(2)} op\(s\) after the passes\n", out)
    assert f"\ntest accuracy: {epoch.group(3)}%\n" in out
    assert out.endswith(f"evaluation graph saved to {saved}; loaded without the model code, it predicts the same "
                        f"classes: True\n")


def test_custom_op():
    r = _run("custom_op.py", "--epochs", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "registered schema: squareplus(Tensor x, *, double b=4.0) -> (Tensor y)"
    assert lines[1].startswith("registered kernel[cpu]: squareplus_cpu [dtype(x) in {float32, float64}] priority=0 "
                               "registered at ")
    assert lines[1].endswith("custom_op.py:" + lines[1].rsplit(":", 1)[1])
    # (x + sqrt(x^2 + 4)) / 2 at -3, -1, 0, 1, 3: (sqrt(13) - 3) / 2, (sqrt(5) - 1) / 2, 1, (sqrt(5) + 1) / 2, ...
    m = re.fullmatch(r"eager: squareplus\(\[-3\.0, -1\.0, 0\.0, 1\.0, 3\.0\]\) = \[0\.3028, 0\.6180, 1\.0000, "
                     r"1\.6180, 3\.3028\] \(oneflow_lite\.float32\); max \|error\| vs NumPy: (\S+)", lines[2])
    assert m and float(m.group(1)) < 1e-6
    assert lines[3] == ("int64 input: OpKernelNotFoundError: Cannot find a kernel of op 'squareplus' (op name "
                        "'squareplus0') for device 'cpu' with dtypes x_0=int64 -> y_0=int64.")
    assert lines[4] == "b=-1: RuntimeError: squareplus: attr 'b' must be positive, got -1.0"
    assert lines[5] == "autograd: y.grad_fn is SquareplusBackward; x.grad matches the formula: True"
    assert lines[6] == "gradcheck: True; gradgradcheck: True"
    assert lines[7] == "graph training: Squareplus(b=4.0) between two Linear layers, SGD, 1 epoch(s)"
    m = re.fullmatch(r"epoch 1/1: mean loss (\d+\.\d{4})", lines[8])
    assert m and float(m.group(1)) < math.log(10)
    assert re.fullmatch(r"the training graph runs \d+ ops: 1 squareplus in the forward pass, its gradient as the "
                        r"functional ops SquareplusGrad\.apply called during the capture", lines[9])
    assert _percent(r"^test accuracy: (\d+\.\d\d)%$", lines[10]) > 30
    assert len(lines) == 11


@pytest.mark.parametrize("script, more", [
    ("train_digits.py", [(["--batch-size", "1238"], ("--batch-size must be between 1 and 1237 (the training images), "
                                                     "got 1238")),
                         (["--lr", "0"], "--lr must be positive, got 0.0")]),
    ("train_digits_graph.py", [(["--batch-size", "0"], ("--batch-size must be between 1 and 1437 (the training "
                                                        "images), got 0")),
                               (["--lr", "-1"], "--lr must be positive, got -1.0")]),
    ("custom_op.py", []),
])
def test_examples_help_and_bad_arguments(script, more):
    r = _run(script, "--help")
    assert r.returncode == 0 and "--epochs" in r.stdout
    r = _run(script, "--epochs", "0")
    assert r.returncode == 2 and f"{script}: error: --epochs must be at least 1, got 0" in r.stderr
    for args, message in more:
        r = _run(script, *args)
        assert r.returncode == 2 and f"{script}: error: {message}" in r.stderr


# ---- examples/autocast_train.py and examples/per_sample_grads.py (autocast, vmap) ---------------------------


def test_autocast_train():
    r = _run("autocast_train.py", "--epochs", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for epoch, line in enumerate(lines[:2], 1):
        m = re.fullmatch(rf"epoch {epoch}/2: loss (\d+\.\d{{4}})  loss scale (\d+)", line)
        assert m, line
    assert float(re.search(r"loss (\S+)", lines[1]).group(1)) < math.log(10)
    assert lines[2] == "dtypes: logits float16, loss float32, weight grad float32"
    assert _percent(r"^test accuracy: (\d+\.\d\d)%$", lines[3]) > 80
    assert len(lines) == 4
    r = _run("autocast_train.py", "--help")
    assert r.returncode == 0 and "--lr" in r.stdout
    r = _run("autocast_train.py", "--epochs", "0")
    assert r.returncode == 2 and "autocast_train.py: error: --epochs must be at least 1, got 0" in r.stderr
    r = _run("autocast_train.py", "--lr", "0")
    assert r.returncode == 2 and "autocast_train.py: error: --lr must be positive, got 0.0" in r.stderr


def test_per_sample_grads():
    r = _run("per_sample_grads.py", "--batch-size", "16")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("per-sample gradients of 16 samples: 0.weight (16, 128, 64), 0.bias (16, 128), "
                        "2.weight (16, 10, 128), 2.bias (16, 10)")
    assert re.fullmatch(r"vmap: \d+\.\d ms, loop: \d+\.\d ms", lines[1])
    m = re.fullmatch(r"max abs difference from the loop: (\S+)", lines[2])
    assert m and float(m.group(1)) < 1e-5
    assert re.fullmatch(r"per-sample gradient norms: min \d+\.\d{4}  median \d+\.\d{4}  max \d+\.\d{4}", lines[3])
    assert len(lines) == 4 and "runs once per sample" not in r.stderr
    r = _run("per_sample_grads.py", "--help")
    assert r.returncode == 0 and "--batch-size" in r.stdout
    r = _run("per_sample_grads.py", "--batch-size", "0")
    assert r.returncode == 2 and "per_sample_grads.py: error: --batch-size must be between 1 and 1437" in r.stderr


# ---- examples/dispatch_mode.py and examples/profile_train.py ([ext] Python modes and profiler) -----------
def test_dispatch_mode():
    r = _run("dispatch_mode.py", "--batch-size", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "ops of one training step, seen by a logging mode:"
    assert lines[1:7] == ["  [forward] conv2d(2x1x8x8, 4x1x3x3, 4)", "  [forward] relu(2x4x8x8)",
                          "  [forward] flatten(2x4x8x8)", "  [forward] linear(2x256, 10x256, 10)",
                          "  [forward] log_softmax(2x10)", "  [forward] nll(2x10, 2)"]
    backward = [line for line in lines if line.startswith("  [backward] ")]
    assert "  [backward] conv_filter_grad(2x4x8x8, 2x1x8x8)" in backward
    assert any(line.startswith("  [backward] matmul(") for line in backward)
    assert f"6 forward ops, {len(backward)} backward ops" in lines
    table = lines[lines.index(f"6 forward ops, {len(backward)} backward ops") + 1:-1]
    assert table[0].split() == ["Module", "FLOP", "%", "Total"] and table[2].split()[0] == "Net"
    assert any(line.split()[0] == "Net.conv" for line in table) and any(line.split()[0] == "Net.fc" for line in table)
    # conv: 2 * 2 * 36 * 64 forward and again for the weight gradient; linear: 2 * 2 * 256 * 10, three times
    assert lines[-1] == "total FLOPs: 49152; by the formulas: 49152; equal: True"


def test_profile_train(tmp_path):
    trace = tmp_path / "trace.json"
    r = _run("profile_train.py", "--steps", "2", "--batch-size", "16", "--row-limit", "5",
                           "--trace", str(trace), "--graph")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    m = re.fullmatch(r"eager: recorded 2 steps \(ProfilerStep#2, ProfilerStep#3\): (\d+) op calls, (\d+) of them "
                     r"run by backward", lines[0])
    assert m and int(m.group(1)) > int(m.group(2)) > 0
    assert lines[2].split()[:4] == ["Name", "Self", "CPU", "%"] and lines[2].split()[-3:] == ["#", "of", "Calls"]
    assert len(lines[4:9]) == 5 and lines[9] == lines[1] and lines[10].startswith("Self CPU time total: ")
    assert lines[11] == f"chrome trace written to {trace}"
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["name"] for e in events if e["ph"] == "X"}
    assert {"ProfilerStep#2", "ProfilerStep#3", "forward", "backward", "optimizer", "linear",
            "autograd::engine::backward"} <= names
    m = re.fullmatch(r"graph: recorded 2 steps \(ProfilerStep#2, ProfilerStep#3\): \d+ op calls, 0 of them run by "
                     r"backward; 2 compiled runs of (\d+) ops each", lines[12])
    assert m and int(m.group(1)) > 10
    assert any(line.split()[:3] == ["nn.Graph:", "TrainGraph_0", line.split()[2]] for line in lines[13:])


@pytest.mark.parametrize("script, args, message", [
    ("dispatch_mode.py", ["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    ("dispatch_mode.py", ["--depth", "0"], "--depth must be at least 1, got 0"),
    ("profile_train.py", ["--steps", "0"], "--steps must be at least 1, got 0"),
    ("profile_train.py", ["--batch-size", "1438"], "--batch-size must be between 1 and 1437 (the training images), "
                                                   "got 1438"),
])
def test_mode_and_profiler_examples_help_and_bad_arguments(script, args, message):
    r = _run(script, "--help")
    assert r.returncode == 0 and "usage:" in r.stdout
    r = _run(script, *args)
    assert r.returncode == 2 and f"{script}: error: {message}" in r.stderr


# ---- examples/autocast_train.py --graph (nn.Graph AMP: enable_amp, set_grad_scaler) -----------------------------
def test_autocast_train_with_a_graph():
    r = _run("autocast_train.py", "--epochs", "2", "--graph")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for epoch, line in enumerate(lines[:2], 1):
        assert re.fullmatch(rf"epoch {epoch}/2: loss (\d+\.\d{{4}})  loss scale (\d+)", line), line
    assert float(re.search(r"loss (\S+)", lines[1]).group(1)) < math.log(10)
    assert lines[2] == "dtypes: logits float16, loss float32, parameters float32"
    assert _percent(r"^test accuracy: (\d+\.\d\d)%$", lines[3]) > 80
    assert len(lines) == 4
    r = _run("autocast_train.py", "--epochs", "1", "--graph", "--dtype", "bfloat16")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == "dtypes: logits bfloat16, loss float32, parameters float32"
    r = _run("autocast_train.py", "--dtype", "float32")
    assert r.returncode == 2 and "argument --dtype: invalid choice: 'float32'" in r.stderr
