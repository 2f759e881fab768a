// Row-wise building blocks of the CPU kernels (lnlstm.cpp, gru.cpp, rmsnorm.cpp), written on
// ATen's Vectorized<T>: 16 floats a register where the build is for AVX-512, 8 for AVX2, a plain
// array elsewhere. Which one is decided by the CPU_CAPABILITY_* macro the build defines, as in
// ATen's own per-capability kernels; exp is ATen's (SLEEF, 1 ulp), tanh ATen's but for float (below).
//
// A row of n values is walked in chunks of Vec<T>::size(); the last chunk may be short. A short
// chunk loads zeros past its end, and every sum masks those lanes (keep), so a reduction never
// sees them whatever the arithmetic makes of a zero.
#pragma once

#include <ATen/OpMathType.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <type_traits>

#include <cmath>
#include <limits>
#include <cstdint>

namespace rows {

template <typename T>
using Vec = at::vec::Vectorized<T>;

template <typename T, typename F>
inline void chunks(int64_t n, F&& f) {
  constexpr int64_t w = Vec<T>::size();
  int64_t j = 0;
  for (; j + w <= n; j += w) f(j, w);
  if (j < n) f(j, n - j);
}

template <typename T>
inline Vec<T> load(const T* p, int64_t count) {
  return count == Vec<T>::size() ? Vec<T>::loadu(p) : Vec<T>::loadu(p, count);
}

template <typename T>
inline void store(const Vec<T>& v, T* p, int64_t count) {
  v.store(p, count);
}

// count values of T at p widened to the compute type (bf16/fp16 -> fp32, exactly): a chunk is
// Vec<opmath_type<T>>::size() values whatever T is. Lanes past count load as zero.
template <typename T, typename A = at::opmath_type<T>>
inline Vec<A> load_wide(const T* p, int64_t count) {
  if constexpr (std::is_same_v<T, A>) {
    return load(p, count);
  } else {
    Vec<A> v;
    if (count == Vec<A>::size()) {
      at::vec::load_to_float(p, v);
    } else {
      T part[Vec<A>::size()] = {};
      std::copy(p, p + count, part);
      at::vec::load_to_float(part, v);
    }
    return v;
  }
}

// v rounded to T (round to nearest even for bf16/fp16), its first count lanes stored at p
template <typename T, typename A = at::opmath_type<T>>
inline void store_narrow(const Vec<A>& v, T* p, int64_t count) {
  if constexpr (std::is_same_v<T, A>) {
    store(v, p, count);
  } else {
    at::vec::convert_from_float<T>(v, v).store(p, count);
  }
}

// p[0:count] += v
template <typename T>
inline void accumulate(const Vec<T>& v, T* p, int64_t count) {
  store(load(p, count) + v, p, count);
}

// v with the lanes past count set to zero
template <typename T>
inline Vec<T> keep(const Vec<T>& v, int64_t count) {
  return count == Vec<T>::size() ? v : Vec<T>::set(Vec<T>(T(0)), v, count);
}

template <typename T>
inline T sum_lanes(const Vec<T>& v) {
  T lanes[Vec<T>::size()];
  v.store(lanes);
  T total = 0;
  for (int64_t i = 0; i < Vec<T>::size(); ++i) total += lanes[i];
  return total;
}

template <typename T>
inline Vec<T> sigmoid(const Vec<T>& x) {
  const Vec<T> one(T(1));
  return one / (one + x.neg().exp());
}

// a < b ? x : y, lane by lane. Under AVX-512 straight from the comparison's mask register: at::vec's
// comparison turns its mask into a vector and blendv turns that back into a mask, a round trip that made
// a clamp at the head of exp(-u^2)'s chain cost more than the exp itself (27 against 8 ns a vector in a
// loop in cache on this project's AVX-512 Xeon). Under AVX2 blendv is one instruction on the vector.
inline Vec<float> where_less(const Vec<float>& a, const Vec<float>& b, const Vec<float>& x, const Vec<float>& y) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
#else
  return Vec<float>::blendv(y, x, a < b);
#endif
}

// isnan(a) ? x : y, lane by lane (as where_less)
inline Vec<float> where_nan(const Vec<float>& a, const Vec<float>& x, const Vec<float>& y) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), y, x);
#else
  return Vec<float>::blendv(y, x, a.isnan());
#endif
}

// a b + c rounded once in every build. at::vec's fmadd is fused under AVX2 and AVX-512, but the plain
// build's is a b + c in C++, which rounds a b first unless the compiler contracts it; the few places whose
// accuracy rests on the product being exact (a split constant, a remainder after a reduction) use this one.
// std::fma is fused wherever it runs (one instruction where the CPU has FMA and the build may use it).
inline Vec<float> fma_exact(const Vec<float>& a, const Vec<float>& b, const Vec<float>& c) {
#if defined(CPU_CAPABILITY_DEFAULT)
  Vec<float> out;
  for (int64_t i = 0; i < Vec<float>::size(); ++i) out[i] = std::fma(a[i], b[i], c[i]);
  return out;
#else
  return at::vec::fmadd(a, b, c);
#endif
}

// exp(r) for r in [-ln2/2, ln2/2]: a degree-6 polynomial fitted by scripts/fit_tanh.py (relative error
// 1.7e-8 with these float coefficients, at -ln2/2: 0.29 ulp), the core of elementwise.cpp's exp(-u^2)
inline Vec<float> exp_reduced(const Vec<float>& r) {
  constexpr float e[] = {1.f, 1.f, 4.999999e-01f, 1.666642e-01f, 4.166823e-02f, 8.37482e-03f, 1.3836777e-03f};
  Vec<float> p(e[6]);
  for (int i = 5; i >= 0; --i) p = at::vec::fmadd(p, r, Vec<float>(e[i]));
  return p;
}

// exp(r) - 1 for r in [-ln2/2, ln2/2]: r + r^2 M(r), M a degree-5 near-minimax polynomial fitted by
// scripts/fit_tanh.py to the relative error of expm1 (r and r^2 M are summed in one rounding, so a small r
// keeps its digits: exp_reduced(r) - 1 would cancel them), the core of tanh's exp(-2|x|) - 1
inline Vec<float> expm1_reduced(const Vec<float>& r) {
  constexpr float m[] = {5.e-01f, 1.6666666e-01f, 4.1666362e-02f, 8.33339e-03f, 1.3940624e-03f, 1.9845857e-04f};
  Vec<float> p(m[5]);
  for (int i = 4; i >= 0; --i) p = at::vec::fmadd(p, r, Vec<float>(m[i]));
  return at::vec::fmadd(r * r, p, r);
}

// 2^(n + offset) for n a float holding an integer, n + offset in [-126, 127], made from its exponent bits
inline Vec<float> pow2(const Vec<float>& n, int32_t offset = 0) {
  using Int = at::vec::Vectorized<int32_t>;
  return at::vec::cast<float>((at::vec::convert_to_int_of_same_size(n) + Int(127 + offset)) << Int(23));
}

// ln 2 as two floats: kLn2High has 15 significant bits, so n kLn2High is exact for |n| < 2^9
constexpr float kLn2High = 0.693145752f, kLn2Low = 1.42860677e-06f, kLog2E = 1.44269504f;

// tanh. For float, within 2 ulp of tanh (1.91 over every float on the AVX2 build, at 0.50811636; 1.94 on the
// plain build; tests/norms/test_elementwise_cpu.py holds a dense grid to 2), indicatively 0.8x the cost of the
// earlier two-branch form (a polynomial below 0.55, 1 - 2 / (exp(2|x|) + 1) above: both in every lane, blended; a
// loop in cache on an AVX2 EPYC), itself 0.6x of a series-and-SLEEF form and that half of SLEEF's tanhf (ATen's
// tanh, 1 ulp). One branch-free form for every |x|, with m = -expm1(-2|x|) in [0, 1):
//   tanh|x| = m / (2 - m),  m = 1 - 2^n (1 + q),  2 - m = 1 + 2^n (1 + q)
// where n = round(-2|x| / ln 2) <= 0, r = -2|x| - n ln 2 in [-ln2/2, ln2/2] and q = expm1(r) (expm1_reduced).
// The product 2^n q is exact, and so are 1 - 2^n and 1 + 2^n while n >= -23 (|x| < 8.14), so m and 2 - m are each
// rounded once (fused) and neither cancels: a small x (n = 0) has m = -q, r = -2|x| exactly, and 2 - m just below
// 2, where its rounding costs half as much, relative, as just above. Beyond, the roundings of 1 -+ 2^n stay below
// 2 ulp of the result (1.83 at most), which is exactly 1 from 8.4911 (tanh rounded to float is 1 from 9.011). 2|x| is
// clamped to 20, where n = -29, so every lane's exponent arithmetic stays in range (NaN lanes too, NaN again
// below). The sign is x's, -0 and NaN included. Below 1e-3 the error reaches 1.44 ulp (the denominator's rounding),
// where the earlier form was within 0.5. Other types: ATen's tanh.
template <typename T>
inline Vec<T> tanh(const Vec<T>& x) {
  if constexpr (!std::is_same_v<T, float>) {
    return x.tanh();
  } else {
    const Vec<float> a = x.abs(), one(1.f), twenty(20.f);
    // 2|x| at most 20, and NaN lanes 20 too, so every lane's exponent arithmetic is on small integers (their
    // result is NaN again below)
    const Vec<float> y = where_less(a + a, twenty, a + a, twenty);
    const Vec<float> n = (y * Vec<float>(-kLog2E)).round();
    Vec<float> r = fma_exact(n, Vec<float>(-kLn2High), y.neg());  // -y - n ln2_high: n ln2_high is exact
    r = at::vec::fnmadd(n, Vec<float>(kLn2Low), r);
    const Vec<float> q = expm1_reduced(r), scale = pow2(n);
    const Vec<float> m = at::vec::fnmadd(scale, q, one - scale), d = at::vec::fmadd(scale, q, one + scale);
    const Vec<float> magnitude = where_nan(a, a, m / d);  // NaN in, NaN out
    return magnitude | (x & Vec<float>(-0.f));
  }
}

// 1 / sqrt(variance + eps) from a row's centred sum of squares. A variance that overflows T is NaN,
// as torch's layer_norm gives for such a row: 1 / sqrt(inf) = 0 would turn the overflow into a
// finite row of zeros, and a diverging run would keep training where native LayerNorm (and
// model.cell_kernel=python) reads it as diverged.
template <typename T>
inline T rstd_of(T squares, int64_t n, double eps) {
  const T variance = squares / T(n);
  return std::isinf(variance) ? std::numeric_limits<T>::quiet_NaN() : T(1) / std::sqrt(variance + T(eps));
}

// Mean, then the centred sum of squares (two passes, as torch's layer_norm); returns rstd.
template <typename T>
inline T mean_rstd(const T* x, int64_t n, double eps, T* mean_out) {
  Vec<T> total(T(0));
  chunks<T>(n, [&](int64_t j, int64_t c) { total = total + load(x + j, c); });
  const T mean = sum_lanes(total) / T(n);
  const Vec<T> m(mean);
  Vec<T> squares(T(0));
  chunks<T>(n, [&](int64_t j, int64_t c) {
    const Vec<T> d = keep(load(x + j, c) - m, c);
    squares = squares + d * d;
  });
  *mean_out = mean;
  return rstd_of(sum_lanes(squares), n, eps);
}

// 1 / sqrt(mean(x^2) + eps), in the compute type of T (fp32 for bf16/fp16)
template <typename T, typename A = at::opmath_type<T>>
inline A rms_rstd(const T* x, int64_t n, double eps) {
  Vec<A> squares(A(0));
  chunks<A>(n, [&](int64_t j, int64_t c) {
    const Vec<A> v = load_wide(x + j, c);
    squares = squares + v * v;
  });
  return A(1) / std::sqrt(sum_lanes(squares) / A(n) + A(eps));
}

// A row's statistics for the in-cell kernels (lnlstm.cpp, gru.cpp): LayerNorm's (centred: mean, then
// mean_rstd) or RMSNorm's (mean 0, rms_rstd as norms/rmsnorm.cpp takes it). Returns rstd.
template <typename T>
inline T row_stats(const T* x, int64_t n, double eps, bool centred, T* mean) {
  if (centred) return mean_rstd(x, n, eps, mean);
  *mean = T(0);
  return rms_rstd(x, n, eps);
}

}  // namespace rows
