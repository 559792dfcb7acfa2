"""Helpers shared by the programs: deterministic initialisation from NumPy (so that the same program gives the same
numbers under PyTorch and under oneflow_lite, whose random generators differ) and a tiny text corpus."""

import numpy as np
import torch

TEXT = (
    "it was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
    "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of light, "
    "it was the season of darkness, it was the spring of hope, it was the winter of despair, we had "
    "everything before us, we had nothing before us, we were all going direct to heaven, we were all going "
    "direct the other way."
)


def numpy_init(module, seed, scale=0.1):
    """Overwrite every parameter of ``module`` with seeded NumPy values (normal * scale; zeros for biases
    of norms kept at their defaults). Buffers are left as they are."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith(("norm.weight", "ln.weight", "bn.weight")) or ".norm" in name and name.endswith("weight"):
                continue
            values = rng.standard_normal(tuple(p.shape)) * scale
            p.copy_(torch.from_numpy(values.astype(np.float64 if p.dtype == torch.float64 else np.float32)))
    return module


def numpy_tensor(rng, *shape, dtype=np.float32):
    return torch.from_numpy(rng.standard_normal(shape).astype(dtype))
