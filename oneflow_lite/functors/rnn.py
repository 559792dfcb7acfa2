"""The recurrent networks' equations (Note [Recurrent layers] in nn/modules/rnn.py) and PyTorch's functional
forms built on them: ``flow.lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu`` (all layers over a sequence, with
PyTorch's flat list of weights, padded or packed) and ``flow.lstm_cell`` / ``gru_cell`` / ``rnn_tanh_cell`` /
``rnn_relu_cell`` (one step). The layers ``nn.RNN`` / ``LSTM`` / ``GRU`` and the cells run the same functions.

Note [Flat RNN weights]
``params`` holds, for each layer and then each direction, ``w_ih``, ``w_hh``, then ``b_ih``, ``b_hh`` when
``has_biases``, then ``w_hr`` for an LSTM with a projection (told by ``h0`` and ``c0`` having different
sizes): ``nn.LSTM._flat_weights``' order, as PyTorch's ``_VF.lstm`` takes it.
"""

from __future__ import annotations

from typing import NamedTuple

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.registry import composite

# ---- the equations (Note [Recurrent layers]) -------------------------------------------------------------
class Weights(NamedTuple):
    """The parameters of one layer and direction (or of a cell); absent ones are None."""

    ih: Tensor
    hh: Tensor
    b_ih: Tensor | None
    b_hh: Tensor | None
    hr: Tensor | None = None


def _project_folded(x, w):
    """``W_ih x + b_ih + b_hh`` for every row of ``x`` (RNN, LSTM: the hidden bias is added once here)."""
    bias = w.b_hh if w.b_ih is None else w.b_ih if w.b_hh is None else F.add(w.b_ih, w.b_hh)
    return (F.linear(x, w.ih, bias),)


def _project_gru(x, w):
    """``(W_i[rz] x + b_i[rz], W_in x + b_in)`` for every row of ``x`` (``b_hn`` stays inside ``r * (.)``)."""
    hidden = w.hh.shape[1]
    return tuple(F.split(F.linear(x, w.ih, w.b_ih), [2 * hidden, hidden], -1))


def _rnn_tanh_step(gi, state, w):
    return (F.tanh(F.add(gi[0], F.linear(state[0], w.hh))),)


def _rnn_relu_step(gi, state, w):
    return (F.relu(F.add(gi[0], F.linear(state[0], w.hh))),)


def _lstm_step(gi, state, w):
    h, c = state
    i, f, g, o = F.chunk(F.add(gi[0], F.linear(h, w.hh)), 4, 1)
    c = F.add(F.mul(F.sigmoid(f), c), F.mul(F.sigmoid(i), F.tanh(g)))
    h = F.mul(F.sigmoid(o), F.tanh(c))
    if w.hr is not None:
        h = F.linear(h, w.hr)
    return h, c


def _gru_step(gi, state, w):
    h = state[0]
    i_rz, i_n = gi
    hidden = h.shape[1]
    h_rz, h_n = F.split(F.linear(h, w.hh, w.b_hh), [2 * hidden, hidden], 1)
    r, z = F.chunk(F.sigmoid(F.add(i_rz, h_rz)), 2, 1)
    n = F.tanh(F.add(i_n, F.mul(r, h_n)))
    return (F.add(n, F.mul(z, F.sub(h, n))),)


class _Equations(NamedTuple):
    """One mode: gate blocks per weight, the input projection and the step ``(gi, state, w) -> state``."""

    gates: int
    project: object
    step: object


MODES = {
    "RNN_TANH": _Equations(1, _project_folded, _rnn_tanh_step),
    "RNN_RELU": _Equations(1, _project_folded, _rnn_relu_step),
    "LSTM": _Equations(4, _project_folded, _lstm_step),
    "GRU": _Equations(3, _project_gru, _gru_step),
}


# ---- one layer and direction over time -------------------------------------------------------------------
def time_steps(projected, batch_sizes):
    """Per time step, the tuple of projected pieces: unbound along time (padded) or split by batch sizes."""
    if batch_sizes is None:
        return list(zip(*(F.unbind(p, 0) for p in projected)))
    return list(zip(*(F.split(p, batch_sizes, 0) for p in projected)))


def _rows(state, start, length):
    return tuple(F.narrow(s, 0, start, length) for s in state)


def run_direction(step, inputs, init_state, w, batch_sizes, reverse):
    """Run ``step`` over ``inputs`` (one per time step) from ``init_state``; returns the outputs in time order and
    the final state. With ``batch_sizes`` step t touches only the first ``batch_sizes[t]`` rows."""
    n = len(inputs)
    outputs = [None] * n
    state, finished = init_state, []
    rows = None if batch_sizes is None else (batch_sizes[-1] if reverse else batch_sizes[0])
    if reverse and rows is not None and rows != init_state[0].shape[0]:
        state = _rows(init_state, 0, rows)
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        if rows is not None and batch_sizes[t] != rows:
            size = batch_sizes[t]
            if reverse:  # sequences starting at t join with their initial state
                state = tuple(F.cat([s, F.narrow(s0, 0, rows, size - rows)]) for s, s0 in zip(state, init_state))
            else:  # sequences ending before t keep their state for h_n
                finished.append(_rows(state, size, rows - size))
                state = _rows(state, 0, size)
            rows = size
        state = step(inputs[t], state, w)
        outputs[t] = state[0]
    if finished:
        parts = [state, *reversed(finished)]
        state = tuple(F.cat([p[i] for p in parts]) for i in range(len(state)))
    return outputs, state


# ---- all layers ------------------------------------------------------------------------------------------------
def run_layers(mode, x, states, batch_sizes, layer_weights, num_layers, directions, dropout, training):
    """All layers of ``mode`` over time-major ``x`` (T, N, in), or packed rows (sum(batch_sizes), in), from
    ``states`` (per state, one (N, *) tensor per layer and direction); ``layer_weights[k]`` are the ``Weights`` of
    layer-direction ``k = layer * directions + direction``. Dropout between layers when ``training``. Returns
    ``(output, final states)``, each final state stacked to (num_layers * directions, N, *)."""
    equations = MODES[mode]
    finals = []
    for layer in range(num_layers):
        if layer and dropout and training:
            x = F.dropout(x, dropout, True)
        outputs = []
        for direction in range(directions):
            k = layer * directions + direction
            w = layer_weights[k]
            inputs = time_steps(equations.project(x, w), batch_sizes)
            init_state = tuple(s[k] for s in states)
            out, final = run_direction(equations.step, inputs, init_state, w, batch_sizes, direction == 1)
            outputs.append(F.stack(out, 0) if batch_sizes is None else F.cat(out, 0))
            finals.append(final)
        x = outputs[0] if directions == 1 else F.cat(outputs, -1)
    return x, tuple(F.stack([f[i] for f in finals], 0) for i in range(len(finals[0])))


# ---- [compat t1] PyTorch's functional forms (Note [Flat RNN weights]) --------------------------------------------
def _flat_weights(name, params, has_biases, num_layers, directions, projections) -> list:
    per = 2 + (2 if has_biases else 0) + (1 if projections else 0)
    params = list(params)
    if len(params) != per * num_layers * directions:
        raise RuntimeError(f"{name}: expected {per * num_layers * directions} tensors in params ({per} per layer and "
                           f"direction: w_ih, w_hh{', b_ih, b_hh' if has_biases else ''}"
                           f"{', w_hr' if projections else ''}), got {len(params)}")
    out = []
    for k in range(num_layers * directions):
        chunk = params[k * per:(k + 1) * per]
        b_ih, b_hh = chunk[2:4] if has_biases else (None, None)
        out.append(Weights(chunk[0], chunk[1], b_ih, b_hh, chunk[-1] if projections else None))
    return out


def _recurrent(name, mode, x, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
    """The functional forms' common body: checks, flat weights, ``run_layers``; returns (output, *final states)."""
    packed = batch_sizes is not None
    want = 2 if packed else 3
    if x._meta.ndim != want:
        raise RuntimeError(f"{name}: expected {'packed data (rows, input_size)' if packed else 'a 3-D input'} "
                           f"({want} dims), got input of size {list(x._meta.shape)}")
    directions = 2 if bidirectional else 1
    for i, h in enumerate(hx):
        if h._meta.ndim != 3 or h._meta.shape[0] != num_layers * directions:
            raise RuntimeError(f"{name}: expected hx[{i}] of size (num_layers * num_directions = "
                               f"{num_layers * directions}, batch, hidden), got {list(h._meta.shape)}")
    projections = mode == "LSTM" and hx[0]._meta.shape[2] != hx[1]._meta.shape[2]
    weights = _flat_weights(name, params, has_biases, num_layers, directions, projections)
    sizes = [int(b) for b in batch_sizes.tolist()] if packed else None
    if batch_first and not packed:
        x = F.transpose(x, 0, 1)
    states = tuple(F.unbind(h, 0) for h in hx)
    out, finals = run_layers(mode, x, states, sizes, weights, num_layers, directions, dropout, train)
    if batch_first and not packed:
        out = F.transpose(out, 0, 1)
    return (out, *finals)


def _lstm_states(name, hx):
    if len(hx) != 2:
        raise RuntimeError(f"{name} expects two hidden states (h0, c0), got {len(hx)}")
    return tuple(hx)


@composite("Lstm")
def lstm(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``(output, h_n, c_n)`` of a multi-layer LSTM with flat weights ``params`` from ``hx = (h0, c0)``."""
    return _recurrent("lstm", "LSTM", x, None, _lstm_states("lstm", hx), params, has_biases, num_layers, dropout,
                      train, bidirectional, batch_first)


@composite("LstmPacked")
def lstm_packed(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    """``lstm`` over the rows of a packed sequence (``data``, ``batch_sizes``)."""
    return _recurrent("lstm", "LSTM", data, batch_sizes, _lstm_states("lstm", hx), params, has_biases, num_layers,
                      dropout, train, bidirectional, False)


def _single_state(mode, name):
    def run(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        return _recurrent(name, mode, x, None, (hx,), params, has_biases, num_layers, dropout, train, bidirectional,
                          batch_first)

    def run_packed(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
        return _recurrent(name, mode, data, batch_sizes, (hx,), params, has_biases, num_layers, dropout, train,
                          bidirectional, False)
    run.__doc__ = f"``(output, h_n)`` of a multi-layer {mode} with flat weights ``params`` from ``hx``."
    run_packed.__doc__ = f"``{name}`` over the rows of a packed sequence (``data``, ``batch_sizes``)."
    return run, run_packed


for _name, _mode in (("Gru", "GRU"), ("RnnTanh", "RNN_TANH"), ("RnnRelu", "RNN_RELU")):
    _run, _run_packed = _single_state(_mode, _mode.lower())
    composite(_name)(_run)
    composite(_name + "Packed")(_run_packed)


def _cell(name, mode, x, states, w_ih, w_hh, b_ih, b_hh):
    """One step of ``mode`` from ``states``; returns the new state tuple."""
    equations = MODES[mode]
    hidden = w_hh._meta.shape[1] if w_hh._meta.ndim == 2 else -1
    if x._meta.ndim != 2 or any(s._meta.ndim != 2 for s in states):
        raise RuntimeError(f"{name}: expected a 2-D input (batch, input_size) and 2-D hidden states, got input of "
                           f"size {list(x._meta.shape)} and states {[list(s._meta.shape) for s in states]}")
    for label, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w._meta.ndim != 2 or w._meta.shape[0] != equations.gates * hidden:
            raise RuntimeError(f"{name}: {label} first dim must be {equations.gates} * hidden_size = "
                               f"{equations.gates * hidden}, but got {list(w._meta.shape)}")
    if x._meta.shape[1] != w_ih._meta.shape[1]:
        raise RuntimeError(f"{name}: input has inconsistent input_size: got {x._meta.shape[1]} expected "
                           f"{w_ih._meta.shape[1]}")
    for s in states:
        if tuple(s._meta.shape) != (x._meta.shape[0], hidden):
            raise RuntimeError(f"{name}: expected hidden states of size {[x._meta.shape[0], hidden]}, got "
                               f"{list(s._meta.shape)}")
    w = Weights(w_ih, w_hh, b_ih, b_hh)
    return equations.step(equations.project(x, w), tuple(states), w)


@composite("LstmCell")
def lstm_cell(x, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``(h', c')``: one LSTM step of ``x`` (N, input_size) from ``hx = (h, c)``."""
    return _cell("lstm_cell", "LSTM", x, _lstm_states("lstm_cell", hx), w_ih, w_hh, b_ih, b_hh)


@composite("GruCell")
def gru_cell(x, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``h'``: one GRU step of ``x`` (N, input_size) from ``hx`` (N, hidden_size)."""
    return _cell("gru_cell", "GRU", x, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


@composite("RnnTanhCell")
def rnn_tanh_cell(x, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)``."""
    return _cell("rnn_tanh_cell", "RNN_TANH", x, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


@composite("RnnReluCell")
def rnn_relu_cell(x, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``h' = relu(W_ih x + b_ih + W_hh h + b_hh)``."""
    return _cell("rnn_relu_cell", "RNN_RELU", x, (hx,), w_ih, w_hh, b_ih, b_hh)[0]
