// The in-cell LayerNorm-LSTM layer (Ba et al. 2016, suppl. eqs. 20-22) as two CPU kernels, and the same layer with
// RMSNorm (Zhang & Sennrich 2019: no re-centring) in place of each LayerNorm (``centred`` false: every mean is 0,
// and its terms drop out of the backward).
//
// Same arithmetic as InCellLayer's autograd loop (tested equal in float64). The input projection
// x W_ih^T is one product over all time steps, before the recurrence; per time step the forward
// issues one more (h_{t-1} U^T, U^T packed contiguous once per call), by register tiles written
// here where it is small (gemm::step_product), else by oneDNN in float32 where the caller asks
// (gemm.h says why) or at::mm; the large products likewise; everything else (both input norms, biases, the
// gates' sigmoid and tanh, the cell update, the cell norm) is a few passes of ATen's Vectorized<T>
// over each batch row (rows.h), built for the CPU capability torch dispatches for (AVX-512, AVX2).
// The backward issues one matrix product per step. On a CPU at these sizes an ATen call costs
// microseconds of dispatch, as much as its arithmetic: a step that issued sigmoid_ and tanh_ as
// separate calls paid for them twice over.
//
//   x_hat = LN(xw_t)   z_hat = LN(h_{t-1} U^T)   a_t = x_hat gx + z_hat gh + bias
//       (bias = beta_x + beta_h + b_ih + b_hh: four additive constants, one sum)
//   i, f, o = sigmoid(a_t)   g = tanh(a_t)   c_t = f c_{t-1} + i g
//   c_hat = LN(c_t)   k_t = tanh(c_hat gc + bc)   h_t = o k_t
//
// xw (the input projection) and the saved tensors are time-major, so every step reads and writes
// contiguous slices. RMSNorm has no shift: the caller passes its biases without one, and beta_c as zeros.

#include <torch/extension.h>

#include <vector>

#include "gemm.h"
#include "row_blocks.h"
#include "rows.h"

namespace {

using rows::chunks;
using rows::keep;
using rows::load;
using rows::store;
using rows::Vec;
using row_blocks::add_to;
using row_blocks::check;

gemm::Clocks clocks;  // where the layer's time went since phases() last read it

// One batch row, one step, forward. z holds h_{t-1} U^T and is overwritten with z_hat. Writes the
// gate activations a = (i, f, g, o), c_t, c_hat, k and h_t, and the row's statistics.
template <typename T>
inline void row_forward(const T* __restrict__ xw, T* __restrict__ z, const T* __restrict__ gx,
                        const T* __restrict__ gh, const T* __restrict__ bias, const T* __restrict__ c_prev,
                        const T* __restrict__ gc, const T* __restrict__ bc, int64_t hidden, double eps,
                        bool cell_norm, bool centred, T* __restrict__ a, T* __restrict__ c, T* __restrict__ c_hat,
                        T* __restrict__ k, T* __restrict__ h, T* mean_x, T* rstd_x, T* rstd_z, T* rstd_c) {
  const int64_t width = 4 * hidden;
  T mean_z;
  *rstd_x = rows::row_stats(xw, width, eps, centred, mean_x);
  *rstd_z = rows::row_stats(z, width, eps, centred, &mean_z);
  const Vec<T> mx(*mean_x), rx(*rstd_x), mz(mean_z), rz(*rstd_z);
  Vec<T> c_total(T(0));
  // The four gates of hidden unit j sit at j, j + hidden, j + 2 hidden, j + 3 hidden: one pass
  // over the units computes every pre-activation, activation and the new cell state.
  chunks<T>(hidden, [&](int64_t j, int64_t n) {
    Vec<T> pre[4];
    for (int64_t gate = 0; gate < 4; ++gate) {
      const int64_t at = gate * hidden + j;
      const Vec<T> z_hat = (load(z + at, n) - mz) * rz;
      store(z_hat, z + at, n);
      pre[gate] = (load(xw + at, n) - mx) * rx * load(gx + at, n) + z_hat * load(gh + at, n) + load(bias + at, n);
    }
    const Vec<T> i = rows::sigmoid(pre[0]), f = rows::sigmoid(pre[1]), g = rows::tanh(pre[2]), o = rows::sigmoid(pre[3]);
    store(i, a + j, n);
    store(f, a + hidden + j, n);
    store(g, a + 2 * hidden + j, n);
    store(o, a + 3 * hidden + j, n);
    const Vec<T> cell = f * load(c_prev + j, n) + i * g;
    store(cell, c + j, n);
    c_total = c_total + keep(cell, n);
  });
  if (!cell_norm) {
    chunks<T>(hidden, [&](int64_t j, int64_t n) {
      const Vec<T> kv = rows::tanh(load(c + j, n));
      store(kv, k + j, n);
      store(load(a + 3 * hidden + j, n) * kv, h + j, n);
    });
    return;
  }
  T mean_c = T(0);
  if (centred) {
    mean_c = rows::sum_lanes(c_total) / T(hidden);
    Vec<T> squares(T(0));
    const Vec<T> mc(mean_c);
    chunks<T>(hidden, [&](int64_t j, int64_t n) {
      const Vec<T> d = keep(load(c + j, n) - mc, n);
      squares = squares + d * d;
    });
    *rstd_c = rows::rstd_of(rows::sum_lanes(squares), hidden, eps);
  } else {
    *rstd_c = rows::rms_rstd(c, hidden, eps);
  }
  const Vec<T> mc(mean_c), rc(*rstd_c);
  chunks<T>(hidden, [&](int64_t j, int64_t n) {
    const Vec<T> ch = (load(c + j, n) - mc) * rc;
    store(ch, c_hat + j, n);
    const Vec<T> kv = rows::tanh(ch * load(gc + j, n) + load(bc + j, n));
    store(kv, k + j, n);
    store(load(a + 3 * hidden + j, n) * kv, h + j, n);
  });
}

// One batch row, one step, backward. dh: dL/dh_t from step t+1; dc_next: dL/dc_t from step t+1,
// replaced by dL/dc_{t-1}. Writes dL/dxw and dL/dz for the row and adds the row's share to the
// step's gain and bias gradients. dm and da are scratch (hidden and 4 hidden).
template <typename T>
inline void row_backward(const T* __restrict__ grad_out, const T* __restrict__ dh, const T* __restrict__ a,
                         const T* __restrict__ k, const T* __restrict__ c_hat, const T* __restrict__ c_prev,
                         const T* __restrict__ xw, const T* __restrict__ z_hat, const T* __restrict__ gx,
                         const T* __restrict__ gh, const T* __restrict__ gc, T mean_x, T rstd_x, T rstd_z,
                         T rstd_c, int64_t hidden, bool cell_norm, bool centred, T* __restrict__ dc_next,
                         T* __restrict__ dm,
                         T* __restrict__ da, T* __restrict__ grad_xw, T* __restrict__ dz, T* __restrict__ step_gx,
                         T* __restrict__ step_gh, T* __restrict__ step_bias, T* __restrict__ step_gc,
                         T* __restrict__ step_bc) {
  const int64_t width = 4 * hidden;
  const Vec<T> one(T(1));
  // h = o k, k = tanh(m), m = c_hat gc + bc: da_o and dm; the cell norm's sums
  Vec<T> sum_d(T(0)), sum_d_hat(T(0));
  chunks<T>(hidden, [&](int64_t j, int64_t n) {
    const Vec<T> dhv = load(grad_out + j, n) + load(dh + j, n), kv = load(k + j, n), o = load(a + 3 * hidden + j, n);
    store(dhv * kv * o * (one - o), da + 3 * hidden + j, n);
    const Vec<T> dmv = dhv * o * (one - kv * kv);
    store(dmv, dm + j, n);
    if (cell_norm) {
      const Vec<T> ch = load(c_hat + j, n), dg = dmv * load(gc + j, n);
      sum_d = sum_d + dg;
      sum_d_hat = sum_d_hat + dg * ch;
      rows::accumulate(dmv * ch, step_gc + j, n);
      rows::accumulate(dmv, step_bc + j, n);
    }
  });
  // RMSNorm's backward is LayerNorm's without the mean of the upstream gradient (the mean it did not subtract)
  const T no_mean(0);
  const Vec<T> mean_d(centred ? rows::sum_lanes(sum_d) / T(hidden) : no_mean);
  const Vec<T> mean_d_hat(rows::sum_lanes(sum_d_hat) / T(hidden));
  const Vec<T> rc(rstd_c), mx(mean_x), rx(rstd_x);
  // dc, the gates' da, and the sums the two input norms' backward needs
  Vec<T> sx(T(0)), sx_hat(T(0)), sz(T(0)), sz_hat(T(0));
  chunks<T>(hidden, [&](int64_t j, int64_t n) {
    const Vec<T> dmv = load(dm + j, n);
    const Vec<T> dc = (cell_norm ? rc * (dmv * load(gc + j, n) - mean_d - load(c_hat + j, n) * mean_d_hat) : dmv)
                      + load(dc_next + j, n);
    const Vec<T> i = load(a + j, n), f = load(a + hidden + j, n), g = load(a + 2 * hidden + j, n);
    const Vec<T> d[4] = {dc * g * i * (one - i), dc * load(c_prev + j, n) * f * (one - f), dc * i * (one - g * g),
                         load(da + 3 * hidden + j, n)};
    store(dc * f, dc_next + j, n);
    for (int64_t gate = 0; gate < 4; ++gate) {
      const int64_t at = gate * hidden + j;
      if (gate < 3) store(d[gate], da + at, n);
      const Vec<T> dgx = keep(d[gate] * load(gx + at, n), n), dgh = keep(d[gate] * load(gh + at, n), n);
      sx = sx + dgx;
      sx_hat = sx_hat + dgx * ((load(xw + at, n) - mx) * rx);
      sz = sz + dgh;
      sz_hat = sz_hat + dgh * load(z_hat + at, n);
    }
  });
  const Vec<T> mean_x_d(centred ? rows::sum_lanes(sx) / T(width) : no_mean);
  const Vec<T> mean_z_d(centred ? rows::sum_lanes(sz) / T(width) : no_mean);
  const Vec<T> mean_x_d_hat(rows::sum_lanes(sx_hat) / T(width)), mean_z_d_hat(rows::sum_lanes(sz_hat) / T(width));
  const Vec<T> rz(rstd_z);
  chunks<T>(width, [&](int64_t j, int64_t n) {
    const Vec<T> dav = load(da + j, n), x_hat = (load(xw + j, n) - mx) * rx, zh = load(z_hat + j, n);
    store(rx * (dav * load(gx + j, n) - mean_x_d - x_hat * mean_x_d_hat), grad_xw + j, n);
    store(rz * (dav * load(gh + j, n) - mean_z_d - zh * mean_z_d_hat), dz + j, n);
    rows::accumulate(dav * x_hat, step_gx + j, n);
    rows::accumulate(dav * zh, step_gh + j, n);
    rows::accumulate(dav, step_bias + j, n);
  });
}

struct Saved {  // what the backward needs, all (time, batch, ...); x_hat is recomputed from xw
  at::Tensor hs, cs, z_hat, act, c_hat, k, mean_x, rstd_x, rstd_z, rstd_c;
};

// Each block of batch rows runs every step on its own thread (row_blocks.h says why).
template <typename T>
void forward_rows(int64_t b0, int64_t b1, const at::Tensor& xw, const at::Tensor& u_t, const T* gx, const T* gh,
                  const T* bias, const T* gc, const T* bc, double eps, bool cell_norm, bool centred, bool onednn,
                  Saved& s) {
  const int64_t steps = xw.size(0), batch = xw.size(1), width = xw.size(2), hidden = width / 4, rows = b1 - b0;
  const int64_t wide = batch * width, narrow = batch * hidden;
  const T* xw_p = xw.data_ptr<T>();
  T *h_p = s.hs.data_ptr<T>(), *c_p = s.cs.data_ptr<T>(), *z_p = s.z_hat.data_ptr<T>(), *a_p = s.act.data_ptr<T>();
  T *c_hat_p = s.c_hat.data_ptr<T>(), *k_p = s.k.data_ptr<T>(), *mx_p = s.mean_x.data_ptr<T>();
  T *rx_p = s.rstd_x.data_ptr<T>(), *rz_p = s.rstd_z.data_ptr<T>(), *rc_p = s.rstd_c.data_ptr<T>();
  gemm::Stopwatch watch(clocks);
  for (int64_t t = 0; t < steps; ++t) {
    gemm::step_product<T>(z_p + t * wide + b0 * width, width, h_p + t * narrow + b0 * hidden, hidden, rows, u_t, onednn);
    watch.lap(gemm::kForwardProducts);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r = t * batch + b, row = t * narrow + b * hidden, wrow = t * wide + b * width;
      row_forward(xw_p + wrow, z_p + wrow, gx, gh, bias, c_p + row, gc, bc, hidden, eps,
                  cell_norm, centred, a_p + wrow, c_p + narrow + row, c_hat_p + row, k_p + row, h_p + narrow + row,
                  mx_p + r, rx_p + r, rz_p + r, rc_p + r);
    }
    watch.lap(gemm::kForwardCell);
  }
}

// Gradients of gamma_x, gamma_h, the bias (3 x width), gamma_c and beta_c (2 x hidden) for rows
// [b0, b1), summed per step first: shorter sums, less rounding.
template <typename T>
void backward_rows(int64_t b0, int64_t b1, const at::Tensor& grad_out, const at::Tensor& xw, const at::Tensor& w_hh,
                   const T* gx, const T* gh, const T* gc, bool cell_norm, bool centred, const Saved& s,
                   at::Tensor& grad_xw,
                   at::Tensor& dz, at::Tensor& dh, bool onednn, T* totals) {
  const int64_t batch = grad_out.size(0), steps = grad_out.size(1), hidden = grad_out.size(2), width = 4 * hidden;
  const int64_t wide = batch * width, narrow = batch * hidden, rows = b1 - b0;
  const T *go = grad_out.data_ptr<T>(), *xw_p = xw.data_ptr<T>();
  const T *c_p = s.cs.data_ptr<T>(), *z_p = s.z_hat.data_ptr<T>(), *a_p = s.act.data_ptr<T>();
  const T *c_hat_p = s.c_hat.data_ptr<T>(), *k_p = s.k.data_ptr<T>(), *mx_p = s.mean_x.data_ptr<T>();
  const T *rx_p = s.rstd_x.data_ptr<T>(), *rz_p = s.rstd_z.data_ptr<T>(), *rc_p = s.rstd_c.data_ptr<T>();
  T *gxw_p = grad_xw.data_ptr<T>(), *dz_p = dz.data_ptr<T>(), *dh_p = dh.data_ptr<T>();
  std::vector<T> dc_next_v(rows * hidden, T(0)), dm_v(hidden), da_v(width);
  const int64_t n_totals = 3 * width + 2 * hidden;
  std::vector<T> step_v(n_totals);
  T *step_gx = step_v.data(), *step_gh = step_gx + width, *step_bias = step_gh + width;
  T *step_gc = step_bias + width, *step_bc = step_gc + hidden;
  gemm::Stopwatch watch(clocks);
  for (int64_t t = steps - 1; t >= 0; --t) {
    std::fill(step_v.begin(), step_v.end(), T(0));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r = t * batch + b, row = t * narrow + b * hidden, wrow = t * wide + b * width;
      row_backward(go + (b * steps + t) * hidden, dh_p + b * hidden, a_p + wrow, k_p + row, c_hat_p + row,
                   c_p + row, xw_p + wrow, z_p + wrow, gx, gh, gc, mx_p[r], rx_p[r], rz_p[r],
                   rc_p[r], hidden, cell_norm, centred, dc_next_v.data() + (b - b0) * hidden, dm_v.data(), da_v.data(),
                   gxw_p + wrow, dz_p + wrow, step_gx, step_gh, step_bias, step_gc, step_bc);
    }
    add_to(totals, step_v.data(), n_totals);
    watch.lap(gemm::kBackwardCell);
    gemm::step_product<T>(dh_p + b0 * hidden, hidden, dz_p + t * wide + b0 * width, width, rows, w_hh, onednn);
    watch.lap(gemm::kBackwardProducts);
  }
}

// Every step writes its slices, so only h_0 and c_0 start at zero (and, without a cell norm, the
// c_hat and rstd_c the backward then reads as zeros and ones): filling whole sequences that the
// steps overwrite was one more pass over memory per call.
Saved allocate(int64_t steps, int64_t batch, int64_t hidden, bool cell_norm, const at::TensorOptions& opt) {
  const int64_t width = 4 * hidden;
  Saved s{at::empty({steps + 1, batch, hidden}, opt), at::empty({steps + 1, batch, hidden}, opt),
          at::empty({steps, batch, width}, opt),      at::empty({steps, batch, width}, opt),
          at::empty({steps, batch, hidden}, opt),     at::empty({steps, batch, hidden}, opt),
          at::empty({steps, batch}, opt),             at::empty({steps, batch}, opt),
          at::empty({steps, batch}, opt),             at::empty({steps, batch}, opt)};
  s.hs[0].zero_();
  s.cs[0].zero_();
  if (!cell_norm) {
    s.c_hat.zero_();
    s.rstd_c.fill_(1);
  }
  return s;
}

void check_parameters(const at::Tensor& w_hh, const at::Tensor& gamma_x, const at::Tensor& gamma_h,
                      const at::Tensor& gamma_c, at::ScalarType dtype, int64_t hidden) {
  check(w_hh, "w_hh", dtype, {4 * hidden, hidden});
  check(gamma_x, "gamma_x", dtype, {4 * hidden});
  check(gamma_h, "gamma_h", dtype, {4 * hidden});
  check(gamma_c, "gamma_c", dtype, {hidden});
}

}  // namespace

// xw = x W_ih^T (time, batch, 4h), no bias. -> [h (time+1, batch, hidden) with h_0 = 0, saved...]
std::vector<at::Tensor> lnlstm_forward(const at::Tensor& xw, const at::Tensor& w_hh, const at::Tensor& gamma_x,
                                       const at::Tensor& gamma_h, const at::Tensor& bias, const at::Tensor& gamma_c,
                                       const at::Tensor& beta_c, double eps, bool cell_norm, bool onednn,
                                       bool centred) {
  TORCH_CHECK(xw.dim() == 3 && xw.size(2) % 4 == 0, "xw: (time, batch, 4 hidden)");
  const auto dtype = xw.scalar_type();
  const int64_t hidden = xw.size(2) / 4;
  check(xw, "xw", dtype, xw.sizes());
  check_parameters(w_hh, gamma_x, gamma_h, gamma_c, dtype, hidden);
  check(bias, "bias", dtype, {4 * hidden});
  check(beta_c, "beta_c", dtype, {hidden});
  Saved s = allocate(xw.size(0), xw.size(1), hidden, cell_norm, xw.options());
  gemm::Stopwatch watch(clocks);
  const at::Tensor u_t = w_hh.detach().t().contiguous();  // packed once: every step reads it in order
  watch.lap(gemm::kForwardProducts);
  AT_DISPATCH_FLOATING_TYPES(dtype, "lnlstm_forward", [&] {
    row_blocks::for_each(xw.size(1), [&](int64_t b0, int64_t b1) {
      forward_rows<scalar_t>(b0, b1, xw, u_t, gamma_x.data_ptr<scalar_t>(), gamma_h.data_ptr<scalar_t>(),
                             bias.data_ptr<scalar_t>(), gamma_c.data_ptr<scalar_t>(), beta_c.data_ptr<scalar_t>(),
                             eps, cell_norm, centred, onednn, s);
    });
  });
  return {s.hs, s.cs, s.z_hat, s.act, s.c_hat, s.k, s.mean_x, s.rstd_x, s.rstd_z, s.rstd_c};
}

// -> [grad xw, grad w_hh, grad gamma_x, grad gamma_h, grad bias, grad gamma_c, grad beta_c]
std::vector<at::Tensor> lnlstm_backward(const at::Tensor& grad_out, const at::Tensor& xw, const at::Tensor& w_hh,
                                        const at::Tensor& gamma_x, const at::Tensor& gamma_h,
                                        const at::Tensor& gamma_c, bool cell_norm, const std::vector<at::Tensor>& saved,
                                        bool onednn, bool centred) {
  TORCH_CHECK(saved.size() == 10, "saved: the ten tensors lnlstm_forward returned");
  const Saved s{saved[0], saved[1], saved[2], saved[3], saved[4], saved[5], saved[6], saved[7], saved[8], saved[9]};
  const at::Tensor go = grad_out.contiguous();
  const int64_t steps = s.z_hat.size(0), batch = s.z_hat.size(1), width = s.z_hat.size(2), hidden = width / 4;
  TORCH_CHECK(go.size(0) == batch && go.size(1) == steps && go.size(2) == hidden, "grad_out: (batch, time, hidden)");
  check(xw, "xw", go.scalar_type(), {steps, batch, width});
  check_parameters(w_hh, gamma_x, gamma_h, gamma_c, go.scalar_type(), hidden);
  const auto opt = go.options();
  at::Tensor grad_xw = at::empty({steps, batch, width}, opt), dz = at::empty({steps, batch, width}, opt);
  at::Tensor dh = at::zeros({batch, hidden}, opt);
  // Gain and bias gradients: one vector per block of rows, summed in row order (row_blocks::summed).
  const at::Tensor w = w_hh.detach();
  at::Tensor total;
  AT_DISPATCH_FLOATING_TYPES(go.scalar_type(), "lnlstm_backward", [&] {
    total = row_blocks::summed(batch, 3 * width + 2 * hidden, opt, [&](int64_t b0, int64_t b1, at::Tensor& block) {
      backward_rows<scalar_t>(b0, b1, go, xw, w, gamma_x.data_ptr<scalar_t>(), gamma_h.data_ptr<scalar_t>(),
                              gamma_c.data_ptr<scalar_t>(), cell_norm, centred, s, grad_xw, dz, dh, onednn,
                              block.data_ptr<scalar_t>());
    });
  });
  const std::vector<at::Tensor> grads = total.split_with_sizes({width, width, width, hidden, hidden});
  // dL/dU = sum_t dz_t^T h_{t-1}: one product over all steps, outside the recurrence.
  gemm::Stopwatch watch(clocks);
  at::Tensor grad_w_hh = gemm::product(dz.reshape({-1, width}).t(), s.hs.narrow(0, 0, steps).reshape({-1, hidden}),
                                       onednn);
  watch.lap(gemm::kBackwardProducts);
  return {grad_xw, grad_w_hh, grads[0], grads[1], grads[2], grads[3], grads[4]};
}

// xw = x W_ih^T for every time step at once, time-major: x (time, batch, input) -> (time, batch, 4 hidden).
// Time-major because each step reads its batch rows of xw (and the backward writes them): one
// contiguous block a step, where batch-major rows lay a whole sequence apart.
at::Tensor lnlstm_project(const at::Tensor& x, const at::Tensor& w_ih, bool onednn) {
  TORCH_CHECK(x.dim() == 3 && w_ih.dim() == 2 && x.size(2) == w_ih.size(1), "x: (time, batch, input), w_ih: (4 hidden, input)");
  gemm::Stopwatch watch(clocks);
  const at::Tensor xw = gemm::product(x.reshape({-1, x.size(2)}), w_ih.detach().t(), onednn);
  watch.lap(gemm::kInputProducts);
  return xw.view({x.size(0), x.size(1), w_ih.size(0)});
}

// -> [grad x (time, batch, input; undefined unless need_x), grad w_ih (undefined unless need_w)];
// x and grad_xw time-major, as lnlstm_project's
std::vector<at::Tensor> lnlstm_project_backward(const at::Tensor& grad_xw, const at::Tensor& x, const at::Tensor& w_ih,
                                                bool need_x, bool need_w, bool onednn) {
  gemm::Stopwatch watch(clocks);
  const at::Tensor g = grad_xw.reshape({-1, grad_xw.size(2)});
  at::Tensor grad_x, grad_w;
  if (need_x) grad_x = gemm::product(g, w_ih.detach(), onednn).view(x.sizes());
  if (need_w) grad_w = gemm::product(g.t(), x.detach().reshape({-1, x.size(2)}), onednn);
  watch.lap(gemm::kInputProducts);
  return {grad_x, grad_w};
}

// The cells' float tanh (rows.h) elementwise on a contiguous float32 tensor: exported so that its
// accuracy is tested against torch.tanh over the whole range.
at::Tensor cell_tanh(const at::Tensor& x) {
  check(x, "x", at::kFloat, x.sizes());
  at::Tensor y = at::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  chunks<float>(x.numel(), [&](int64_t j, int64_t n) { store(rows::tanh(load(in + j, n)), out + j, n); });
  return y;
}

// CPU seconds per phase since the last call (input products, forward products, forward cell,
// backward products, backward cell; summed over calls and threads); the clocks then run if ``on``.
std::vector<double> lnlstm_phases(bool on) { return clocks.read(on); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  namespace py = pybind11;
  m.def("forward", &lnlstm_forward, "in-cell LN-LSTM (RMSNorm: centred false) layer, forward", py::arg("xw"),
        py::arg("w_hh"), py::arg("gamma_x"), py::arg("gamma_h"), py::arg("bias"), py::arg("gamma_c"), py::arg("beta_c"),
        py::arg("eps"), py::arg("cell_norm"), py::arg("onednn") = false, py::arg("centred") = true);
  m.def("backward", &lnlstm_backward, "in-cell LN-LSTM (RMSNorm: centred false) layer, backward",
        py::arg("grad_out"), py::arg("xw"), py::arg("w_hh"), py::arg("gamma_x"), py::arg("gamma_h"), py::arg("gamma_c"),
        py::arg("cell_norm"), py::arg("saved"), py::arg("onednn") = false, py::arg("centred") = true);
  m.def("project", &lnlstm_project, "x W_ih^T over all time steps", py::arg("x"), py::arg("w_ih"),
        py::arg("onednn") = false);
  m.def("project_backward", &lnlstm_project_backward, "gradients of x W_ih^T", py::arg("grad_xw"), py::arg("x"),
        py::arg("w_ih"), py::arg("need_x"), py::arg("need_w"), py::arg("onednn") = false);
  m.attr("TILED_UP_TO") = gemm::kTiledUpTo;  // a step's products up to this many multiply-adds run tiled
  m.def("onednn_runs", &gemm::onednn_runs, "whether oneDNN's float32 matmul runs on this CPU");
  m.def("tanh", &cell_tanh, "the cells' float tanh, elementwise (float32)", py::arg("x"));
  m.def("phases", &lnlstm_phases, "CPU seconds per phase since the last call, then zero", py::arg("on") = false);
}
