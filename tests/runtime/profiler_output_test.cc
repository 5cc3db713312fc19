// What the profiler records for a small imperative program: operators on the cpu/0 row, run on
// an engine worker thread, with shapes in args and a flow arrow from the pushing thread; memory
// counters back at their start value once the arrays are freed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "nanomx/engine.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"

namespace nanomx {
namespace {

using json = nlohmann::json;

json read_trace(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

std::string meta_name(const json& trace, const char* kind, int64_t pid, int64_t tid) {
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == kind && e["pid"] == pid &&
        (std::string(kind) == "process_name" || e["tid"] == tid)) {
      return e["args"]["name"];
    }
  }
  return "";
}

TEST(ProfilerOutput, OperatorsMemoryAndFlowsOfASmallProgram) {
  auto& engine = engine::Engine::get();
  if (engine.type() == engine::EngineType::kNaive) GTEST_SKIP() << "needs the threaded engine";
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_runtime_profile.json").string();
  engine.wait_all();
  const int slot = Context::cpu(0).profiler_slot();
  const uint64_t start_bytes = profiler::memory_in_use(slot);
  profiler::set_config({{"profile_all", "true"}, {"filename", path}, {"continuous_dump", "false"}});
  profiler::set_state(profiler::State::kRunning);
  {
    NDArray a = ops::invoke("_ones", {}, {{"shape", "(2, 3)"}})[0];
    NDArray b = ops::invoke("broadcast_add", std::vector<NDArray>{a, a})[0];
    NDArray t = ops::invoke("transpose", std::vector<NDArray>{b})[0];
    NDArray c = ops::invoke("dot", std::vector<NDArray>{b, t})[0];
    NDArray s = ops::invoke("sum", std::vector<NDArray>{c})[0];
    // A write still pending when we wait, so that the wait pushes a WaitForVar operator (a wait
    // on an array with nothing pending returns at once, as MXNet). It is released from another
    // thread once the main thread is (almost certainly) blocked in the wait.
    std::atomic<bool> release{false};
    static const profiler::NameId kSlow = profiler::intern("slow_producer");
    engine::PushOptions options;
    options.name = "slow_producer";
    options.name_id = kSlow;
    const engine::VarHandle writes[] = {s.var()};
    engine.push(
        [&release] {
          while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        s.ctx(), {}, writes, options);
    std::thread releaser([&release] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      release = true;
    });
    EXPECT_EQ(s.to_vector<float>()[0], 4.0f * 3 * 4);
    releaser.join();
  }
  engine.wait_all();
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);
  EXPECT_EQ(profiler::memory_in_use(slot), start_bytes);

  const json trace = read_trace(path);
  std::set<std::string> ops_seen;
  std::set<uint64_t> flow_starts, flow_ends;
  json add_event;
  std::vector<double> memory_values;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (e.value("cat", "") == "operator" && (ph == "B" || ph == "X")) {
      ops_seen.insert(e["name"].get<std::string>());
      EXPECT_EQ(meta_name(trace, "process_name", e["pid"], 0), "cpu/0") << e.dump();
      const std::string thread = meta_name(trace, "thread_name", e["pid"], e["tid"]);
      EXPECT_EQ(thread.rfind("cpu/0 worker", 0), 0u) << thread << " " << e.dump();
      if (e["name"] == "broadcast_add") add_event = e;
    }
    if (ph == "s") flow_starts.insert(e["id"].get<uint64_t>());
    if (ph == "f") flow_ends.insert(e["id"].get<uint64_t>());
    if (ph == "C" && e["name"] == "Memory: cpu/0") {
      memory_values.push_back(e["args"]["Memory: cpu/0"].get<double>());
    }
  }
  for (const char* name :
       {"_ones", "broadcast_add", "transpose", "dot", "sum", "slow_producer", "WaitForVar"}) {
    EXPECT_TRUE(ops_seen.count(name)) << name;
  }
  ASSERT_TRUE(add_event.is_object());
  EXPECT_EQ(add_event["args"]["inputs"], json::parse("[[2,3],[2,3]]"));
  EXPECT_EQ(add_event["args"]["outputs"], json::parse("[[2,3]]"));
  EXPECT_FALSE(flow_starts.empty());
  for (uint64_t id : flow_ends) EXPECT_TRUE(flow_starts.count(id)) << id;
  ASSERT_FALSE(memory_values.empty());
  EXPECT_GT(*std::max_element(memory_values.begin(), memory_values.end()),
            static_cast<double>(start_bytes));
  EXPECT_EQ(memory_values.back(), static_cast<double>(start_bytes));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace nanomx
