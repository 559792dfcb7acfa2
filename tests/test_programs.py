"""Real programs written PyTorch-style (tests/programs/), run unchanged with ``import torch`` resolving to oneflow_lite
(flow.mock_torch). Each must train (its loss falls) and, where PyTorch is installed, give PyTorch's numbers when both
start from the same NumPy-initialised weights and see the same data (dropout off, noise drawn from NumPy)."""

import math
import pathlib
import runpy
import sys

import numpy as np
import pytest

import oneflow_lite as flow

PROGRAMS = pathlib.Path(__file__).parent / "programs"


def run_program(name, torch_is_flow=True, **kwargs):
    """``main(**kwargs)`` of tests/programs/<name>.py, with ``torch`` being oneflow_lite (or real PyTorch)."""
    sys.path.insert(0, str(PROGRAMS))
    _forget_program_modules()  # helpers such as common.py import torch: one copy per framework
    try:
        if torch_is_flow:
            with flow.mock_torch.enable():
                return runpy.run_path(str(PROGRAMS / f"{name}.py"), run_name="program")["main"](**kwargs)
        return runpy.run_path(str(PROGRAMS / f"{name}.py"), run_name="program")["main"](**kwargs)
    finally:
        sys.path.remove(str(PROGRAMS))
        _forget_program_modules()


def _forget_program_modules():
    for name, module in list(sys.modules.items()):
        if pathlib.Path(getattr(module, "__file__", None) or "/").parent == PROGRAMS:
            del sys.modules[name]


def _falls(losses, factor=0.9):
    assert all(math.isfinite(v) for v in losses), losses
    assert losses[-1] < factor * losses[0], losses


# (program, arguments for a deterministic run comparable with PyTorch)
COMPARABLE = {
    "char_gpt": dict(steps=12, sample=False),
    "lstm_lm": dict(epochs=2, dropout=0.0),
    "seq2seq_transformer": dict(steps=15),
    "lstmcell_lbfgs": dict(steps=2),
    "cnn_adadelta": dict(epochs=2, dropout=0.0, shuffle=False),
    "vae": dict(epochs=3),
    "dcgan": dict(iters=8),
    "infinite_loader": None,  # its batches come from the framework's own sampler
    "reinforce": dict(episodes=8, fixed_sampling=True),
    "actor_critic": dict(episodes=8, fixed_sampling=True),
    "word_lm": dict(model_type="Transformer", emsize=16, nhid=16, nlayers=2, epochs=3, batch_size=4, bptt=8, lr=2,
                    deterministic=True),
    "neural_style": dict(epochs=2, image_size=8, n_images=2, deterministic=True),
    "mnist_rnn": dict(epochs=1, n_train=64, batch_size=32, n_test=32, deterministic=True),
    "forward_forward": dict(epochs=6, train_size=64, test_size=32, deterministic=True),
    "super_resolution": dict(nEpochs=2, n_train=16, n_test=10, batchSize=16, threads=0, deterministic=True),
}


def test_char_gpt_trains_and_samples_with_both_attention_paths():
    for flash in (True, False):
        out = run_program("char_gpt", steps=30, flash=flash)
        _falls(out["losses"], 0.8)
        with flow.mock_torch.enable():  # common.py imports torch
            text = runpy.run_path(str(PROGRAMS / "common.py"))["TEXT"]
        assert len(out["sample"]) == 21 and set(out["sample"]) <= set(text)


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "RNN_TANH"])
def test_lstm_language_model_with_tied_weights(rnn_type):
    _falls(run_program("lstm_lm", epochs=4, rnn_type=rnn_type)["losses"], 0.95)


def test_seq2seq_transformer_learns_to_reverse():
    out = run_program("seq2seq_transformer", steps=120)
    _falls(out["losses"], 0.5)
    assert out["accuracy"] > 0.5


def test_lstmcell_regressor_with_lbfgs():
    out = run_program("lstmcell_lbfgs", steps=3)
    _falls(out["losses"], 0.5)
    assert out["test_loss"] < 0.05


def test_cnn_with_adadelta_and_steplr():
    out = run_program("cnn_adadelta", epochs=4)
    _falls(out["losses"])
    assert out["accuracy"] > 0.75


def test_vae_with_randn_like_and_fixed_noise():
    _falls(run_program("vae", epochs=4)["losses"])
    out = run_program("vae", epochs=4, fixed_noise=False)
    _falls(out["losses"])
    assert out["sample_shape"] == (8, 64)


def test_dcgan_runs_both_initialisations():
    for fixed in (True, False):
        history = run_program("dcgan", iters=10, fixed_noise=fixed)["history"]
        assert len(history) == 10 and all(math.isfinite(d) and math.isfinite(g) for d, g in history)


def test_infinite_sampler_loop_and_checkpoint():
    out = run_program("infinite_loader", steps=150)
    assert out["loss"] < 0.01
    np.testing.assert_allclose(out["weight"], [1.5, -2.0, 0.5], atol=0.05)


@pytest.mark.parametrize("name", ["reinforce", "actor_critic"])
def test_policy_gradient_programs_learn_to_balance_the_pole(name):
    """pytorch/examples reinforcement_learning: Categorical sampling and log_prob, torch.tensor(deque), std()."""
    out = run_program(name, episodes=20)
    assert len(out["rewards"]) == 20 and np.isfinite(out["weight"]).all()
    assert out["running_reward"] > 15  # starts at 10 (the update itself is checked against PyTorch's below)


def test_super_resolution_trains_and_reloads_whole_model_checkpoints():
    """pytorch/examples super_resolution: orthogonal_ init, PixelShuffle, DataLoader(num_workers=4), whole-model
    torch.save."""
    out = run_program("super_resolution", nEpochs=3, n_train=16, n_test=10, batchSize=16, deterministic=True)
    _falls(out["losses"], 0.9)
    assert out["reloaded_is_same"] and out["reloaded_type"] == "Net"
    out = run_program("super_resolution", nEpochs=1, n_train=16, n_test=10, batchSize=16)  # the orthogonal init
    assert all(math.isfinite(v) for v in out["losses"]) and out["reloaded_is_same"]


def test_forward_forward_trains_each_layer_on_its_own_goodness():
    """pytorch/examples mnist_forward_forward: an nn.Linear subclass with its own Adam, x_[range(n), y] = ..."""
    out = run_program("forward_forward", epochs=12, train_size=128, test_size=64)
    for losses in out["layer_losses"]:
        _falls(losses, 0.8)
    assert out["train_error"] < 0.85  # chance: 0.9 (12 steps per layer; the comparison below checks the numbers)


def test_word_language_model_main_with_whole_model_checkpoints():
    """pytorch/examples word_language_model: nn.Transformer subclassed (encoder only, a -inf float mask), whole-model
    torch.save / load under serialization.safe_globals (NonDynamicallyQuantizableLinear, ...), flatten_parameters,
    generate.py's multinomial sampling."""
    sizes = dict(emsize=16, nhid=16, epochs=3, batch_size=4, bptt=8, words=12)
    for model_type, lr, nlayers in (("Transformer", 2, 2), ("LSTM", 10, 1)):
        out = run_program("word_lm", model_type=model_type, lr=lr, nlayers=nlayers, **sizes)
        _falls(out["losses"], 0.9)
        assert out["reloaded_type"] == ("TransformerModel" if model_type == "Transformer" else "RNNModel")
        vocabulary = set(out["vocabulary"])
        assert len(vocabulary) == 16 and len(out["sample"]) == 12 and set(out["sample"]) <= vocabulary
        assert out["test_loss"] < math.log(len(vocabulary))  # better than uniform guessing


def test_fast_neural_style_trains_transformer_net_against_vgg_features():
    """pytorch/examples fast_neural_style: InstanceNorm2d, ReflectionPad2d, nearest interpolate, Gram matrices by
    bmm, Tensor.new_tensor / div_, a frozen VGG16 (requires_grad=False), a namedtuple of features, state_dict reload."""
    out = run_program("neural_style", epochs=3, image_size=8, n_images=2)
    _falls(out["losses"], 0.97)
    assert out["output_shape"] == (1, 3, 8, 8) and out["reloaded_is_same"]


def test_mnist_rnn_with_adadelta_and_steplr():
    """pytorch/examples mnist_rnn: LSTM(batch_first=True) over image rows, BatchNorm1d, Dropout2d of 2-D features
    (PyTorch's deprecation warning), Adadelta with StepLR."""
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        out = run_program("mnist_rnn", epochs=2, lr=1.0, n_train=64, batch_size=32, n_test=32)
    _falls(out["losses"], 0.9)  # 4 steps: too few for the test accuracy to say much (compared with PyTorch's below)
    assert out["lr"] == pytest.approx(1.0 * 0.7 ** 2)


def _numbers(out):
    if "history" in out:
        return np.array(out["history"], dtype=np.float64).ravel()
    if "rewards" in out:
        return np.concatenate([out["rewards"], [out["running_reward"]], out["weight"].ravel()])
    values = list(out["losses"]) + list(out.get("psnr", []))
    values += [out[k] for k in ("test_loss", "accuracy", "train_error", "test_error") if k in out]
    return np.array(values, dtype=np.float64)


@pytest.mark.parametrize("name", [n for n, kw in COMPARABLE.items() if kw is not None])
def test_programs_give_pytorchs_numbers(name):
    pytest.importorskip("torch")
    ours = _numbers(run_program(name, **COMPARABLE[name]))
    theirs = _numbers(run_program(name, torch_is_flow=False, **COMPARABLE[name]))
    np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=2e-4)
