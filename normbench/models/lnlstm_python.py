"""The in-cell LayerNorm-LSTM recurrence with a hand-written backward.

Same arithmetic as InCellLayer's autograd loop (tested equal), but the forward builds no graph and
the backward is one loop of a dozen ops per step. Everything that does not depend on the
recurrence (local derivatives of every gate, gradients of W_hh, gamma and beta) is computed for
all steps at once, outside the loops: on a CPU the cost of a step is the number of ops it issues.

    z_t = h_{t-1} U^T        n_t = LN_h(z_t)          a_t = wx_t + n_t        (wx_t has both biases)
    i, f, o = sigmoid(a_t), g = tanh(a_t)             c_t = f c_{t-1} + i g
    h_t = o tanh(LN_c(c_t))                                                   (Ba et al. 2016, eqs. 20-22)
"""

from __future__ import annotations

import torch

_layer_norm = torch.native_layer_norm                  # -> (y, mean, rstd)
_layer_norm_backward = torch.ops.aten.native_layer_norm_backward
_INPUT_GRAD_ONLY = [True, False, False]


class LayerNormLSTMRecurrence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, wx, w_hh, gamma_h, beta_h, gamma_c, beta_c, eps: float, cell_norm: bool):
        batch, steps, width = wx.shape
        hidden = width // 4
        h = wx.new_zeros(batch, hidden)
        c = wx.new_zeros(batch, hidden)
        w_t = w_hh.t()
        hs, cs, zs, z_means, z_rstds, sigs, gs, c_means, c_rstds, ks = ([] for _ in range(10))
        for wx_t in wx.unbind(1):
            z = torch.mm(h, w_t)
            n, z_mean, z_rstd = _layer_norm(z, (width,), gamma_h, beta_h, eps)
            a = wx_t + n
            sig = torch.sigmoid(a)  # i, f, o come from here; the g slot is recomputed with tanh
            i, f, _, o = sig.split(hidden, 1)
            g = torch.tanh(a[:, 2 * hidden : 3 * hidden])
            hs.append(h)
            cs.append(c)
            c = torch.addcmul(f * c, i, g)
            if cell_norm:
                m, c_mean, c_rstd = _layer_norm(c, (hidden,), gamma_c, beta_c, eps)
                c_means.append(c_mean)
                c_rstds.append(c_rstd)
            else:
                m = c
            k = torch.tanh(m)
            h = o * k
            for store, value in ((zs, z), (z_means, z_mean), (z_rstds, z_rstd), (sigs, sig), (gs, g), (ks, k)):
                store.append(value)
        hs.append(h)
        cs.append(c)
        ctx.save_for_backward(w_hh, gamma_h, beta_h, gamma_c, beta_c)
        # Intermediates created here live on ctx (PyTorch's rule for non-input, non-output tensors).
        ctx.steps = (hs, cs, zs, z_means, z_rstds, sigs, gs, c_means, c_rstds, ks)
        ctx.eps, ctx.cell_norm, ctx.hidden = eps, cell_norm, hidden
        return torch.stack(hs[1:], 1)

    @staticmethod
    def backward(ctx, grad_out):
        w_hh, gamma_h, beta_h, gamma_c, beta_c = ctx.saved_tensors
        hs, cs, zs, z_means, z_rstds, sigs, gs, c_means, c_rstds, ks = ctx.steps
        hidden, cell_norm = ctx.hidden, ctx.cell_norm
        width = 4 * hidden
        sig, g, k, c_prev = torch.stack(sigs), torch.stack(gs), torch.stack(ks), torch.stack(cs[:-1])
        i, f, _, o = sig.split(hidden, -1)
        # Local derivatives for every step at once; the loop below only does what needs dc and dh.
        #   da_i = dc g i(1-i),  da_f = dc c_prev f(1-f),  da_g = dc i (1-g^2),  da_o = dh k o(1-o)
        dc_factor = torch.cat([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g)], -1).unbind(0)
        dh_factor = (k * o * (1 - o)).unbind(0)
        dm_factor = (o * (1 - k * k)).unbind(0)   # dm = dh o tanh'(m)
        f_steps = f.unbind(0)
        grads_out = grad_out.unbind(1)
        steps, batch = sig.shape[:2]
        dh = grad_out.new_zeros(batch, hidden)
        dc_next = grad_out.new_zeros(batch, hidden)
        das, dzs, dms = [None] * steps, [None] * steps, [None] * steps
        for t in range(steps - 1, -1, -1):
            dh_t = grads_out[t] + dh
            dm = dh_t * dm_factor[t]
            if cell_norm:
                dc = _layer_norm_backward(dm, cs[t + 1], (hidden,), c_means[t], c_rstds[t], gamma_c, beta_c,
                                          _INPUT_GRAD_ONLY)[0] + dc_next
            else:
                dc = dm + dc_next
            da = torch.cat([dc.repeat(1, 3) * dc_factor[t], dh_t * dh_factor[t]], 1)
            dc_next = dc * f_steps[t]
            dz = _layer_norm_backward(da, zs[t], (width,), z_means[t], z_rstds[t], gamma_h, beta_h,
                                      _INPUT_GRAD_ONLY)[0]
            dh = torch.mm(dz, w_hh)
            das[t], dzs[t], dms[t] = da, dz, dm
        da_all, dz_all = torch.stack(das), torch.stack(dzs)
        grad_w_hh = torch.mm(dz_all.reshape(-1, width).t(), torch.stack(hs[:-1]).reshape(-1, hidden))
        grad_gamma_h = grad_beta_h = grad_gamma_c = grad_beta_c = None
        if gamma_h is not None:
            z_hat = (torch.stack(zs) - torch.stack(z_means)) * torch.stack(z_rstds)
            grad_gamma_h, grad_beta_h = (da_all * z_hat).sum((0, 1)), da_all.sum((0, 1))
        if cell_norm and gamma_c is not None:
            dm_all = torch.stack(dms)
            c_hat = (torch.stack(cs[1:]) - torch.stack(c_means)) * torch.stack(c_rstds)
            grad_gamma_c, grad_beta_c = (dm_all * c_hat).sum((0, 1)), dm_all.sum((0, 1))
        return da_all.transpose(0, 1), grad_w_hh, grad_gamma_h, grad_beta_h, grad_gamma_c, grad_beta_c, None, None
