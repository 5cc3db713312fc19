// Runtime benchmarks. Each figure has its peer in the same run:
//   engine overhead: a tiny op pushed and waited, beside a condition-variable round trip between
//     two threads (the floor of any cross-thread hand-off) and a direct call;
//   profiling: the same loop with imperative profiling on;
//   bandwidth: broadcast_add / sum over 16 M float32 beside memcpy (bytes touched per second);
//   dot: 4096^2 sgemm through the `dot` operator beside cblas_sgemm called directly.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "nanomx/engine.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"

namespace nanomx {
namespace {

// ---- per-op overhead ---------------------------------------------------------------------------

void BM_EnginePushWait(benchmark::State& state) {
  auto& engine = engine::Engine::get();
  engine::VarHandle var = engine.new_variable();
  const engine::VarHandle writes[] = {var};
  int value = 0;
  for (auto _ : state) {
    engine.push([&value] { ++value; }, Context::cpu(0), {}, writes);
    engine.wait_for_var(var);
  }
  benchmark::DoNotOptimize(value);
  engine.delete_variable({}, Context::cpu(0), var);
  engine.wait_all();
}
BENCHMARK(BM_EnginePushWait)->UseRealTime();

// The same with push_async, completed inside the function (the cost of the completion object).
void BM_EnginePushAsyncWait(benchmark::State& state) {
  auto& engine = engine::Engine::get();
  engine::VarHandle var = engine.new_variable();
  const engine::VarHandle writes[] = {var};
  int value = 0;
  for (auto _ : state) {
    engine.push_async(
        [&value](engine::Completion done) {
          ++value;
          done.done();
        },
        Context::cpu(0), {}, writes);
    engine.wait_for_var(var);
  }
  benchmark::DoNotOptimize(value);
  engine.delete_variable({}, Context::cpu(0), var);
  engine.wait_all();
}
BENCHMARK(BM_EnginePushAsyncWait)->UseRealTime();

// Throughput: 1000 dependent pushes, one wait; time per op.
void BM_EnginePushChain(benchmark::State& state) {
  auto& engine = engine::Engine::get();
  engine::VarHandle var = engine.new_variable();
  const engine::VarHandle writes[] = {var};
  int value = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) engine.push([&value] { ++value; }, Context::cpu(0), {}, writes);
    engine.wait_for_var(var);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  benchmark::DoNotOptimize(value);
  engine.delete_variable({}, Context::cpu(0), var);
  engine.wait_all();
}
BENCHMARK(BM_EnginePushChain)->UseRealTime();

// The same chain of named operations with imperative profiling on: each operation becomes ready
// when the previous one completes, so besides its operator record and push flow it gets one
// dependency flow (docs/trace-format.md#dependency-flows). The collector drains the buffers
// between batches, outside the timing, as continuous dump does.
void BM_EnginePushChainProfiled(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_bench_chain_profile.json").string();
  profiler::set_config({{"profile_imperative", "true"},
                        {"filename", path},
                        {"continuous_dump", "true"},
                        {"dump_period", "86400"}});
  profiler::set_state(profiler::State::kRunning);
  auto& engine = engine::Engine::get();
  engine::VarHandle var = engine.new_variable();
  const engine::VarHandle writes[] = {var};
  engine::PushOptions options;
  options.name = "chain_op";
  options.name_id = profiler::intern("chain_op");
  options.profile_mode = profiler::kImperative;
  int value = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i)
      engine.push([&value] { ++value; }, Context::cpu(0), {}, writes, options);
    engine.wait_for_var(var);
    state.PauseTiming();
    profiler::dump(false);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  benchmark::DoNotOptimize(value);
  engine.delete_variable({}, Context::cpu(0), var);
  engine.wait_all();
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);
  std::filesystem::remove(path);
}
BENCHMARK(BM_EnginePushChainProfiled)->UseRealTime();

// The tiny operator end to end: invoke (_plus_scalar on one float, in place) and wait.
// drain: between waits (outside the timing), the collector drains the profiler's buffers, as
// continuous dump does, so that chunks are reused instead of taken fresh from the allocator.
void tiny_op_loop(benchmark::State& state, int ops_per_wait, bool drain = false) {
  NDArray a = ops::invoke("_zeros", {}, {{"shape", "(1,)"}})[0];
  const NDArray io[] = {a};
  const ops::Attrs attrs = {{"scalar", "1"}};
  const ops::Op& op = ops::get_op("_plus_scalar");
  for (auto _ : state) {
    for (int i = 0; i < ops_per_wait; ++i) ops::invoke(op, io, attrs, io);
    a.wait_to_read();
    if (drain) {
      state.PauseTiming();
      profiler::dump(false);
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * ops_per_wait);
}

void BM_TinyOpInvokeWait(benchmark::State& state) { tiny_op_loop(state, 1); }
BENCHMARK(BM_TinyOpInvokeWait)->UseRealTime();
void BM_TinyOpInvokeBatch1000(benchmark::State& state) { tiny_op_loop(state, 1000); }
BENCHMARK(BM_TinyOpInvokeBatch1000)->UseRealTime();

void BM_TinyOpInvokeBatch1000Profiled(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_bench_profile.json").string();
  profiler::set_config({{"profile_imperative", "true"},
                        {"filename", path},
                        {"continuous_dump", "true"},
                        {"dump_period", "86400"}});
  profiler::set_state(profiler::State::kRunning);
  tiny_op_loop(state, 1000, /*drain=*/true);
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);
  std::filesystem::remove(path);
}
BENCHMARK(BM_TinyOpInvokeBatch1000Profiled)->UseRealTime();

// What imperative profiling adds per op, without a second thread's noise: the naive engine runs
// each push inline, so the loop is push + run of a named op with one input and one output shape,
// unprofiled and profiled (flow start at push, two clock reads, the operator record with its
// shapes). The collector drains the buffers between batches, outside the timing, as continuous
// dump does; otherwise every 4096 records would take a fresh chunk from the allocator.
void naive_push_loop(benchmark::State& state, bool profiled) {
  auto engine = engine::Engine::create(engine::EngineType::kNaive, 1);
  engine::VarHandle in = engine->new_variable(), out = engine->new_variable();
  const engine::VarHandle reads[] = {in}, writes[] = {out};
  const Shape shape({1});
  const Shape* shapes[] = {&shape};
  engine::PushOptions options;
  options.name = "_plus_scalar";
  options.name_id = profiler::intern(options.name);
  options.input_shapes = shapes;
  options.output_shapes = shapes;
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_bench_naive_profile.json").string();
  if (profiled) {
    profiler::set_config({{"profile_imperative", "true"},
                          {"filename", path},
                          {"continuous_dump", "true"},
                          {"dump_period", "86400"}});
    profiler::set_state(profiler::State::kRunning);
  }
  int value = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) {
      engine->push([&value] { ++value; }, Context::cpu(0), reads, writes, options);
    }
    if (profiled) {
      state.PauseTiming();
      profiler::dump(false);
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  benchmark::DoNotOptimize(value);
  if (profiled) {
    profiler::set_state(profiler::State::kStopped);
    profiler::dump(true);
    std::filesystem::remove(path);
  }
  for (auto v : {in, out}) engine->delete_variable({}, Context::cpu(0), v);
}
void BM_NaivePush1000(benchmark::State& state) { naive_push_loop(state, false); }
BENCHMARK(BM_NaivePush1000)->UseRealTime();
void BM_NaivePush1000Profiled(benchmark::State& state) { naive_push_loop(state, true); }
BENCHMARK(BM_NaivePush1000Profiled)->UseRealTime();

// Peer: one round trip between two threads through a mutex + condition variable.
void BM_PeerCondvarRoundTrip(benchmark::State& state) {
  std::mutex m;
  std::condition_variable cv;
  int turn = 0;  // 0: main, 1: worker, 2: stop
  std::thread worker([&] {
    std::unique_lock lock(m);
    for (;;) {
      cv.wait(lock, [&] { return turn != 0; });
      if (turn == 2) return;
      turn = 0;
      cv.notify_all();
    }
  });
  for (auto _ : state) {
    std::unique_lock lock(m);
    turn = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return turn == 0; });
  }
  {
    std::lock_guard lock(m);
    turn = 2;
  }
  cv.notify_all();
  worker.join();
}
BENCHMARK(BM_PeerCondvarRoundTrip)->UseRealTime();

// ---- bandwidth ---------------------------------------------------------------------------------

constexpr int64_t kBig = 16 << 20;  // 16 M float32 = 64 MiB

NDArray big_array(float value) {
  return ops::invoke(
      "_full", {},
      {{"shape", "(" + std::to_string(kBig) + ",)"}, {"value", std::to_string(value)}})[0];
}

void BM_PeerMemcpy16M(benchmark::State& state) {
  std::vector<float> src(kBig, 1.0f), dst(kBig, 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBig * sizeof(float));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBig * 4);  // read + write
}
BENCHMARK(BM_PeerMemcpy16M)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BroadcastAdd16M(benchmark::State& state) {
  NDArray a = big_array(1.0f), b = big_array(2.0f), c = big_array(0.0f);
  const NDArray in[] = {a, b}, out[] = {c};
  const ops::Op& op = ops::get_op("broadcast_add");
  ops::invoke(op, in, {}, out);  // warm up: first touch of every page happens here
  c.wait_to_read();
  for (auto _ : state) {
    ops::invoke(op, in, {}, out);
    c.wait_to_read();
  }
  state.SetBytesProcessed(state.iterations() * 3 * kBig * 4);  // two reads + one write
}
BENCHMARK(BM_BroadcastAdd16M)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Sum16M(benchmark::State& state) {
  NDArray a = big_array(1.0f);
  NDArray s = ops::invoke("_zeros", {}, {{"shape", "(1,)"}})[0];
  const NDArray in[] = {a}, out[] = {s};
  const ops::Op& op = ops::get_op("sum");
  ops::invoke(op, in, {}, out);
  s.wait_to_read();
  for (auto _ : state) {
    ops::invoke(op, in, {}, out);
    s.wait_to_read();
  }
  state.SetBytesProcessed(state.iterations() * kBig * 4);  // one read
}
BENCHMARK(BM_Sum16M)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- dot ---------------------------------------------------------------------------------------

constexpr int kN = 4096;

void BM_PeerCblasSgemm4096(benchmark::State& state) {
  std::vector<float> a(size_t{kN} * kN, 0.5f), b(size_t{kN} * kN, 0.25f), c(size_t{kN} * kN);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, a.data(), kN, b.data(),
              kN, 0.0f, c.data(), kN);  // warm up
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, a.data(), kN, b.data(),
                kN, 0.0f, c.data(), kN);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeerCblasSgemm4096)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

void BM_Dot4096(benchmark::State& state) {
  const std::string shape = "(" + std::to_string(kN) + ", " + std::to_string(kN) + ")";
  NDArray a = ops::invoke("_full", {}, {{"shape", shape}, {"value", "0.5"}})[0];
  NDArray b = ops::invoke("_full", {}, {{"shape", shape}, {"value", "0.25"}})[0];
  NDArray c = ops::invoke("_zeros", {}, {{"shape", shape}})[0];
  const NDArray in[] = {a, b}, out[] = {c};
  const ops::Op& op = ops::get_op("dot");
  ops::invoke(op, in, {}, out);
  c.wait_to_read();
  for (auto _ : state) {
    ops::invoke(op, in, {}, out);
    c.wait_to_read();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Dot4096)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace nanomx

BENCHMARK_MAIN();
