// RMSNorm (Zhang & Sennrich 2019) over the last dimension, for CPUs: y = x rstd w with
// rstd = 1 / sqrt(mean(x^2) + eps). Forward: two passes of ATen's Vectorized<T> over each row
// (sum of squares, then the scaled product); backward: two passes (one sum, then dx and the
// row's share of dw). Rows are split over torch's threads; each block of rows sums its own dw,
// and the blocks are added in row order, so the result does not depend on which thread ends first.
//
//   x_hat = x rstd   dx = rstd (dy w - x_hat mean(dy w x_hat))   dw = sum over rows of dy x_hat

#include <torch/extension.h>

#include <vector>

#include "rows.h"

namespace {

using rows::chunks;
using rows::load;
using rows::store;
using rows::Vec;

constexpr int64_t kRowsPerBlock = 64;

template <typename T>
void forward_rows(int64_t r0, int64_t r1, const T* x, const T* w, double eps, int64_t n, T* y, T* rstd) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    rstd[r] = rows::rms_rstd(xr, n, eps);
    const Vec<T> s(rstd[r]);
    if (w != nullptr)
      chunks<T>(n, [&](int64_t j, int64_t c) { store(load(xr + j, c) * s * load(w + j, c), yr + j, c); });
    else
      chunks<T>(n, [&](int64_t j, int64_t c) { store(load(xr + j, c) * s, yr + j, c); });
  }
}

template <typename T>
void backward_rows(int64_t r0, int64_t r1, const T* dy, const T* x, const T* w, const T* rstd, int64_t n, T* dx,
                   T* dw) {
  for (int64_t r = r0; r < r1; ++r) {
    const T *dyr = dy + r * n, *xr = x + r * n;
    T* dxr = dx + r * n;
    const Vec<T> s(rstd[r]);
    Vec<T> total(T(0));
    chunks<T>(n, [&](int64_t j, int64_t c) {
      const Vec<T> g = w != nullptr ? load(dyr + j, c) * load(w + j, c) : load(dyr + j, c);
      total = total + g * load(xr + j, c);  // short chunks load zeros past their end: x = 0 there
    });
    const Vec<T> mean(rows::sum_lanes(total) * rstd[r] / T(n));
    chunks<T>(n, [&](int64_t j, int64_t c) {
      const Vec<T> dyv = load(dyr + j, c), x_hat = load(xr + j, c) * s;
      const Vec<T> g = w != nullptr ? dyv * load(w + j, c) : dyv;
      store(s * (g - x_hat * mean), dxr + j, c);
      if (dw != nullptr) rows::accumulate(dyv * x_hat, dw + j, c);
    });
  }
}

void check(const at::Tensor& t, const char* name, at::ScalarType dtype) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == dtype, name,
              ": expected a contiguous CPU tensor of the input's dtype");
}

}  // namespace

// x (rows, n) -> [y (rows, n), rstd (rows)]
std::vector<at::Tensor> rmsnorm_forward(const at::Tensor& x, const c10::optional<at::Tensor>& weight, double eps) {
  TORCH_CHECK(x.dim() == 2, "x: (rows, n)");
  check(x, "x", x.scalar_type());
  const int64_t n = x.size(1);
  if (weight.has_value()) {
    check(*weight, "weight", x.scalar_type());
    TORCH_CHECK(weight->numel() == n, "weight: expected ", n, " values, got ", weight->numel());
  }
  at::Tensor y = at::empty_like(x), rstd = at::empty({x.size(0)}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "rmsnorm_forward", [&] {
    const scalar_t* w = weight.has_value() ? weight->data_ptr<scalar_t>() : nullptr;
    at::parallel_for(0, x.size(0), kRowsPerBlock, [&](int64_t r0, int64_t r1) {
      forward_rows<scalar_t>(r0, r1, x.data_ptr<scalar_t>(), w, eps, n, y.data_ptr<scalar_t>(),
                             rstd.data_ptr<scalar_t>());
    });
  });
  return {y, rstd};
}

// -> [dx (rows, n), dw (n) or undefined without a weight]
std::vector<at::Tensor> rmsnorm_backward(const at::Tensor& grad_y, const at::Tensor& x,
                                         const c10::optional<at::Tensor>& weight, const at::Tensor& rstd) {
  const at::Tensor dy = grad_y.contiguous();
  check(x, "x", x.scalar_type());
  check(dy, "grad_y", x.scalar_type());
  TORCH_CHECK(dy.sizes() == x.sizes() && rstd.numel() == x.size(0), "grad_y and rstd: the forward's sizes");
  const int64_t n = x.size(1), count = x.size(0);
  at::Tensor dx = at::empty_like(x), dw;
  std::vector<at::Tensor> partial(count);  // one dw per block of rows, in the slot of its first row
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "rmsnorm_backward", [&] {
    const scalar_t* w = weight.has_value() ? weight->data_ptr<scalar_t>() : nullptr;
    at::parallel_for(0, count, kRowsPerBlock, [&](int64_t r0, int64_t r1) {
      scalar_t* block_dw = nullptr;
      if (w != nullptr) {
        partial[r0] = at::zeros({n}, x.options());
        block_dw = partial[r0].data_ptr<scalar_t>();
      }
      backward_rows<scalar_t>(r0, r1, dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), w,
                              rstd.data_ptr<scalar_t>(), n, dx.data_ptr<scalar_t>(), block_dw);
    });
  });
  if (weight.has_value()) {
    dw = at::zeros({n}, x.options());
    for (const at::Tensor& block : partial)
      if (block.defined()) dw += block;
  }
  return {dx, dw};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &rmsnorm_forward, "RMSNorm over the last dimension, forward");
  m.def("backward", &rmsnorm_backward, "RMSNorm over the last dimension, backward");
}
