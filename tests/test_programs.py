"""Real programs written PyTorch-style (tests/programs/), run unchanged with ``import torch`` resolving to oneflow_lite
(flow.mock_torch). Each must train (its loss falls) and, where PyTorch is installed, give PyTorch's numbers when both
start from the same NumPy-initialised weights and see the same data (dropout off, noise drawn from NumPy)."""

import math
import os
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
    "resnet_checkpoint": dict(epochs=4, shuffle=False, deterministic=True),
    # identity-initialised affine_grid samples pixel centres, where grid_sample's gradient has kinks: a few steps only
    "spatial_transformer": dict(epochs=3, n_train=32, n_test=32, dropout=0.0, deterministic=True),
    "seq2seq_attention": dict(n_epochs=3, dropout_p=0.0, deterministic=True),
    "vit": dict(epochs=3, dropout=0.0, deterministic=True, grad_checkpointing=True),
    "simclr_distill": dict(steps=6, probe_steps=10, distill_steps=10, deterministic=True),
    "fgsm_unet": dict(epochs=2, adversarial_epochs=1, unet_epochs=3, deterministic=True),
    "ppo_continuous": dict(updates=4, fixed_sampling=True),
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


def test_resnet_checkpoint_resumes_model_optimizer_and_multisteplr():
    """A ResNet of BasicBlocks (BatchNorm2d, downsample shortcut, kaiming_normal_ through model.apply), SGD with
    nesterov momentum and MultiStepLR; the checkpoint (its milestones are a collections.Counter) loads with the
    default weights_only=True and training resumes where it stopped."""
    out = run_program("resnet_checkpoint", epochs=4)
    _falls(out["losses"], 0.9)
    assert out["resumed_same"] and out["lrs"] == pytest.approx([0.1, 0.1, 0.01, 0.01])
    assert out["num_batches_tracked"] == 16 and math.isfinite(out["momentum_norm"])
    cam = out["cam"]  # Grad-CAM through forward and full backward hooks: maps scaled to [0, 1]
    assert cam.shape == (4, 8, 8) and cam.min() >= 0 and np.allclose(cam.max(axis=(1, 2)), 1.0, atol=1e-3)


def test_spatial_transformer_tutorial_warps_and_trains():
    """The STN tutorial: fc_loc starts at the identity (bias copy_), affine_grid / grid_sample with their default
    align_corners (PyTorch's warning, at the tutorial's line), Dropout2d, nll_loss(size_average=False)."""
    with pytest.warns(UserWarning) as record:
        out = run_program("spatial_transformer", epochs=4, n_train=128, n_test=32, dropout=0.0, lr=0.05, momentum=0.9)
    _falls(out["losses"], 0.9)
    where = {(pathlib.Path(w.filename).name, w.lineno) for w in record if "align_corners=False" in str(w.message)}
    assert {name for name, _ in where} == {"spatial_transformer.py"}, where
    assert out["theta"].shape == (4, 2, 3) and out["grid_shapes"] == ((28, 28, 1), (28, 28, 1))


def test_seq2seq_translation_with_bahdanau_attention():
    """The "NLP from scratch" translation tutorial: GRU encoder, additive attention with bmm, teacher forcing by
    random.random(), NLLLoss, greedy decoding with topk until EOS."""
    out = run_program("seq2seq_attention", n_epochs=12)
    _falls(out["losses"], 0.3)
    assert out["accuracy"] >= 0.75 and out["attention_shape"] == (1, 6, 5)
    np.testing.assert_allclose(out["attention_row_sums"], 1.0, rtol=1e-5)


@pytest.mark.parametrize("schedule", ["lambda", "sequential"])
def test_vision_transformer_with_param_groups_and_warmup_cosine(schedule):
    """Its blocks run through torch.utils.checkpoint in one of the runs (the same numbers: dropout's masks are
    drawn again from the saved generator state)."""
    out = run_program("vit", epochs=6, lr=1e-2, schedule=schedule, grad_checkpointing=schedule == "lambda")
    _falls(out["losses"], 0.95)
    assert out["weight_decays"] == [0.05, 0.0] and len(out["lrs"]) == 24
    assert max(out["lrs"]) == pytest.approx(1e-2, rel=0.05) and out["lrs"][-1] < 1e-3


def test_simclr_nt_xent_three_ways_and_distillation():
    out = run_program("simclr_distill", steps=8, probe_steps=20, distill_steps=20)
    _falls(out["losses"], 0.95)
    for a, b, c in out["agreement"]:  # the three NT-Xent formulations give one loss
        assert a == pytest.approx(b, rel=1e-5) and a == pytest.approx(c, rel=1e-5)
    _falls(out["probe_losses"], 0.7)
    _falls(out["kd_losses"], 0.7)
    assert out["student_agreement"] > 0.6
    with pytest.warns(FutureWarning, match="nn.utils.weight_norm` is deprecated"):  # as PyTorch's
        out = run_program("simclr_distill", steps=8, probe_steps=2, distill_steps=2, head="dino", deterministic=True)
    _falls(out["losses"], 0.95)
    requires_grad, grad, g = out["head_g"]  # DINO's frozen weight-norm magnitude
    assert not requires_grad and grad is None and g == [1.0] * 16


def test_fgsm_attack_and_unet_segmentation():
    out = run_program("fgsm_unet", epochs=3, adversarial_epochs=1, unet_epochs=4)
    accuracies = out["accuracies"]
    assert accuracies[0] > 0.8 and accuracies[-1] <= accuracies[0]  # a larger epsilon never helps here
    assert out["example_shape"] == (8, 8) and out["jacobian_shape"] == (4, 1, 8, 8) and out["saliency"] > 0
    assert all(math.isfinite(loss) and penalty >= 0 for loss, penalty in out["penalties"])
    _falls(out["unet_losses"], 0.7)
    assert out["dice_scores"][-1] > out["dice_scores"][0]


def test_ppo_with_multivariate_normal_policy_and_kl_logging():
    """nikhilbarhate99/PPO-PyTorch's continuous PPO: MultivariateNormal(mean, diag_embed(var)) log_prob / entropy,
    the clipped surrogate, policy_old by load_state_dict, kl_divergence(old, new) logged."""
    out = run_program("ppo_continuous", updates=6, fixed_sampling=True)
    returns = out["returns"]
    assert np.mean(returns[-3:]) > np.mean(returns[:3]) + 3  # the point mass ends nearer the origin
    assert all(k >= 0 and math.isfinite(k) for k in out["kls"]) and out["action_std"] == pytest.approx(0.2)
    out = run_program("ppo_continuous", updates=2)  # dist.sample() from the framework's generator
    assert len(out["returns"]) == 2 and all(math.isfinite(v) for v in out["losses"])


def _numbers(out):
    if "history" in out:
        return np.array(out["history"], dtype=np.float64).ravel()
    if "rewards" in out:
        return np.concatenate([out["rewards"], [out["running_reward"]], out["weight"].ravel()])
    values = list(out["losses"]) + list(out.get("psnr", []))
    for key in ("lrs", "grad_norms", "running_mean", "probe_losses", "kd_losses", "accuracies", "unet_losses",
                "dice_scores", "returns", "kls"):
        values += list(out.get(key, []))
    values += list(np.ravel(out.get("penalties", []))) + ([out["saliency"]] if "saliency" in out else [])
    values += [out[k] for k in ("test_loss", "accuracy", "train_error", "test_error", "momentum_norm") if k in out]
    values += list(np.ravel(out.get("cam", [])))
    return np.array(values, dtype=np.float64)


@pytest.mark.parametrize("name", [n for n, kw in COMPARABLE.items() if kw is not None])
def test_programs_give_pytorchs_numbers(name):
    pytest.importorskip("torch")
    ours = _numbers(run_program(name, **COMPARABLE[name]))
    theirs = _numbers(run_program(name, torch_is_flow=False, **COMPARABLE[name]))
    np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=2e-4)


# ---- public programs run unchanged: nanoGPT and minGPT (scripts), OneFlow's tutorials ----------------------------
import glob  # noqa: E402
import pickle  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import types  # noqa: E402

from oneflow_lite.mock_torch.__main__ import main as mock_torch_main  # noqa: E402


@pytest.mark.parametrize("name", ["nanogpt_steps", "mingpt_steps"])
def test_gpt_models_of_public_repositories_train(name):
    out = run_program(name)
    _falls(out["losses"], 0.95)
    assert len(out["generated"]) == 2


@pytest.mark.parametrize("name", ["nanogpt_steps", "mingpt_steps"])
def test_gpt_models_of_public_repositories_give_pytorchs_numbers(name):
    pytest.importorskip("torch")
    ours, theirs = run_program(name), run_program(name, torch_is_flow=False)
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=2e-4, atol=1e-5)
    assert ours["generated"] == theirs["generated"]
    for key in ("mfu", "num_params"):
        if key in ours:
            assert ours[key] == pytest.approx(theirs[key])


def _script(monkeypatch, capsys, script, *args):
    """Run ``script`` as ``python -m oneflow_lite.mock_torch run script args`` would; its standard output."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    capsys.readouterr()
    assert mock_torch_main(["run", str(script), *args]) == 0
    return capsys.readouterr().out


def _char_dataset(directory, text):
    """nanoGPT's data/shakespeare_char/prepare.py output for ``text``: train.bin / val.bin (uint16) and meta.pkl."""
    directory.mkdir(parents=True)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.uint16)
    n = int(0.9 * len(ids))
    ids[:n].tofile(directory / "train.bin")
    ids[n:].tofile(directory / "val.bin")
    with open(directory / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)
    return chars


def _corpus():
    with flow.mock_torch.enable():  # common.py imports torch
        return runpy.run_path(str(PROGRAMS / "common.py"))["TEXT"] * 4


@pytest.mark.filterwarnings("ignore:torch.cuda.amp.GradScaler is enabled, but CUDA is not available")  # as PyTorch
def test_nanogpt_train_resume_and_sample_scripts(tmp_path, monkeypatch, capsys):
    """nanoGPT's train.py and sample.py, unchanged, with its shakespeare_char config shrunk by flags."""
    work = tmp_path / "nanogpt"
    shutil.copytree(PROGRAMS / "nanogpt", work)
    chars = _char_dataset(work / "data" / "shakespeare_char", _corpus())
    monkeypatch.chdir(work)
    monkeypatch.delitem(sys.modules, "model", raising=False)
    flags = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--n_layer=2", "--n_head=2",
             "--n_embd=32", "--block_size=16", "--batch_size=8", "--max_iters=24", "--eval_interval=12",
             "--eval_iters=2", "--log_interval=1", "--lr_decay_iters=40", "--warmup_iters=4", "--dropout=0.0"]
    out = _script(monkeypatch, capsys, "train.py", *flags)
    losses = [float(v) for v in re.findall(r"iter \d+: loss ([\d.]+)", out)]
    assert len(losses) == 25 and np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.2, out
    assert os.path.exists("out-shakespeare-char/ckpt.pt")
    out = _script(monkeypatch, capsys, "train.py", *flags, "--init_from=resume", "--max_iters=28")
    assert "Resuming training from out-shakespeare-char" in out
    assert [int(i) for i in re.findall(r"iter (\d+): loss", out)] == list(range(24, 29))
    monkeypatch.delitem(sys.modules, "model", raising=False)
    # sample.py imports tiktoken at the top; it only uses it without a meta.pkl (not installed here)
    monkeypatch.setitem(sys.modules, "tiktoken", types.ModuleType("tiktoken"))
    out = _script(monkeypatch, capsys, "sample.py", "--device=cpu", "--compile=False", "--num_samples=2",
                  "--max_new_tokens=30", "--out_dir=out-shakespeare-char", "--start=it was")
    samples = out.split("meta.pkl...\n", 1)[1].split("\n---------------\n")
    assert len(samples) == 3 and samples[2] == "", out
    assert all(len(s) == 36 and s.startswith("it was") and set(s) <= set(chars) for s in samples[:2]), out
    sys.modules.pop("model", None)


@pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true")  # as PyTorch without an accelerator
def test_mingpt_adder_and_chargpt_scripts(tmp_path, monkeypatch, capsys):
    """minGPT's projects/adder and projects/chargpt, unchanged (its Trainer: an infinite RandomSampler with
    replacement, 4 loader workers, AdamW groups), shrunk by their --section.key=value flags."""
    monkeypatch.chdir(tmp_path)
    small = ["--model.model_type=None", "--model.n_layer=2", "--model.n_head=2", "--model.n_embd=32"]
    for name in ("mingpt", "mingpt.model", "mingpt.utils", "mingpt.trainer"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(PROGRAMS / "mingpt"))
    out = _script(monkeypatch, capsys, PROGRAMS / "mingpt" / "projects" / "adder.py", "--data.ndigit=1",
                  "--trainer.max_iters=81", "--trainer.batch_size=32", "--trainer.learning_rate=0.005", *small)
    losses = [float(v) for v in re.findall(r"iter \d+: train loss ([\d.]+)", out)]
    assert len(losses) == 9 and losses[-1] < 0.8 * losses[0], out
    assert re.search(r"train final score: \d+/80 = ", out) and re.search(r"test final score: \d+/20 = ", out)
    assert os.path.exists("out/adder/model.pt") and os.path.exists("out/adder/config.json")
    (tmp_path / "input.txt").write_text("O God, O God! " + _corpus())
    out = _script(monkeypatch, capsys, PROGRAMS / "mingpt" / "projects" / "chargpt.py", "--trainer.max_iters=11",
                  "--trainer.batch_size=8", "--data.block_size=16", *small)
    assert re.search(r"iter 10: train loss [\d.]+", out) and "O God, O God!" in out
    assert os.path.exists("out/chargpt/model.pt")
    for name in ("mingpt", "mingpt.model", "mingpt.utils", "mingpt.trainer"):
        sys.modules.pop(name, None)


def _oneflow_script(name, tmp_path, monkeypatch):
    """Run tests/programs/<name>.py (a OneFlow script importing oneflow_lite) as __main__ in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(PROGRAMS))
    return runpy.run_path(str(PROGRAMS / f"{name}.py"), run_name="__main__")


def test_oneflow_quickstart_tutorial(tmp_path, monkeypatch, capsys):
    flow.manual_seed(0)
    g = _oneflow_script("oneflow_quickstart", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "x.shape: oneflow_lite.Size([64, 1, 28, 28])" in out and "y.shape: oneflow_lite.Size([64])" in out
    test_losses = [float(v) for v in re.findall(r"Avg loss: ([\d.]+)", out)]
    assert len(test_losses) == 5 and all(b < a for a, b in zip(test_losses, test_losses[1:])), out
    model = g["NeuralNetwork"]()
    model.load_state_dict(flow.load("./model"))
    x = flow.tensor(g["test_data"].data[:4, None])
    np.testing.assert_allclose(model(x).numpy(), g["model"](x).numpy(), rtol=1e-6)


def test_oneflow_graph_tutorial_trains_saves_and_serves(tmp_path, monkeypatch, capsys):
    flow.manual_seed(0)
    g = _oneflow_script("oneflow_graph_tutorial", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert re.search(r"loss: \d+\.\d{6}  \[    0/  128\]", out), out
    assert "building graph Done!" in out  # debug(1): the graph was captured again after load_state_dict
    state = flow.load("./GraphMobileNetV2")
    assert set(state) == {"model", "loss_fn", "System-Optimizer-0"}
    served = flow.nn.Graph.load("./mobile_net_v2_model")
    params = dict(g["model"].named_parameters())
    saved = {name[len("model."):]: t for name, t in served.variables().items() if name.startswith("model.")}
    assert {n for n in params if not n.startswith("classifer.")} <= set(saved)  # (the tutorial's unused typo)
    for name in params.keys() & saved.keys():  # the graph was saved with the model's current values
        np.testing.assert_array_equal(saved[name].numpy(), params[name].detach().numpy())
    x, y = next(iter(g["train_dataloader"]))
    assert math.isfinite(served(x, y).item())  # the saved training job runs without the model code


def _names(n, seed=0):
    """A names file like makemore's names.txt: lowercase words, one a line, from a few syllables."""
    rng = np.random.default_rng(seed)
    syllables = ["an", "el", "ma", "ri", "so", "ka", "li", "ne", "ja", "ro", "bel", "tin", "lee", "ya"]
    return "\n".join("".join(rng.choice(syllables, rng.integers(1, 4))) for _ in range(n)) + "\n"


@pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true")  # as PyTorch without an accelerator
def test_makemore_transformer_script_logs_to_tensorboard_and_samples(tmp_path, monkeypatch, capsys):
    """makemore.py, unchanged (its InfiniteDataLoader, AdamW, torch.inference_mode, SummaryWriter, top-k sampling)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "names.txt").write_text(_names(300))
    args = ["-i", "names.txt", "-o", "out", "--type", "transformer", "--device", "cpu", "--n-layer", "2",
            "--n-head", "2", "--n-embd", "16", "--n-embd2", "16", "--batch-size", "16", "--learning-rate", "1e-2"]
    out = _script(monkeypatch, capsys, PROGRAMS / "makemore.py", *args, "--max-steps", "501")
    losses = [float(v) for v in re.findall(r"step \d+ \| loss ([\d.]+)", out)]
    assert len(losses) == 51 and np.mean(losses[-5:]) < 0.75 * losses[0], out
    assert "test loss" in out and "saving model to out/model.pt" in out and os.path.exists("out/model.pt")
    (events,) = glob.glob("out/events.out.tfevents.*")
    with open(events, "rb") as f:
        data = f.read()
    assert data.count(b"Loss/train") == 1 and data.count(b"Loss/test") == 1
    with pytest.raises(SystemExit) as exit_info:  # --sample-only prints 50 samples, then sys.exit()
        _script(monkeypatch, capsys, PROGRAMS / "makemore.py", *args, "--sample-only")
    assert exit_info.value.code is None
    counts = [int(v) for v in re.findall(r"(\d+) samples that are (?:in train|in test|new):", capsys.readouterr().out)]
    assert len(counts) == 3 and sum(counts) == 50
