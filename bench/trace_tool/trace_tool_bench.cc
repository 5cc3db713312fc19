// nanomx-trace throughput on a synthetic 1 M-event nanomx trace (synthetic_trace.h) read from a
// file, in MB/s of JSON. The floors: BM_Floor_ReadFile (the bytes from the page cache, nothing
// else) and BM_Floor_StreamParse (the same chunked simdjson parse `summary` does, with no work per
// event). BM_Summary is the whole `summary` command: read, parse, pair events, aggregate, format
// MXNet's table. BM_ViewModel is the part of `view` before the page is encoded.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "summary.h"
#include "synthetic_trace.h"
#include "trace_file.h"
#include "trace_model.h"

namespace {

using namespace nanomx::trace;

const std::string& trace_path() {
  static const std::string path = [] {
    std::string p = (std::filesystem::temp_directory_path() / "nanomx_trace_bench.json").string();
    std::string text = bench::synthetic_nanomx_trace(1'000'000);
    FILE* file = std::fopen(p.c_str(), "wb");
    std::fwrite(text.data(), 1, text.size(), file);
    std::fflush(file);
    fsync(fileno(file));  // the first benchmark must not compete with the write-back
    std::fclose(file);
    return p;
  }();
  return path;
}

int64_t trace_bytes() { return static_cast<int64_t>(std::filesystem::file_size(trace_path())); }

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
