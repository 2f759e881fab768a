"""Recurrent stacks (tanh RNN, LSTM, GRU) with the norm at one of four places.

    pre      h = core(norm(x))                      PyTorch's nn.RNN/LSTM/GRU core
    post     h = norm(core(x))                      PyTorch's core ("RNNWithLayerNorm")
    in_cell  a_t = N_x(W x_t) + b_x + N_h(U h_{t-1}) + b_h,  LSTM: h_t = o * tanh(N_c(c_t))
             (Ba et al. 2016 suppl. eqs. 20-22; Cooijmans et al. 2016 eqs. 6-8);
             summed=True: a_t = N(W x_t + U h_{t-1}) + b
    gate     a_t^k = N_k(W_k x_t + U_k h_{t-1}) + b_k, one norm (own statistics) per gate k

Every layer maps (batch, time, in) -> (batch, time, hidden). Given a ``trace`` list, a layer
appends its hidden state h_t for every t as tensors that both the output and the next step
consume, so d(loss)/d(h_t) from autograd is the total derivative through time.

Given ``lengths`` (a padded batch, normbench/tasks/padding.py), a layer stops updating an example's
state after its last real step: PyTorch's core runs packed sequences (outputs past the end are 0),
a cell's loop keeps the state it had (outputs past the end repeat the last real one), and an
in-cell LN kernel runs every step and then repeats each example's last real output (the same
outputs: the recurrence is causal). No padded step reaches a real one; BatchNorm's statistics skip them through the stack's mask.
A bidirectional layer (BiLayer) is two layers, each with its own norms; the backward one reads
each example's real steps in reverse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from normbench.configuration.families import hand_written_cell
from normbench.configuration.placements import placement_of
from normbench.configuration.schema import CELL_KERNELS, ModelShape, PlacementConfig, cell_kernel_named
from normbench.models import gru_cpu, lnlstm_cpu
from normbench.models.dropout import dropout
from normbench.models.kernel_choice import recorded_name, recurrence_on
from normbench.models.lnlstm_python import LayerNormLSTMRecurrence
from normbench.models.validity import check_combination
from normbench.norms import NormSpec, StepBatchNorm
from normbench.norms.masking import real_steps
from normbench.tasks.padding import held_past_end, reverse_real, step_mask

GATES = {"rnn": 1, "lstm": 4, "gru": 3}
TORCH_CORES = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


@dataclass(frozen=True)
class RecurrentShape:
    input_size: int
    hidden_size: int = 128
    num_layers: int = 1
    bidirectional: bool = False
    dropout: float = 0.0            # on layer outputs; see RecurrentStack
    dropout_at: str = "after_norm"  # before_norm | after_norm, where a layer output meets a norm (pre, post)
    dropout_recurrent: bool = False  # one mask per sequence, the same at every step
    cell_kernel: str = "auto"       # how an in-cell layer runs its recurrence (kernel_choice.cell_recurrences)


def run_torch_core(core: nn.RNNBase, x: torch.Tensor, trace: list | None = None,
              lengths: torch.Tensor | None = None) -> torch.Tensor:
    """Run a one-layer PyTorch core (nn.RNN, nn.LSTM, nn.GRU); with ``trace``, unrolled one step at a time (same arithmetic).
    With ``lengths``, packed (no trace) or with each example's state held after its last real step."""
    if trace is None:
        if lengths is None:
            return core(x)[0]
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        return nn.utils.rnn.pad_packed_sequence(core(packed)[0], batch_first=True, total_length=x.shape[1])[0]
    real = None if lengths is None else step_mask(lengths.to(x.device), x.shape[1])
    state, h, c, outputs = None, None, None, []
    for t in range(x.shape[1]):
        out, new_state = core(x[:, t : t + 1], state)
        h_new, c_new = out[:, 0], new_state[1][0] if isinstance(new_state, tuple) else None
        if real is None or t == 0:  # every example has a step 0
            h, c = h_new, c_new
        else:
            keep = real[:, t : t + 1]
            h, c = torch.where(keep, h_new, h), None if c is None else torch.where(keep, c_new, c)
        # Feed the *output* tensor back as the state so that h_t is one node in the graph.
        state = h.unsqueeze(0) if c is None else (h.unsqueeze(0), c.unsqueeze(0))
        trace.append(h)
        outputs.append(h)
    return torch.stack(outputs, 1)


class PlainLayer(nn.Module):
    def __init__(self, family: str, input_size: int, hidden_size: int):
        super().__init__()
        self.core = TORCH_CORES[family](input_size, hidden_size, batch_first=True)

    def forward(self, x, trace=None, lengths=None):
        return run_torch_core(self.core, x, trace, lengths)


class PreNormLayer(PlainLayer):
    """h = core(norm(x)); dropout on x (the layer below's output) ``drop_before`` or ``drop_after`` the norm."""

    def __init__(self, family, input_size, hidden_size, norm: NormSpec):
        super().__init__(family, input_size, hidden_size)
        self.norm = norm.build(input_size)
        self.drop_before, self.drop_after = nn.Identity(), nn.Identity()

    def forward(self, x, trace=None, lengths=None):
        return run_torch_core(self.core, self.drop_after(self.norm(self.drop_before(x))), trace, lengths)


class PostNormLayer(PlainLayer):
    """h = norm(core(x)); dropout on core(x) ``drop_before`` or on h ``drop_after``."""

    def __init__(self, family, input_size, hidden_size, norm: NormSpec):
        super().__init__(family, input_size, hidden_size)
        self.norm = norm.build(hidden_size)
        self.drop_before, self.drop_after = nn.Identity(), nn.Identity()

    def forward(self, x, trace=None, lengths=None):
        return self.drop_after(self.norm(self.drop_before(run_torch_core(self.core, x, trace, lengths))))


class _CellLayer(nn.Module):
    """Weights laid out as nn.RNN/LSTM/GRU (gate order i,f,g,o / r,z,n), same initialisation."""

    def __init__(self, family: str, input_size: int, hidden_size: int):
        super().__init__()
        self.family, self.hidden_size = family, hidden_size
        width = GATES[family] * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(width, input_size))
        self.weight_hh = nn.Parameter(torch.empty(width, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(width))
        self.bias_hh = nn.Parameter(torch.empty(width))
        bound = 1 / math.sqrt(hidden_size)
        for p in (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh):
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x, trace=None, lengths=None):
        return self.loop(x, trace, self.step, lengths=lengths)

    def loop(self, x, trace, step, state_grad: bool = False, lengths=None):
        """The autograd recurrence: ``step`` (this cell's, or the same through torch.compile) once per time step.

        ``state_grad``: h_0 (and c_0) require grad like every later state, so torch.compile's step sees
        one kind of input at every t (a gradient for the zero state is computed and dropped).
        ``lengths``: past its last real step an example keeps its state."""
        batch, steps, _ = x.shape
        wx = self.input_preactivations(x)  # all time steps: one matmul, one norm call
        h = x.new_zeros(batch, self.hidden_size, requires_grad=state_grad)
        c = x.new_zeros(batch, self.hidden_size, requires_grad=state_grad) if self.family == "lstm" else None
        real = None if lengths is None else step_mask(lengths.to(x.device), steps)
        outputs = []
        for t in range(steps):
            h_new, c_new = step(wx[:, t], h, c, t)
            if real is None:
                h, c = h_new, c_new
            else:
                keep = real[:, t : t + 1]
                h, c = torch.where(keep, h_new, h), None if c is None else torch.where(keep, c_new, c)
            if trace is not None:
                trace.append(h)
            outputs.append(h)
        return torch.stack(outputs, 1)


def lstm_update(i, f, g, o, c, cell_norm=None):
    """LSTM gates i, f, g, o (pre-activations, any norm already in) -> h_t = o * tanh(N_c(c_t)), c_t."""
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c if cell_norm is None else cell_norm(c)), c


class InCellLayer(_CellLayer):
    """N_x(W x_t) and N_h(U h_{t-1}) normalized separately, biases added after the norms.

    An LSTM or GRU with native LayerNorm, or with RMSNorm, in fp32/fp64, no trace and no autocast
    (``hand_written``; configuration/families.py, Family.hand_written_for) runs a
    recurrence with a hand-written backward (same function, tested equal): on a CPU the compiled
    one of ``lnlstm.cpp`` or ``gru.cpp`` unless ``kernel="python"``. Elsewhere (or where it does not
    compile) an LN-LSTM runs the Python one of ``lnlstm_python``, an RMSNorm cell or a GRU the autograd loop
    of ``step``.
    Which one is decided by kernel_choice.recurrence_on (from kernel_choice.cell_recurrences), not here.

    ``kernel="torch_compile"``, for any family and norm on any device: the autograd loop with ``step``
    through ``torch.compile`` (inductor), which fuses a step's dozen elementwise ops and norms into
    a few kernels. A few graphs (training, evaluation) serve every step, compiled on first use; on
    CUDA this is what takes the place of the per-op launches of the eager loop.
    """

    def __init__(self, family, input_size, hidden_size, norm: NormSpec, cell_norm: bool = True,
                 kernel: str = "auto"):
        super().__init__(family, input_size, hidden_size)
        kernel = cell_kernel_named(kernel)  # cpp, compile: the earlier names of compiled, torch_compile
        if kernel not in CELL_KERNELS:
            raise ValueError(f"unknown cell kernel {kernel!r}; valid: {', '.join(CELL_KERNELS)}")
        width = GATES[family] * hidden_size
        self.norm_x = norm.build(width, per_step=True)
        self.norm_h = norm.build(width, per_step=True)
        use_cell_norm = family == "lstm" and cell_norm
        self.norm_c = norm.build(hidden_size, per_step=True) if use_cell_norm else NormSpec("none").build(hidden_size)
        # a grouped LN (norm.groups > 1) is not the LN the hand-written recurrences compute: it runs the loop,
        # as reference does
        self.norm_kind, self.norm_impl = norm.kind, norm.impl if norm.groups == 1 else "reference"
        self.cell_norm, self.kernel = use_cell_norm, kernel
        self._compiled_step = None

    @property
    def hand_written(self) -> bool:
        """Whether this layer has a hand-written recurrence at all (its family's descriptor: Family.hand_written_cell)."""
        return hand_written_cell(self.family, self.norm_kind, self.norm_impl)

    def runs(self, device: torch.device, full_precision: bool = True) -> str | None:
        """The recurrence forward runs on ``device`` (kernel_choice.recurrence_on; None: the autograd loop);
        "compiled" builds the C++ kernel now if it has not been."""
        return recurrence_on(self.family, self.norm_kind, self.norm_impl, self.kernel, device, full_precision)

    def input_preactivations(self, x):
        return self.norm_x(x @ self.weight_ih.T) + self.bias_ih

    def __getstate__(self):  # copies (deepcopy, pickle) compile their own step: the compiled one is bound to self
        return {**super().__getstate__(), "_compiled_step": None}

    def compiled_step(self):
        """``step`` through torch.compile, made on first use (not a submodule: state_dict is unchanged).

        dynamic: batch sizes and t are symbols, so training and evaluation share a few graphs instead
        of one per size and step. fullgraph: a graph break is an error, and so is reaching dynamo's
        recompile limit, past which it would otherwise run the step eagerly without a word."""
        if self._compiled_step is None:
            self._compiled_step = torch.compile(self.step, dynamic=True, fullgraph=True)
        return self._compiled_step

    def _norms_hooked(self) -> bool:
        """Whether a probe or logger has hooks on this layer's norms now (their closures would be guards)."""
        return any(m._forward_hooks or m._forward_pre_hooks for m in self.modules() if m is not self)

    def recurrence(self, x, trace=None):
        """The whole-sequence recurrence forward runs on ``x`` (lnlstm.cpp, gru.cpp or lnlstm_python), or
        None for the autograd loop of ``step``: traces (h_t must be graph nodes), and whatever ``runs``
        names no hand-written recurrence for (cell_kernel_in_use records the same choice)."""
        if trace is not None:
            return None
        full_precision = x.dtype in (torch.float32, torch.float64) and not torch.is_autocast_enabled(x.device.type)
        return self.recurrences().get(self.runs(x.device, full_precision))

    def recurrences(self) -> dict:
        """Each of the family's hand-written recurrences (Family.hand_written) -> the method that runs it (a test holds the two equal)."""
        if self.family == "lstm":
            return {"compiled": self.lstm_cpp_recurrence, "python": self.lstm_python_recurrence}
        return {"compiled": self.gru_cpp_recurrence} if self.family == "gru" else {}

    def forward(self, x, trace=None, lengths=None):
        recurrence = self.recurrence(x, trace)
        if recurrence is not None:
            # A padded batch runs the same kernel over every step: the recurrence is causal, so no
            # padded step reaches a real one, and each example's outputs past its end are replaced by
            # its last real one (what the loop's held state gives); padded steps get no gradient.
            return recurrence(x) if lengths is None else held_past_end(recurrence(x), lengths)
        if self.kernel == "torch_compile" and lengths is None:
            step_norms = [norm for norm in self.modules() if isinstance(norm, StepBatchNorm)]
            for norm in step_norms:  # per-step BatchNorm grows its statistics to T now, not at step t
                if norm.training:  # (a graph per buffer size otherwise)
                    norm.reserve(x.shape[1])
            # A pass with hooks on the norms (the first step's dtype record, norm-output histograms)
            # runs the same step eagerly: each hook's closure would cost a graph, every probe step.
            hooked = self._norms_hooked()
            step = self.step if hooked else self.compiled_step()
            if step_norms and not hooked:
                steps = torch.arange(x.shape[1], device=x.device)  # per-step BatchNorm's t as a tensor, not a guard
                return self.loop(x, trace, lambda wx, h, c, t: step(wx, h, c, steps[t]),
                                 state_grad=torch.is_grad_enabled())
            return self.loop(x, trace, step, state_grad=torch.is_grad_enabled())
        # the autograd loop of ``step``, which holds each example's state past its end; a padded batch
        # with model.cell_kernel=torch_compile runs it eagerly (torch.compile would trace the mask BatchNorm reads)
        return super().forward(x, trace, lengths)

    def gru_cpp_recurrence(self, x):
        """The LN-GRU (or RMSNorm-GRU) cell of ``step`` over all time steps, by gru.cpp (tested equal)."""
        ln_x, ln_h = self.norm_x.norm, self.norm_h.norm  # the LayerNorms (RMSNorms) inside the precision wrappers
        bias_x, bias_h = self.bias_ih, self.bias_hh
        if ln_x.weight is not None:  # the kernel always takes gains; without affine they are ones
            gamma_x, gamma_h = ln_x.weight, ln_h.weight
        else:
            gamma_x = gamma_h = x.new_ones(ln_x.dim)
        if ln_x.bias is not None:  # LayerNorm's shifts join their side's bias; RMSNorm has none
            bias_x, bias_h = bias_x + ln_x.bias, bias_h + ln_h.bias
        return gru_cpu.LayerNormGRULayer.apply(x @ self.weight_ih.T, self.weight_hh, gamma_x, gamma_h, bias_x, bias_h,
                                               ln_h.eps, self.norm_kind == "ln")

    def lstm_cpp_recurrence(self, x):
        """The LN-LSTM (or RMSNorm-LSTM) cell of ``step`` over all time steps, by lnlstm.cpp (tested equal)."""
        ln_x, ln_h = self.norm_x.norm, self.norm_h.norm  # the LayerNorms (RMSNorms) inside the precision wrappers
        ln_c = self.norm_c.norm if self.cell_norm else None
        bias = self.bias_ih + self.bias_hh
        if ln_x.weight is not None:  # the kernel always takes gains; without affine they are ones
            gamma_x, gamma_h = ln_x.weight, ln_h.weight
        else:
            gamma_x = gamma_h = x.new_ones(ln_x.dim)
        for shift in (ln_x.bias, ln_h.bias):  # LayerNorm's shifts join the bias; RMSNorm has none
            if shift is not None:
                bias = bias + shift
        gamma_c = ln_c.weight if ln_c is not None and ln_c.weight is not None else x.new_ones(self.hidden_size)
        beta_c = ln_c.bias if ln_c is not None and ln_c.bias is not None else x.new_zeros(self.hidden_size)
        return lnlstm_cpu.LayerNormLSTMLayer.apply(x, self.weight_ih, self.weight_hh, gamma_x, gamma_h, bias,
                                                   gamma_c, beta_c, ln_h.eps, self.cell_norm, self.norm_kind == "ln")

    def lstm_python_recurrence(self, x):
        """The LN-LSTM cell of ``step`` over all time steps, by lnlstm_python (tested equal)."""
        ln_h = self.norm_h.norm  # the native LayerNorm inside the precision wrapper
        ln_c = self.norm_c.norm if self.cell_norm else None
        return LayerNormLSTMRecurrence.apply(
            self.input_preactivations(x) + self.bias_hh, self.weight_hh, ln_h.weight, ln_h.bias,
            ln_c.weight if ln_c else None, ln_c.bias if ln_c else None, ln_h.eps, self.cell_norm)

    def step(self, wx, h, c, t):
        """wx = N_x(W x_t) + b_x; a_t = wx + N_h(U h_{t-1}) + b_h; LSTM: h_t = o * tanh(N_c(c_t))."""
        uh = self.norm_h(h @ self.weight_hh.T, t) + self.bias_hh
        if self.family == "lstm":
            return lstm_update(*(wx + uh).chunk(4, 1), c, lambda c: self.norm_c(c, t))
        if self.family == "gru":
            xr, xz, xn = wx.chunk(3, 1)
            hr, hz, hn = uh.chunk(3, 1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            return (1 - z) * n + z * h, None
        return torch.tanh(wx + uh), None


class SummedInCellLayer(_CellLayer):
    """One norm on the summed pre-activation: a_t = N(W x_t + U h_{t-1}) + b (lstm, rnn)."""

    def __init__(self, family, input_size, hidden_size, norm: NormSpec, cell_norm: bool = True):
        super().__init__(family, input_size, hidden_size)
        self.norm_a = norm.build(GATES[family] * hidden_size, per_step=True)
        use_cell_norm = family == "lstm" and cell_norm
        self.norm_c = norm.build(hidden_size, per_step=True) if use_cell_norm else NormSpec("none").build(hidden_size)

    def input_preactivations(self, x):
        return x @ self.weight_ih.T

    def step(self, wx, h, c, t):
        a = self.norm_a(wx + h @ self.weight_hh.T, t) + self.bias_ih + self.bias_hh
        if self.family == "lstm":
            return lstm_update(*a.chunk(4, 1), c, lambda c: self.norm_c(c, t))
        return torch.tanh(a), None


class GateNormLayer(_CellLayer):
    """A separate norm for each gate's pre-activation, so each gate has its own statistics."""

    def __init__(self, family, input_size, hidden_size, norm: NormSpec):
        super().__init__(family, input_size, hidden_size)
        self.gate_norms = nn.ModuleList(norm.build(hidden_size, per_step=True) for _ in range(GATES[family]))

    def input_preactivations(self, x):
        return x @ self.weight_ih.T

    def _normalized(self, preacts, t):
        return [n(a, t) for n, a in zip(self.gate_norms, preacts)]

    def step(self, wx, h, c, t):
        bias = (self.bias_ih + self.bias_hh).chunk(GATES[self.family], 0)
        uh = (h @ self.weight_hh.T).chunk(GATES[self.family], 1)
        wx = wx.chunk(GATES[self.family], 1)
        if self.family == "lstm":
            gates = self._normalized([x + u for x, u in zip(wx, uh)], t)
            return lstm_update(*(a + b for a, b in zip(gates, bias)), c)
        nr, nz = self._normalized([wx[0] + uh[0], wx[1] + uh[1]], t)
        r, z = torch.sigmoid(nr + bias[0]), torch.sigmoid(nz + bias[1])
        # GRU's candidate pre-activation is W_n x + r * (U_n h + b_hn): b_hn sits inside the reset.
        b_in, b_hn = self.bias_ih.chunk(3, 0)[2], self.bias_hh.chunk(3, 0)[2]
        n = torch.tanh(self.gate_norms[2](wx[2] + r * (uh[2] + b_hn), t) + b_in)
        return (1 - z) * n + z * h, None


class BiLayer(nn.Module):
    """Two layers of one placement, each with its own norms: ``forward_layer`` reads x_1..x_L,
    ``backward_layer`` x_L..x_1 (each example's own L); outputs concatenated per step, forward first."""

    def __init__(self, forward_layer: nn.Module, backward_layer: nn.Module):
        super().__init__()
        self.forward_layer, self.backward_layer = forward_layer, backward_layer

    def forward(self, x, trace=None, lengths=None):
        ahead = self.forward_layer(x, trace, lengths)
        back = reverse_real(self.backward_layer(reverse_real(x, lengths), None, lengths), lengths)
        return torch.cat([ahead, back], -1)


class RecurrentStack(nn.Module):
    """Layers one above the other; ``outputs_dropout[i]`` acts on layer i's output (Identity where a
    post-norm layer holds the dropout around its norm, or the next pre-norm layer around its own)."""

    def __init__(self, layers: list[nn.Module], output_dropout: list[nn.Module] | None = None,
                 bidirectional: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.output_dropout = nn.ModuleList(output_dropout or [nn.Identity() for _ in layers])
        self.bidirectional = bidirectional

    def forward(self, x, trace: list | None = None, lengths: torch.Tensor | None = None):
        """(batch, time, input) -> (batch, time, hidden, x2 bidirectional); ``trace`` collects layer 0's
        (forward) h_t. ``lengths``: a padded batch, whose real steps BatchNorm's statistics are taken over."""
        with real_steps(None if lengths is None else step_mask(lengths.to(x.device), x.shape[1])):
            for i, (layer, drop) in enumerate(zip(self.layers, self.output_dropout)):
                x = drop(layer(x, trace if i == 0 else None, lengths))
        return x


def in_cell_layer(family, input_size, shape: RecurrentShape, norm: NormSpec, placement: PlacementConfig):
    """N(Wx) + N(Uh) + b, or with ``summed`` N(Wx + Uh) + b; the per-term layer runs ``shape.cell_kernel``'s recurrence."""
    if placement.summed:
        return SummedInCellLayer(family, input_size, shape.hidden_size, norm, cell_norm=placement.cell_norm)
    return InCellLayer(family, input_size, shape.hidden_size, norm, cell_norm=placement.cell_norm,
                       kernel=shape.cell_kernel)


# placement name -> builder(family, input_size, shape, norm, placement) of one layer, the layer that fills
# the slots the placement's descriptor names (normbench/configuration/placements.py); only in_cell reads the placement's
# other settings. Which families a placement is valid for is its descriptor's (validity.placements_of).
LAYERS = {
    "pre": lambda family, size_in, shape, norm, placement: PreNormLayer(family, size_in, shape.hidden_size, norm),
    "post": lambda family, size_in, shape, norm, placement: PostNormLayer(family, size_in, shape.hidden_size, norm),
    "in_cell": in_cell_layer,
    "gate": lambda family, size_in, shape, norm, placement: GateNormLayer(family, size_in, shape.hidden_size, norm),
}


def build_recurrent(family: str, shape: RecurrentShape, norm: NormSpec,
                    placement: PlacementConfig | str) -> RecurrentStack:
    """``placement``: a PlacementConfig, or its name alone (its other settings at their defaults)."""
    if family not in TORCH_CORES:
        raise ValueError(f"unknown recurrent family {family!r}; valid: {', '.join(TORCH_CORES)}")
    placement = PlacementConfig(placement) if isinstance(placement, str) else placement
    check_combination(family, norm.kind, placement, bidirectional=shape.bidirectional)
    name = placement.name if norm.active else "none"  # no norm: nowhere to place one
    slots = placement_of(name).slots_in(family) if norm.active else ()
    width_out = shape.hidden_size * (2 if shape.bidirectional else 1)

    def one_direction(size_in: int, first: bool) -> nn.Module:
        if name == "none":
            return PlainLayer(family, size_in, shape.hidden_size)
        layer = LAYERS[name](family, size_in, shape, norm, placement)
        # a layer_input norm (pre) meets the layer below's output (none on the model's input): the dropout
        # sits around it, as around a layer_output norm (post)
        if ("layer_input" in slots and not first) or "layer_output" in slots:
            site = "drop_before" if shape.dropout_at == "before_norm" else "drop_after"
            setattr(layer, site, dropout(shape.dropout, shape.dropout_recurrent))
        return layer

    layers, output_dropout = [], []
    for i in range(shape.num_layers):
        size_in = shape.input_size if i == 0 else width_out
        first, last = i == 0, i == shape.num_layers - 1
        layer = one_direction(size_in, first)
        if shape.bidirectional:
            layer = BiLayer(layer, one_direction(size_in, first))
        layers.append(layer)
        # Before the readout, and between layers where no norm meets the output: plain dropout.
        held = "layer_output" in slots or ("layer_input" in slots and not last)
        output_dropout.append(nn.Identity() if held else dropout(shape.dropout, shape.dropout_recurrent))
    return RecurrentStack(layers, output_dropout, shape.bidirectional)


def build(shape: ModelShape, norm: NormSpec, placement: PlacementConfig, max_len: int) -> RecurrentStack:
    """The backbone of a tanh RNN, LSTM or GRU (the families' descriptors name this builder)."""
    recurrent = RecurrentShape(shape.embed, shape.hidden, shape.layers, bidirectional=shape.bidirectional,
                               dropout=shape.dropout, dropout_at=shape.dropout_at,
                               dropout_recurrent=shape.dropout_recurrent, cell_kernel=shape.cell_kernel)
    stack = build_recurrent(shape.family, recurrent, norm, placement)
    if shape.recurrent_init == "orthogonal":
        orthogonal_recurrence_(stack)
    return stack


def orthogonal_recurrence_(model: nn.Module) -> None:
    """Every recurrent weight W_hh (a _CellLayer's weight_hh, a torch core's weight_hh_l0 and its reverse),
    each gate's hidden × hidden block an orthogonal matrix (nn.init.orthogonal_, the run's seeded generator),
    in place. The input weights and biases keep PyTorch's uniform init."""
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if name.rsplit(".", 1)[-1].startswith("weight_hh"):
                hidden = weight.shape[1]
                for block in weight.split(hidden, dim=0):
                    nn.init.orthogonal_(block)


def cell_kernel_in_use(model: nn.Module, device: torch.device, autocast: bool = False,
                       padded: bool = False) -> str | None:
    """Which recurrence the model's in-cell LN or RMSNorm LSTM or GRU layers train with on ``device``:

    "compiled-<capability>"  lnlstm.cpp or gru.cpp, built for avx512, avx2 or default
    "python"                 an LSTM's hand-written Python recurrence (lnlstm_python)
    "autograd"               the plain autograd loop of ``step``: under autocast (it keeps the norms'
                             precision policy), and a GRU's wherever gru.cpp does not run
    "torch_compile"          model.cell_kernel=torch_compile: that loop with ``step`` through torch.compile,
                             any family and norm
    "autograd-padded"        ``padded`` (a task with variable lengths) with model.cell_kernel=torch_compile:
                             padded batches run the autograd loop of ``step`` eagerly, which honours lengths
    None                     the model has no such layer

    Records made before the rename say cpp-<capability> and compile (contract.recorded_cell_kernel reads them).

    A padded batch otherwise runs the kernel named above, over every step (InCellLayer.forward).

    Compiles the kernel now if it will be used, so that the first training step does not pay for the build.
    """
    runs = [(m.runs(device, full_precision=not autocast), m.family) for m in model.modules() if isinstance(m, InCellLayer)]
    # a model's layers are all of one family and cell_kernel: each layer asked, the first answer recorded
    return next((recorded_name(name, family, padded) for name, family in runs if name is not None), None)

