// What the recurrent kernels (lnlstm.cpp, gru.cpp) share whatever the cell: how a layer is spread
// over torch's threads, how per-thread sums are combined, and how inputs are checked.
//
// Rows of the batch never meet in the recurrence, so each thread of torch's pool runs every time
// step for its own block of rows: one fork per call, not one per step. Inside a block, at::mm and
// the ATen calls run single-threaded (nested parallelism is off), on contiguous slices. A pool
// thread does not inherit the caller's thread-local state (grad mode, inference mode, ...): each
// block installs the caller's.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <torch/extension.h>

#include <vector>

#include "rows.h"

namespace row_blocks {

constexpr int64_t kRowsPerThread = 8;  // below this a thread's matrix products are too small to pay

// f(b0, b1) for blocks [b0, b1) of the batch's rows, on torch's threads, without autograd.
template <typename F>
void for_each(int64_t batch, const F& f) {
  const at::ThreadLocalState caller;
  at::parallel_for(0, batch, kRowsPerThread, [&](int64_t b0, int64_t b1) {
    at::ThreadLocalStateGuard state(caller);
    at::NoGradGuard no_grad;
    f(b0, b1);
  });
}

// The sum over blocks of f(b0, b1, block_total), each block adding into its own zeroed vector of n:
// the blocks' vectors are summed in row order afterwards, so the result is the same for the same
// number of threads, whichever thread ends first.
template <typename F>
at::Tensor summed(int64_t batch, int64_t n, const at::TensorOptions& options, const F& f) {
  std::vector<at::Tensor> totals(batch);  // block b0's vector in slot b0
  for_each(batch, [&](int64_t b0, int64_t b1) {
    totals[b0] = at::zeros({n}, options);
    f(b0, b1, totals[b0]);
  });
  at::Tensor total = at::zeros({n}, options);
  for (const at::Tensor& block : totals)
    if (block.defined()) total += block;
  return total;
}

// total[0:n] += part[0:n]
template <typename T>
inline void add_to(T* __restrict__ total, const T* __restrict__ part, int64_t n) {
  rows::chunks<T>(n, [&](int64_t j, int64_t c) { rows::accumulate(rows::load(part + j, c), total + j, c); });
}

inline void check(const at::Tensor& t, const char* name, at::ScalarType dtype, at::IntArrayRef sizes) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == dtype && t.sizes() == sizes, name,
              ": expected a contiguous CPU tensor of the input's dtype and of size ", sizes, ", got ", t.sizes());
}

}  // namespace row_blocks
