// What the profiler records for a small imperative program: operators on the cpu/0 row, run on
// an engine worker thread (or on the thread that waits for them), with shapes in args and a flow
// arrow from the pushing thread; memory counters back at their start value once the arrays are
// freed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
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
      // A worker, or the main thread when it waited for the op before a worker took it.
      const std::string thread = meta_name(trace, "thread_name", e["pid"], e["tid"]);
      EXPECT_TRUE(thread.rfind("cpu/0 worker", 0) == 0 || thread == "main")
          << thread << " " << e.dump();
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

// Help-while-waiting, as the trace shows it: the only worker is busy, so the op that the main
// thread waits for runs on the main thread; it is still on the cpu/0 row, with its flow arrow,
// and so is the WaitForVar op. The op the worker runs is on the worker's thread.
TEST(ProfilerOutput, OpRunByTheWaitingThreadIsOnItsThreadUnderTheDeviceRow) {
  auto engine = engine::Engine::create(engine::EngineType::kThreadedPerDevice, 1);
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_runtime_helped.json").string();
  profiler::set_config(
      {{"profile_imperative", "true"}, {"filename", path}, {"continuous_dump", "false"}});
  profiler::set_state(profiler::State::kRunning);
  engine::VarHandle busy = engine->new_variable();
  engine::VarHandle var = engine->new_variable();
  std::atomic<bool> started{false}, release{false};
  engine::PushOptions busy_options;
  busy_options.name = "busy_worker_op";
  busy_options.name_id = profiler::intern("busy_worker_op");
  engine->push(
      [&] {
        started = true;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!release.load() && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
      },
      Context::cpu(0), {}, std::vector<engine::VarHandle>{busy}, busy_options);
  while (!started.load()) std::this_thread::yield();
  engine::PushOptions options;
  options.name = "helped_op";
  options.name_id = profiler::intern("helped_op");
  const Shape shape({4, 2});
  const Shape* outputs[] = {&shape};
  options.output_shapes = outputs;
  engine->push([] {}, Context::cpu(0), {}, std::vector<engine::VarHandle>{var}, options);
  engine->wait_for_var(var);
  release = true;
  engine->wait_all();
  for (auto v : {busy, var}) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);

  const json trace = read_trace(path);
  std::map<std::string, std::string> thread_of;
  std::map<uint64_t, int64_t> start_tid;
  std::set<uint64_t> finish_ids;
  json helped;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (e.value("cat", "") == "dependency") continue;  // the push flows are counted here
    if (ph == "s") start_tid[e["id"].get<uint64_t>()] = e["tid"].get<int64_t>();
    if (ph == "f") finish_ids.insert(e["id"].get<uint64_t>());
    if (e.value("cat", "") != "operator" || (ph != "B" && ph != "X")) continue;
    EXPECT_EQ(meta_name(trace, "process_name", e["pid"], 0), "cpu/0") << e.dump();
    thread_of[e["name"]] = meta_name(trace, "thread_name", e["pid"], e["tid"]);
    if (e["name"] == "helped_op") helped = e;
  }
  EXPECT_EQ(thread_of["helped_op"], "main");
  EXPECT_EQ(thread_of["WaitForVar"], "main");
  EXPECT_EQ(thread_of["busy_worker_op"].rfind("cpu/0 worker", 0), 0u)
      << thread_of["busy_worker_op"];
  ASSERT_TRUE(helped.is_object());
  EXPECT_EQ(helped["args"]["outputs"], json::parse("[[4,2]]"));
  // Three flows (busy op, helped op, WaitForVar), each started and finished.
  EXPECT_EQ(start_tid.size(), 3u);
  EXPECT_EQ(finish_ids.size(), 3u);
  for (uint64_t id : finish_ids) EXPECT_TRUE(start_tid.count(id)) << id;
  std::filesystem::remove(path);
}

// An eager operator call whose arrays are free runs inside ops::invoke (Engine::try_run_inline):
// its event is on the cpu/0 row, on the calling thread, with its shapes, and has no push flow
// (it starts where it was pushed). Its output is complete when invoke returns.
TEST(ProfilerOutput, OperatorRunInsideInvokeIsOnTheCallingThreadUnderTheDeviceRow) {
  auto& engine = engine::Engine::get();
  if (engine.type() == engine::EngineType::kNaive) GTEST_SKIP() << "needs the threaded engine";
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_runtime_inline.json").string();
  NDArray a = ops::invoke("_ones", {}, {{"shape", "(3, 2)"}})[0];
  engine.wait_all();
  profiler::set_config(
      {{"profile_imperative", "true"}, {"filename", path}, {"continuous_dump", "false"}});
  profiler::set_state(profiler::State::kRunning);
  {
    NDArray b = ops::invoke("broadcast_add", std::vector<NDArray>{a, a})[0];
    EXPECT_EQ(static_cast<const float*>(b.data())[5], 2.0f);  // written already: no wait
  }
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);
  engine.wait_all();

  const json trace = read_trace(path);
  json add;
  size_t flows = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "s" || ph == "f") ++flows;
    if (e.value("cat", "") == "operator" && (ph == "B" || ph == "X") &&
        e["name"] == "broadcast_add") {
      add = e;
    }
  }
  ASSERT_TRUE(add.is_object()) << trace.dump();
  EXPECT_EQ(meta_name(trace, "process_name", add["pid"], 0), "cpu/0");
  EXPECT_EQ(meta_name(trace, "thread_name", add["pid"], add["tid"]), "main");
  EXPECT_EQ(add["args"]["inputs"], json::parse("[[3,2],[3,2]]"));
  EXPECT_EQ(add["args"]["outputs"], json::parse("[[3,2]]"));
  EXPECT_EQ(flows, 0u);
  std::filesystem::remove(path);
}

// Dependency flows (docs/trace-format.md#dependency-flows): in a chain A -> B -> C, A's
// completion makes B ready and B's makes C ready, so the trace has the arrows A -> B and B -> C,
// each from the end of the earlier span (its row and thread) to the start of the later one. D,
// ready when it is pushed, has none; nor does anything without profiling.
TEST(ProfilerOutput, DependencyFlowsFollowWhatMadeEachOperationReady) {
  auto engine = engine::Engine::create(engine::EngineType::kThreadedPerDevice, 1);
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_runtime_dependency.json").string();
  profiler::set_config(
      {{"profile_imperative", "true"}, {"filename", path}, {"continuous_dump", "false"}});
  engine::VarHandle v1 = engine->new_variable(), v2 = engine->new_variable(),
                    v3 = engine->new_variable(), v4 = engine->new_variable();
  auto options = [](const char* name) {
    engine::PushOptions o;
    o.name = name;
    o.name_id = profiler::intern(name);
    return o;
  };
  // Before profiling: neither recorded nor linked.
  engine->push([] {}, Context::cpu(0), {}, std::vector<engine::VarHandle>{v4},
               options("unprofiled_op"));
  engine->wait_all();
  profiler::set_state(profiler::State::kRunning);
  std::atomic<bool> release{false};
  engine->push(
      [&release] {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!release.load() && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::microseconds(100));
      },
      Context::cpu(0), {}, std::vector<engine::VarHandle>{v1}, options("op_a"));
  engine->push([] {}, Context::cpu(0), std::vector<engine::VarHandle>{v1},
               std::vector<engine::VarHandle>{v2}, options("op_b"));
  engine->push([] {}, Context::cpu(0), std::vector<engine::VarHandle>{v2},
               std::vector<engine::VarHandle>{v3}, options("op_c"));
  engine->push([] {}, Context::cpu(0), {}, std::vector<engine::VarHandle>{v4}, options("op_d"));
  release = true;
  engine->wait_all();
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);
  for (auto v : {v1, v2, v3, v4}) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();

  const json trace = read_trace(path);
  struct Span {
    double begin = -1, end = -1;
    int64_t pid = -1, tid = -1;
  };
  std::map<std::string, Span> spans;
  std::map<uint64_t, json> starts, finishes;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (e.value("cat", "") == "dependency") {
      EXPECT_EQ(e["name"], "dependency");
      (ph == "s" ? starts : finishes)[e["id"].get<uint64_t>()] = e;
      if (ph == "f") {
        EXPECT_EQ(e["bp"], "e");
      }
      continue;
    }
    if (e.value("cat", "") != "operator") continue;
    Span& span = spans[e["name"]];
    if (ph == "B") span.begin = e["ts"].get<double>();
    if (ph == "E") span.end = e["ts"].get<double>();
    span.pid = e["pid"].get<int64_t>();
    span.tid = e["tid"].get<int64_t>();
  }
  EXPECT_FALSE(spans.count("unprofiled_op"));
  ASSERT_EQ(starts.size(), 2u) << trace.dump();
  ASSERT_EQ(finishes.size(), 2u);
  // Each arrow: start at the end of `from`, on its row and thread; finish at the start of `to`.
  auto arrow_between = [&](const std::string& from, const std::string& to) {
    for (const auto& [id, s] : starts) {
      if (!finishes.count(id)) continue;
      const json& f = finishes[id];
      if (s["ts"].get<double>() == spans[from].end && s["pid"] == spans[from].pid &&
          s["tid"] == spans[from].tid && f["ts"].get<double>() == spans[to].begin &&
          f["pid"] == spans[to].pid && f["tid"] == spans[to].tid)
        return true;
    }
    return false;
  };
  EXPECT_TRUE(arrow_between("op_a", "op_b"));
  EXPECT_TRUE(arrow_between("op_b", "op_c"));
  for (const auto& [id, f] : finishes)
    EXPECT_NE(f["ts"].get<double>(), spans["op_d"].begin) << "op_d was ready at push";
  // Ids are unique per file and below 2^53 (exact in a JSON reader's double).
  for (const auto& [id, s] : starts) EXPECT_LT(id, uint64_t{1} << 53);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace nanomx
