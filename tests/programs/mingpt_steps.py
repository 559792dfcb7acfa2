"""minGPT's model (tests/programs/mingpt/mingpt/, unchanged from github.com/karpathy/minGPT) driven as its Trainer
drives it: ``GPT.get_default_config`` / ``CfgNode``, ``configure_optimizers`` (AdamW, decay / no-decay groups),
steps with gradient clipping, then greedy ``generate``. Weights come from NumPy (common.numpy_init) and the batches
are fixed, so that PyTorch and oneflow_lite give the same numbers."""

import pathlib
import sys

import numpy as np
import torch

from common import numpy_init

HERE = pathlib.Path(__file__).parent / "mingpt"


def _import_mingpt():
    for name in ("mingpt", "mingpt.model", "mingpt.utils", "mingpt.trainer"):
        sys.modules.pop(name, None)  # they import torch: one copy per framework
    sys.path.insert(0, str(HERE))
    try:
        from mingpt.model import GPT
        from mingpt.trainer import Trainer
    finally:
        sys.path.remove(str(HERE))
        for name in ("mingpt", "mingpt.model", "mingpt.utils", "mingpt.trainer"):
            sys.modules.pop(name, None)
    return GPT, Trainer


def main(steps=8, seed=0):
    GPT, Trainer = _import_mingpt()
    config = GPT.get_default_config()
    config.merge_from_dict({"model_type": None, "n_layer": 2, "n_head": 2, "n_embd": 32, "vocab_size": 10,
                            "block_size": 12, "embd_pdrop": 0.0, "resid_pdrop": 0.0, "attn_pdrop": 0.0})
    model = numpy_init(GPT(config), seed)
    train_config = Trainer.get_default_config()
    train_config.learning_rate = 5e-3
    optimizer = model.configure_optimizers(train_config)
    rng = np.random.default_rng(seed)
    data = (np.arange(13) + rng.integers(0, 10, (steps, 6, 1))) % 10  # learnable: each digit is the last + 1
    losses = []
    model.train()
    for step in range(steps):
        x = torch.from_numpy(data[step, :, :-1].astype(np.int64))
        y = torch.from_numpy(data[step, :, 1:].astype(np.int64))
        y[:, :2] = -1  # minGPT's "ignore" targets (cross_entropy's ignore_index=-1)
        logits, loss = model(x, y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train_config.grad_norm_clip)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        out = model.generate(torch.tensor([[1, 2, 3], [7, 8, 9]], dtype=torch.long), 5, do_sample=False)
    return {"losses": losses, "generated": out.tolist()}
