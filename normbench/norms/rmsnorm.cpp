// RMSNorm (Zhang & Sennrich 2019) over the last dimension, for CPUs: y = x rstd w with
// rstd = 1 / sqrt(mean(x^2) + eps). Inputs of fp32, fp64, bf16 or fp16; bf16 and fp16 are loaded
// into fp32 registers (exactly), computed in fp32 and rounded once when stored, so their results are
// the fp32 kernel's on the widened inputs, rounded; rstd is kept in the compute type.
//
// Forward: two passes of ATen's Vectorized over each row (sum of squares, then the scaled product).
// Backward: two passes over each row (its sum, then dx and the row's share of dw). Summing the dw
// shares of 4 rows in registers (dw read and written once per 4 rows) measured slower at widths 256
// and 1024 on a busy 2-core EPYC, so each row adds its own. Rows are split into one contiguous block
// per torch thread; each block sums its own dw in the compute type and the blocks are added in row
// order, so the result does not depend on which thread ends first.
//
//   x_hat = x rstd   dx = rstd (dy w - x_hat mean(dy w x_hat))   dw = sum over rows of dy x_hat

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/extension.h>

#include <algorithm>
#include <vector>

#include "norm_blocks.h"
#include "rows.h"

namespace {

using norm_blocks::blocks_for;
using norm_blocks::check;
using norm_blocks::for_blocks;

using rows::chunks;
using rows::load;
using rows::load_wide;
using rows::store;
using rows::store_narrow;
using rows::Vec;


// Forward of rows [r0, r1): T is the storage type, A = opmath_type<T> the compute type.
template <typename T, typename A = at::opmath_type<T>>
void forward_rows(int64_t r0, int64_t r1, const T* x, const T* w, double eps, int64_t n, T* y, A* rstd) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    rstd[r] = rows::rms_rstd(xr, n, eps);
    const Vec<A> s(rstd[r]);
    if (w != nullptr)
      chunks<A>(n, [&](int64_t j, int64_t c) { store_narrow(load_wide(xr + j, c) * s * load_wide(w + j, c), yr + j, c); });
    else
      chunks<A>(n, [&](int64_t j, int64_t c) { store_narrow(load_wide(xr + j, c) * s, yr + j, c); });
  }
}

// Backward of rows [r0, r1); dw (n values of A, zeroed by the caller) gets these rows' share.
template <typename T, typename A = at::opmath_type<T>>
void backward_rows(int64_t r0, int64_t r1, const T* dy, const T* x, const T* w, const A* rstd, int64_t n, T* dx,
                   A* dw) {
  for (int64_t r = r0; r < r1; ++r) {
    const T *dyr = dy + r * n, *xr = x + r * n;
    T* dxr = dx + r * n;
    const Vec<A> s(rstd[r]);
    Vec<A> total(A(0));
    chunks<A>(n, [&](int64_t j, int64_t c) {
      const Vec<A> g = w != nullptr ? load_wide(dyr + j, c) * load_wide(w + j, c) : load_wide(dyr + j, c);
      total = total + g * load_wide(xr + j, c);  // short chunks load zeros past their end: x = 0 there
    });
    const Vec<A> mean(rows::sum_lanes(total) * rstd[r] / A(n));
    chunks<A>(n, [&](int64_t j, int64_t c) {
      const Vec<A> dyv = load_wide(dyr + j, c), x_hat = load_wide(xr + j, c) * s;
      const Vec<A> g = w != nullptr ? dyv * load_wide(w + j, c) : dyv;
      store_narrow(s * (g - x_hat * mean), dxr + j, c);
      if (dw != nullptr) rows::accumulate(dyv * x_hat, dw + j, c);
    });
  }
}

}  // namespace

// x (rows, n) -> [y (rows, n), rstd (rows, in the compute type: fp32 for bf16/fp16)]
std::vector<at::Tensor> rmsnorm_forward(const at::Tensor& x, const c10::optional<at::Tensor>& weight, double eps) {
  TORCH_CHECK(x.dim() == 2, "x: (rows, n)");
  check(x, "x", x.scalar_type());
  const int64_t n = x.size(1), count = x.size(0);
  if (weight.has_value()) {
    check(*weight, "weight", x.scalar_type());
    TORCH_CHECK(weight->numel() == n, "weight: expected ", n, " values, got ", weight->numel());
  }
  at::Tensor y = at::empty_like(x), rstd;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "rmsnorm_forward", [&] {
    using A = at::opmath_type<scalar_t>;
    rstd = at::empty({count}, x.options().dtype(c10::CppTypeToScalarType<A>::value));
    const scalar_t* w = weight.has_value() ? weight->data_ptr<scalar_t>() : nullptr;
    for_blocks(count, blocks_for(count), [&](int64_t, int64_t r0, int64_t r1) {
      forward_rows<scalar_t>(r0, r1, x.data_ptr<scalar_t>(), w, eps, n, y.data_ptr<scalar_t>(), rstd.data_ptr<A>());
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
  TORCH_CHECK(dy.sizes() == x.sizes() && rstd.numel() == x.size(0) && rstd.is_contiguous(),
              "grad_y and rstd: the forward's sizes");
  const int64_t n = x.size(1), count = x.size(0), blocks = blocks_for(count);
  at::Tensor dx = at::empty_like(x), dw;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "rmsnorm_backward", [&] {
    using A = at::opmath_type<scalar_t>;
    TORCH_CHECK(rstd.scalar_type() == c10::CppTypeToScalarType<A>::value, "rstd: the forward's compute type");
    const scalar_t* w = weight.has_value() ? weight->data_ptr<scalar_t>() : nullptr;
    // one row of dw per block, in the compute type
    at::Tensor partial = w != nullptr ? at::zeros({blocks, n}, rstd.options()) : at::Tensor();
    for_blocks(count, blocks, [&](int64_t b, int64_t r0, int64_t r1) {
      backward_rows<scalar_t>(r0, r1, dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), w, rstd.data_ptr<A>(), n,
                              dx.data_ptr<scalar_t>(), w != nullptr ? partial.data_ptr<A>() + b * n : nullptr);
    });
    if (w != nullptr) {
      at::Tensor total = partial[0].clone();
      for (int64_t b = 1; b < blocks; ++b) total += partial[b];  // in row order
      dw = total.to(x.scalar_type());
    }
  });
  return {dx, dw};
}

// y = rmsnorm(x, weight) over the last dimension with its backward attached, as a C++ autograd
// Function: a Python one cost about 50 us more a call than native LayerNorm's forward+backward, as
// much as the arithmetic of a (64, 256) input.
class RMSNormAutograd : public torch::autograd::Function<RMSNormAutograd> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const std::optional<at::Tensor>& weight, double eps) {
    const at::Tensor flat = x.reshape({-1, x.size(-1)}).contiguous();
    const at::Tensor w = weight.has_value() ? weight->contiguous() : at::Tensor();
    std::vector<at::Tensor> out = rmsnorm_forward(flat, w.defined() ? c10::optional<at::Tensor>(w) : c10::nullopt, eps);
    ctx->save_for_backward({flat, w, out[1]});
    ctx->saved_data["shape"] = x.sizes().vec();
    return out[0].view(x.sizes());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &flat = saved[0], &w = saved[1];
    std::vector<at::Tensor> out = rmsnorm_backward(grads[0].reshape(flat.sizes()), flat,
                                                   w.defined() ? c10::optional<at::Tensor>(w) : c10::nullopt, saved[2]);
    return {out[0].view(ctx->saved_data["shape"].toIntVector()), out[1], at::Tensor()};
  }
};

at::Tensor rmsnorm(const at::Tensor& x, const c10::optional<at::Tensor>& weight, double eps) {
  return RMSNormAutograd::apply(x, std::optional<at::Tensor>(weight), eps);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("rmsnorm", &rmsnorm, "RMSNorm over the last dimension, with its backward for autograd");
}
