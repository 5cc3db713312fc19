// Profiler overheads, each beside the floor measured in the same run (README "Benchmarks").
//
//   Floor_TwoTscReadsAndStore   the physical floor: two rdtsc + one 32-byte store into a
//                               thread-local buffer (what any recorder of a scope must do)
//   RecordedScope               NANOMX_PROFILE_SCOPE while running
//   RecordedScopeAggregate      the same with aggregate_stats on
//   DisabledSite / EmptyLoop    a scope while stopped, beside an empty loop
//   RecordedOperator            what the engine records per profiled operation: the operator
//                               record with its push-flow finish (shapes left out)
//   RecordedOperatorDependency  the same plus a dependency flow (its start and its finish)
//   CApiTaskStartStop           MXProfileDurationStart + MXProfileDurationStop on a Task
//   WriteJson                   collector throughput (MB/s) and bytes per duration event
//   DumpsTenThousandNames       dumps() with 10,000 distinct names
#include <benchmark/benchmark.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "nanomx/c_api.h"
#include "nanomx/profiler.h"
#include "profiler/hooks.h"

namespace prof = nanomx::profiler;

namespace {

const char* kTraceFile = "/tmp/nanomx_profiler_bench.json";
constexpr int kDrainEvery = 1 << 16;  // records per drain: stays inside the pre-faulted pool

void start_profiling(bool aggregate, const char* durations = "begin_end",
                     const prof::KeyValues& extra = {}) {
  prof::KeyValues kv = {{"profile_all", "true"},
                        {"filename", kTraceFile},
                        {"continuous_dump", "true"},
                        {"dump_period", "1000"},
                        {"aggregate_stats", aggregate ? "true" : "false"},
                        {"duration_events", durations}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  prof::set_config(kv);
  prof::set_state(prof::State::kRunning);
}

void stop_profiling() {
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  std::remove(kTraceFile);
  // The numbered files of a rotating series (nanomx_profiler_bench.<k>.json).
  for (const auto& entry : std::filesystem::directory_iterator("/tmp")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("nanomx_profiler_bench.", 0) == 0) std::filesystem::remove(entry.path());
  }
}

// Drains the buffers outside the timed region so long runs measure recording, not memory growth.
inline void drain_if_due(benchmark::State& state, int* count) {
  if (++*count < kDrainEvery) return;
  *count = 0;
  state.PauseTiming();
  prof::dump(false);
  state.ResumeTiming();
}

struct FloorRecord {
  uint64_t begin, end;
  uint32_t name, category, payload, extra;
};
static_assert(sizeof(FloorRecord) == 32);
thread_local FloorRecord floor_buffer[kDrainEvery];

void Floor_TwoTscReadsAndStore(benchmark::State& state) {
  size_t i = 0;
  for (auto _ : state) {
    uint64_t begin = __builtin_ia32_rdtsc();
    uint64_t end = __builtin_ia32_rdtsc();
    floor_buffer[i] = {begin, end, 7, 3, 0, 0};
    benchmark::DoNotOptimize(&floor_buffer[i]);
    i = (i + 1) & (kDrainEvery - 1);
  }
}
BENCHMARK(Floor_TwoTscReadsAndStore)->Threads(1)->Threads(2);

void RecordedScope(benchmark::State& state) {
  if (state.thread_index() == 0) start_profiling(false);
  int count = 0;
  for (auto _ : state) {
    NANOMX_PROFILE_SCOPE("scope");
    drain_if_due(state, &count);
  }
  if (state.thread_index() == 0) stop_profiling();
}
BENCHMARK(RecordedScope)->Threads(1)->Threads(2);

void RecordedScopeAggregate(benchmark::State& state) {
  start_profiling(true);
  int count = 0;
  for (auto _ : state) {
    NANOMX_PROFILE_SCOPE("scope");
    drain_if_due(state, &count);
  }
  stop_profiling();
}
BENCHMARK(RecordedScopeAggregate);

// The engine's per-operation records on one thread, without and with the dependency flow that
// links it to the operation whose completion made it ready (docs/trace-format.md).
void recorded_operator_loop(benchmark::State& state, bool dependency) {
  // Rotating files, one kept: the drains write about 300 bytes per iteration.
  start_profiling(false, "begin_end", {{"max_file_mb", "64"}, {"max_files", "1"}});
  const prof::NameId name = prof::intern("bench_op");
  int count = 0;
  uint64_t previous_end = prof::now_ticks();
  for (auto _ : state) {
    const uint64_t dependency_id = dependency ? prof::dependency_flow_start(0, previous_end) : 0;
    const uint64_t begin = prof::now_ticks();
    previous_end = prof::now_ticks();
    prof::record_operator_packed(name, 0, begin, previous_end, nullptr, 0, 1, dependency_id);
    drain_if_due(state, &count);
  }
  stop_profiling();
}
void RecordedOperator(benchmark::State& state) { recorded_operator_loop(state, false); }
BENCHMARK(RecordedOperator)->Iterations(1 << 20);
void RecordedOperatorDependency(benchmark::State& state) { recorded_operator_loop(state, true); }
BENCHMARK(RecordedOperatorDependency)->Iterations(1 << 20);

void EmptyLoop(benchmark::State& state) {
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(++x);
}
BENCHMARK(EmptyLoop);

void DisabledSite(benchmark::State& state) {
  prof::set_config({{"profile_all", "true"}, {"filename", kTraceFile}});
  prof::set_state(prof::State::kStopped);  // stop also pauses user objects: nothing records
  int x = 0;
  for (auto _ : state) {
    NANOMX_PROFILE_SCOPE("disabled");
    benchmark::DoNotOptimize(++x);
  }
}
BENCHMARK(DisabledSite);

void CApiTaskStartStop(benchmark::State& state) {
  start_profiling(false);
  ProfileHandle domain = nullptr, task = nullptr;
  MXProfileCreateDomain("bench", &domain);
  MXProfileCreateTask(domain, "task", &task);
  int count = 0;
  for (auto _ : state) {
    MXProfileDurationStart(task);
    MXProfileDurationStop(task);
    drain_if_due(state, &count);
  }
  MXProfileDestroyHandle(task);
  stop_profiling();
}
BENCHMARK(CApiTaskStartStop);

// Collector: time to format and write 1 M operator events already recorded, as B+E pairs or
// X events, with or without shapes in args; reports JSON MB/s and bytes per duration.
void WriteJson(benchmark::State& state) {
  const bool complete = state.range(0) == 1;
  const bool with_shapes = state.range(1) == 1;
  constexpr int kEvents = 1000000;
  const prof::NameId names[4] = {prof::intern("dot"), prof::intern("elemwise_add"),
                                 prof::intern("relu"), prof::intern("_random_uniform")};
  int64_t dims[2] = {512, 1024};
  prof::ShapeView shape{dims, 2};
  prof::ShapeView inputs[2] = {shape, shape};
  double bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    start_profiling(false, complete ? "complete" : "begin_end");
    prof::dump(false);  // header written; what follows is events only
    struct stat before;
    stat(kTraceFile, &before);
    uint64_t t = prof::now_ticks();
    for (int i = 0; i < kEvents; ++i) {
      prof::OperatorShapes shapes;
      if (with_shapes) shapes = {inputs, {inputs, 1}};
      prof::record_operator(names[i & 3], 0, t + i * 1000ull, t + i * 1000ull + 700, shapes);
      if ((i & (kDrainEvery / 2 - 1)) == 0 && i) {
        state.ResumeTiming();
        prof::dump(false);
        state.PauseTiming();
      }
    }
    state.ResumeTiming();
    prof::dump(false);
    state.PauseTiming();
    struct stat after;
    stat(kTraceFile, &after);
    bytes = static_cast<double>(after.st_size - before.st_size);
    stop_profiling();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["bytes_per_duration"] = bytes / kEvents;
  state.counters["events_per_s"] = benchmark::Counter(
      kEvents * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(WriteJson)
    ->ArgNames({"complete", "shapes"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void DumpsTenThousandNames(benchmark::State& state) {
  start_profiling(true);
  for (int i = 0; i < 10000; ++i) {
    uint64_t t = prof::now_ticks();
    prof::record_operator(prof::intern("op_" + std::to_string(i)), 0, t,
                          t + 100 + (i * 7919) % 10007);
  }
  for (auto _ : state) benchmark::DoNotOptimize(prof::dumps());
  stop_profiling();
}
BENCHMARK(DumpsTenThousandNames)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
