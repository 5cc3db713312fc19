// The CPU kernels: their registration, and loop helpers they share.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "nanomx/dtype.h"
#include "nanomx/ndarray.h"
#include "ops/kernel.h"
#include "ops/op_params.h"

namespace nanomx::ops {
// The kernel provider of the CPU backend: every CPU kernel (each file's, below).
void register_cpu_kernels();
}  // namespace nanomx::ops

namespace nanomx::ops::cpu {

// Each kernel file registers its kernels (register_cpu_kernels calls them all).
void register_elemwise_kernels();
void register_layout_kernels();
void register_reduce_kernels();
void register_linalg_kernels();
void register_init_kernels();
void register_index_kernels();
void register_random_kernels();
void register_math_kernels();
void register_nn_kernels();
void register_convolution_kernels();    // convolution.cc
void register_pooling_kernels();        // pooling.cc
void register_normalization_kernels();  // normalization.cc
void register_nn_layer_kernels();       // nn_layers.cc
void register_optimizer_kernels();
void register_backward_kernels();

// C = op(A) * op(B) for row-major A, B, C of `dtype` (d.m x d.k times d.k x d.n, each
// transposed as d.ta / d.tb say): OpenBLAS for float32 and float64, a plain loop otherwise.
// The dot kernels and the backward operators share it.
void gemm(DType dtype, const void* a, const void* b, void* c, const DotDims& d);

// Element strides of an input of shape `in` (right-aligned) over the broadcast output shape
// `out`; 0 on the axes it is broadcast along.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Visits every row (the last axis) of the index space `shape` for N operands, each with its own
// element strides (0 = broadcast, negative = reversed) and base offset:
// f(offsets, row_length, row_strides). Nothing is visited when the space is empty.
template <size_t N, class F>
void for_each_row(std::span<const int64_t> shape,
                  const std::array<std::vector<int64_t>, N>& strides, std::array<int64_t, N> base,
                  F&& f) {
  for (int64_t d : shape) {
    if (d == 0) return;
  }
  const int nd = static_cast<int>(shape.size());
  std::array<int64_t, N> inner{};
  if (nd == 0) {
    f(base, int64_t{1}, inner);
    return;
  }
  for (size_t k = 0; k < N; ++k) inner[k] = strides[k][nd - 1];
  const int64_t len = shape[nd - 1];
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  std::array<int64_t, N> off = base;
  for (;;) {
    f(off, len, inner);
    int d = nd - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Applies F::f in T's compute type (float for half, T itself otherwise).
template <typename F, typename T>
inline T apply(T a, T b) {
  if constexpr (std::is_same_v<T, half>) {
    return half(F::f(static_cast<float>(a), static_cast<float>(b)));
  } else {
    return F::f(a, b);
  }
}

// o[i] = x[i] op s (or s op x[i] when `reversed`) for the scalar ops, F applied as apply<F>.
template <typename F, bool reversed, typename T>
void scalar_map(const T* x, T* o, int64_t n, T s) {
  for (int64_t i = 0; i < n; ++i) o[i] = reversed ? apply<F>(s, x[i]) : apply<F>(x[i], s);
}

// out = fn(a, b) element by element over out's shape, a and b broadcast to it as numpy does
// (all three of element type T): one flat loop when both already have out's shape.
template <typename T, typename Fn>
void broadcast_binary(const NDArray& a, const NDArray& b, const NDArray& out, Fn fn) {
  const T* x = a.data_as<T>();
  const T* y = b.data_as<T>();
  T* o = out.data_as<T>();
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    const int64_t n = out.size();
    for (int64_t i = 0; i < n; ++i) o[i] = fn(x[i], y[i]);
    return;
  }
  const std::array<std::vector<int64_t>, 3> strides = {out.shape().strides(),
                                                       broadcast_strides(a.shape(), out.shape()),
                                                       broadcast_strides(b.shape(), out.shape())};
  for_each_row<3>(
      out.shape().dims(), strides, {0, 0, 0},
      [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& st) {
        T* po = o + off[0];
        const T* px = x + off[1];
        const T* py = y + off[2];
        for (int64_t i = 0; i < len; ++i) po[i] = fn(px[i * st[1]], py[i * st[2]]);
      });
}

// Converts between element types as numpy's astype does (integers wrap, floats truncate
// toward zero into integers).
template <typename To, typename From>
inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
    return static_cast<To>(x);
  } else {
    return from_double<To>(to_double(x));
  }
}

// Calls fn(std::integral_constant<size_t, bytes>) for an element size of 1, 2, 4 or 8 bytes; the
// copy-only kernels (slice, transpose, ...) need only the size.
template <typename Fn>
void dispatch_size(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

}  // namespace nanomx::ops::cpu
