"""nanoGPT's model (tests/programs/nanogpt/model.py, unchanged from github.com/karpathy/nanoGPT) driven as its
train.py drives it: ``configure_optimizers`` (AdamW, decay / no-decay groups, the fused check through
``inspect.signature``), a few steps with gradient clipping, ``estimate_mfu``, ``crop_block_size`` and greedy
``generate``. Weights come from NumPy (common.numpy_init) so that PyTorch and oneflow_lite give the same numbers."""

import pathlib
import sys

import numpy as np
import torch

from common import numpy_init

HERE = pathlib.Path(__file__).parent / "nanogpt"


def _import_model():
    sys.modules.pop("model", None)  # it imports torch: one copy per framework
    sys.path.insert(0, str(HERE))
    try:
        import model
    finally:
        sys.path.remove(str(HERE))
        sys.modules.pop("model", None)
    return model


def main(steps=8, seed=0):
    nanogpt = _import_model()
    config = nanogpt.GPTConfig(block_size=16, vocab_size=40, n_layer=2, n_head=2, n_embd=32, dropout=0.0, bias=True)
    model = numpy_init(nanogpt.GPT(config), seed)
    optimizer = model.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")
    rng = np.random.default_rng(seed)
    data = (np.arange(17) * 3 + rng.integers(0, 40, (steps, 4, 1))) % 40  # learnable: each token is the last + 3
    losses = []
    for step in range(steps):
        X = torch.from_numpy(data[step, :, :-1].astype(np.int64))
        Y = torch.from_numpy(data[step, :, 1:].astype(np.int64))
        logits, loss = model(X, Y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    mfu = model.estimate_mfu(4, 0.5)
    model.crop_block_size(8)
    model.eval()
    with torch.no_grad():
        X8, Y8 = torch.from_numpy(data[0, :, :8].astype(np.int64)), torch.from_numpy(data[0, :, 1:9].astype(np.int64))
        _, eval_loss = model(X8, Y8)
        generated = model.generate(X[:2, :3], 4, temperature=1.0, top_k=1)  # top_k=1: greedy, no random draw
    return {"losses": losses + [eval_loss.item()], "mfu": mfu, "generated": generated.tolist(),
            "num_params": model.get_num_params()}
