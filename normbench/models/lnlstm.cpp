// The in-cell LayerNorm-LSTM layer (Ba et al. 2016, suppl. eqs. 20-22) as two CPU kernels.
//
// Same arithmetic as InCellLayer's autograd loop (tested equal in float64). Per time step the
// forward issues one matrix product (at::mm, MKL) and two vectorized ATen calls (sigmoid, tanh);
// everything else (both input norms, biases, the cell update, the cell norm) is one pass over
// each batch row. The backward issues one matrix product per step. On a CPU at these sizes the
// cost of a step is the number of ops it issues, which is why nn.LSTM (oneDNN) is fast and a
// Python loop of separate norm calls is not.
//
//   x_hat = LN(xw_t)   z_hat = LN(h_{t-1} U^T)   a_t = x_hat gx + z_hat gh + bias
//       (bias = beta_x + beta_h + b_ih + b_hh: four additive constants, one sum)
//   i, f, o = sigmoid(a_t)   g = tanh(a_t) = 2 sigmoid(2 a_t) - 1   c_t = f c_{t-1} + i g
//   c_hat = LN(c_t)   k_t = tanh(c_hat gc + bc)   h_t = o k_t
//
// Saved tensors are time-major, so every step reads and writes contiguous slices.

#include <ATen/ThreadLocalState.h>
#include <torch/extension.h>

#include <cmath>
#include <vector>

namespace {

// Every inner loop is a function of __restrict__ pointers, so that the compiler vectorizes it.

// Mean, then the centred sum of squares, as torch's layer_norm computes them; returns rstd.
template <typename T>
inline T row_statistics(const T* __restrict__ x, int64_t n, double eps, T* mean_out) {
  T mean = 0;
#pragma omp simd reduction(+ : mean)
  for (int64_t j = 0; j < n; ++j) mean += x[j];
  mean /= T(n);
  T var = 0;
#pragma omp simd reduction(+ : var)
  for (int64_t j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
  *mean_out = mean;
  return T(1) / std::sqrt(var / T(n) + T(eps));
}

template <typename T>
inline void standardize(const T* __restrict__ x, T mean, T rstd, int64_t n, T* __restrict__ x_hat) {
  for (int64_t j = 0; j < n; ++j) x_hat[j] = (x[j] - mean) * rstd;
}

template <typename T>
inline void standardize_in_place(T* __restrict__ x, T mean, T rstd, int64_t n) {
  for (int64_t j = 0; j < n; ++j) x[j] = (x[j] - mean) * rstd;
}

// dx for y = x_hat gamma + beta, given dy, x_hat and rstd; also adds dy x_hat to grad_gamma.
template <typename T>
inline void standardize_backward(const T* __restrict__ dy, const T* __restrict__ x_hat,
                                 const T* __restrict__ gamma, T rstd, int64_t n, T* __restrict__ dx,
                                 T* __restrict__ grad_gamma) {
  T sum_d = 0, sum_d_xhat = 0;
#pragma omp simd reduction(+ : sum_d, sum_d_xhat)
  for (int64_t j = 0; j < n; ++j) {
    sum_d += dy[j] * gamma[j];
    sum_d_xhat += dy[j] * gamma[j] * x_hat[j];
  }
  const T mean_d = sum_d / T(n), mean_d_xhat = sum_d_xhat / T(n);
  for (int64_t j = 0; j < n; ++j) {
    dx[j] = rstd * (dy[j] * gamma[j] - mean_d - x_hat[j] * mean_d_xhat);
    grad_gamma[j] += dy[j] * x_hat[j];
  }
}

template <typename T>
inline void add_to(T* __restrict__ total, const T* __restrict__ part, int64_t n) {
  for (int64_t j = 0; j < n; ++j) total[j] += part[j];
}

// a = x_hat gx + z_hat gh + bias, with the g slot doubled for tanh(x) = 2 sigmoid(2x) - 1.
template <typename T>
inline void preactivation(const T* __restrict__ xw, T mean_x, T rstd_x, const T* __restrict__ gx,
                          const T* __restrict__ z_hat, const T* __restrict__ gh, const T* __restrict__ bias,
                          const T* __restrict__ scale, int64_t n, T* __restrict__ a) {
  for (int64_t j = 0; j < n; ++j) a[j] = ((xw[j] - mean_x) * rstd_x * gx[j] + z_hat[j] * gh[j] + bias[j]) * scale[j];
}

// From the four sigmoids: g = 2 sigmoid(2 a_g) - 1 in place, then c_t = f c_{t-1} + i g.
template <typename T>
inline void cell_update(const T* __restrict__ i, const T* __restrict__ f, T* __restrict__ g,
                        const T* __restrict__ c_prev, int64_t n, T* __restrict__ c) {
  for (int64_t j = 0; j < n; ++j) {
    g[j] = T(2) * g[j] - T(1);
    c[j] = f[j] * c_prev[j] + i[j] * g[j];
  }
}

template <typename T>
inline void affine(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta, int64_t n,
                   T* __restrict__ y) {
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] * gamma[j] + beta[j];
}

template <typename T>
inline void product(const T* __restrict__ x, const T* __restrict__ y, int64_t n, T* __restrict__ out) {
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] * y[j];
}

// h = o k: da_o and dm = dL/d(tanh's input), given dL/dh = grad_out + dh from step t+1.
template <typename T>
inline void output_backward(const T* __restrict__ grad_out, const T* __restrict__ dh_next,
                            const T* __restrict__ k, const T* __restrict__ o, int64_t n, T* __restrict__ da_o,
                            T* __restrict__ dm) {
  for (int64_t j = 0; j < n; ++j) {
    const T dh = grad_out[j] + dh_next[j];
    da_o[j] = dh * k[j] * o[j] * (T(1) - o[j]);
    dm[j] = dh * o[j] * (T(1) - k[j] * k[j]);
  }
}

// c_t = f c_{t-1} + i g: da for i, f, g and dc_{t-1} (over dc_next, in place).
template <typename T>
inline void cell_backward(const T* __restrict__ dc, const T* __restrict__ i, const T* __restrict__ f,
                          const T* __restrict__ g, const T* __restrict__ c_prev, int64_t n, T* __restrict__ da_i,
                          T* __restrict__ da_f, T* __restrict__ da_g, T* __restrict__ dc_next) {
  for (int64_t j = 0; j < n; ++j) {
    da_i[j] = dc[j] * g[j] * i[j] * (T(1) - i[j]);
    da_f[j] = dc[j] * c_prev[j] * f[j] * (T(1) - f[j]);
    da_g[j] = dc[j] * i[j] * (T(1) - g[j] * g[j]);
    dc_next[j] = dc[j] * f[j];
  }
}

template <typename T>
inline void sum_of(const T* __restrict__ x, const T* __restrict__ y, int64_t n, T* __restrict__ out) {
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] + y[j];
}

struct Saved {  // what the backward needs, all (time, batch, ...); x_hat is recomputed from xw
  at::Tensor hs, cs, z_hat, act, c_hat, k, mean_x, rstd_x, rstd_z, rstd_c;
};

// Rows of the batch never meet in the recurrence, so each thread of torch's pool runs every time
// step for its own block of rows: one fork per call, not one per step. Inside the block, at::mm
// and the ATen calls run single-threaded (nested parallelism is off), on contiguous slices. A pool
// thread does not inherit the caller's thread-local state (grad mode, inference mode, ...): each
// block installs the caller's.
constexpr int64_t kRowsPerThread = 8;  // below this a thread's matrix products are too small to pay

std::vector<at::Tensor> steps_of(const at::Tensor& t, int64_t b0, int64_t rows) {
  return t.narrow(1, b0, rows).unbind(0);  // (time, batch, n) -> per step (rows, n), contiguous
}

template <typename T>
void forward_rows(int64_t b0, int64_t b1, const at::Tensor& xw, const at::Tensor& u_t, const T* gx, const T* gh,
                  const T* bias, const T* gc, const T* bc, double eps, bool cell_norm, Saved& s) {
  const int64_t batch = xw.size(0), steps = xw.size(1), width = xw.size(2), hidden = width / 4, rows = b1 - b0;
  const int64_t wide = batch * width, narrow = batch * hidden;
  std::vector<at::Tensor> h_steps = steps_of(s.hs, b0, rows), z_steps = steps_of(s.z_hat, b0, rows);
  std::vector<at::Tensor> a_steps = steps_of(s.act, b0, rows), k_steps = steps_of(s.k, b0, rows);
  std::vector<T> scale(width, T(1));
  std::fill(scale.begin() + 2 * hidden, scale.begin() + 3 * hidden, T(2));
  const T* xw_p = xw.data_ptr<T>();
  T *h_p = s.hs.data_ptr<T>(), *c_p = s.cs.data_ptr<T>(), *z_p = s.z_hat.data_ptr<T>(), *a_p = s.act.data_ptr<T>();
  T *c_hat_p = s.c_hat.data_ptr<T>(), *k_p = s.k.data_ptr<T>(), *mx_p = s.mean_x.data_ptr<T>();
  T *rx_p = s.rstd_x.data_ptr<T>(), *rz_p = s.rstd_z.data_ptr<T>(), *rc_p = s.rstd_c.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    at::mm_out(z_steps[t], h_steps[t], u_t);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r = t * batch + b;
      T *z = z_p + t * wide + b * width, mean_z;
      const T* xw_row = xw_p + (b * steps + t) * width;
      rx_p[r] = row_statistics(xw_row, width, eps, mx_p + r);
      rz_p[r] = row_statistics(z, width, eps, &mean_z);
      standardize_in_place(z, mean_z, rz_p[r], width);
      preactivation(xw_row, mx_p[r], rx_p[r], gx, z, gh, bias, scale.data(), width, a_p + t * wide + b * width);
    }
    at::sigmoid_(a_steps[t]);  // ATen's vectorized kernel, all four gates in one call
    for (int64_t b = b0; b < b1; ++b) {
      T* a = a_p + t * wide + b * width;
      const int64_t row = t * narrow + b * hidden;
      T *c = c_p + narrow + row, *m = k_p + row;
      cell_update(a, a + hidden, a + 2 * hidden, c_p + row, hidden, c);
      if (cell_norm) {
        T mean_c;
        rc_p[t * batch + b] = row_statistics(c, hidden, eps, &mean_c);
        standardize(c, mean_c, rc_p[t * batch + b], hidden, c_hat_p + row);
        affine(c_hat_p + row, gc, bc, hidden, m);
      } else {
        std::copy(c, c + hidden, m);
      }
    }
    at::tanh_(k_steps[t]);
    for (int64_t b = b0; b < b1; ++b)
      product(a_p + t * wide + b * width + 3 * hidden, k_p + t * narrow + b * hidden, hidden,
              h_p + narrow + t * narrow + b * hidden);
  }
}

// Gradients of gamma_x, gamma_h, the bias (3 x width), gamma_c and beta_c (2 x hidden) for rows
// [b0, b1), summed per step first: shorter sums, less rounding.
template <typename T>
void backward_rows(int64_t b0, int64_t b1, const at::Tensor& grad_out, const at::Tensor& xw, const at::Tensor& w_hh,
                   const T* gx, const T* gh, const T* gc, bool cell_norm, const Saved& s, at::Tensor& grad_xw,
                   at::Tensor& dz, at::Tensor& dh, T* totals) {
  const int64_t batch = grad_out.size(0), steps = grad_out.size(1), hidden = grad_out.size(2), width = 4 * hidden;
  const int64_t wide = batch * width, narrow = batch * hidden, rows = b1 - b0;
  std::vector<at::Tensor> dz_steps = steps_of(dz, b0, rows);
  at::Tensor dh_rows = dh.narrow(0, b0, rows);
  const T *go = grad_out.data_ptr<T>(), *xw_p = xw.data_ptr<T>();
  const T *c_p = s.cs.data_ptr<T>(), *z_p = s.z_hat.data_ptr<T>(), *a_p = s.act.data_ptr<T>();
  const T *c_hat_p = s.c_hat.data_ptr<T>(), *k_p = s.k.data_ptr<T>(), *mx_p = s.mean_x.data_ptr<T>();
  const T *rx_p = s.rstd_x.data_ptr<T>(), *rz_p = s.rstd_z.data_ptr<T>(), *rc_p = s.rstd_c.data_ptr<T>();
  T *gxw_p = grad_xw.data_ptr<T>(), *dz_p = dz.data_ptr<T>(), *dh_p = dh.data_ptr<T>();
  std::vector<T> dc_next_v(rows * hidden, T(0)), dc_v(hidden), dm_v(hidden), da_v(width), x_hat_v(width);
  T *dc = dc_v.data(), *dm = dm_v.data(), *da = da_v.data(), *x_hat = x_hat_v.data();
  const int64_t n_totals = 3 * width + 2 * hidden;
  std::vector<T> step_v(n_totals);
  T *step_gx = step_v.data(), *step_gh = step_gx + width, *step_bias = step_gh + width;
  T *step_gc = step_bias + width, *step_bc = step_gc + hidden;
  for (int64_t t = steps - 1; t >= 0; --t) {
    std::fill(step_v.begin(), step_v.end(), T(0));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r = t * batch + b, row = t * narrow + b * hidden, wrow = t * wide + b * width;
      const T* a = a_p + wrow;
      T* dcn = dc_next_v.data() + (b - b0) * hidden;
      output_backward(go + (b * steps + t) * hidden, dh_p + b * hidden, k_p + row, a + 3 * hidden, hidden,
                      da + 3 * hidden, dm);
      if (cell_norm) {
        standardize_backward(dm, c_hat_p + row, gc, rc_p[r], hidden, dc, step_gc);
        add_to(step_bc, dm, hidden);
        add_to(dc, dcn, hidden);
      } else {
        sum_of(dm, dcn, hidden, dc);
      }
      cell_backward(dc, a, a + hidden, a + 2 * hidden, c_p + row, hidden, da, da + hidden, da + 2 * hidden, dcn);
      const T* xw_row = xw_p + (b * steps + t) * width;
      standardize(xw_row, mx_p[r], rx_p[r], width, x_hat);
      standardize_backward(da, x_hat, gx, rx_p[r], width, gxw_p + (b * steps + t) * width, step_gx);
      standardize_backward(da, z_p + wrow, gh, rz_p[r], width, dz_p + wrow, step_gh);
      add_to(step_bias, da, width);
    }
    at::mm_out(dh_rows, dz_steps[t], w_hh);
    add_to(totals, step_v.data(), n_totals);
  }
}

Saved allocate(int64_t steps, int64_t batch, int64_t hidden, const at::TensorOptions& opt) {
  const int64_t width = 4 * hidden;
  return Saved{at::zeros({steps + 1, batch, hidden}, opt), at::zeros({steps + 1, batch, hidden}, opt),
               at::empty({steps, batch, width}, opt),      at::empty({steps, batch, width}, opt),
               at::zeros({steps, batch, hidden}, opt),     at::empty({steps, batch, hidden}, opt),
               at::empty({steps, batch}, opt),             at::empty({steps, batch}, opt),
               at::empty({steps, batch}, opt),             at::ones({steps, batch}, opt)};
}

void check(const at::Tensor& t, const char* name, at::ScalarType dtype, at::IntArrayRef sizes) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == dtype && t.sizes() == sizes, name,
              ": expected a contiguous CPU tensor of the input's dtype and of size ", sizes, ", got ", t.sizes());
}

void check_parameters(const at::Tensor& w_hh, const at::Tensor& gamma_x, const at::Tensor& gamma_h,
                      const at::Tensor& gamma_c, at::ScalarType dtype, int64_t hidden) {
  check(w_hh, "w_hh", dtype, {4 * hidden, hidden});
  check(gamma_x, "gamma_x", dtype, {4 * hidden});
  check(gamma_h, "gamma_h", dtype, {4 * hidden});
  check(gamma_c, "gamma_c", dtype, {hidden});
}

}  // namespace

// xw = x W_ih^T (batch, time, 4h), no bias. -> [h (time+1, batch, hidden) with h_0 = 0, saved...]
std::vector<at::Tensor> lnlstm_forward(const at::Tensor& xw, const at::Tensor& w_hh, const at::Tensor& gamma_x,
                                       const at::Tensor& gamma_h, const at::Tensor& bias, const at::Tensor& gamma_c,
                                       const at::Tensor& beta_c, double eps, bool cell_norm) {
  TORCH_CHECK(xw.dim() == 3 && xw.size(2) % 4 == 0, "xw: (batch, time, 4 hidden)");
  const auto dtype = xw.scalar_type();
  const int64_t hidden = xw.size(2) / 4;
  check(xw, "xw", dtype, xw.sizes());
  check_parameters(w_hh, gamma_x, gamma_h, gamma_c, dtype, hidden);
  check(bias, "bias", dtype, {4 * hidden});
  check(beta_c, "beta_c", dtype, {hidden});
  Saved s = allocate(xw.size(1), xw.size(0), hidden, xw.options());
  const at::Tensor u_t = w_hh.detach().t();
  const at::ThreadLocalState caller;
  AT_DISPATCH_FLOATING_TYPES(dtype, "lnlstm_forward", [&] {
    at::parallel_for(0, xw.size(0), kRowsPerThread, [&](int64_t b0, int64_t b1) {
      at::ThreadLocalStateGuard state(caller);
      at::NoGradGuard no_grad;
      forward_rows<scalar_t>(b0, b1, xw, u_t, gamma_x.data_ptr<scalar_t>(), gamma_h.data_ptr<scalar_t>(),
                             bias.data_ptr<scalar_t>(), gamma_c.data_ptr<scalar_t>(), beta_c.data_ptr<scalar_t>(),
                             eps, cell_norm, s);
    });
  });
  return {s.hs, s.cs, s.z_hat, s.act, s.c_hat, s.k, s.mean_x, s.rstd_x, s.rstd_z, s.rstd_c};
}

// -> [grad xw, grad w_hh, grad gamma_x, grad gamma_h, grad bias, grad gamma_c, grad beta_c]
std::vector<at::Tensor> lnlstm_backward(const at::Tensor& grad_out, const at::Tensor& xw, const at::Tensor& w_hh,
                                        const at::Tensor& gamma_x, const at::Tensor& gamma_h,
                                        const at::Tensor& gamma_c, bool cell_norm, const std::vector<at::Tensor>& saved) {
  TORCH_CHECK(saved.size() == 10, "saved: the ten tensors lnlstm_forward returned");
  const Saved s{saved[0], saved[1], saved[2], saved[3], saved[4], saved[5], saved[6], saved[7], saved[8], saved[9]};
  const at::Tensor go = grad_out.contiguous();
  const int64_t steps = s.z_hat.size(0), batch = s.z_hat.size(1), width = s.z_hat.size(2), hidden = width / 4;
  TORCH_CHECK(go.size(0) == batch && go.size(1) == steps && go.size(2) == hidden, "grad_out: (batch, time, hidden)");
  check(xw, "xw", go.scalar_type(), {batch, steps, width});
  check_parameters(w_hh, gamma_x, gamma_h, gamma_c, go.scalar_type(), hidden);
  const auto opt = go.options();
  at::Tensor grad_xw = at::empty({batch, steps, width}, opt), dz = at::empty({steps, batch, width}, opt);
  at::Tensor dh = at::zeros({batch, hidden}, opt);
  // Gain and bias gradients: one vector per block of rows, in the slot of the block's first row,
  // summed in row order afterwards: the same result for the same number of threads, whichever
  // thread ends first.
  std::vector<at::Tensor> totals(batch);
  const at::Tensor w = w_hh.detach();
  const at::ThreadLocalState caller;
  AT_DISPATCH_FLOATING_TYPES(go.scalar_type(), "lnlstm_backward", [&] {
    at::parallel_for(0, batch, kRowsPerThread, [&](int64_t b0, int64_t b1) {
      at::ThreadLocalStateGuard state(caller);
      at::NoGradGuard no_grad;
      totals[b0] = at::zeros({3 * width + 2 * hidden}, opt);
      backward_rows<scalar_t>(b0, b1, go, xw, w, gamma_x.data_ptr<scalar_t>(), gamma_h.data_ptr<scalar_t>(),
                              gamma_c.data_ptr<scalar_t>(), cell_norm, s, grad_xw, dz, dh,
                              totals[b0].data_ptr<scalar_t>());
    });
  });
  at::Tensor total = at::zeros({3 * width + 2 * hidden}, opt);
  for (const at::Tensor& block : totals)
    if (block.defined()) total += block;
  const std::vector<at::Tensor> grads = total.split_with_sizes({width, width, width, hidden, hidden});
  // dL/dU = sum_t dz_t^T h_{t-1}: one product over all steps, outside the recurrence.
  at::Tensor grad_w_hh = at::mm(dz.reshape({-1, width}).t(), s.hs.narrow(0, 0, steps).reshape({-1, hidden}));
  return {grad_xw, grad_w_hh, grads[0], grads[1], grads[2], grads[3], grads[4]};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &lnlstm_forward, "in-cell LN-LSTM layer, forward");
  m.def("backward", &lnlstm_backward, "in-cell LN-LSTM layer, backward");
}
