// The profiler on the GPU (docs/cuda.md, "Profiler"): operators are timed on the device by CUDA
// events, on a row per stream, with the launch on the worker's row and a flow between them; the
// GPU memory profile names what the executor and operators allocate as MXNet's
// test_gpu_memory_profiler_symbolic expects. Skipped without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/gpu_memory_profile.h"
#include "nanomx/context.h"
#include "nanomx/engine.h"
#include "nanomx/gpu.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"
#include "symbol/executor.h"
#include "symbol/symbol.h"

namespace nanomx {
namespace {

using json = nlohmann::json;

class GpuProfiler : public ::testing::Test {
 protected:
  void SetUp() override {
    if (num_gpus() == 0) GTEST_SKIP() << "no GPU: " << gpu_unavailable_reason();
    dir_ = std::filesystem::temp_directory_path() /
           ("nanomx_gpu_profiler_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (profiler::state() == profiler::State::kRunning)
      profiler::set_state(profiler::State::kStopped);
    profiler::set_scope("<unk>:");
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  static Context gpu() { return Context{DeviceType::kGPU, 0}; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

struct Span {
  std::string cat;
  double begin = 0, end = 0;
  int pid = 0, tid = 0;
};

// The duration events named `name` (B/E pairs per row, or X), and each row's thread name.
std::vector<Span> spans_named(const json& trace, const std::string& name,
                              std::map<std::pair<int, int>, std::string>& row_names) {
  std::vector<Span> spans;
  std::map<std::pair<int, int>, std::vector<Span>> open;
  for (const json& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    const std::pair<int, int> row{e.value("pid", 0), e.value("tid", 0)};
    if (ph == "M" && e["name"] == "thread_name") row_names[row] = e["args"]["name"];
    if (!e.contains("name") || e["name"] != name) continue;
    if (ph == "X") {
      const double ts = e["ts"];
      spans.push_back({e["cat"], ts, ts + e["dur"].get<double>(), row.first, row.second});
    } else if (ph == "B") {
      open[row].push_back({e["cat"], e["ts"], 0, row.first, row.second});
    } else if (ph == "E" && !open[row].empty()) {
      Span s = open[row].back();
      open[row].pop_back();
      s.end = e["ts"];
      spans.push_back(s);
    }
  }
  return spans;
}

TEST_F(GpuProfiler, OperatorsAreTimedOnTheDeviceWithTheLaunchLinked) {
  const std::string file = path("gpu_trace.json");
  profiler::set_config({{"profile_all", "true"}, {"filename", file}, {"continuous_dump", "false"}});
  NDArray a(Shape{512, 512}, gpu()), b(Shape{512, 512}, gpu());
  ops::invoke("_ones", {}, {{"shape", "(512, 512)"}}, std::vector<NDArray>{a});
  ops::invoke("_ones", {}, {{"shape", "(512, 512)"}}, std::vector<NDArray>{b});
  engine::Engine::get().wait_all();
  profiler::set_state(profiler::State::kRunning);
  constexpr int kProducts = 6;
  for (int i = 0; i < kProducts; ++i) (void)ops::invoke("dot", std::vector<NDArray>{a, b});
  engine::Engine::get().wait_all();
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);

  std::ifstream in(file);
  const json trace = json::parse(in);
  std::map<std::pair<int, int>, std::string> rows;
  const std::vector<Span> spans = spans_named(trace, "dot", rows);
  int launches = 0, executions = 0;
  for (const Span& s : spans) {
    const std::string& row = rows[{s.pid, s.tid}];
    if (s.cat == "operator launch") {
      ++launches;
      EXPECT_EQ(row.find(" stream "), std::string::npos) << "a launch is on its worker: " << row;
    } else {
      ++executions;
      EXPECT_EQ(s.cat, "operator");
      EXPECT_EQ(row.rfind("gpu(0) stream ", 0), 0u) << "device time is on a stream's row: " << row;
      // A 512^3 product takes microseconds on any GPU, never nothing.
      EXPECT_GT(s.end - s.begin, 0.5) << "device span of " << (s.end - s.begin) << " us";
    }
  }
  EXPECT_EQ(launches, kProducts);
  EXPECT_EQ(executions, kProducts);
  // One "launch" flow per product, from the worker's row to the stream's, never backwards.
  std::map<uint64_t, double> starts, finishes;
  for (const json& e : trace["traceEvents"]) {
    if (!e.contains("cat") || e["cat"] != "launch") continue;
    (e["ph"] == "s" ? starts : finishes)[e["id"].get<uint64_t>()] = e["ts"];
  }
  EXPECT_EQ(starts.size(), static_cast<size_t>(kProducts));
  EXPECT_EQ(finishes.size(), starts.size());
  for (const auto& [id, ts] : finishes) {
    ASSERT_TRUE(starts.count(id)) << "flow " << id << " has no start";
  }
}

// MXNet's test_gpu_memory_profiler_symbolic, forward and backward.
TEST_F(GpuProfiler, MemoryProfileNamesExecutorAndOperatorArrays) {
  storage::clear_gpu_memory_profile();
  profiler::set_config({{"profile_memory", "true"},
                        {"filename", path("memory_trace.json")},
                        {"continuous_dump", "false"}});
  profiler::set_state(profiler::State::kRunning);
  symbol::Symbol c;
  {
    profiler::set_scope("tensordot:");
    const symbol::Symbol a = symbol::Symbol::variable("A");
    const symbol::Symbol b = symbol::Symbol::variable("B");
    c = symbol::Symbol::atomic(ops::get_op("dot"), {});
    c.compose({a, b}, {}, "dot");
    profiler::set_scope("<unk>:");
  }
  const int64_t m = 256, k = 512, n = 128;
  auto exec =
      symbol::Executor::simple_bind(c, gpu(), {{"A", Shape{m, k}}, {"B", Shape{k, n}}}, {}, {});
  profiler::set_scope("init:");
  const NDArray a = ops::invoke_one(ops::get_op("_random_uniform"), {},
                                    {{"shape", "(256, 512)"}, {"ctx", "gpu(0)"}});
  const NDArray b = ops::invoke_one(ops::get_op("_random_uniform"), {},
                                    {{"shape", "(512, 128)"}, {"ctx", "gpu(0)"}});
  profiler::set_scope("<unk>:");
  exec->arg_arrays()[0].copy_from(a);
  exec->arg_arrays()[1].copy_from(b);
  exec->forward(true);
  const NDArray head =
      ops::invoke_one(ops::get_op("_ones"), {}, {{"shape", "(256, 128)"}, {"ctx", "gpu(0)"}});
  exec->backward(std::vector<NDArray>{head});
  engine::Engine::get().wait_all();
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);
  const std::string csv = storage::write_gpu_memory_profile(path("gpu_memory_profile"));
  ASSERT_FALSE(csv.empty());

  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"");
  std::multimap<std::string, size_t> requested;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string f; std::getline(row, f, ',');) fields.push_back(f.substr(1, f.size() - 2));
    ASSERT_EQ(fields.size(), 5u) << line;
    requested.emplace(fields[0], std::stoull(fields[1]));
    EXPECT_NE(fields[0], "<unk>:unknown") << "every GPU allocation here has a name";
    EXPECT_NE(fields[0], "<unk>:");
  }
  auto has = [&](const std::string& attribute, size_t bytes) {
    auto [lo, hi] = requested.equal_range(attribute);
    for (auto it = lo; it != hi; ++it) {
      if (it->second == bytes) return true;
    }
    return false;
  };
  const size_t f = sizeof(float);
  EXPECT_TRUE(has("tensordot:in_arg:A", f * m * k));
  EXPECT_TRUE(has("tensordot:in_arg:B", f * k * n));
  EXPECT_TRUE(has("tensordot:arg_grad:A", f * m * k));
  EXPECT_TRUE(has("tensordot:arg_grad:B", f * k * n));
  EXPECT_TRUE(has("tensordot:dot", f * m * n));
  EXPECT_TRUE(has("init:_random_uniform", f * m * k));
  EXPECT_TRUE(has("init:_random_uniform", f * k * n));
  storage::clear_gpu_memory_profile();
}

}  // namespace
}  // namespace nanomx
