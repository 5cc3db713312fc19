// The C API's per-operator cost, the path every Python `a + b` takes: MXImperativeInvoke of a tiny
// operator then MXNDArrayFree of its result, on the naive engine (the operator runs inside the
// call), so the figure is the C side's own overhead. Peer in the same run: a direct loop adding
// the same 10 floats into a malloc'd buffer (the least any such call can cost).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>

#include "nanomx/c_api.h"

namespace {

struct TinyInputs {
  NDArrayHandle a = nullptr, b = nullptr;
  TinyInputs() {
    const mx_uint shape[1] = {10};
    const float values[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    if (MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &a) != 0 ||
        MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &b) != 0 ||
        MXNDArraySyncCopyFromCPU(a, values, 10) != 0 ||
        MXNDArraySyncCopyFromCPU(b, values, 10) != 0) {
      std::abort();
    }
  }
  ~TinyInputs() {
    MXNDArrayFree(a);
    MXNDArrayFree(b);
  }
};

OpHandle op(const char* name) {
  OpHandle h = nullptr;
  if (NNGetOpHandle(name, &h) != 0) std::abort();
  return h;
}

void invoke_free_loop(benchmark::State& state, OpHandle op, int num_inputs, NDArrayHandle* inputs,
                      int num_params, const char** keys, const char** vals) {
  for (auto _ : state) {
    int num_outputs = 0;
    NDArrayHandle* outputs = nullptr;
    if (MXImperativeInvoke(op, num_inputs, inputs, &num_outputs, &outputs, num_params, keys,
                           vals) != 0 ||
        MXNDArrayFree(outputs[0]) != 0) {
      state.SkipWithError(MXGetLastError());
      break;
    }
  }
  MXNDArrayWaitAll();
}

// broadcast_add of two 10-element float32 arrays, the result freed at once.
void BM_CApiInvokeFree(benchmark::State& state) {
  TinyInputs t;
  NDArrayHandle in[2] = {t.a, t.b};
  invoke_free_loop(state, op("broadcast_add"), 2, in, 0, nullptr, nullptr);
}
BENCHMARK(BM_CApiInvokeFree);

// _plus_scalar with its attribute given as text (`a + 1` from Python).
void BM_CApiInvokeFreeScalar(benchmark::State& state) {
  TinyInputs t;
  const char* keys[] = {"scalar"};
  const char* vals[] = {"1.0"};
  invoke_free_loop(state, op("_plus_scalar"), 1, &t.a, 1, keys, vals);
}
BENCHMARK(BM_CApiInvokeFreeScalar);

// Peer: the same 10-element add into a fresh heap buffer.
void BM_PeerAdd10Malloc(benchmark::State& state) {
  float x[10], y[10];
  for (int i = 0; i < 10; ++i) x[i] = y[i] = static_cast<float>(i);
  for (auto _ : state) {
    auto* out = static_cast<float*>(std::malloc(10 * sizeof(float)));
    for (int i = 0; i < 10; ++i) out[i] = x[i] + y[i];
    benchmark::DoNotOptimize(out);
    std::free(out);
  }
}
BENCHMARK(BM_PeerAdd10Malloc);

}  // namespace

int main(int argc, char** argv) {
  // The naive engine unless the caller chose one; read once, at the engine's first use.
  if (!std::getenv("NANOMX_ENGINE_TYPE") && !std::getenv("MXNET_ENGINE_TYPE")) {
    setenv("NANOMX_ENGINE_TYPE", "NaiveEngine", 0);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
