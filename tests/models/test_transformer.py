import pytest
import torch

from normbench.models.transformer import PeriNormBlock, PostNormBlock, PreNormBlock, TransformerShape, build_transformer
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
    assert all(isinstance(b, PostNormBlock) for b in stack.layers)
    assert isinstance(stack.final_norm, Identity)
    for out in block_outputs(stack, torch.randn(2, 5, 16) * 4):
        torch.testing.assert_close(out.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
        torch.testing.assert_close(out.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)


@pytest.mark.parametrize("placement,block", [("pre", PreNormBlock), ("peri", PeriNormBlock)])
def test_pre_and_peri_leave_the_residual_stream_unnormalized_and_add_a_final_norm(placement, block):
    torch.manual_seed(1)
    stack = build_transformer(SHAPE, NormSpec("ln"), placement)
    assert all(isinstance(b, block) for b in stack.layers)
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
    assert all(isinstance(b, PreNormBlock) for b in stack.layers)  # x + f(x), identity norms


def test_sequence_longer_than_max_len_is_a_clear_error():
    stack = build_transformer(TransformerShape(16, 1, 2, max_len=4), NormSpec("ln"), "pre")
    with pytest.raises(ValueError, match="exceeds the transformer's max_len 4"):
        stack(torch.randn(1, 5, 16))
