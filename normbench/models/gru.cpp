// The in-cell LayerNorm-GRU layer as two CPU kernels, built as lnlstm.cpp is (see there why: on
// a CPU at these sizes an ATen call costs as much dispatch as arithmetic, so a step issues one
// matrix product and does the rest in a few passes of Vectorized<T> over each batch row), and the same
// layer with RMSNorm in place of each LayerNorm (``centred`` false: every mean is 0, and its terms drop out
// of the backward), as lnlstm.cpp has it.
//
// Same arithmetic as InCellLayer.step for a GRU (tested equal in float64), gates in nn.GRU's
// order r, u, n. The update gate is called u here because z is h_{t-1} U^T, as in lnlstm.cpp.
//
//   x_hat = LN(xw_t)   z_hat = LN(h_{t-1} U^T)          (each over all 3 hidden pre-activations)
//   wx = x_hat gx + bias_x   uh = z_hat gh + bias_h     (bias_x = beta_x + b_ih, bias_h = beta_h + b_hh)
//   r = sigmoid(wx_r + uh_r)   u = sigmoid(wx_u + uh_u)   n = tanh(wx_n + r uh_n)
//   h_t = (1 - u) n + u h_{t-1}
//
// Unlike the LSTM's, the two sides' biases cannot be one sum: the reset gate multiplies the
// h-side candidate term uh_n, its bias included (nn.GRU's b_hn). So dL/d(bias_x) and
// dL/d(bias_h) differ in the n gate, and so do the two norms' upstream gradients.
//
// Saved tensors are time-major, so every step reads and writes contiguous slices. RMSNorm has no shift: the
// caller passes bias_x = b_ih and bias_h = b_hh.

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

// One batch row, one step, forward. z holds h_{t-1} U^T and is overwritten with z_hat. Writes the
// gate activations a = (r, u, n), h_t, and the row's statistics.
template <typename T>
inline void row_forward(const T* __restrict__ xw, T* __restrict__ z, const T* __restrict__ gx,
                        const T* __restrict__ gh, const T* __restrict__ bias_x, const T* __restrict__ bias_h,
                        const T* __restrict__ h_prev, int64_t hidden, double eps, bool centred,
                        T* __restrict__ a, T* __restrict__ h, T* mean_x, T* rstd_x, T* rstd_z) {
  const int64_t width = 3 * hidden;
  T mean_z;
  *rstd_x = rows::row_stats(xw, width, eps, centred, mean_x);
  *rstd_z = rows::row_stats(z, width, eps, centred, &mean_z);
  const Vec<T> mx(*mean_x), rx(*rstd_x), mz(mean_z), rz(*rstd_z);
  // The three gates of hidden unit j sit at j, j + hidden, j + 2 hidden: one pass over the units.
  chunks<T>(hidden, [&](int64_t j, int64_t n) {
    Vec<T> wx[3], uh[3];
    for (int64_t gate = 0; gate < 3; ++gate) {
      const int64_t at = gate * hidden + j;
      const Vec<T> z_hat = (load(z + at, n) - mz) * rz;
      store(z_hat, z + at, n);
      wx[gate] = (load(xw + at, n) - mx) * rx * load(gx + at, n) + load(bias_x + at, n);
      uh[gate] = z_hat * load(gh + at, n) + load(bias_h + at, n);
    }
    const Vec<T> r = rows::sigmoid(wx[0] + uh[0]), u = rows::sigmoid(wx[1] + uh[1]);
    const Vec<T> cand = rows::tanh(wx[2] + r * uh[2]);
    store(r, a + j, n);
    store(u, a + hidden + j, n);
    store(cand, a + 2 * hidden + j, n);
    const Vec<T> hp = load(h_prev + j, n);
    store(cand + u * (hp - cand), h + j, n);  // (1 - u) n + u h_{t-1}
  });
}

// One batch row, one step, backward. dh: dL/dh_t from step t+1, replaced by the part of
// dL/dh_{t-1} that skips the matrix product (u dh); the caller adds dz U. Writes dL/dxw and dL/dz
// for the row and adds the row's share to the step's gain and bias gradients. da_x and da_h are
// scratch (3 hidden each): the pre-activation gradients of the x side and of the h side.
template <typename T>
inline void row_backward(const T* __restrict__ grad_out, T* __restrict__ dh, const T* __restrict__ a,
                         const T* __restrict__ h_prev, const T* __restrict__ xw, const T* __restrict__ z_hat,
                         const T* __restrict__ gx, const T* __restrict__ gh, const T* __restrict__ bias_h, T mean_x,
                         T rstd_x, T rstd_z, int64_t hidden, bool centred, T* __restrict__ da_x, T* __restrict__ da_h,
                         T* __restrict__ grad_xw, T* __restrict__ dz, T* __restrict__ step_gx, T* __restrict__ step_gh,
                         T* __restrict__ step_bx, T* __restrict__ step_bh) {
  const int64_t width = 3 * hidden;
  const Vec<T> one(T(1)), mx(mean_x), rx(rstd_x);
  // The gates' gradients, and the sums the two norms' backward needs
  Vec<T> sx(T(0)), sx_hat(T(0)), sz(T(0)), sz_hat(T(0));
  chunks<T>(hidden, [&](int64_t j, int64_t n) {
    const Vec<T> dhv = load(grad_out + j, n) + load(dh + j, n);
    const Vec<T> r = load(a + j, n), u = load(a + hidden + j, n), cand = load(a + 2 * hidden + j, n);
    const int64_t jn = 2 * hidden + j;
    const Vec<T> uh_n = load(z_hat + jn, n) * load(gh + jn, n) + load(bias_h + jn, n);  // recomputed, not saved
    const Vec<T> dn = dhv * (one - u) * (one - cand * cand);  // dL/d(wx_n + r uh_n)
    // r and u enter both sides alike; the candidate's h side is scaled by r.
    const Vec<T> dx[3] = {dn * uh_n * r * (one - r), dhv * (load(h_prev + j, n) - cand) * u * (one - u), dn};
    const Vec<T> dhs[3] = {dx[0], dx[1], dn * r};
    store(dhv * u, dh + j, n);
    for (int64_t gate = 0; gate < 3; ++gate) {
      const int64_t at = gate * hidden + j;
      store(dx[gate], da_x + at, n);
      store(dhs[gate], da_h + at, n);
      const Vec<T> dgx = keep(dx[gate] * load(gx + at, n), n), dgh = keep(dhs[gate] * load(gh + at, n), n);
      sx = sx + dgx;
      sx_hat = sx_hat + dgx * ((load(xw + at, n) - mx) * rx);
      sz = sz + dgh;
      sz_hat = sz_hat + dgh * load(z_hat + at, n);
    }
  });
  // RMSNorm's backward is LayerNorm's without the mean of the upstream gradient (the mean it did not subtract)
  const T no_mean(0);
  const Vec<T> mean_x_d(centred ? rows::sum_lanes(sx) / T(width) : no_mean);
  const Vec<T> mean_z_d(centred ? rows::sum_lanes(sz) / T(width) : no_mean);
  const Vec<T> mean_x_d_hat(rows::sum_lanes(sx_hat) / T(width)), mean_z_d_hat(rows::sum_lanes(sz_hat) / T(width));
  const Vec<T> rz(rstd_z);
  chunks<T>(width, [&](int64_t j, int64_t n) {
    const Vec<T> dax = load(da_x + j, n), dah = load(da_h + j, n);
    const Vec<T> x_hat = (load(xw + j, n) - mx) * rx, zh = load(z_hat + j, n);
    store(rx * (dax * load(gx + j, n) - mean_x_d - x_hat * mean_x_d_hat), grad_xw + j, n);
    store(rz * (dah * load(gh + j, n) - mean_z_d - zh * mean_z_d_hat), dz + j, n);
    rows::accumulate(dax * x_hat, step_gx + j, n);
    rows::accumulate(dah * zh, step_gh + j, n);
    rows::accumulate(dax, step_bx + j, n);
    rows::accumulate(dah, step_bh + j, n);
  });
}

struct Saved {  // what the backward needs, all (time, batch, ...); x_hat is recomputed from xw
  at::Tensor hs, z_hat, act, mean_x, rstd_x, rstd_z;
};

// Each block of batch rows runs every step on its own thread (row_blocks.h says why).
template <typename T>
void forward_rows(int64_t b0, int64_t b1, const at::Tensor& xw, const at::Tensor& u_t, const T* gx, const T* gh,
                  const T* bias_x, const T* bias_h, double eps, bool centred, Saved& s) {
  const int64_t batch = xw.size(0), steps = xw.size(1), width = xw.size(2), hidden = width / 3, rows = b1 - b0;
  const int64_t wide = batch * width, narrow = batch * hidden;
  const T* xw_p = xw.data_ptr<T>();
  T *h_p = s.hs.data_ptr<T>(), *z_p = s.z_hat.data_ptr<T>(), *a_p = s.act.data_ptr<T>();
  T *mx_p = s.mean_x.data_ptr<T>(), *rx_p = s.rstd_x.data_ptr<T>(), *rz_p = s.rstd_z.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    gemm::step_product<T>(z_p + t * wide + b0 * width, width, h_p + t * narrow + b0 * hidden, hidden, rows, u_t, false);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r = t * batch + b, row = t * narrow + b * hidden, wrow = t * wide + b * width;
      row_forward(xw_p + (b * steps + t) * width, z_p + wrow, gx, gh, bias_x, bias_h, h_p + row, hidden, eps,
                  centred, a_p + wrow, h_p + narrow + row, mx_p + r, rx_p + r, rz_p + r);
    }
  }
}

// Gradients of gamma_x, gamma_h, bias_x and bias_h (4 x width) for rows [b0, b1), summed per step
// first: shorter sums, less rounding.
template <typename T>
void backward_rows(int64_t b0, int64_t b1, const at::Tensor& grad_out, const at::Tensor& xw, const at::Tensor& w_hh,
                   const T* gx, const T* gh, const T* bias_h, bool centred, const Saved& s, at::Tensor& grad_xw,
                   at::Tensor& dz, at::Tensor& dh, T* totals) {
  const int64_t batch = grad_out.size(0), steps = grad_out.size(1), hidden = grad_out.size(2), width = 3 * hidden;
  const int64_t wide = batch * width, narrow = batch * hidden, rows = b1 - b0;
  const T *go = grad_out.data_ptr<T>(), *xw_p = xw.data_ptr<T>(), *h_p = s.hs.data_ptr<T>();
  const T *z_p = s.z_hat.data_ptr<T>(), *a_p = s.act.data_ptr<T>(), *mx_p = s.mean_x.data_ptr<T>();
  const T *rx_p = s.rstd_x.data_ptr<T>(), *rz_p = s.rstd_z.data_ptr<T>();
  T *gxw_p = grad_xw.data_ptr<T>(), *dz_p = dz.data_ptr<T>(), *dh_p = dh.data_ptr<T>();
  std::vector<T> da_x(width), da_h(width), step_v(4 * width);
  T *step_gx = step_v.data(), *step_gh = step_gx + width, *step_bx = step_gh + width, *step_bh = step_bx + width;
  for (int64_t t = steps - 1; t >= 0; --t) {
    std::fill(step_v.begin(), step_v.end(), T(0));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r = t * batch + b, row = t * narrow + b * hidden, wrow = t * wide + b * width;
      row_backward(go + (b * steps + t) * hidden, dh_p + b * hidden, a_p + wrow, h_p + row,
                   xw_p + (b * steps + t) * width, z_p + wrow, gx, gh, bias_h, mx_p[r], rx_p[r], rz_p[r], hidden,
                   centred, da_x.data(), da_h.data(), gxw_p + (b * steps + t) * width, dz_p + wrow, step_gx, step_gh,
                   step_bx, step_bh);
    }
    if (t > 0)  // dL/dh_{t-1} = u dh + dz U; h_0 = 0 needs none
      gemm::step_product<T>(dh_p + b0 * hidden, hidden, dz_p + t * wide + b0 * width, width, rows, w_hh, false, true);
    add_to(totals, step_v.data(), 4 * width);
  }
}

Saved allocate(int64_t steps, int64_t batch, int64_t hidden, const at::TensorOptions& opt) {
  const int64_t width = 3 * hidden;
  return Saved{at::zeros({steps + 1, batch, hidden}, opt), at::empty({steps, batch, width}, opt),
               at::empty({steps, batch, width}, opt),      at::empty({steps, batch}, opt),
               at::empty({steps, batch}, opt),             at::empty({steps, batch}, opt)};
}

void check_parameters(const at::Tensor& w_hh, const at::Tensor& gamma_x, const at::Tensor& gamma_h,
                      const at::Tensor& bias_h, at::ScalarType dtype, int64_t hidden) {
  check(w_hh, "w_hh", dtype, {3 * hidden, hidden});
  check(gamma_x, "gamma_x", dtype, {3 * hidden});
  check(gamma_h, "gamma_h", dtype, {3 * hidden});
  check(bias_h, "bias_h", dtype, {3 * hidden});
}

}  // namespace

// xw = x W_ih^T (batch, time, 3h), no bias. -> [h (time+1, batch, hidden) with h_0 = 0, saved...]
std::vector<at::Tensor> gru_forward(const at::Tensor& xw, const at::Tensor& w_hh, const at::Tensor& gamma_x,
                                    const at::Tensor& gamma_h, const at::Tensor& bias_x, const at::Tensor& bias_h,
                                    double eps, bool centred) {
  TORCH_CHECK(xw.dim() == 3 && xw.size(2) > 0 && xw.size(2) % 3 == 0, "xw: (batch, time, 3 hidden), got ",
              xw.sizes());
  const auto dtype = xw.scalar_type();
  const int64_t hidden = xw.size(2) / 3;
  check(xw, "xw", dtype, xw.sizes());
  check_parameters(w_hh, gamma_x, gamma_h, bias_h, dtype, hidden);
  check(bias_x, "bias_x", dtype, {3 * hidden});
  Saved s = allocate(xw.size(1), xw.size(0), hidden, xw.options());
  const at::Tensor u_t = w_hh.detach().t();
  AT_DISPATCH_FLOATING_TYPES(dtype, "gru_forward", [&] {
    row_blocks::for_each(xw.size(0), [&](int64_t b0, int64_t b1) {
      forward_rows<scalar_t>(b0, b1, xw, u_t, gamma_x.data_ptr<scalar_t>(), gamma_h.data_ptr<scalar_t>(),
                             bias_x.data_ptr<scalar_t>(), bias_h.data_ptr<scalar_t>(), eps, centred, s);
    });
  });
  return {s.hs, s.z_hat, s.act, s.mean_x, s.rstd_x, s.rstd_z};
}

// -> [grad xw, grad w_hh, grad gamma_x, grad gamma_h, grad bias_x, grad bias_h]
std::vector<at::Tensor> gru_backward(const at::Tensor& grad_out, const at::Tensor& xw, const at::Tensor& w_hh,
                                     const at::Tensor& gamma_x, const at::Tensor& gamma_h, const at::Tensor& bias_h,
                                     const std::vector<at::Tensor>& saved, bool centred) {
  TORCH_CHECK(saved.size() == 6, "saved: the six tensors gru_forward returned");
  const Saved s{saved[0], saved[1], saved[2], saved[3], saved[4], saved[5]};
  const at::Tensor go = grad_out.contiguous();
  const int64_t steps = s.z_hat.size(0), batch = s.z_hat.size(1), width = s.z_hat.size(2), hidden = width / 3;
  TORCH_CHECK(go.dim() == 3 && go.size(0) == batch && go.size(1) == steps && go.size(2) == hidden,
              "grad_out: (batch, time, hidden)");
  check(xw, "xw", go.scalar_type(), {batch, steps, width});
  check_parameters(w_hh, gamma_x, gamma_h, bias_h, go.scalar_type(), hidden);
  const auto opt = go.options();
  at::Tensor grad_xw = at::empty({batch, steps, width}, opt), dz = at::empty({steps, batch, width}, opt);
  at::Tensor dh = at::zeros({batch, hidden}, opt);
  // Gain and bias gradients: one vector per block of rows, summed in row order (row_blocks::summed).
  const at::Tensor w = w_hh.detach();
  at::Tensor total;
  AT_DISPATCH_FLOATING_TYPES(go.scalar_type(), "gru_backward", [&] {
    total = row_blocks::summed(batch, 4 * width, opt, [&](int64_t b0, int64_t b1, at::Tensor& block) {
      backward_rows<scalar_t>(b0, b1, go, xw, w, gamma_x.data_ptr<scalar_t>(), gamma_h.data_ptr<scalar_t>(),
                              bias_h.data_ptr<scalar_t>(), centred, s, grad_xw, dz, dh, block.data_ptr<scalar_t>());
    });
  });
  const std::vector<at::Tensor> grads = total.split(width);
  // dL/dU = sum_t dz_t^T h_{t-1}: one product over all steps, outside the recurrence.
  at::Tensor grad_w_hh = at::mm(dz.reshape({-1, width}).t(), s.hs.narrow(0, 0, steps).reshape({-1, hidden}));
  return {grad_xw, grad_w_hh, grads[0], grads[1], grads[2], grads[3]};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  namespace py = pybind11;
  m.def("forward", &gru_forward, "in-cell LN-GRU (RMSNorm: centred false) layer, forward", py::arg("xw"),
        py::arg("w_hh"), py::arg("gamma_x"), py::arg("gamma_h"), py::arg("bias_x"), py::arg("bias_h"), py::arg("eps"),
        py::arg("centred") = true);
  m.def("backward", &gru_backward, "in-cell LN-GRU (RMSNorm: centred false) layer, backward", py::arg("grad_out"),
        py::arg("xw"), py::arg("w_hh"), py::arg("gamma_x"), py::arg("gamma_h"), py::arg("bias_h"), py::arg("saved"),
        py::arg("centred") = true);
}
