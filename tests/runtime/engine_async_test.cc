// Asynchronous operations (push_async): completion from other threads, out of order, errors,
// double and lost completions, waits, and the profiler's span of an operation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"

namespace nanomx::engine {
namespace {

using namespace std::chrono_literals;

// Completions handed to a "device" thread that calls them later, in the order it is told.
// Each is filed under the index of its operation (workers may start operations in any order).
class Completer {
 public:
  void add(size_t i, Completion c) {
    std::lock_guard lock(mutex_);
    if (pending_.size() <= i) pending_.resize(i + 1);
    pending_[i] = std::move(c);
    ++count_;
    cv_.notify_all();
  }
  // Waits until n completions were handed over.
  void wait_for(size_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return count_ >= n; });
  }
  Completion take(size_t i) {
    std::lock_guard lock(mutex_);
    return std::move(pending_.at(i));
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Completion> pending_;
  size_t count_ = 0;
};

PushOptions named(const char* name, profiler::NameId id = 0) {
  PushOptions options;
  options.name = name;
  options.name_id = id;
  return options;
}

struct EngineParam {
  EngineType type;
  int workers;
};

class EngineAsyncTest : public ::testing::TestWithParam<EngineParam> {
 protected:
  std::unique_ptr<Engine> make() { return Engine::create(GetParam().type, GetParam().workers); }
  bool naive() const { return GetParam().type == EngineType::kNaive; }
};

TEST_P(EngineAsyncTest, CompletedFromAnotherThreadReleasesDependents) {
  auto engine = make();
  VarHandle v = engine->new_variable();
  const VarHandle vars[] = {v};
  std::atomic<int> value{0};
  std::vector<std::thread> threads;
  std::mutex threads_mutex;
  for (int i = 1; i <= 20; ++i) {
    engine->push_async(
        [&, i](Completion done) {
          // The previous write completed (and so its value is visible) before this one started.
          EXPECT_EQ(value.load(), i - 1);
          std::lock_guard lock(threads_mutex);
          threads.emplace_back([&value, i, done] {
            std::this_thread::sleep_for(1ms);
            value.store(i);
            done.done();
          });
        },
        Context::cpu(0), {}, vars);
  }
  std::atomic<int> seen{-1};
  engine->push([&] { seen = value.load(); }, Context::cpu(0), vars, {});
  engine->wait_for_var(v);
  engine->wait_all();
  EXPECT_EQ(seen.load(), 20);
  for (auto& t : threads) t.join();
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

// The worker is free once the function returned: a later independent operation runs while the
// first one is still waiting for its completion.
TEST_P(EngineAsyncTest, WorkerIsFreeBeforeCompletion) {
  if (naive()) GTEST_SKIP() << "the naive engine waits for each completion inside push";
  auto engine = make();
  VarHandle a = engine->new_variable();
  VarHandle b = engine->new_variable();
  const VarHandle wa[] = {a};
  const VarHandle wb[] = {b};
  Completer device;
  engine->push_async([&](Completion c) { device.add(0, std::move(c)); }, Context::cpu(0), {}, wa);
  std::atomic<bool> ran{false};
  engine->push([&] { ran = true; }, Context::cpu(0), {}, wb);
  engine->wait_for_var(b);  // would hang if the worker were held by the first operation
  EXPECT_TRUE(ran.load());
  device.wait_for(1);
  std::thread([&] { device.take(0).done(); }).join();
  engine->wait_for_var(a);
  engine->delete_variable({}, Context::cpu(0), a);
  engine->delete_variable({}, Context::cpu(0), b);
  engine->wait_all();
}

TEST_P(EngineAsyncTest, OutOfOrderCompletionsKeepPerVariableOrder) {
  if (naive()) GTEST_SKIP() << "the naive engine waits for each completion inside push";
  auto engine = make();
  constexpr int kOps = 8;
  std::vector<VarHandle> vars;
  for (int i = 0; i < kOps; ++i) vars.push_back(engine->new_variable());
  Completer device;
  std::vector<std::atomic<int>> written(kOps);
  std::vector<int> read_back(kOps, -1);
  for (int i = 0; i < kOps; ++i) {
    const VarHandle w[] = {vars[static_cast<size_t>(i)]};
    engine->push_async(
        [&device, i](Completion c) { device.add(static_cast<size_t>(i), std::move(c)); },
        Context::cpu(0), {}, w);
    // Reads the variable: must wait for the asynchronous write's completion.
    engine->push([&, i] { read_back[static_cast<size_t>(i)] = written[i].load(); }, Context::cpu(0),
                 w, {});
  }
  device.wait_for(kOps);
  std::thread device_thread([&] {
    for (int i = kOps - 1; i >= 0; --i) {  // completes the last pushed first
      written[static_cast<size_t>(i)].store(i + 100);
      device.take(static_cast<size_t>(i)).done();
      std::this_thread::sleep_for(200us);
    }
  });
  engine->wait_all();
  device_thread.join();
  for (int i = 0; i < kOps; ++i) EXPECT_EQ(read_back[static_cast<size_t>(i)], i + 100) << i;
  for (VarHandle v : vars) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

TEST_P(EngineAsyncTest, WaitAllWaitsForPendingCompletion) {
  auto engine = make();
  VarHandle v = engine->new_variable();
  const VarHandle w[] = {v};
  std::atomic<bool> completed{false};
  std::thread device;
  engine->push_async(
      [&](Completion c) {
        device = std::thread([&completed, c] {
          std::this_thread::sleep_for(50ms);
          completed = true;
          c.done();
        });
      },
      Context::cpu(0), {}, w);
  engine->wait_all();
  EXPECT_TRUE(completed.load());
  device.join();
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

TEST_P(EngineAsyncTest, ErrorsThroughTheCompletionPropagate) {
  auto engine = make();
  VarHandle a = engine->new_variable();
  VarHandle b = engine->new_variable();
  const VarHandle wa[] = {a};
  const VarHandle wb[] = {b};
  std::thread device;
  engine->push_async(
      [&](Completion c) {
        device = std::thread([c] { c.done(std::make_exception_ptr(std::runtime_error("boom"))); });
      },
      Context::cpu(0), {}, wa, named("async_op"));
  std::atomic<bool> dependent_ran{false};
  engine->push([&] { dependent_ran = true; }, Context::cpu(0), wa, wb, named("dependent"));
  try {
    engine->wait_for_var(b);
    FAIL() << "the dependent should inherit the error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("operator async_op failed: boom"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(dependent_ran.load());
  EXPECT_THROW(engine->wait_for_var(a), Error);
  EXPECT_THROW(engine->wait_all(), Error);
  engine->wait_all();  // raised once
  device.join();

  // fail(message) and a function that throws before completing behave the same.
  engine->push_async([](Completion c) { c.fail("no device"); }, Context::cpu(0), {}, wa,
                     named("failing"));
  try {
    engine->wait_for_var(a);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("operator failing failed: no device"), std::string::npos)
        << e.what();
  }
  engine->push_async([](Completion) { throw std::runtime_error("thrown"); }, Context::cpu(0), {},
                     wa, named("thrower"));
  try {
    engine->wait_for_var(a);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("operator thrower failed: thrown"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(engine->wait_all(), Error);
  engine->delete_variable({}, Context::cpu(0), a);
  engine->delete_variable({}, Context::cpu(0), b);
  engine->wait_all();
}

TEST_P(EngineAsyncTest, SecondCompletionIsAnError) {
  auto engine = make();
  VarHandle v = engine->new_variable();
  const VarHandle w[] = {v};
  std::string second_error;
  engine->push_async(
      [&](Completion c) {
        const Completion copy = c;
        c.done();
        try {
          copy.done();
        } catch (const Error& e) {
          second_error = e.what();
        }
      },
      Context::cpu(0), {}, w, named("twice"));
  engine->wait_for_var(v);  // the first completion succeeded: no error kept
  engine->wait_all();
  EXPECT_NE(second_error.find("completion of operator twice was called more than once"),
            std::string::npos)
      << second_error;
  EXPECT_THROW(Completion().done(), Error);  // an empty completion
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

TEST_P(EngineAsyncTest, LostCompletionIsAnErrorNotAHang) {
  auto engine = make();
  VarHandle v = engine->new_variable();
  const VarHandle w[] = {v};
  engine->push_async([](Completion) {}, Context::cpu(0), {}, w, named("forgetful"));
  try {
    engine->wait_for_var(v);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "operator forgetful failed: its completion was destroyed without being called"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(engine->wait_all(), Error);
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

// A function that throws after completing: the operation succeeded; the exception is raised by
// the next wait_all.
TEST_P(EngineAsyncTest, ThrowAfterCompletionIsRaisedByWaitAll) {
  auto engine = make();
  VarHandle v = engine->new_variable();
  const VarHandle w[] = {v};
  engine->push_async(
      [](Completion c) {
        c.done();
        throw std::runtime_error("late");
      },
      Context::cpu(0), {}, w, named("late_thrower"));
  EXPECT_NO_THROW(engine->wait_for_var(v));
  EXPECT_THROW(engine->wait_all(), Error);
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

TEST_P(EngineAsyncTest, ManyConcurrentCompletions) {
  auto engine = make();
  constexpr int kVars = 4;
  constexpr int kOps = 400;
  std::vector<VarHandle> vars;
  for (int i = 0; i < kVars; ++i) vars.push_back(engine->new_variable());
  std::vector<int64_t> counters(kVars, 0);
  std::vector<std::thread> threads;
  std::mutex threads_mutex;
  for (int i = 0; i < kOps; ++i) {
    const size_t k = static_cast<size_t>(i % kVars);
    const VarHandle w[] = {vars[k]};
    if (i % 3 == 0) {
      engine->push([&counters, k] { ++counters[k]; }, Context::cpu(0), {}, w);
      continue;
    }
    engine->push_async(
        [&, k, i](Completion c) {
          if (i % 3 == 1) {  // completed inline
            ++counters[k];
            c.done();
            return;
          }
          std::lock_guard lock(threads_mutex);
          threads.emplace_back([&counters, k, c] {
            ++counters[k];
            c.done();
          });
        },
        Context::cpu(0), {}, w);
  }
  engine->wait_all();
  for (int i = 0; i < kVars; ++i) EXPECT_EQ(counters[static_cast<size_t>(i)], kOps / kVars);
  for (auto& t : threads) t.join();
  for (VarHandle v : vars) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

TEST_P(EngineAsyncTest, EmptyFunctionIsRejected) {
  auto engine = make();
  VarHandle v = engine->new_variable();
  const VarHandle w[] = {v};
  EXPECT_THROW(engine->push_async(AsyncFn(), Context::cpu(0), {}, w, named("empty")), Error);
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

// Worker pools are chosen per device type: a type without one is refused at push, by name.
TEST(EngineDevices, NoWorkerPoolForDeviceIsAClearError) {
  if (nanomx::num_gpus() > 0) GTEST_SKIP() << "a GPU is visible: gpu has worker pools";
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1);
  VarHandle v = engine->new_variable();
  const VarHandle w[] = {v};
  const Context gpu{DeviceType::kGPU, 0};
  for (bool async : {false, true}) {
    try {
      if (async) {
        engine->push_async([](Completion c) { c.done(); }, gpu, {}, w);
      } else {
        engine->push([] {}, gpu, {}, w);
      }
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no gpu worker pool in this build (gpu(0))"),
                std::string::npos)
          << e.what();
    }
  }
  // Nothing was queued: the engine still works.
  engine->push([] {}, Context::cpu(0), {}, w);
  engine->wait_for_var(v);
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineAsyncTest,
                         ::testing::Values(EngineParam{EngineType::kThreadedPerDevice, 1},
                                           EngineParam{EngineType::kThreadedPerDevice, 2},
                                           EngineParam{EngineType::kNaive, 1}),
                         [](const auto& info) {
                           return std::string(info.param.type == EngineType::kNaive ? "Naive"
                                                                                    : "Threaded") +
                                  std::to_string(info.param.workers);
                         });

// The operation's span runs from its start to its completion (not its function's return), on
// its device's row, with the flow arrow from the pushing thread.
TEST(EngineAsyncProfiler, SpanCoversCompletion) {
  using nlohmann::json;
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("nanomx_async_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trace.json").string();
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1);
  VarHandle v = engine->new_variable();
  const VarHandle w[] = {v};
  profiler::set_config({{"profile_all", "true"}, {"filename", path}, {"continuous_dump", "false"}});
  profiler::set_state(profiler::State::kRunning);
  std::thread device;
  static const profiler::NameId kName = profiler::intern("async_sleeper");
  engine->push_async(
      [&](Completion c) {
        device = std::thread([c] {
          std::this_thread::sleep_for(30ms);
          c.done();
        });
      },
      Context::cpu(0), {}, w, named("async_sleeper", kName));
  engine->wait_all();
  device.join();
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);
  engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();

  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const json trace = json::parse(in);
  double dur = -1;
  int64_t pid = -1;
  std::vector<uint64_t> flow_starts;
  std::vector<std::pair<uint64_t, int64_t>> flow_ends;  // id, pid
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph == "s") flow_starts.push_back(e["id"].get<uint64_t>());
    if (ph == "f") flow_ends.emplace_back(e["id"].get<uint64_t>(), e["pid"].get<int64_t>());
    if (e.value("name", "") != "async_sleeper") continue;
    if (ph == "X") {
      dur = e["dur"].get<double>();
      pid = e["pid"].get<int64_t>();
    } else if (ph == "B") {
      dur = -e["ts"].get<double>();
      pid = e["pid"].get<int64_t>();
    } else if (ph == "E") {
      dur += e["ts"].get<double>();
    }
  }
  EXPECT_GE(dur, 30'000.0) << "the span must end at the completion (µs)";
  std::string row;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name" &&
        e["pid"].get<int64_t>() == pid) {
      row = e["args"]["name"].get<std::string>();
    }
  }
  EXPECT_EQ(row, "cpu/0");
  bool flow = false;  // an arrow from the pushing thread to the operation's row
  for (const auto& [id, end_pid] : flow_ends) {
    flow |= end_pid == pid &&
            std::find(flow_starts.begin(), flow_starts.end(), id) != flow_starts.end();
  }
  EXPECT_TRUE(flow);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nanomx::engine
