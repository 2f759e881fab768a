import pytest
import torch

from normbench.models.transformer import Block, TransformerShape, build_transformer
from normbench.norms import Identity, Norm, NormSpec

SHAPE = TransformerShape(d_model=16, n_layers=3, n_heads=2)


def block_outputs(stack, x):
    seen = []
    hooks = [b.register_forward_hook(lambda m, i, o: seen.append(o.detach())) for b in stack.layers]
    stack(x)
    for h in hooks:
        h.remove()
    return seen


def test_post_ln_normalizes_every_block_output_per_token():
    torch.manual_seed(0)
    stack = build_transformer(SHAPE, NormSpec("ln"), "post")
    assert all(isinstance(b, Block) and b.placement == "post" for b in stack.layers)
    assert isinstance(stack.final_norm, Identity)
    for out in block_outputs(stack, torch.randn(2, 5, 16) * 4):
        torch.testing.assert_close(out.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
        torch.testing.assert_close(out.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)


@pytest.mark.parametrize("placement", ["pre", "peri"])
def test_pre_and_peri_leave_the_residual_stream_unnormalized_and_add_a_final_norm(placement):
    torch.manual_seed(1)
    stack = build_transformer(SHAPE, NormSpec("ln"), placement)
    assert all(b.placement == placement for b in stack.layers)
    outs = block_outputs(stack, torch.randn(2, 5, 16) * 4)
    assert all((o.var(-1, unbiased=False) - 1).abs().max() > 0.5 for o in outs)  # residual keeps its scale
    final = stack(torch.randn(2, 5, 16) * 4)
    torch.testing.assert_close(final.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)


def test_peri_normalizes_sublayer_outputs():
    torch.manual_seed(2)
    block = build_transformer(SHAPE, NormSpec("ln"), "peri").layers[0]
    seen = []
    block.norm1_out.register_forward_hook(lambda m, i, o: seen.append(o))
    block(torch.randn(2, 5, 16))
    torch.testing.assert_close(seen[0].var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)


def test_causal_output_does_not_see_the_future():
    torch.manual_seed(3)
    stack = build_transformer(SHAPE, NormSpec("rms"), "pre")
    x = torch.randn(1, 6, 16)
    y = stack(x)
    x2 = x.clone()
    x2[:, 4:] += 10
    torch.testing.assert_close(stack(x2)[:, :4], y[:, :4])


def test_no_norm_means_no_norm_modules():
    stack = build_transformer(SHAPE, NormSpec("none"), "post")
    assert not any(isinstance(m, Norm) and not isinstance(m, Identity) for m in stack.modules())
    assert all(b.placement == "pre" for b in stack.layers)  # x + f(x), identity norms


def test_sequence_longer_than_max_len_is_a_clear_error():
    stack = build_transformer(TransformerShape(16, 1, 2, max_len=4), NormSpec("ln"), "pre")
    with pytest.raises(ValueError, match="exceeds the transformer's max_len 4"):
        stack(torch.randn(1, 5, 16))


# --- QK-norm: the run's norm on each head's queries and keys ---------------------------------------

def _attention_by_hand(attn, x, kind, eps=1e-5):
    """Causal multi-head attention with the norm over head_dim, in float64, written out here."""
    batch, steps, d = x.shape
    heads = attn.n_heads
    hd = d // heads
    q, k, v = (x @ attn.qkv.weight.T + attn.qkv.bias).view(batch, steps, 3, heads, hd).permute(2, 0, 3, 1, 4)

    def norm(t, module):
        gamma = module.norm.weight
        if kind == "ln":
            mu = t.mean(-1, keepdim=True)
            return (t - mu) / torch.sqrt(((t - mu) ** 2).mean(-1, keepdim=True) + eps) * gamma + module.norm.bias
        return t / torch.sqrt((t * t).mean(-1, keepdim=True) + eps) * gamma  # rms

    q, k = norm(q, attn.q_norm), norm(k, attn.k_norm)
    scores = q @ k.transpose(-1, -2) / hd ** 0.5
    scores = scores.masked_fill(torch.ones(steps, steps, dtype=torch.bool).triu(1), float("-inf"))
    y = torch.softmax(scores, -1) @ v
    return y.transpose(1, 2).reshape(batch, steps, d) @ attn.proj.weight.T + attn.proj.bias


@pytest.mark.parametrize("kind", ["ln", "rms"])
@pytest.mark.parametrize("placement", ["pre", "post", "peri"])
def test_qk_norm_matches_float64_formula_with_every_placement(kind, placement):
    torch.manual_seed(4)
    shape = TransformerShape(d_model=16, n_layers=2, n_heads=4, qk_norm=True)
    stack = build_transformer(shape, NormSpec(kind, gain_offset=True), placement).double()
    attn = stack.layers[0].attn
    with torch.no_grad():  # gains away from 1, so a norm on the wrong axis or a lost gain shows
        for module in (attn.q_norm, attn.k_norm):
            module.norm.weight_offset.copy_(torch.randn(4, dtype=torch.float64) * 0.5)
            if getattr(module.norm, "bias", None) is not None:
                module.norm.bias.copy_(torch.randn(4, dtype=torch.float64))
    x = torch.randn(2, 5, 16, dtype=torch.float64) * 3
    torch.testing.assert_close(attn(x), _attention_by_hand(attn, x, kind), rtol=1e-10, atol=1e-10)
    assert attn.q_norm.norm.dim == 4                     # per head: head_dim = 16 / 4
    out = stack(x)
    (out * torch.randn_like(out)).sum().backward()  # a sum of a post-LN output is constant
    assert attn.q_norm.norm.weight_offset.grad.abs().sum() > 0


def test_qk_norm_off_builds_no_extra_modules_and_needs_a_norm():
    from normbench.models import InvalidCombination

    plain = build_transformer(SHAPE, NormSpec("ln"), "pre")
    assert not hasattr(plain.layers[0].attn, "q_norm")
    with_qk = build_transformer(TransformerShape(d_model=16, n_layers=3, n_heads=2, qk_norm=True), NormSpec("ln"), "pre")
    n_norms = sum(isinstance(m, Norm) for m in with_qk.modules()) - sum(isinstance(m, Norm) for m in plain.modules())
    assert n_norms == 2 * 3
    with pytest.raises(InvalidCombination, match="qk_norm=true needs a norm"):
        build_transformer(TransformerShape(d_model=16, qk_norm=True), NormSpec("none"), "pre")
