"""``python -m oneflow_lite demo``: the training demo's output, its options and errors, and its accuracy bar."""

import io
import re
import subprocess
import sys

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import demo

EPOCH_LINE = (r"\[(eager|graph)\] epoch +(\d+)/(\d+)  loss (\d+\.\d{4})  train acc +(\d+\.\d\d)%  "
              r"test acc +(\d+\.\d\d)% +([\d,]+) samples/s  \((\d+\.\d{3}) s\)")


def _run(*args):
    return subprocess.run([sys.executable, "-m", "oneflow_lite", "demo", *args], check=False, capture_output=True,
                          text=True, timeout=300)


def _numpy_predictions(model, images: np.ndarray) -> np.ndarray:
    """The classes an MLP of Flatten / Linear / ReLU layers predicts, computed with NumPy from its parameters."""
    a = images.astype(np.float64)
    for layer in model.children():
        if isinstance(layer, flow.nn.Flatten):
            a = a.reshape(len(a), -1)
        elif isinstance(layer, flow.nn.Linear):
            a = a @ layer.weight.numpy().T.astype(np.float64) + layer.bias.numpy()
        elif isinstance(layer, flow.nn.ReLU):
            a = np.maximum(a, 0)
        else:
            pytest.fail(f"no NumPy reference for {layer!r}")
    return a.argmax(1)


def _summary_rows(out: str) -> dict:
    """The summary table as {row label: [cells]} (cells are split on runs of two or more spaces)."""
    header, *lines = out[out.index("\nsummary\n") + len("\nsummary\n"):].splitlines()
    rows = {"": header.split()}
    for line in lines:
        if "  " not in line:  # the end of the table
            break
        label, *cells = re.split(r"  +", line.strip())
        rows[label] = cells
    return rows


def test_demo_both_modes_one_epoch_prints_progress_and_summary():
    r = _run("--epochs", "1", "--mode", "both")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    lines = out.splitlines()
    assert lines[0] == "oneflow_lite training demo: mlp on the 8x8 digits (1,437 training / 360 test images)"
    assert lines[1] == ("model: Flatten -> Linear(64, 128) -> ReLU -> Linear(128, 64) -> ReLU -> Linear(64, 10); "
                        "17,226 parameters")  # 64*128+128 + 128*64+64 + 64*10+10
    assert lines[2] == ("1 epoch(s) of 44 steps of batch 32, SGD(lr=0.1, momentum=0.9), cosine decay per step, "
                        "seed 0, mode both")  # 1437 // 32 = 44
    epochs = [re.fullmatch(EPOCH_LINE, line) for line in lines if line.startswith("[")]
    assert all(epochs) and [m.group(1) for m in epochs] == ["eager", "graph"]
    for m in epochs:
        loss, train_acc, test_acc, rate, seconds = (float(m.group(i).replace(",", "")) for i in range(4, 9))
        assert 0 < loss < np.log(10) and 10 < train_acc <= 100 and 10 < test_acc <= 100  # better than chance
        assert rate == pytest.approx(44 * 32 / seconds, rel=0.02 + 0.0005 / seconds, abs=1)  # seconds has 3 decimals
    eager, graph = epochs
    assert eager.group(4, 5, 6) == graph.group(4, 5, 6)  # same weights, same batches: same numbers

    rows = _summary_rows(out)
    assert rows[""] == ["eager", "graph"]
    assert rows["test accuracy"] == [f"{eager.group(6)}%", f"{graph.group(6)}%"]
    assert rows["training loss (last epoch)"] == [eager.group(4), graph.group(4)]
    assert [re.fullmatch(r"\d+\.\d{3} s", c) is not None for c in rows["time per epoch (median)"]] == [True, True]
    assert rows["first step (graph: capture + compile + run)"][0].endswith(" ms")
    assert rows["training graph ops: captured -> after passes"][0] == "-"
    before, after = map(int, rows["training graph ops: captured -> after passes"][1].split(" -> "))
    assert before >= after > 0  # the passes may find nothing to remove
    assert re.search(r"\ngraph vs eager: \d+\.\d\dx the speed per epoch; the trained parameters "
                     r"(are equal|differ by at most \S+)\n$", out)


def test_demo_defaults_reach_95_percent_in_both_modes():
    """The default run (10 epochs of the MLP, eager and graph) takes a few seconds; its accuracy is recomputed
    here with NumPy from the trained parameters."""
    out = io.StringIO()
    results = demo.run(demo.make_parser().parse_args([]), out)
    assert [r.mode for r in results] == ["eager", "graph"]
    test_x, test_y = flow.utils.data.datasets.digits(train=False).tensors
    for r in results:
        accuracy = np.mean(_numpy_predictions(r.model, test_x.numpy()) == test_y.numpy())
        assert accuracy >= 0.95, (r.mode, accuracy)
        assert r.test_accuracy == pytest.approx(accuracy, abs=1e-12)
        assert len(r.epoch_seconds) == len(r.epoch_losses) == len(r.test_accuracies) == demo.DEFAULT_EPOCHS
        assert r.epoch_losses[-1] < r.epoch_losses[0] / 10
    eager, graph = results
    np.testing.assert_allclose(graph.epoch_losses, eager.epoch_losses, rtol=1e-5)
    for (name, p), q in zip(eager.model.named_parameters(), graph.model.parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    # the table prints the graph's real op counts
    counts = f"{len(graph.graph.captured_job.net.op)} -> {len(graph.graph.job.net.op)}"
    assert _summary_rows(out.getvalue())["training graph ops: captured -> after passes"] == ["-", counts]
    assert f"{100 * graph.test_accuracy:.2f}%" in _summary_rows(out.getvalue())["test accuracy"]


def test_demo_cnn_graph_only_prints_the_graph():
    r = _run("--model", "cnn", "--epochs", "1", "--mode", "graph", "--batch-size", "128", "--print-graph")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert ("model: Conv2d(1, 16, 3x3) -> ReLU -> MaxPool2d(2) -> Conv2d(16, 32, 3x3) -> ReLU -> MaxPool2d(2) -> "
            "Flatten -> Linear(128, 10); 6,090 parameters") in out  # 16*9+16 + 32*16*9+32 + 128*10+10
    assert "1 epoch(s) of 11 steps of batch 128" in out  # 1437 // 128 = 11
    assert len(re.findall(r"^\[graph\] epoch 1/1 ", out, re.MULTILINE)) == 1 and "[eager]" not in out
    rows = _summary_rows(out)
    assert rows[""] == ["graph"] and "graph vs eager" not in out
    assert "\nnn.Graph 'TrainGraph_0' (TrainGraph): 1 captured input signature(s)" in out
    assert "signature (float32[128, 1, 8, 8], int64[128])" in out
    assert "model.0-conv2d-0: conv2d(" in out and "optimizer0_param_group0_lr: variable" in out
    assert "    passes:\n      common-subexpression elimination" in out


def test_demo_eager_only_with_adam_and_save(tmp_path):
    path = tmp_path / "mlp.npz"
    r = _run("--epochs", "2", "--mode", "eager", "--optimizer", "adam", "--schedule", "constant", "--seed", "3",
             "--save", str(path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "2 epoch(s) of 44 steps of batch 32, Adam(lr=0.002), constant learning rate, seed 3, mode eager" in out
    assert len(re.findall(r"^\[eager\] epoch [12]/2 ", out, re.MULTILINE)) == 2 and "[graph]" not in out
    rows = _summary_rows(out)
    assert rows[""] == ["eager"] and "first step" in rows and "training graph ops: captured -> after passes" not in rows
    m = re.search(r"\nsaved the eager-trained state_dict to (.+); a new mlp loaded from it classifies (\S+)% of the "
                  r"test images correctly \(after training: (\S+)%\)\n$", out)
    assert m and m.group(1) == str(path) and m.group(2) == m.group(3) == rows["test accuracy"][0][:-1]
    state = flow.load(path)
    assert list(state) == ["1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"]
    assert state["1.weight"].shape == (128, 64) and state["5.bias"].shape == (10,)


@pytest.mark.parametrize("args, message", [
    (["--epochs", "0"], "argument --epochs: expected a positive integer, got 0"),
    (["--epochs", "two"], "argument --epochs: expected a positive integer, got 'two'"),
    (["--batch-size", "1438"], "--batch-size must be at most 1437 (the number of training images), got 1438"),
    (["--lr", "-0.1"], "argument --lr: expected a positive finite number, got -0.1"),
    (["--lr", "inf"], "argument --lr: expected a positive finite number, got inf"),
    (["--model", "rnn"], "argument --model: invalid choice: 'rnn'"),
    (["--mode", "lazy"], "argument --mode: invalid choice: 'lazy'"),
    (["--mode", "eager", "--print-graph"], "--print-graph needs a graph run: use --mode both or --mode graph"),
    (["--save", "/nonexistent-dir/m.npz"], "--save: the directory /nonexistent-dir does not exist"),
])
def test_demo_option_errors(args, message):
    r = _run(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert f"python -m oneflow_lite demo: error: {message}" in r.stderr


def test_run_in_process_rejects_bad_combinations():
    args = demo.make_parser().parse_args(["--batch-size", "2000"])
    with pytest.raises(ValueError, match=r"demo: --batch-size must be at most 1437 \(the number of training images\)"):
        demo.run(args, io.StringIO())
    with pytest.raises(ValueError, match=r"build_model\(\): model must be one of mlp, cnn, got 'rnn'"):
        demo.build_model("rnn")
    with pytest.raises(ValueError, match=r"train\(\): mode must be 'eager' or 'graph', got 'both'"):
        demo.train("both", args, None, None, print)


def test_demo_help_explains_every_option():
    r = _run("--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert text.startswith("usage: python -m oneflow_lite demo [-h] [--model {mlp,cnn}] [--epochs N]")
    for option, explanation in [
        ("--model {mlp,cnn}", "mlp: Flatten, Linear 64-128-64-10 with ReLU (default); cnn: two Conv2d 3x3"),
        ("--epochs N", "passes over the 1,437 training images (default: 10)"),
        ("--batch-size N", "images per training step (default: 32)"),
        ("--lr LR", "initial learning rate (default: 0.1 for sgd, 0.002 for adam)"),
        ("--optimizer {sgd,adam}", "sgd: flow.optim.SGD with momentum 0.9 (default); adam: flow.optim.Adam"),
        ("--schedule {cosine,constant}", "learning-rate schedule: cosine decay to 0 over all steps"),
        ("--seed SEED", "seeds the initial weights and the shuffling of the batches"),
        ("--mode {both,eager,graph}", "train eagerly, as an nn.Graph"),
        ("--print-graph", "print the training graph after training"),
        ("--save PATH", "save the trained model's state_dict with flow.save"),
    ]:
        assert f"{option} {explanation}" in text, option
