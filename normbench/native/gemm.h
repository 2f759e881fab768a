// Matrix products of the recurrent kernels (lnlstm.cpp), and the clocks that say how much of a
// layer's time they take.
//
// Why oneDNN: torch's at::mm runs float32 on MKL, which on AMD CPUs takes a slower path than on
// Intel's (measured on a 2-core AMD EPYC with AVX-512: 30-60 GFLOPS at the kernels' sizes), while
// nn.LSTM runs on oneDNN's RNN primitive, whose products reach about three times that. oneDNN's
// matmul, which libtorch_cpu exports as at::native::mkldnn_matmul (its header is not installed),
// puts the kernel's products on the library nn.LSTM uses, so the ratio between the two no longer
// depends on how well MKL does on a given CPU. It is float32 only, and only where oneDNN runs
// float32 at full precision: the caller decides (lnlstm_cpu.onednn_products) and says so.
#pragma once

#include <ATen/cpu/vec/vec.h>
#include <torch/extension.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <ctime>

namespace at {
namespace native {
// result = beta * result + alpha * mat1 @ mat2 (ATen/native/mkldnn/Matmul.h)
TORCH_API void mkldnn_matmul(const Tensor& mat1, const Tensor& mat2, const Tensor& result, float beta, float alpha);
}  // namespace native
}  // namespace at

namespace gemm {

// Below this many multiply-adds a oneDNN matmul's fixed cost (about 5 us a call, its primitive
// looked up from the cache) outweighs its speed: a step's product at hidden 64, batch 32 (0.5 M)
// took 15 us on oneDNN and 11 on MKL, at hidden 128 (2.1 M) 30 against 43 (CPU time, AMD EPYC).
constexpr int64_t kOneDnnFrom = 1 << 20;

// out = a @ b; with onednn (float32 only) by oneDNN's matmul unless it is small, else at::mm (MKL or OpenBLAS)
inline void product(at::Tensor out, const at::Tensor& a, const at::Tensor& b, bool onednn) {
  if (onednn && a.scalar_type() == at::kFloat && a.size(0) * a.size(1) * b.size(1) >= kOneDnnFrom)
    at::native::mkldnn_matmul(a, b, out, 0.f, 1.f);
  else
    at::mm_out(out, a, b);
}

// A time step's product, out (m x n, rows ldo apart) = a (m x k, rows lda apart) @ b (k x n,
// contiguous), by register tiles of Vectorized<T> on raw pointers. Why: at these sizes (batch rows
// of one step, hidden 64-128) an at::mm or oneDNN call spends as long in dispatch, checks and its
// primitive's lookup as in arithmetic, 128 times a training step; a tile of kTileRows rows by
// kTileVecs registers keeps its sums in registers (16 of AVX-512's 32) across the whole of k, and
// every row of b it loads serves kTileRows rows of a. Each out element is one sum over k in order.
constexpr int kTileRows = 4, kTileVecs = 4;

template <typename T, int R, int V>
inline void tile(const T* __restrict__ a, int64_t lda, const T* __restrict__ b, int64_t k, int64_t n,
                 T* __restrict__ out, int64_t ldo, int64_t last, bool add) {  // last: lanes of register V-1 in use
  using Vec = at::vec::Vectorized<T>;
  constexpr int64_t w = Vec::size();
  Vec acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      acc[r][v] = !add ? Vec(T(0)) : Vec::loadu(out + r * ldo + v * w, v == V - 1 ? last : w);
  for (int64_t p = 0; p < k; ++p) {
    Vec bv[V];
    for (int v = 0; v < V; ++v)
      bv[v] = (v == V - 1 && last < w) ? Vec::loadu(b + p * n + v * w, last) : Vec::loadu(b + p * n + v * w);
    for (int r = 0; r < R; ++r) {
      const Vec av(a[r * lda + p]);
      for (int v = 0; v < V; ++v) acc[r][v] = at::vec::fmadd(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v].store(out + r * ldo + v * w, v == V - 1 ? last : w);
}

// Every row tile of a against one column slice of b (k x V registers wide)
template <typename T, int V>
inline void slice_rows(const T* a, int64_t lda, const T* b, int64_t m, int64_t k, int64_t n, T* out, int64_t ldo,
                       int64_t last, bool add) {
  int64_t i = 0;
  for (; i + kTileRows <= m; i += kTileRows) tile<T, kTileRows, V>(a + i * lda, lda, b, k, n, out + i * ldo, ldo, last, add);
  switch (m - i) {
    case 3: tile<T, 3, V>(a + i * lda, lda, b, k, n, out + i * ldo, ldo, last, add); break;
    case 2: tile<T, 2, V>(a + i * lda, lda, b, k, n, out + i * ldo, ldo, last, add); break;
    case 1: tile<T, 1, V>(a + i * lda, lda, b, k, n, out + i * ldo, ldo, last, add); break;
    default: break;
  }
}

// Column slices outer, row tiles inner: a slice of b is read from memory once and then from the
// cache for every row tile (rows outer read the whole of b once per row tile: 8 times a step at
// batch 32, which at hidden 256, b of 1 MiB, made the products wait on memory).
template <typename T>
inline void tiled(const T* a, int64_t lda, const T* b, int64_t m, int64_t k, int64_t n, T* out, int64_t ldo,
                  bool add) {
  constexpr int64_t w = at::vec::Vectorized<T>::size(), wide = kTileVecs * w;
  int64_t j = 0;
  for (; j + wide <= n; j += wide) slice_rows<T, kTileVecs>(a, lda, b + j, m, k, n, out + j, ldo, w, add);
  for (; j + w <= n; j += w) slice_rows<T, 1>(a, lda, b + j, m, k, n, out + j, ldo, w, add);
  if (j < n) slice_rows<T, 1>(a, lda, b + j, m, k, n, out + j, ldo, n - j, add);
}

// Up to this many multiply-adds a step's product runs tiled (above, a library's blocking for the
// caches pays): measured on a 2-core AMD EPYC with AVX-512, bench cells, one thread. 16M covers
// hidden 256 at batch 32 (8.4M a step): with column slices outer, the tiles took its step 1.07-1.14x
// nn.LSTM's against 1.21-1.23x on oneDNN, side by side on a busy machine.
constexpr int64_t kTiledUpTo = int64_t(1) << 24;

// out = a @ b (with add, out += a @ b) for one time step: out is m rows of n, ldo apart, a m rows of
// k, lda apart, b (k x n). Tiled where small and b is plain rows, else product() (at::addmm_) on
// views of the same memory. Raw pointers, because a step's slices as tensors (unbind, narrow) cost
// about a microsecond each, 3 per step: 0.2 ms of a training step at hidden 64.
template <typename T>
inline void step_product(T* out, int64_t ldo, const T* a, int64_t lda, int64_t m, const at::Tensor& b, bool onednn,
                         bool add = false) {
  const int64_t k = b.size(0), n = b.size(1);
  if (m * k * n <= kTiledUpTo && b.is_contiguous()) {
    tiled<T>(a, lda, b.data_ptr<T>(), m, k, n, out, ldo, add);
    return;
  }
  const at::Tensor out_t = at::from_blob(out, {m, n}, {ldo, 1}, b.options());
  const at::Tensor a_t = at::from_blob(const_cast<T*>(a), {m, k}, {lda, 1}, b.options());
  if (add)
    out_t.addmm_(a_t, b);
  else
    product(out_t, a_t, b, onednn);
}

// Whether oneDNN's float32 matmul runs here: torch refuses it on CPUs without AVX-512 (BW, VL, DQ)
// or AVX-NE-CONVERT, as its message says, rather than falling back.
inline bool onednn_runs() {
  try {
    const at::Tensor a = at::ones({2, 2}, at::kFloat), out = at::empty({2, 2}, at::kFloat);
    at::native::mkldnn_matmul(a, a, out, 0.f, 1.f);
    return out.eq(2).all().item<bool>();
  } catch (const c10::Error&) {
    return false;
  }
}

inline at::Tensor product(const at::Tensor& a, const at::Tensor& b, bool onednn) {
  at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options());
  product(out, a, b, onednn);
  return out;
}

// Where a layer's time goes, summed over calls until read, while switched on (off, a lap costs one
// branch): each thread's CPU time, which a busy machine's other processes inflate far less than the
// wall time; with several threads the phases add up to more than the wall time.
enum Phase { kInputProducts, kForwardProducts, kForwardCell, kBackwardProducts, kBackwardCell, kPhases };

class Clocks {
 public:
  bool on() const { return on_.load(std::memory_order_relaxed); }
  void add(const std::array<int64_t, kPhases>& ns) {
    for (int p = 0; p < kPhases; ++p) total_[p].fetch_add(ns[p], std::memory_order_relaxed);
  }
  // seconds per phase since the last read, and back to zero
  std::vector<double> read(bool keep_on) {
    on_.store(keep_on);
    std::vector<double> seconds(kPhases);
    for (int p = 0; p < kPhases; ++p) seconds[p] = total_[p].exchange(0) * 1e-9;
    return seconds;
  }

 private:
  std::atomic<bool> on_{false};
  std::array<std::atomic<int64_t>, kPhases> total_{};
};

// One thread's laps: lap(p) charges the time since the previous lap to phase p; the total goes to
// the shared clocks once, when the stopwatch ends.
class Stopwatch {
 public:
  explicit Stopwatch(Clocks& clocks) : clocks_(clocks), on_(clocks.on()), last_(on_ ? now() : 0) {}
  ~Stopwatch() {
    if (on_) clocks_.add(ns_);
  }
  void lap(Phase p) {
    if (!on_) return;
    const int64_t t = now();
    ns_[p] += t - last_;
    last_ = t;
  }

 private:
  static int64_t now() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
  }
  Clocks& clocks_;
  const bool on_;
  int64_t last_;
  std::array<int64_t, kPhases> ns_{};
};

}  // namespace gemm
