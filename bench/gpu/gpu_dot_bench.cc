// 4096 x 4096 float32 dot on gpu(0): through nanomx's executor (forward + wait, as the matmul
// example) against a direct cublasSgemm on the same GPU, and what profiling adds per GPU
// operation (small ops with the profiler running vs not). Prints one JSON row per measurement
// (docs/cuda.md). Needs a GPU: without one it says so and exits 0.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/gpu.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"
#include "symbol/executor.h"
#include "symbol/symbol.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void check(cudaError_t s, const char* what) {
  if (s != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(s));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nanomx;
  const int n = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  if (num_gpus() == 0) {
    std::printf("gpu_dot_bench: no GPU (%s); nothing measured\n", gpu_unavailable_reason().c_str());
    return 0;
  }
  const Context gpu{DeviceType::kGPU, 0};
  const double flop = 2.0 * n * n * static_cast<double>(n);

  // nanomx: C = dot(A, B) bound on gpu(0), forward + wait per iteration.
  symbol::Symbol a = symbol::Symbol::variable("A"), b = symbol::Symbol::variable("B");
  symbol::Symbol c = symbol::Symbol::atomic(ops::get_op("dot"), {});
  c.compose({a, b}, {}, "dot");
  auto exec = symbol::Executor::simple_bind(
      c, gpu, {{"A", ops::PartialShape(Shape{n, n})}, {"B", ops::PartialShape(Shape{n, n})}}, {},
      {symbol::GradReq::kNull, symbol::GradReq::kNull});
  for (const NDArray& arg : exec->arg_arrays()) {
    ops::invoke("_ones", {}, {}, std::vector<NDArray>{arg});
  }
  std::vector<double> ours;
  for (int i = 0; i < iters + 3; ++i) {
    const auto t0 = Clock::now();
    exec->forward(false);
    exec->outputs()[0].wait_to_read();
    if (i >= 3) ours.push_back(ms_since(t0));
  }

  // Direct cublasSgemm on the same GPU and sizes, synchronized per call.
  void *va = nullptr, *vb = nullptr, *vc = nullptr;
  const size_t bytes = sizeof(float) * static_cast<size_t>(n) * static_cast<size_t>(n);
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaMalloc(&va, bytes), "cudaMalloc");
  check(cudaMalloc(&vb, bytes), "cudaMalloc");
  check(cudaMalloc(&vc, bytes), "cudaMalloc");
  check(cudaMemset(va, 0, bytes), "cudaMemset");
  check(cudaMemset(vb, 0, bytes), "cudaMemset");
  const auto* da = static_cast<const float*>(va);
  const auto* db = static_cast<const float*>(vb);
  auto* dc = static_cast<float*>(vc);
  cublasHandle_t h = nullptr;
  cublasCreate(&h);
  cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);  // as nanomx without NANOMX_CUBLAS_TF32
  const float one = 1.f, zero = 0.f;
  std::vector<double> direct;
  for (int i = 0; i < iters + 3; ++i) {
    const auto t0 = Clock::now();
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, db, n, da, n, &zero, dc, n);
    check(cudaDeviceSynchronize(), "sgemm");
    if (i >= 3) direct.push_back(ms_since(t0));
  }
  cublasDestroy(h);
  cudaFree(va);
  cudaFree(vb);
  cudaFree(vc);

  const double ours_ms = median(ours), direct_ms = median(direct);
  std::printf(
      "{\"area\": \"GPU (CUDA)\", \"what\": \"%d\u00b2 `dot` through simple_bind + forward on "
      "gpu(0)\", \"unit\": \"GFLOP/s\", \"nanomx\": %.1f, \"reference\": %.1f, "
      "\"reference_kind\": \"floor\", \"reference_label\": \"direct `cublasSgemm`\", "
      "\"better\": \"higher\", \"target\": \"\u2265 0.95\u00d7\"}\n",
      n, flop / ours_ms / 1e6, flop / direct_ms / 1e6);

  // Profiling's cost per GPU operation: many small ops, profiler off vs on.
  const NDArray x(Shape{256}, gpu);
  ops::invoke("_ones", {}, {}, std::vector<NDArray>{x});
  auto run_small = [&](int count) {
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) {
      ops::invoke("_plus_scalar", std::vector<NDArray>{x}, {{"scalar", "1"}},
                  std::vector<NDArray>{x});
    }
    x.wait_to_read();
    return ms_since(t0) * 1000.0 / count;  // us per op
  };
  const int small = 20000;
  run_small(1000);
  const double off_us = run_small(small);
  profiler::set_config({{"profile_all", "true"}, {"filename", "/tmp/gpu_dot_bench.json"}});
  profiler::set_state(profiler::State::kRunning);
  const double on_us = run_small(small);
  profiler::set_state(profiler::State::kStopped);
  std::printf(
      "{\"area\": \"GPU (CUDA)\", \"what\": \"one small GPU operation (256-element "
      "`_plus_scalar`) with the profiler running\", \"unit\": \"\u00b5s\", \"nanomx\": %.3f, "
      "\"reference\": %.3f, \"reference_kind\": \"floor\", \"reference_label\": \"profiler "
      "off\", \"better\": \"lower\", \"target\": \"\u2264 +2 \u00b5s\"}\n",
      on_us, off_us);
  return 0;
}
