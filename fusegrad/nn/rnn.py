"""Recurrent layers: RNN, LSTM, GRU and their cells RNNCell, LSTMCell, GRUCell.

Each mirrors its torch.nn namesake: constructor signature and checks (torch's
texts), parameters named and registered as torch's (`weight_ih_l0`,
`weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`, `weight_hr_l0` with a projection,
`..._reverse` for the second direction), drawn U(-1/sqrt(hidden_size),
1/sqrt(hidden_size)) in torch's order, `extra_repr`, and forward's shapes,
unbatched inputs and errors.

The math is torch's CPU implementation (ATen RNN.cpp), written as a composite
of fusegrad ops in a Python loop over time steps, so it differentiates (twice
too) and traces into fg.compile: per layer and direction the input projection
of every step is one `linear` (W_ih x + b_ih), then each step adds
W_hh h + b_hh and applies the gates:

* RNN: h' = tanh or relu(W_ih x + b_ih + W_hh h + b_hh)
* LSTM, gates (i, f, g, o) in that order: c' = f * c + i * g,
  h' = o * tanh(c') (times W_hr^T with proj_size > 0)
* GRU, gates (r, z, n): n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
  h' = (h - n) * z + n

Between layers (not after the last) dropout applies in training mode when
`dropout > 0`. The results' grad_fn names are those of the composite (torch's
LSTM output has its fused CPU kernel's MkldnnRnnLayerBackward0).

A PackedSequence input (nn.utils.rnn) runs as ATen's PackedLayer / ReversedPackedLayer do:
time step t takes the first batch_sizes[t] rows of the state (the sequences still running,
longest first); a sequence's final state is its state at its last valid step, set aside as
the batch shrinks and put back in batch order at the end (the reverse direction starts from
the shortest batch and appends initial states as it grows). The output is a PackedSequence
with the input's batch_sizes and indices; the initial states are permuted into sorted order
(index_select by sorted_indices) and the final ones back (unsorted_indices), as torch's
permute_hidden. The batch sizes are read as Python ints: inside fg.compile a batch_sizes
tensor computed in the call is a value read, a graph break.
"""
from __future__ import annotations

import math
import numbers
import warnings

import fusegrad as fg
from fusegrad.tracer.user_frame import user_stacklevel

from . import functional as F
from . import init
from .module import Module, Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# ---- one time step (shared by the cells and the layers) --------------------------------

def _rnn_step(igates, h, w_hh, b_hh, relu: bool):
    """tanh/relu(igates + W_hh h + b_hh), igates = W_ih x + b_ih."""
    pre = F.linear(h, w_hh, b_hh) + igates
    return pre.relu() if relu else pre.tanh()


def _lstm_step(igates, h, c, w_hh, b_hh, w_hr=None):
    """(h', c') of an LSTM step, gates (i, f, g, o) in torch's order."""
    gates = F.linear(h, w_hh, b_hh) + igates
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    hy = o.sigmoid() * cy.tanh()
    if w_hr is not None:
        hy = hy.matmul(w_hr.t())
    return hy, cy


def _gru_step(igates, h, w_hh, b_hh):
    """h' of a GRU step, gates (r, z, n) in torch's order: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
    h' = (h - n) * z + n."""
    i_r, i_z, i_n = igates.chunk(3, 1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
    r = (h_r + i_r).sigmoid()
    z = (h_z + i_z).sigmoid()
    n = (i_n + h_n * r).tanh()
    return (h - n) * z + n


# ---- cells -------------------------------------------------------------------------------

class RNNCellBase(Module):
    """What the cells share: weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden)
    and the biases bias_ih, bias_hh (chunks * hidden,), drawn U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kwargs = {"dtype": fg.float32 if dtype is None else dtype, "device": device}
        self.weight_ih = Parameter(fg.empty((num_chunks * hidden_size, input_size), **kwargs))
        self.weight_hh = Parameter(fg.empty((num_chunks * hidden_size, hidden_size), **kwargs))
        if bias:
            self.bias_ih = Parameter(fg.empty((num_chunks * hidden_size,), **kwargs))
            self.bias_hh = Parameter(fg.empty((num_chunks * hidden_size,), **kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        """torch's: "input_size, hidden_size", then ", bias=False" and ", nonlinearity=relu" where not default."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Redraw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, name: str, input, hidden: tuple):
        """torch's checks of a cell's input (1-d or 2-d) and hidden states, the unbatched ones
        given a batch dim; missing states are zeros. Returns (input, states, is_batched)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hidden[0] is None:
            zeros = fg.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            hidden = tuple(zeros for _ in hidden)
        elif not is_batched:
            hidden = tuple(h.unsqueeze(0) for h in hidden)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        for label, h in enumerate(hidden):
            if input.shape[0] != h.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} batch size "
                                   f"{h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {h.shape[1]}, expected "
                                   f"{self.hidden_size}")
        return input, hidden, is_batched

    def _igates(self, input):
        return F.linear(input, self.weight_ih, self.bias_ih)


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh or relu(W_ih x + b_ih + W_hh h + b_hh).

    forward(input (batch, input_size) or (input_size,), hx (batch, hidden) or (hidden,),
    zeros if None) -> h'. An unknown nonlinearity raises torch's RuntimeError at forward."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """The next hidden state, with input's batchedness."""
        if input.dim() in (1, 2) and hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        if input.dim() in (1, 2) and self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, (hx,), is_batched = self._batched("RNNCell", input, (hx,))
        ret = _rnn_step(self._igates(input), hx, self.weight_hh, self.bias_hh, self.nonlinearity == "relu")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: gates (i, f, g, o) = W_ih x + b_ih + W_hh h + b_hh;
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g), h' = sigmoid(o) * tanh(c').

    forward(input, hx=(h, c) or None for zeros) -> (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """(h', c'), with input's batchedness."""
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        input, (h, c), is_batched = self._batched("LSTMCell", input, (None, None) if hx is None else tuple(hx))
        hy, cy = _lstm_step(self._igates(input), h, c, self.weight_hh, self.bias_hh)
        return (hy, cy) if is_batched else (hy.squeeze(0), cy.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z likewise,
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h
    (computed as torch's: (h - n) * z + n).

    forward(input, hx or None for zeros) -> h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """The next hidden state, with input's batchedness."""
        if input.dim() in (1, 2) and hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, (hx,), is_batched = self._batched("GRUCell", input, (hx,))
        ret = _gru_step(self._igates(input), hx, self.weight_hh, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)


# ---- multi-layer sequences ---------------------------------------------------------------

class RNNBase(Module):
    """What RNN, LSTM and GRU share: the constructor (torch's checks), the parameters
    (per layer and direction: weight_ih, weight_hh, bias_ih, bias_hh, weight_hr with a
    projection), the input checks and the layer loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=user_stacklevel())
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_size = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gate_size is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size *= hidden_size
        kwargs = {"dtype": fg.float32 if dtype is None else dtype, "device": device}
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                shapes = [(gate_size, layer_input_size), (gate_size, real_hidden_size)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                names = [n.format(layer, "_reverse" if direction == 1 else "") for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(fg.empty(shape, **kwargs)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters per layer and direction, as lists in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """torch's cuDNN weight packing: nothing to do here."""

    def reset_parameters(self) -> None:
        """Redraw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        """torch's: "input_size, hidden_size" then the arguments that are not their defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward helpers --
    def _batched_input(self, input):
        """(input with a batch dim, is_batched, batch_dim), with torch's rank check."""
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(self.mode, self.mode)
        if input.dim() not in (2, 3):
            tail = " tensor instead" if name == "RNN" else " instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail}")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        return (input if is_batched else input.unsqueeze(batch_dim)), is_batched, batch_dim

    def _hidden_size(self, input, size: int) -> tuple:
        mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, size)

    def _check_input(self, input, expected_dim: int = 3) -> None:
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            given, weights = F._torch_dtype(input.dtype), F._torch_dtype(weight_dtype)
            raise ValueError(f"RNN input dtype ({given}) does not match weight dtype ({weights}). Convert input: "
                             f"input.to({weights}), or convert model: model.to({given})")
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    @staticmethod
    def _check_hidden(hx, expected: tuple, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    def _run(self, input, states: list):
        """The layer loop over a (seq, batch, feature) input (batch_first handled here) and the
        initial states (one (layers * directions, batch, size) tensor per kind of state):
        returns (output, [final states, stacked as the initial ones])."""
        if self.batch_first:
            input = input.transpose(0, 1)
        num_directions = 2 if self.bidirectional else 1
        initial = [s.unbind(0) for s in states]
        finals: list[list] = [[] for _ in states]
        weights = self.all_weights
        steps = input.shape[0]
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                w = weights[index]
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
                w_hr = w[-1] if self.proj_size > 0 else None
                igates = F.linear(layer_input, w_ih, b_ih).unbind(0)
                state = [s[index] for s in initial]
                out = [None] * steps
                for t in (reversed(range(steps)) if direction == 1 else range(steps)):
                    state = self._step(igates[t], state, w_hh, b_hh, w_hr)
                    out[t] = state[0]
                outputs.append(fg.stack(out, 0))
                for final, s in zip(finals, state):
                    final.append(s)
            layer_input = outputs[0] if num_directions == 1 else fg.cat(outputs, 2)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        output = layer_input.transpose(0, 1) if self.batch_first else layer_input
        return output, [fg.stack(final, 0) for final in finals]

    def _layer_weights(self, index: int) -> tuple:
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of layer and direction `index` (None where absent)."""
        w = self.all_weights[index]
        b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
        return w[0], w[1], b_ih, b_hh, (w[-1] if self.proj_size > 0 else None)

    def _run_packed(self, data, batch_sizes: list, states: list):
        """The layer loop over a packed input: `data` (sum of batch_sizes, features) time-major,
        `batch_sizes` Python ints, the initial states (layers * directions, batch_sizes[0], size)
        in sorted order. Returns (output data, [final states, stacked as the initial ones])."""
        num_directions = 2 if self.bidirectional else 1
        initial = [s.unbind(0) for s in states]
        finals: list[list] = [[] for _ in states]
        layer_input = data
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(index)
                igates = F.linear(layer_input, w_ih, b_ih)
                state = [s[index] for s in initial]
                run = self._packed_reverse if direction == 1 else self._packed_forward
                out, state = run(igates, batch_sizes, state, (w_hh, b_hh, w_hr))
                outputs.append(out)
                for final, s in zip(finals, state):
                    final.append(s)
            layer_input = outputs[0] if num_directions == 1 else fg.cat(outputs, -1)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, [fg.stack(final, 0) for final in finals]

    def _packed_forward(self, igates, batch_sizes: list, hidden: list, weights: tuple):
        """ATen's PackedLayer: at each step the rows of the sequences that ended are set aside
        (their final states) and the state narrowed to the rows still running."""
        outputs, ended = [], []
        offset, last = 0, batch_sizes[0]
        for batch_size in batch_sizes:
            step_input = igates.narrow(0, offset, batch_size)
            offset += batch_size
            dec = last - batch_size
            if dec > 0:
                ended.append([h.narrow(0, batch_size, dec) for h in hidden])
                hidden = [h.narrow(0, 0, batch_size) for h in hidden]
            last = batch_size
            hidden = self._step(step_input, hidden, *weights)
            outputs.append(hidden[0])
        ended.append(hidden)
        ended.reverse()
        finals = [fg.cat([part[k] for part in ended], 0) for k in range(len(hidden))]
        return fg.cat(outputs, 0), finals

    def _packed_reverse(self, igates, batch_sizes: list, initial: list, weights: tuple):
        """ATen's ReversedPackedLayer: from the last step back, the state starting with the rows
        of the shortest batch and growing by the initial states of the sequences that join."""
        outputs = []
        offset, last = igates.shape[0], batch_sizes[-1]
        hidden = [h.narrow(0, 0, last) for h in initial]
        for batch_size in reversed(batch_sizes):
            inc = batch_size - last
            if inc > 0:
                hidden = [fg.cat([h, h0.narrow(0, last, inc)], 0) for h, h0 in zip(hidden, initial)]
            step_input = igates.narrow(0, offset - batch_size, batch_size)
            offset -= batch_size
            last = batch_size
            hidden = self._step(step_input, hidden, *weights)
            outputs.append(hidden[0])
        outputs.reverse()
        return fg.cat(outputs, 0), hidden

    def _forward_packed(self, packed, hx, sizes: tuple):
        """forward of a PackedSequence: `hx` the initial states (a list, one per kind of state, in
        the batch's original order) or None for zeros, `sizes` each state's feature size.
        Returns (PackedSequence output, [final states in the original order])."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        steps = [int(v) for v in batch_sizes.tolist()]
        layers = self.num_layers * (2 if self.bidirectional else 1)
        if hx is None:
            hx = [fg.zeros(layers, steps[0], size, dtype=data.dtype) for size in sizes]
        elif sorted_indices is not None:
            # each batch entry of the states goes with its sequence, in sorted order
            hx = [h.index_select(1, sorted_indices) for h in hx]
        if self.mode == "LSTM":
            # torch's LSTM.forward checks nothing of a packed input: ATen's lstm does what it does
            # (its other mistakes raise where the ops meet them: linear's, add's)
            self._check_packed_lstm_states(hx)
        else:
            self._check_input(data, expected_dim=2)
            self._check_hidden(hx[0], (layers, steps[0], sizes[0]))
        output, finals = self._run_packed(data, steps, list(hx))
        if unsorted_indices is not None:
            finals = [h.index_select(1, unsorted_indices) for h in finals]
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), finals

    def _check_packed_lstm_states(self, hx: list) -> None:
        """ATen's lstm checks of the states, in its order: the parameters' count per layer fits
        the projection the states' sizes imply (h narrower than c), an even number of states for
        two directions, one per layer and direction."""
        has_projections = hx[0].size(2) != hx[1].size(2)
        per_layer = (5 if self.bias else 3) if has_projections else (4 if self.bias else 2)
        if len(self._flat_weights_names) % per_layer:
            raise RuntimeError("got an incorrect number of RNN parameters")
        count = hx[0].size(0)
        if self.bidirectional and count % 2:
            raise RuntimeError("Odd number of params or hiddens given to a bidirectional RNN")
        if count // (2 if self.bidirectional else 1) != self.num_layers:
            raise RuntimeError("Expected more hidden states in stacked_rnn")

    def _step(self, igates, state: list, w_hh, b_hh, w_hr) -> list:
        if self.mode == "LSTM":
            return list(_lstm_step(igates, state[0], state[1], w_hh, b_hh, w_hr))
        if self.mode == "GRU":
            return [_gru_step(igates, state[0], w_hh, b_hh)]
        return [_rnn_step(igates, state[0], w_hh, b_hh, self.mode == "RNN_RELU")]

    def _forward_one_state(self, input, hx):
        """RNN's and GRU's forward: (output, h_n)."""
        if isinstance(input, PackedSequence):
            # (RNN and GRU have no projection: zeros of hidden_size, as torch's)
            output, (h_n,) = self._forward_packed(input, None if hx is None else [hx], (self.hidden_size,))
            return output, h_n
        input, is_batched, batch_dim = self._batched_input(input)
        if hx is not None:
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
            elif hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        expected = self._hidden_size(input, self.hidden_size)
        if hx is None:
            hx = fg.zeros(*expected, dtype=input.dtype)
        self._check_input(input)
        self._check_hidden(hx, expected)
        output, (h_n,) = self._run(input, [hx])
        if not is_batched:
            output, h_n = output.squeeze(batch_dim), h_n.squeeze(1)
        return output, h_n


def _no_projection(kwargs: dict) -> None:
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class RNN(RNNBase):
    """Multi-layer Elman RNN: h_t = tanh or relu(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).

    RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None);
    forward(input (seq, batch, input_size), or batch first, or unbatched (seq, input_size);
    hx (layers * directions, batch, hidden_size) or None for zeros) -> (output, h_n)."""

    def __init__(self, *args, **kwargs) -> None:
        _no_projection(kwargs)
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        """(output (seq, batch, directions * hidden_size), h_n (layers * directions, batch, hidden_size)),
        without the batch dims for an unbatched input."""
        return self._forward_one_state(input, hx)


class GRU(RNNBase):
    """Multi-layer GRU, gates (r, z, n) as GRUCell's.

    GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None); forward(input, hx=None) -> (output, h_n),
    shaped as RNN's."""

    def __init__(self, *args, **kwargs) -> None:
        _no_projection(kwargs)
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        """(output, h_n), as RNN.forward."""
        return self._forward_one_state(input, hx)


class LSTM(RNNBase):
    """Multi-layer LSTM, gates (i, f, g, o) as LSTMCell's; with proj_size > 0 each h_t is
    projected by weight_hr_l{k} (proj_size, hidden_size) (h has proj_size features, c hidden_size).

    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None);
    forward(input, hx=(h_0, c_0) or None) -> (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        """(output (seq, batch, directions * (proj_size or hidden_size)), (h_n, c_n)), without the
        batch dims for an unbatched input; a PackedSequence input gives a PackedSequence output."""
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(input, PackedSequence):
            output, (h_n, c_n) = self._forward_packed(input, None if hx is None else [hx[0], hx[1]],
                                                      (real_hidden_size, self.hidden_size))
            return output, (h_n, c_n)
        input, is_batched, batch_dim = self._batched_input(input)
        expected_h = self._hidden_size(input, real_hidden_size)
        expected_c = self._hidden_size(input, self.hidden_size)
        if hx is None:
            hx = (fg.zeros(*expected_h, dtype=input.dtype), fg.zeros(*expected_c, dtype=input.dtype))
        elif is_batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self._check_input(input)
        self._check_hidden(hx[0], expected_h, "Expected hidden[0] size {}, got {}")
        self._check_hidden(hx[1], expected_c, "Expected hidden[1] size {}, got {}")
        output, (h_n, c_n) = self._run(input, [hx[0], hx[1]])
        if not is_batched:
            output, h_n, c_n = output.squeeze(batch_dim), h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


# ---- torch's top-level cell functions (what its cells call: torch.lstm_cell ...) -----------

def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> tuple:
    """torch.lstm_cell: one LSTM step of a batch, hx = (h, c); returns (h', c')."""
    h, c = hx
    return _lstm_step(F.linear(input, w_ih, b_ih), h, c, w_hh, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: one GRU step of a batch; returns h'."""
    return _gru_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell: tanh(W_ih x + b_ih + W_hh h + b_hh)."""
    return _rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, relu=False)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell: relu(W_ih x + b_ih + W_hh h + b_hh)."""
    return _rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, relu=True)
