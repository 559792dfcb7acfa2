"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (on ``RNNBase``) and the cells ``RNNCell``, ``LSTMCell``,
``GRUCell`` (on ``RNNCellBase``), with PyTorch's constructors, parameter names and shapes, so state dicts load
across.

Note [Recurrent layers]
Each layer and direction has ``weight_ih_l{k}{suffix}`` (G*H, in), ``weight_hh_l{k}{suffix}``
(G*H, H or proj_size), optional ``bias_ih`` / ``bias_hh`` (G*H,) and, for an LSTM with
``proj_size``, ``weight_hr_l{k}{suffix}`` (proj_size, H); the G gate blocks are stacked
in PyTorch's order (LSTM: i, f, g, o; GRU: r, z, n), so a PyTorch state dict means the
same thing here. The equations (PyTorch's):

    RNN   h' = tanh|relu(W_ih x + b_ih + W_hh h + b_hh)
    LSTM  i, f, g, o = s(.), s(.), tanh(.), s(.) of W_ih x + b_ih + W_hh h + b_hh
          c' = f * c + i * g;  h' = o * tanh(c')  (then h' = W_hr h' with proj_size)
    GRU   r, z = s(W_ir x + b_ir + W_hr h + b_hr), s(W_iz x + b_iz + W_hz h + b_hz)
          n = tanh(W_in x + b_in + r * (W_hn h + b_hn));  h' = (1 - z) * n + z * h

They are built from the functional API, so autograd, ``nn.Graph`` capture and every
device work unchanged. Per layer and direction the input projection of all time steps is
one ``linear`` (with ``b_hh`` folded into its bias where the equations allow: RNN, LSTM),
then each step is one ``linear`` of the state plus the gate arithmetic. A
``PackedSequence`` (Note [Packed sequences] in nn/utils/rnn.py) runs on its packed rows:
step ``t`` updates the first ``batch_sizes[t]`` states only, so going forward the state
shrinks as sequences end (their last states are kept for ``h_n``), going backward it grows
as sequences start (from their ``h0``). Padded input is the case of constant batch sizes.
"""

from __future__ import annotations

import math
import numbers
import warnings

from oneflow_lite import functional as F
from oneflow_lite.functors.rnn import MODES, Weights, run_layers
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter
from oneflow_lite.nn.utils.rnn import PackedSequence

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]


# ---- RNN, LSTM, GRU ----------------------------------------------------------------------------------
class RNNBase(Module):
    """The parameters, checks and multi-layer loop shared by ``RNN``, ``LSTM`` and ``GRU`` (Note [Recurrent
    layers]); ``mode`` is ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'`` or ``'GRU'``."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        _check_config(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        if mode not in MODES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = MODES[mode].gates * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        factory = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[:2 if bidirectional else 1]:
                layer_input = input_size if layer == 0 else real_hidden * (2 if bidirectional else 1)
                shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, real_hidden)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = [f"{kind}_l{layer}{suffix}" for kind in shapes]
                for name, shape in zip(names, shapes.values()):
                    setattr(self, name, Parameter(F.empty(shape, **factory)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        """The parameters in PyTorch's flat order (read by name, so reassigned weights are seen)."""
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """Per layer and direction, the list of its parameters (PyTorch's order)."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch compacts cuDNN weights here; the weights are used as they are)."""

    def reset_parameters(self) -> None:
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) (PyTorch's initialisation)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- checks (PyTorch's messages) ----
    def check_input(self, input, batch_sizes) -> None:
        """The input's dtype matches the weights', it has 2 (packed) or 3 dims, its last dim is ``input_size``."""
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple:
        """(num_layers * num_directions, batch, proj_size or hidden_size)."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        directions = 2 if self.bidirectional else 1
        return self.num_layers * directions, mini_batch, self.proj_size if self.proj_size > 0 else self.hidden_size

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        """``hx`` with its batch dim reordered by ``permutation`` (None: unchanged)."""
        if permutation is None:
            return hx
        return F.index_select(hx, 1, permutation)

    # ---- the computation ----
    def _run(self, x, states, batch_sizes):
        """All layers over time-major ``x`` (T, N, in) or packed rows (sum(batch_sizes), in) from ``states``
        (tuples of (layers * directions, N, *) tensors, or None for zeros); returns ``(output, final states)``."""
        directions = 2 if self.bidirectional else 1
        if states is None:
            states = self._zero_states(x, x.shape[1] if batch_sizes is None else batch_sizes[0])
        else:
            states = tuple(F.unbind(s, 0) for s in states)
        weights = [self._layer_weights(k) for k in range(self.num_layers * directions)]
        return run_layers(self.mode, x, states, batch_sizes, weights, self.num_layers, directions, self.dropout,
                          self.training)

    def _layer_weights(self, k: int) -> Weights:
        """The parameters of layer-direction ``k`` (``layer * num_directions + direction``)."""
        by_kind = {name.split("_l")[0]: getattr(self, name) for name in self._all_weights[k]}
        return Weights(by_kind["weight_ih"], by_kind["weight_hh"], by_kind.get("bias_ih"), by_kind.get("bias_hh"),
                        by_kind.get("weight_hr"))

    def _zero_states(self, x, batch):
        """Per state, ``layers * directions`` references to one zero tensor (N, size)."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        return tuple((F.zeros((batch, size), dtype=x.dtype, device=x.device),) * count
                     for size in self._state_sizes())

    def _state_sizes(self) -> tuple:
        return (self.hidden_size,)

    def _forward(self, name: str, input, hx):
        """The forward of ``RNN`` and ``GRU`` (``hx``: a tensor or None); LSTM wraps its (h, c) pair."""
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = batch_sizes_t.tolist()
            is_batched = True
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                                 f"{' tensor' if name == 'RNN' else ''} instead")
            is_batched = input.dim() == 3
            x = input if is_batched else F.unsqueeze(input, 0 if self.batch_first else 1)
            if hx is not None:
                self._check_state_dims(hx, is_batched)
                if not is_batched:
                    hx = tuple(F.unsqueeze(h, 1) for h in hx)
        if hx is not None:
            self._check_states(x, hx, batch_sizes)
            hx = tuple(self.permute_hidden(h, sorted_indices) for h in hx)
        else:
            self.check_input(x, batch_sizes)
        if not packed and self.batch_first:
            x = F.transpose(x, 0, 1)
        output, hidden = self._run(x, hx, batch_sizes)
        hidden = tuple(self.permute_hidden(h, unsorted_indices) for h in hidden)
        if packed:
            return PackedSequence(output, batch_sizes_t, sorted_indices, unsorted_indices), hidden
        if self.batch_first:
            output = F.transpose(output, 0, 1)
        if not is_batched:
            output = F.squeeze(output, 0 if self.batch_first else 1)
            hidden = tuple(F.squeeze(h, 1) for h in hidden)
        return output, hidden

    def _check_state_dims(self, hx, is_batched) -> None:
        want = 3 if is_batched else 2
        if hx[0].dim() != want:
            kind = "batched 3-D" if is_batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx[0].dim()}-D tensor")

    def _check_states(self, x, hx, batch_sizes) -> None:
        self.check_forward_args(x, hx[0], batch_sizes)


def _check_config(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size) -> None:
    """PyTorch's constructor checks (same messages and exception types)."""
    if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                         "being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                      f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                      stacklevel=4)
    for arg, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                             ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
        if not isinstance(value, kind):
            raise TypeError(f"{arg} should be of type {kind.__name__}, got: {type(value).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _no_proj_size(kwargs) -> None:
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(f"got an unexpected keyword argument '{next(iter(kwargs))}'")


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` (``nonlinearity='relu'``: relu).
    ``forward(input, hx=None)`` returns ``(output, h_n)``: input (L, N, H_in) (``batch_first``: (N, L, H_in)),
    unbatched (L, H_in) or a ``PackedSequence``; hx / h_n (num_layers * num_directions, N, H)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, **kwargs):
        _no_proj_size(kwargs)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        output, hidden = self._forward("RNN", input, None if hx is None else (hx,))
        return output, hidden[0]


class GRU(RNNBase):
    """Gated recurrent unit (equations in Note [Recurrent layers]); arguments and shapes as ``RNN`` (no
    ``nonlinearity``). ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, **kwargs):
        _no_proj_size(kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)

    def forward(self, input, hx=None):
        output, hidden = self._forward("GRU", input, None if hx is None else (hx,))
        return output, hidden[0]


class LSTM(RNNBase):
    """Long short-term memory (equations in Note [Recurrent layers]), with an optional output projection
    ``proj_size``. ``forward(input, hx=None)`` returns ``(output, (h_n, c_n))``; ``hx = (h_0, c_0)`` with h
    (num_layers * num_directions, N, proj_size or H) and c (num_layers * num_directions, N, H)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def get_expected_cell_size(self, input, batch_sizes) -> tuple:
        """(num_layers * num_directions, batch, hidden_size)."""
        layers, batch, _ = self.get_expected_hidden_size(input, batch_sizes)
        return layers, batch, self.hidden_size

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        if isinstance(hx, tuple):
            return tuple(F.index_select(h, 1, permutation) for h in hx)
        return F.index_select(hx, 1, permutation)

    def _state_sizes(self) -> tuple:
        return (self.proj_size if self.proj_size > 0 else self.hidden_size, self.hidden_size)

    def _check_state_dims(self, hx, is_batched) -> None:
        want = 3 if is_batched else 2
        if hx[0].dim() != want or hx[1].dim() != want:
            kind = "batched 3-D" if is_batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got ({hx[0].dim()}-D, "
                               f"{hx[1].dim()}-D) tensors")

    def _check_states(self, x, hx, batch_sizes) -> None:
        self.check_forward_args(x, hx, batch_sizes)

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
        output, (h, c) = self._forward("LSTM", input, None if hx is None else tuple(hx))
        return output, (h, c)


# ---- cells -------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """The parameters of a one-step cell: ``weight_ih`` (G*H, input_size), ``weight_hh`` (G*H, H), optional
    ``bias_ih`` / ``bias_hh`` (G*H,), all from U(-1/sqrt(H), 1/sqrt(H))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(F.empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(F.empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(F.empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(F.empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _cell(self, name, equations, input, states, labels):
        """One step of ``equations`` on ``input`` (N, in) or (in,) from ``states`` (None: zeros); returns the
        new state tuple, unbatched again for an unbatched input."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for label, s in zip(labels, states or ()):
            if s.dim() not in (1, 2):
                what = f"hx[{label}]" if name == "LSTMCell" else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {s.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = F.unsqueeze(input, 0)
            states = None if states is None else tuple(F.unsqueeze(s, 0) for s in states)
        if states is None:
            zeros = F.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            states = (zeros,) * len(labels)
        self._check_cell_args(input, states, labels)
        w = Weights(self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        out = equations.step(equations.project(input, w), states, w)
        return out if is_batched else tuple(F.squeeze(s, 0) for s in out)

    def _check_cell_args(self, input, states, labels) -> None:
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        for label, s in zip(labels, states):
            if s.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} batch size "
                                   f"{s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {s.shape[1]}, expected "
                                   f"{self.hidden_size}")


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu); ``forward(input, hx=None)``
    returns h' (N, H), or (H,) for an unbatched (H_in,) input."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._cell("RNNCell", MODES[mode], input, None if hx is None else (hx,), ("",))[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, hx=None)`` with ``hx = (h, c)`` returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell("LSTMCell", MODES["LSTM"], input, None if hx is None else tuple(hx), ("0", "1"))


class GRUCell(RNNCellBase):
    """One GRU step; ``forward(input, hx=None)`` returns h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell("GRUCell", MODES["GRU"], input, None if hx is None else (hx,), ("",))[0]
