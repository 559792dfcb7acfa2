"""The GPT rows of the benchmark suite (benchmarks/gpt.py, benchmarks/run.py): the model runs under oneflow_lite
from its PyTorch source, eagerly and as an nn.Graph, and the rows are selected, or skipped without PyTorch.

No timing is asserted, and PyTorch is never needed here (it is a benchmark-only extra).
"""

import dataclasses
import importlib.util
import math
import pathlib

import numpy as np
import pytest

import oneflow_lite as flow

BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"


def _load_runner():
    spec = importlib.util.spec_from_file_location("benchmarks_run_gpt", BENCH / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


def _gpt_on_oneflow_lite():
    """benchmarks/gpt.py executed with ``import torch`` resolving to oneflow_lite (what ``gpt.load`` does)."""
    spec = importlib.util.spec_from_file_location("_gpt_test", BENCH / "gpt.py")
    module = importlib.util.module_from_spec(spec)
    with flow.mock_torch.enable():
        spec.loader.exec_module(module)
    return module


gpt = _gpt_on_oneflow_lite()
SMALL = dataclasses.replace(gpt.CONFIGS["tiny"], block_size=8, batch=2)


def test_the_gpt_rows_are_selected_by_id():
    names = [name for name, _ in runner.select(["GPT"])]
    assert names == ["GPT-tiny eager", "GPT-tiny graph", "GPT-mid eager", "GPT-mid graph"]
    assert [name for name, _ in runner.select(["gpt-mid"])] == ["GPT-mid eager", "GPT-mid graph"]
    assert [name for name, _ in runner.select(["GPT-tiny graph", "W4"])] == ["W4 matmul", "GPT-tiny graph"]


def test_without_pytorch_a_gpt_row_is_skipped_with_a_note(monkeypatch):
    monkeypatch.setattr(runner, "_import_torch", lambda: None)
    monkeypatch.setattr(runner, "_GPT_FIXTURES", {})
    (row,) = runner.run([("GPT-tiny eager", runner.gpt_tiny_eager)], runner.Timer(0.001, 1))
    assert row.status == "skipped: PyTorch is not installed (pip install 'oneflow-lite[bench]')"
    assert "GPT-tiny eager       skipped: PyTorch is not installed" in runner.format_table([row])
    assert not row.status.startswith("FAILED")


def test_the_model_is_nanogpts():
    flow.manual_seed(0)
    model = gpt.GPT(SMALL)
    assert model.transformer.wte.weight is model.lm_head.weight  # weight tying
    opt = model.configure_optimizer()
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == gpt.WEIGHT_DECAY and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
    params = list(model.parameters())
    assert len(params) == 12 * SMALL.n_layer + 4  # a block's 12, wte (tied to lm_head), wpe, ln_f's 2
    assert sum(len(g["params"]) for g in opt.param_groups) == len(params)


def _train(graph: bool, steps=3):
    flow.manual_seed(0)
    model = gpt.GPT(SMALL)
    opt = model.configure_optimizer(lr=1e-2)
    x, y = (flow.tensor(a) for a in gpt.make_batch(SMALL))
    if graph:
        step = runner.GPTTrainGraph(model, opt)
        return [step(x, y).item() for _ in range(steps)]
    return [gpt.train_step(model, opt, x, y).item() for _ in range(steps)]


def test_eager_and_graph_steps_train_alike():
    eager, graph = _train(graph=False), _train(graph=True)
    assert eager[0] == pytest.approx(math.log(SMALL.vocab_size), rel=0.02)  # near-uniform logits at init
    assert eager[-1] < eager[0]
    np.testing.assert_allclose(graph, eager, rtol=2e-5, atol=2e-5)
