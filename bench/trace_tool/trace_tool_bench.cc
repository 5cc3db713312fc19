// nanomx-trace throughput on a synthetic 1 M-event nanomx trace (synthetic_trace.h) read from a
// file, in MB/s of JSON. The floors: BM_Floor_ReadFile (the bytes from the page cache, nothing
// else) and BM_Floor_StreamParse (the same chunked simdjson parse `summary` does, with no work per
// event). BM_Summary is the whole `summary` command: read, parse, pair events, aggregate, format
// MXNet's table. BM_ViewModel is the part of `view` before the page is encoded. BM_Diff and
// BM_CriticalPath are those commands (without printing) on the same generator's trace with
// dependency flows and steps (and, for NEW, `dot` 10 % slower); their MB/s count every input
// byte (both files for diff).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "critical_path.h"
#include "diff.h"
#include "summary.h"
#include "synthetic_trace.h"
#include "trace_file.h"
#include "trace_model.h"

namespace {

using namespace nanomx::trace;

std::string write_trace(const char* name, const bench::SyntheticOptions& options) {
  std::string p = (std::filesystem::temp_directory_path() / name).string();
  std::string text = bench::synthetic_nanomx_trace(1'000'000, options);
  FILE* file = std::fopen(p.c_str(), "wb");
  std::fwrite(text.data(), 1, text.size(), file);
  std::fflush(file);
  fsync(fileno(file));  // the first benchmark must not compete with the write-back
  std::fclose(file);
  return p;
}

const std::string& trace_path() {
  static const std::string path = write_trace("nanomx_trace_bench.json", {});
  return path;
}

bench::SyntheticOptions issue17_options() {
  bench::SyntheticOptions options;
  options.dependency_flows = true;
  options.ops_per_step = 1000;
  return options;
}

// With dependency flows and steps: the input of diff (BASE) and critical-path.
const std::string& steps_path() {
  static const std::string path = write_trace("nanomx_trace_bench_steps.json", issue17_options());
  return path;
}

// The same with `dot` 10 % slower: diff's NEW.
const std::string& slower_path() {
  static const std::string path = [] {
    bench::SyntheticOptions options = issue17_options();
    options.slower_op = "dot";
    options.slowdown = 1.1;
    return write_trace("nanomx_trace_bench_slower.json", options);
  }();
  return path;
}

int64_t file_bytes(const std::string& path) {
  return static_cast<int64_t>(std::filesystem::file_size(path));
}

int64_t trace_bytes() { return file_bytes(trace_path()); }

void BM_Floor_StreamParse(benchmark::State& state) {
  const std::string& path = trace_path();  // made before the clock starts
  for (auto _ : state) {
    size_t events = 0;
    stream_events(path, [&](simdjson::dom::element, size_t) { ++events; });
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(state.iterations() * trace_bytes());
}
BENCHMARK(BM_Floor_StreamParse)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_Summary(benchmark::State& state) {
  const std::string& path = trace_path();  // made before the clock starts
  for (auto _ : state) {
    StreamInfo info;
    ModelOptions options;
    options.keep_slices = false;  // as the summary command
    TraceModel model = stream_model(path, options, &info);
    std::string table = format_table(display_rows(aggregate(model), SortKey::kTotal, false));
    benchmark::DoNotOptimize(table);
  }
  state.SetBytesProcessed(state.iterations() * trace_bytes());
}
BENCHMARK(BM_Summary)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_Diff(benchmark::State& state) {
  const std::string& base = steps_path();  // made before the clock starts
  const std::string& next = slower_path();
  for (auto _ : state) {
    DiffResult result = diff_traces(base, next, {});
    std::string text = format_diff_text(result);
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(state.iterations() * (file_bytes(base) + file_bytes(next)));
}
BENCHMARK(BM_Diff)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_CriticalPath(benchmark::State& state) {
  const std::string& path = steps_path();  // made before the clock starts
  for (auto _ : state) {
    CriticalPath result = critical_path_of_file(path, std::nullopt);
    std::string text = format_critical_path_text(result);
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(state.iterations() * file_bytes(path));
}
BENCHMARK(BM_CriticalPath)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_CriticalPathStep(benchmark::State& state) {
  const std::string& path = steps_path();  // made before the clock starts
  for (auto _ : state) {
    CriticalPath result = critical_path_of_file(path, 70);
    std::string text = format_critical_path_text(result);
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(state.iterations() * file_bytes(path));
}
BENCHMARK(BM_CriticalPathStep)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ViewModel(benchmark::State& state) {
  ModelOptions options;
  options.keep_args = true;
  options.assign_lanes = true;
  const std::string& path = trace_path();  // made before the clock starts
  for (auto _ : state) {
    StreamInfo info;
    TraceModel model = stream_model(path, options, &info);
    benchmark::DoNotOptimize(model.slices.data());
  }
  state.SetBytesProcessed(state.iterations() * trace_bytes());
}
BENCHMARK(BM_ViewModel)->Unit(benchmark::kMillisecond)->Iterations(3);

// Last, so the file is settled in the page cache (it was just written) when the floor runs.
void BM_Floor_ReadFile(benchmark::State& state) {
  std::vector<char> chunk(1 << 20);        // the chunk size stream_events uses
  const std::string& path = trace_path();  // made before the clock starts
  for (auto _ : state) {
    FILE* file = std::fopen(path.c_str(), "rb");
    while (std::fread(chunk.data(), 1, chunk.size(), file) > 0) {
    }
    std::fclose(file);
  }
  state.SetBytesProcessed(state.iterations() * trace_bytes());
}
BENCHMARK(BM_Floor_ReadFile)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
