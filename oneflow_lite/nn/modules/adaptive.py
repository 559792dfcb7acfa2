"""``AdaptiveLogSoftmaxWithLoss``: the efficient softmax approximation of Grave et al. (2017) for large
vocabularies, as PyTorch's ``torch.nn.modules.adaptive``."""

from __future__ import annotations

import itertools
from collections import namedtuple
from collections.abc import Sequence

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.container import ModuleList, Sequential
from oneflow_lite.nn.modules.linear import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _check_target(input_, target_) -> None:
    tdim = target_.ndim
    if tdim == 1:
        if input_.shape[0] != target_.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch dimension.")
        if input_.ndim != 2:
            raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size {input_.shape}")
    elif tdim == 0:
        if input_.ndim != 1:
            raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size {input_.shape}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Classes split by ``cutoffs`` into a frequent shortlist (scored by the ``head``, which also scores one
    entry per cluster) and clusters of rarer classes (each scored by a ``tail`` projection whose width is
    ``in_features / div_value ** (i + 1)``). ``forward(input, target)`` returns ``(output, loss)``: the
    log-probability of each target and the mean negative log-likelihood."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                                        Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        """Re-initialise the head and every tail projection."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_) -> _ASMoutput:
        _check_target(input_, target_)
        batched = target_.ndim > 0
        input = input_ if batched else F.unsqueeze(input_, 0)
        target = target_ if batched else F.unsqueeze(target_, 0)
        batch_size = target.shape[0]
        output = F.zeros(batch_size, dtype=input.dtype, device=input.device)
        gather_inds = target
        used_rows = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            mask = F.logical_and(F.ge(target, low), F.lt(target, high))
            rows = F.reshape(F.nonzero(mask), (-1,))
            if rows.numel() == 0:
                continue
            if i > 0:
                relative = F.sub(F.index_select(target, 0, rows), low)
                cluster_logprob = F.log_softmax(self.tail[i - 1](F.index_select(input, 0, rows)), 1)
                gather_inds = F.masked_fill(gather_inds, mask, self.shortlist_size + i - 1)
                local = F.gather(cluster_logprob, 1, F.unsqueeze(relative, 1))
                output = F.index_add(output, 0, rows, F.reshape(local, (-1,)))
            used_rows += rows.numel()
        if used_rows != batch_size:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), 1)
        output = F.add(output, F.reshape(F.gather(head_logprob, 1, F.unsqueeze(gather_inds, 1)), (-1,)))
        loss = F.mean(F.neg(output))
        if not batched:
            output = F.squeeze(output, 0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, 1)
        parts = [F.narrow(head_logprob, 1, 0, self.shortlist_size)]
        for i, _ in enumerate(itertools.pairwise(self.cutoffs)):
            cluster_logprob = F.log_softmax(self.tail[i](input), 1)
            parts.append(F.add(cluster_logprob, F.narrow(head_logprob, 1, self.shortlist_size + i, 1)))
        return F.cat(parts, 1)

    def log_prob(self, input):
        """The log-probabilities of every class, (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row: ``argmax(log_prob(input), 1)``, computed from the head alone where it
        picks a shortlist class."""
        head_output = self.head(input)
        output = F.argmax(head_output, 1)
        not_in_shortlist = F.ge(output, self.shortlist_size)
        if not bool(F.any(not_in_shortlist)):
            return output
        if bool(F.all(not_in_shortlist)):
            return F.argmax(self._get_full_log_prob(input, head_output), 1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist], head_output[not_in_shortlist])
        output[not_in_shortlist] = F.argmax(log_prob, 1)
        return output
