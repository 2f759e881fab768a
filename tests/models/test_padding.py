"""Padded batches: a model's outputs at real steps, its loss and its gradients do not depend on how
far an example is padded, in every family, placement and norm (BatchNorm masked), in both directions."""

import copy

import pytest
import torch
import torch.nn.functional as F

from normbench.configuration.families import family_of
from normbench.configuration.schema import ModelShape, NormSpec
from normbench.models import VALID_PLACEMENTS, build_model
from normbench.norms import BatchNorm, StepBatchNorm
from normbench.tasks.padding import NOT_SCORED, PAD_TOKEN, lengths_from_input, reverse_real, unmarked

LENGTHS = [5, 2, 7]
NORMS = ("none", "ln", "rms", "scale", "dyt", "bn")
CASES = [(family, placement, bidirectional)
         for family, placements in VALID_PLACEMENTS.items() for placement in placements
         for bidirectional in ((False, True) if family_of(family).builder.endswith("recurrent:build") else (False,))]


def padded(examples, steps, kind="features"):
    """The examples (each (L, F) floats or (L,) ids) left-aligned and padded to ``steps`` with the marks."""
    if kind == "features":
        out = torch.full((len(examples), steps, examples[0].shape[-1]), float("nan"), dtype=torch.float64)
    else:
        out = torch.full((len(examples), steps), PAD_TOKEN, dtype=torch.long)
    for row, example in zip(out, examples):
        row[: len(example)] = example
    return out


def model_for(family, placement, norm, bidirectional, readout="every_step", kind="features", **shape):
    torch.manual_seed(0)
    return build_model(ModelShape(family=family, hidden=6, embed=5, heads=2, layers=2, bidirectional=bidirectional,
                                  **shape),
                       NormSpec(norm), placement, input_kind=kind, input_dim=3 if kind == "features" else 7,
                       n_outputs=4, readout=readout, max_len=64).double()


def run(model, x, y):
    """Outputs, loss and parameter gradients of a fresh copy (BatchNorm's running estimates start equal)."""
    model = copy.deepcopy(model)
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, 4), y.reshape(-1), ignore_index=NOT_SCORED)
    loss.backward()
    return out, loss, {name: p.grad for name, p in model.named_parameters() if p.grad is not None}, model


@pytest.mark.parametrize("family,placement,bidirectional", CASES)
@pytest.mark.parametrize("norm", [n if n in ("ln", "bn") else pytest.param(n, marks=pytest.mark.slow) for n in NORMS])
def test_outputs_loss_and_gradients_do_not_depend_on_how_far_a_batch_is_padded(family, placement, bidirectional,
                                                                                norm):
    torch.manual_seed(1)
    examples = [torch.randn(n, 3, dtype=torch.float64) for n in LENGTHS]
    model = model_for(family, placement, norm, bidirectional)
    targets = [torch.randint(0, 4, (n,)) for n in LENGTHS]
    y_own = padded([t.double() for t in targets], max(LENGTHS), "tokens").clamp(min=NOT_SCORED)
    y_own[y_own == PAD_TOKEN] = NOT_SCORED
    y_far = torch.full((3, 4 * max(LENGTHS)), NOT_SCORED)
    y_far[:, : max(LENGTHS)] = y_own
    near = run(model, padded(examples, max(LENGTHS)), y_own)
    far = run(model, padded(examples, 4 * max(LENGTHS)), y_far)
    for i, n in enumerate(LENGTHS):
        torch.testing.assert_close(far[0][i, :n], near[0][i, :n], rtol=0, atol=1e-10)
    torch.testing.assert_close(far[1], near[1], rtol=0, atol=1e-10)
    assert near[2].keys() == far[2].keys()
    for name in near[2]:
        torch.testing.assert_close(far[2][name], near[2][name], rtol=0, atol=1e-10, msg=name)
    for name, buffer in near[3].named_buffers():  # BatchNorm's running estimates: real steps only, both times
        torch.testing.assert_close(dict(far[3].named_buffers())[name][: len(buffer)], buffer, rtol=0, atol=1e-10)
    # The model runs only the batch's longest steps; its backbone, given more, ignores them just the same.
    lengths = torch.tensor(LENGTHS)
    backbone = [copy.deepcopy(model) for _ in range(2)]
    h_near, h_far = (m.backbone(m.encoder(unmarked(padded(examples, steps))), None, lengths)
                     for m, steps in zip(backbone, (max(LENGTHS), 4 * max(LENGTHS))))
    for i, n in enumerate(LENGTHS):
        torch.testing.assert_close(h_far[i, :n], h_near[i, :n], rtol=0, atol=1e-10)
    if norm != "bn":  # no statistics across examples: each example alone, unpadded, is the ground truth
        for i, example in enumerate(examples):
            alone = copy.deepcopy(model)(example[None])
            torch.testing.assert_close(far[0][i, : len(example)], alone[0], rtol=0, atol=1e-10)


@pytest.mark.parametrize("family", ["lstm", "gru", "transformer"])
def test_a_last_readout_is_each_examples_last_real_step_and_token_padding_is_read_too(family):
    torch.manual_seed(2)
    examples = [torch.randint(0, 7, (n,)) for n in LENGTHS]
    for bidirectional in (False, True) if family != "transformer" else (False,):
        model = model_for(family, "pre", "ln", bidirectional, readout="last", kind="tokens")
        out = model(padded(examples, 4 * max(LENGTHS), "tokens"))
        for i, example in enumerate(examples):
            torch.testing.assert_close(out[i], model(example[None])[0], rtol=0, atol=1e-10)


def test_lengths_are_read_off_the_marks_and_may_be_given():
    x = padded([torch.ones(2, 3), torch.ones(4, 3)], 6)
    assert lengths_from_input(x).tolist() == [2, 4]
    assert lengths_from_input(torch.ones(2, 5, 3)) is None
    model = model_for("gru", "in_cell", "ln", False)
    given = model(torch.where(x.isnan(), 0.0, x), lengths=torch.tensor([2, 4]))
    torch.testing.assert_close(given[:, :2], model(x)[:, :2], rtol=0, atol=0)


def test_reverse_real_reverses_each_examples_real_steps_and_leaves_padding_at_the_end():
    x = torch.arange(8.0).view(2, 4, 1)
    assert reverse_real(x, torch.tensor([2, 4]))[..., 0].tolist() == [[1, 0, 2, 3], [7, 6, 5, 4]]


@pytest.mark.parametrize("placement", ["post", "in_cell"])
def test_batchnorm_statistics_are_those_of_the_real_steps_alone_and_the_unmasked_arm_differs(placement):
    """post: one shared BatchNorm over (batch x time); in_cell: per-step statistics inside the cell
    (the input projection's, all steps at once, and the recurrent term's, one step at a time)."""
    torch.manual_seed(3)
    examples = [torch.randn(n, 3, dtype=torch.float64) for n in LENGTHS]
    x = padded(examples, 2 * max(LENGTHS))
    real = torch.arange(max(LENGTHS)) < torch.tensor(LENGTHS)[:, None]  # the model runs the longest example's steps
    for bn_mask in (True, False):
        torch.manual_seed(0)
        model = build_model(ModelShape(family="lstm", hidden=6, embed=5), NormSpec("bn", bn_mask=bn_mask), placement,
                            input_kind="features", input_dim=3, n_outputs=4, readout="every_step").double()
        inputs = {}
        for norm in (m for m in model.modules() if isinstance(m, BatchNorm)):
            norm.register_forward_hook(lambda m, args, out: inputs.setdefault(m, []).append(args))
        model(x)
        agree = []
        for norm, calls in inputs.items():
            for z, *step in calls:
                if isinstance(norm, StepBatchNorm) and z.dim() == 2:  # step t of the recurrence
                    (t,) = step
                    if t >= max(LENGTHS):  # no example is real here: masked, its estimates stay as they were
                        assert not bn_mask or (norm.running_mean[t].abs().max() == 0 and (norm.running_var[t] == 1).all())
                        continue
                    rows = z[real[:, t]]
                    expect_mean, got_mean = rows.mean(0), norm.running_mean[t] / 0.1
                    expect_var = rows.var(0) if len(rows) > 1 else torch.zeros_like(expect_mean)
                    got_var = (norm.running_var[t] - 0.9) / 0.1
                elif isinstance(norm, StepBatchNorm):  # all steps at once, each its own statistics
                    steps = range(max(LENGTHS))
                    expect_mean = torch.stack([z[real[:, s], s].mean(0) for s in steps])
                    expect_var = torch.stack([z[real[:, s], s].var(0) if real[:, s].sum() > 1
                                              else torch.zeros(z.shape[-1], dtype=z.dtype) for s in steps])
                    got_mean = norm.running_mean[: max(LENGTHS)] / 0.1
                    got_var = (norm.running_var[: max(LENGTHS)] - 0.9) / 0.1
                else:
                    rows = z[real]
                    expect_mean, expect_var = rows.mean(0), rows.var(0)
                    got_mean, got_var = norm.running_mean / 0.1, (norm.running_var - 0.9) / 0.1
                agree.append(torch.allclose(got_mean, expect_mean, atol=1e-10)
                             and torch.allclose(got_var, expect_var, atol=1e-10))
        assert agree and all(agree) == bn_mask


@pytest.mark.parametrize("placement", ["post", "in_cell"])
def test_the_unmasked_batchnorm_arm_lets_padding_change_real_outputs(placement):
    """Without padding the two arms are one model; with it the unmasked arm's real outputs move
    (example 0's steps 2-4, where example 1 is padding)."""
    torch.manual_seed(4)
    examples = [torch.randn(n, 3, dtype=torch.float64) for n in LENGTHS]
    full = [torch.randn(7, 3, dtype=torch.float64) for _ in LENGTHS]
    outputs = {}
    for bn_mask in (True, False):
        torch.manual_seed(0)
        model = build_model(ModelShape(family="lstm", hidden=6, embed=5), NormSpec("bn", bn_mask=bn_mask), placement,
                            input_kind="features", input_dim=3, n_outputs=4, readout="every_step").double()
        outputs[bn_mask] = [copy.deepcopy(model)(padded(batch, 28))[0, :5] for batch in (examples, full)]
    torch.testing.assert_close(outputs[True][1], outputs[False][1], rtol=0, atol=0)
    assert (outputs[True][0] - outputs[False][0]).abs().max() > 1e-3


@pytest.mark.parametrize("placement", ["pre", "post", "in_cell"])
def test_a_bidirectional_ln_lstm_is_a_pair_of_one_directional_ones_with_their_own_norms(placement):
    """Two layers: layer 2 of each direction reads both directions of layer 1; each example by hand, unpadded."""
    from normbench.models.recurrent import RecurrentShape, build_recurrent

    torch.manual_seed(5)
    bi = build_recurrent("lstm", RecurrentShape(3, 4, 2, bidirectional=True), NormSpec("ln"), placement).double()
    for layer in bi.layers:  # separate norms, not one shared by the directions
        for (name, p), (_, q) in zip(layer.forward_layer.named_parameters(), layer.backward_layer.named_parameters()):
            assert p is not q and not torch.equal(p, q) or "norm" in name
    norms = [m for m in bi.modules() if m.__class__.__name__ == "LayerNorm"]
    for i, norm in enumerate(norms):  # distinct gains, so sharing one norm would show
        norm.weight.data.fill_(1 + 0.1 * i)
    directions = []
    for layer in bi.layers:
        pair = []
        for one in (layer.forward_layer, layer.backward_layer):
            uni = build_recurrent("lstm", RecurrentShape(one.weight_ih.shape[1] if hasattr(one, "weight_ih")
                                                         else one.core.input_size, 4, 1), NormSpec("ln"),
                                  placement).double()
            uni.layers[0].load_state_dict(one.state_dict())
            pair.append(uni)
        directions.append(pair)
    examples = [torch.randn(n, 3, dtype=torch.float64) for n in LENGTHS]
    out = bi(padded(examples, 4 * max(LENGTHS)).nan_to_num(0.0), lengths=torch.tensor(LENGTHS))
    for i, example in enumerate(examples):
        h = example[None]
        for ahead, back in directions:
            h = torch.cat([ahead(h), back(h.flip(1)).flip(1)], -1)
        torch.testing.assert_close(out[i, : len(example)], h[0], rtol=0, atol=1e-10)


@pytest.mark.parametrize("family,placement", [("lstm", "pre"), ("gru", "post"), ("rnn", "in_cell"),
                                              ("transformer", "peri"), ("transformer", "pre")])
@pytest.mark.parametrize("variational", [False, True])
def test_dropout_changes_training_outputs_not_evaluation_ones_and_is_reproducible_per_seed(family, placement,
                                                                                         variational):
    x = torch.randn(4, 6, 3, dtype=torch.float64)
    plain = model_for(family, placement, "ln", False)
    dropped = model_for(family, placement, "ln", False, dropout=0.3, dropout_recurrent=variational)
    assert plain.state_dict().keys() == dropped.state_dict().keys()
    dropped.load_state_dict(plain.state_dict())

    def train_out(seed):
        torch.manual_seed(seed)
        return dropped.train()(x)

    assert (train_out(0) - plain.train()(x)).abs().max() > 1e-3
    torch.testing.assert_close(train_out(0), train_out(0), rtol=0, atol=0)
    assert (train_out(0) - train_out(1)).abs().max() > 1e-3
    torch.testing.assert_close(dropped.eval()(x), plain.eval()(x), rtol=0, atol=0)


def test_dropout_sits_before_or_after_the_norm_as_asked():
    for at, before, after in (("before_norm", "SequenceDropout", "Identity"), ("after_norm", "Identity", "SequenceDropout")):
        model = model_for("lstm", "post", "ln", False, dropout=0.2, dropout_at=at)
        layer = model.backbone.layers[0]
        assert (type(layer.drop_before).__name__, type(layer.drop_after).__name__) == (before, after)
        pre = model_for("lstm", "pre", "ln", False, dropout=0.2, dropout_at=at)
        assert type(pre.backbone.layers[0].drop_before).__name__ == "Identity"  # not on the embedding
        assert type(getattr(pre.backbone.layers[1], "drop_" + at.split("_")[0])).__name__ == "SequenceDropout"
        assert type(pre.backbone.output_dropout[-1]).__name__ == "SequenceDropout"  # before the readout


@pytest.mark.parametrize("norm", ["bn", "ln"])
def test_query_key_norms_see_real_steps_only_too(norm):
    """qk_norm: the norm on (batch, heads, time, head_dim) queries and keys, its mask matched per head."""
    torch.manual_seed(6)
    examples = [torch.randn(n, 3, dtype=torch.float64) for n in LENGTHS]
    model = model_for("transformer", "pre", norm, False, qk_norm=True)
    y = torch.full((3, 28), NOT_SCORED)
    near, far = run(model, padded(examples, 7), y[:, :7]), run(model, padded(examples, 28), y)
    for i, n in enumerate(LENGTHS):
        torch.testing.assert_close(far[0][i, :n], near[0][i, :n], rtol=0, atol=1e-10)


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("placement", ["post", "in_cell"])
def test_a_traced_pass_over_a_padded_batch_is_the_same_function(family, placement):
    """The gradient-through-time probe unrolls the fused cores one step at a time: lengths held there too."""
    torch.manual_seed(7)
    x = padded([torch.randn(n, 3, dtype=torch.float64) for n in LENGTHS], 28)
    model = model_for(family, placement, "ln", False).eval()
    trace = []
    traced = model(x, trace=trace)
    assert len(trace) == max(LENGTHS)
    for i, n in enumerate(LENGTHS):
        torch.testing.assert_close(traced[i, :n], model(x)[i, :n], rtol=0, atol=1e-10)


@pytest.mark.parametrize("family", ["lstm", "gru"])
@pytest.mark.parametrize("kernel, kind", [("auto", "ln"), ("python", "ln"), ("auto", "rms")])
def test_an_in_cell_ln_kernel_on_a_padded_batch_computes_what_the_loop_that_holds_state_computes(family, kernel, kind):
    from normbench.models.recurrent import InCellLayer, _CellLayer, cell_kernel_in_use

    torch.manual_seed(3)
    layer = InCellLayer(family, 3, 5, NormSpec(kind), kernel=kernel).double()
    x = torch.randn(3, 9, 3, dtype=torch.float64)
    lengths = torch.tensor([9, 2, 5])
    weights = torch.randn(3, 9, 5, dtype=torch.float64)  # a loss that reads every step, padded ones too

    def outputs_and_grads(forward):
        model = copy.deepcopy(layer)
        out = forward(model)
        (out * weights).sum().backward()
        return out, {name: p.grad for name, p in model.named_parameters()}

    assert layer.recurrence(x) is not None or (family, kernel) == ("gru", "python")  # the GRU's python is the loop
    ran, ran_grads = outputs_and_grads(lambda m: m(x, None, lengths))
    held, held_grads = outputs_and_grads(lambda m: _CellLayer.forward(m, x, None, lengths))
    torch.testing.assert_close(ran, held, rtol=0, atol=1e-10)
    for name in held_grads:
        torch.testing.assert_close(ran_grads[name], held_grads[name], rtol=0, atol=1e-10, msg=name)
    assert cell_kernel_in_use(layer, torch.device("cpu"), padded=True) == cell_kernel_in_use(layer, torch.device("cpu"))
    compiled = InCellLayer(family, 3, 5, NormSpec(kind), kernel="torch_compile")
    assert cell_kernel_in_use(compiled, torch.device("cpu"), padded=True) == "autograd-padded"
