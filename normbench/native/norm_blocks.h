// What the compiled norm kernels (norms/rmsnorm.cpp, norms/elementwise.cpp) share: how a (rows, width)
// input is split over torch's threads, and how their tensors are checked.
#pragma once

#include <ATen/Parallel.h>
#include <torch/extension.h>

#include <algorithm>

namespace norm_blocks {

constexpr int64_t kRowsPerThread = 64;  // below this a thread's block is not worth a fork

inline void check(const at::Tensor& t, const char* name, at::ScalarType dtype) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == dtype, name,
              ": expected a contiguous CPU tensor of the input's dtype");
}

// f(b, r0, r1) for each of `blocks` contiguous blocks of [0, count), over torch's threads
template <typename F>
void for_blocks(int64_t count, int64_t blocks, const F& f) {
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) f(b, count * b / blocks, count * (b + 1) / blocks);
  });
}

inline int64_t blocks_for(int64_t count) {
  return std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), count / kRowsPerThread));
}

}  // namespace norm_blocks
