"""The depth, attention and saturation probes against a float64 re-implementation written from the papers'
equations: a Pre-LN block (Xiong et al. 2020 eq. for Pre-LN: x ← x + Attn(LN(x)), x ← x + FFN(LN(x))),
attention logits z_ij = ⟨q_i, k_j⟩/√d_h (Wortsman et al. 2023 §3.1.1), DyT tanh(αx) (Zhu et al. 2025),
and the lr-sensitivity area E_η[min(ℓ(η), ℓ₀) − ℓ*] (Wortsman et al. 2023)."""

import math

import pytest
import torch

from normbench.analysis.lr_sensitivity import lr_grid_is_log_spaced, sensitivity
from normbench.models import ModelShape, build_model
from normbench.norms import NormSpec
from normbench.training import probes

D, HEADS, LAYERS, T = 8, 2, 3, 5


def model_of(kind="ln", layers=LAYERS, qk_norm=False, alpha=0.5):
    torch.manual_seed(1)
    norm = NormSpec(kind, alpha_init=alpha) if kind == "dyt" else NormSpec(kind)
    model = build_model(ModelShape("transformer", hidden=D, embed=D, heads=HEADS, layers=layers, qk_norm=qk_norm),
                        norm, "pre", input_kind="features", input_dim=2, n_outputs=1, readout="last")
    return model.double().eval()


def mse(out, y):
    return torch.nn.functional.mse_loss(out.squeeze(-1), y)


def norm_ref(layer, x, sites, name):
    """LN (Ba et al. eq. 4, biased variance) or DyT γ·tanh(αx)+β, from the layer's parameters."""
    inner = layer.norm
    sites.setdefault(name, []).append(x)
    if hasattr(inner, "alpha"):
        return torch.tanh(inner.alpha * x) * inner.weight + inner.bias
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + inner.eps) * inner.weight + inner.bias


@torch.no_grad()
def reference(model, x, skip=None):
    """The Pre-LN stack from its equations: per block the output variance and the largest |logit|; the
    DyT inputs per site; the model's output."""
    h = model.encoder(x) + model.backbone.pos[: x.shape[1]]
    variances, logits, sites = [], [], {}
    for i, block in enumerate(model.backbone.layers):
        if i == skip:
            variances.append(None)
            continue
        a = norm_ref(block.norm1, h, sites, f"layers.{i}.norm1")
        qkv = a @ block.attn.qkv.weight.T + block.attn.qkv.bias
        q, k, v = qkv.split(D, dim=-1)
        heads = lambda t: t.view(t.shape[0], T, HEADS, D // HEADS).transpose(1, 2)  # noqa: E731
        q, k, v = heads(q), heads(k), heads(v)
        if block.attn.qk_norm:
            q, k = norm_ref(block.attn.q_norm, q, sites, "q"), norm_ref(block.attn.k_norm, k, sites, "k")
        z = q @ k.transpose(-1, -2) / math.sqrt(D // HEADS)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        logits.append(float(z.abs()[..., causal].max()))
        attn = torch.softmax(z.masked_fill(~causal, float("-inf")), dim=-1) @ v
        h = h + attn.transpose(1, 2).reshape(h.shape) @ block.attn.proj.weight.T + block.attn.proj.bias
        m = norm_ref(block.norm2, h, sites, f"layers.{i}.norm2")
        h = h + block.mlp(m)
        variances.append(float(h.var(dim=-1, unbiased=False).mean()))
    out = model.head(norm_ref(model.backbone.final_norm, h, sites, "final")[:, -1])
    return variances, logits, sites, out


@pytest.fixture
def batch():
    torch.manual_seed(2)
    return torch.randn(4, T, 2, dtype=torch.float64), torch.randn(4, dtype=torch.float64)


def test_the_reference_is_the_model(batch):
    model = model_of()
    x, _ = batch
    assert torch.allclose(reference(model, x)[3], model(x), atol=1e-12)


@pytest.mark.parametrize("qk_norm", [False, True])
def test_hidden_variance_and_attention_logits_match_the_equations(batch, qk_norm):
    model = model_of(qk_norm=qk_norm)
    x, _ = batch
    variances, logits, _, _ = reference(model, x)
    assert probes.hidden_variance(model, x) == pytest.approx(variances, rel=1e-10)
    assert probes.attention_logit_max(model, x) == pytest.approx(logits, rel=1e-10)


def test_attention_logits_grow_with_the_query_scale_and_qk_norm_bounds_them(batch):
    x, _ = batch
    plain, normed = model_of(), model_of(qk_norm=True)
    for model in (plain, normed):
        with torch.no_grad():
            for block in model.backbone.layers:
                block.attn.qkv.weight[: 2 * D] *= 10  # queries and keys ×10: logits ×100 without QK-norm
    assert max(probes.attention_logit_max(plain, x)) > 10 * max(probes.attention_logit_max(normed, x))


def test_saturated_share_counts_dyt_inputs_beyond_the_limit(batch):
    model = model_of("dyt", alpha=3.0)
    x, _ = batch
    _, _, sites, _ = reference(model, x)
    shares = probes.saturated_share(model, x)
    names = {f"backbone.layers.{i}.norm{j}.norm": f"layers.{i}.norm{j}" for i in range(LAYERS) for j in (1, 2)}
    for site, ref in names.items():
        arg = 3.0 * sites[ref][0]
        assert shares[site] == pytest.approx(float((arg.abs() > 2.0).double().mean()), abs=1e-12)
    every = torch.cat([3.0 * s[0].flatten() for s in sites.values()])
    assert shares["all"] == pytest.approx(float((every.abs() > 2.0).double().mean()), abs=1e-12)
    assert 0 < shares["all"] < 1 and probes.saturated_share(model_of("ln"), x) == {}


def test_layer_skip_losses_are_the_loss_without_each_block(batch):
    model = model_of()
    x, y = batch
    full = float(mse(reference(model, x)[3], y))
    expected = [float(mse(reference(model, x, skip=i)[3], y)) - full for i in range(LAYERS)]
    assert probes.layer_skip_losses(model, x, y, mse) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert probes.deep_half_mean(expected) == pytest.approx(sum(expected[1:]) / 2)  # blocks 1, 2 of 3


def test_log_slope_and_depth_ratio_read_growth_with_its_sign():
    assert probes.log_slope([1.0, math.e, math.e ** 2, math.e ** 3]) == pytest.approx(1.0)
    assert probes.log_slope([4.0, 2.0, 1.0]) == pytest.approx(-math.log(2))
    assert probes.log_slope([1.0]) is None and probes.log_slope([1.0, 0.0]) is None
    grads = {"encoder": 9.0, "layers.0": 1.0, "layers.1": 0.5, "layers.2": 0.1, "head": 3.0}
    assert probes.depth_grad_log_ratio(grads) == pytest.approx(-1.0)  # deeper blocks get less: negative
    assert probes.depth_grad_log_ratio({"layers.0": 1.0}) is None


def test_lr_sensitivity_is_the_papers_area():
    # a loss (lower better), ℓ₀ = chance = 2.0: min(ℓ, ℓ₀) − ℓ*, averaged; a diverged lr counts as ℓ₀
    losses = {1e-3: 1.0, 1e-2: 0.5, 1e-1: 3.0, 1.0: None}
    expected = ((1.0 - 0.5) + 0.0 + (2.0 - 0.5) + (2.0 - 0.5)) / 4
    assert sensitivity(losses, 2.0, higher=False) == pytest.approx(expected)
    # accuracy (higher better), chance 0.1: the same area on the signed score
    assert sensitivity({1e-3: 0.9, 1e-2: 0.95, 1e-1: 0.05}, 0.1, higher=True) == pytest.approx((0.05 + 0 + 0.85) / 3)
    assert sensitivity({1e-3: 0.9, 1e-2: 0.9}, 0.1, higher=True) == 0.0
    assert lr_grid_is_log_spaced([1e-3, 1e-2, 1e-1]) and not lr_grid_is_log_spaced([1e-3, 2e-3, 1e-1])


def test_saturation_of_derf_counts_its_shifted_argument(batch):
    torch.manual_seed(3)
    model = build_model(ModelShape("transformer", hidden=D, embed=D, heads=HEADS, layers=1),
                        NormSpec("derf", alpha_init=2.0, shift_init=1.0), "pre", input_kind="features", input_dim=2,
                        n_outputs=1, readout="last").double()
    x, _ = batch
    inputs = {}
    hooks = [m.register_forward_hook(lambda mod, i, o, n=name: inputs.__setitem__(n, i[0].detach()))
             for name, m in model.named_modules() if "DynamicErf" in {c.__name__ for c in type(m).__mro__}]
    with torch.no_grad():
        model.eval()(x)
    for h in hooks:
        h.remove()
    shares = probes.saturated_share(model, x)
    for name, seen in inputs.items():  # erf(αx + s): the shift counts, as the paper's formula has it
        assert shares[name] == pytest.approx(float(((2.0 * seen + 1.0).abs() > 2.0).double().mean()), abs=1e-12)
    assert set(shares) == {*inputs, "all"}


def old_layer_skip_losses(model, x, y, loss_fn):
    """The skip probe as it was before the readings shared a forward (586fb62), kept to compare with: every
    skipped forward computes every block, a block without an identity included."""
    with probes._probe_mode(model), torch.no_grad():
        full = float(loss_fn(model(x), y))
        out = []
        for block in model.backbone.layers:
            shapes = {}

            def skip(module, inputs, output):
                shapes["same"] = isinstance(output, torch.Tensor) and output.shape == inputs[0].shape
                return inputs[0] if shapes["same"] else output
            handle = block.register_forward_hook(skip)
            try:
                skipped = float(loss_fn(model(x), y))
            finally:
                handle.remove()
            out.append(skipped - full if shapes.get("same") else None)
    return out


def float_model(family, kind, placement="pre", layers=3, embed=D, **shape):
    torch.manual_seed(3)
    return build_model(ModelShape(family, hidden=D, embed=embed, heads=HEADS, layers=layers, **shape),
                       NormSpec(kind), placement, input_kind="features", input_dim=2, n_outputs=1, readout="last")


def mse32(out, y):
    return torch.nn.functional.mse_loss(out.squeeze(-1), y.float())


def readings_alone(model, x, y, loss_fn):
    """The readings as _depth took them before: one probe at a time, in this order."""
    return {"hidden_var": probes.hidden_variance(model, x), "attn_logit_max": probes.attention_logit_max(model, x),
            "saturated_share": list(probes.saturated_share(model, x).items()),
            "layer_skip": old_layer_skip_losses(model, x, y, loss_fn)}


SHARED_PASS = [("transformer", "ln", "pre", {}), ("transformer", "rms", "peri", {"qk_norm": True}),
               ("transformer", "dyt", "mix", {}), ("transformer", "derf", "pre", {}),
               ("transformer", "ln", "post", {"dropout": 0.1}), ("lstm", "ln", "pre", {}), ("gru", "rms", "post", {}),
               ("lstm", "ln", "pre", {"embed": 5}),  # block 0 maps 5 to 8 features: no identity, the others replayed
               ("transformer", "bn", "pre", {}), ("transformer", "bn", "pre", {"dropout": 0.1}),
               ("lstm", "bn", "pre", {"dropout": 0.3, "embed": 5}),  # its skip of block 0 draws masks all the same
               ("gru", "bn", "post", {"dropout": 0.3, "embed": 5, "bidirectional": True})]


@pytest.mark.parametrize("family,kind,placement,shape", SHARED_PASS)
def test_end_readings_are_each_probe_read_alone_exactly(batch, family, kind, placement, shape):
    """One shared forward and replayed prefixes change no number: each reading equals its probe run alone as
    before, bit for bit, in float32 as training runs them. A BatchNorm model's probes run in training mode, where
    dropout draws masks: it reads each alone, as before, the same draws in the same order, the generator left
    where it was left before."""
    model = float_model(family, kind, placement, **shape).train()
    x, y = batch[0].float(), batch[1]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(4)
    read = probes.end_readings(model, x, y, mse32)
    after = torch.get_rng_state()
    torch.manual_seed(4)
    assert {**read, "saturated_share": list(read["saturated_share"].items())} == readings_alone(model, x, y, mse32)
    assert torch.equal(torch.get_rng_state(), after)
    assert (read["saturated_share"] != {}) == (kind in ("dyt", "derf")) and len(read["layer_skip"]) == 3
    assert (read["layer_skip"][0] is None) == ("embed" in shape)
    assert model.training and all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not any("forward" in vars(block) for block in model.backbone.layers)  # the replay leaves no trace


def test_end_readings_compute_each_block_once_on_the_shared_pass_and_only_the_blocks_after_a_skip(batch):
    """3 blocks: the shared forward computes each once; skipping block ℓ computes blocks ℓ+1.. only, 2 + 1 + 0.
    Read one probe at a time, the same readings took 3 forwards and 3 skipped ones: 18 block computations."""
    model = float_model("transformer", "ln")
    calls = []
    for i, block in enumerate(model.backbone.layers):
        block.mlp.register_forward_hook(lambda module, inputs, output, i=i: calls.append(i))
    x, y = batch[0].float(), batch[1]
    probes.end_readings(model, x, y, mse32)
    assert calls == [0, 1, 2, 1, 2, 2]


def test_a_compiled_in_cell_layer_reads_hidden_variance_and_skips_as_compiled(batch):
    """An in-cell layer on torch.compile runs its step eagerly while its norms carry hooks (recurrent.py), and the
    saturation share hooks them: the shared forward must not carry it, or the hidden variance and the skip losses
    would read the eager step. Here the "compiled" step differs from the eager one on purpose, so either shows."""
    model = float_model("lstm", "dyt", "in_cell", layers=2, cell_kernel="torch_compile").eval()
    for layer in model.backbone.layers:
        layer._compiled_step = lambda wx, h, c, t, step=layer.step: tuple(
            None if v is None else v * 1.01 for v in step(wx, h, c, t))
    x, y = batch[0].float(), batch[1]
    read = probes.end_readings(model, x, y, mse32)
    assert {**read, "saturated_share": list(read["saturated_share"].items())} == readings_alone(model, x, y, mse32)
    with probes._hooked([(0, model.backbone.layers[0].norm_h)], lambda name: lambda *args: None):
        eager = probes.hidden_variance(model, x)  # the norms hooked: the eager step
    assert eager != read["hidden_var"]


def test_a_block_used_twice_is_not_replayed(batch):
    """Weight-tied blocks (one module at two places): a replay would hand back one call's output for both, so every
    skipped forward runs whole, as the old probe ran it."""
    model = float_model("transformer", "ln")
    first, second, _ = model.backbone.layers
    model.backbone.layers = torch.nn.ModuleList([first, second, first])
    x, y = batch[0].float(), batch[1]
    assert probes.end_readings(model, x, y, mse32)["layer_skip"] == old_layer_skip_losses(model, x, y, mse32)


@pytest.mark.parametrize("causal_only", [True, False])
def test_attention_logits_taken_a_few_examples_at_a_time_are_the_whole_batchs(causal_only, monkeypatch):
    """The largest logit over parts of the batch is the whole batch's, bit for bit: padded examples (each part
    masks its own examples' padded keys), a last part shorter than the others, and a NaN, which a max keeps."""
    torch.manual_seed(5)
    model = build_model(ModelShape("transformer", hidden=D, embed=D, heads=HEADS, layers=2), NormSpec("ln"), "pre",
                        input_kind="tokens", input_dim=10, n_outputs=10, readout="every")
    x = torch.randint(0, 10, (11, 7))
    if not causal_only:
        for example, length in enumerate([7, 3, 5, 2, 7, 4, 6, 1, 7, 5, 3]):
            x[example, length:] = -1  # PAD_TOKEN: keys attention may not use
    monkeypatch.setattr(probes, "LOGIT_PART", 10**9)
    whole = probes.attention_logit_max(model, x)
    for size in (8, 3, 1):  # examples a part: each of HEADS x 7 x 7 logits
        monkeypatch.setattr(probes, "LOGIT_PART", size * HEADS * 7 * 7)
        assert probes.attention_logit_max(model, x) == whole
    with torch.no_grad():
        model.backbone.layers[1].attn.qkv.bias[0] = float("nan")  # head 0's logits of block 1 are NaN
    assert math.isnan(probes.attention_logit_max(model, x)[1])


def test_attention_logits_in_parts_at_sizes_the_matrix_library_computes(monkeypatch):
    """Parts against the whole batch where float64 products go to the BLAS (head width 16, 64 steps, two threads),
    not the small-matrix loop of the test above: the same largest logit, bit for bit."""
    torch.manual_seed(6)
    model = build_model(ModelShape("transformer", hidden=64, embed=64, heads=4, layers=2), NormSpec("ln"), "pre",
                        input_kind="tokens", input_dim=10, n_outputs=10, readout="every")
    x = torch.randint(0, 10, (24, 64))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        monkeypatch.setattr(probes, "LOGIT_PART", 10**9)
        whole = probes.attention_logit_max(model, x)
        monkeypatch.setattr(probes, "LOGIT_PART", 5 * 4 * 64 * 64)  # 5 examples a part, the last part 4
        assert probes.attention_logit_max(model, x) == whole
    finally:
        torch.set_num_threads(threads)


def test_a_block_with_a_hook_of_its_own_is_not_replayed(batch):
    """A hook already on a block (one that changes its output) would run again around a replayed forward: such a
    model's skipped forwards run whole, and every reading is the old one."""
    model = float_model("transformer", "ln")
    model.backbone.layers[1].register_forward_hook(lambda module, inputs, output: output * 2)
    x, y = batch[0].float(), batch[1]
    read = probes.end_readings(model, x, y, mse32)
    assert {**read, "saturated_share": list(read["saturated_share"].items())} == readings_alone(model, x, y, mse32)
