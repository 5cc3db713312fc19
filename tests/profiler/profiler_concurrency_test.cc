// Eight threads record while another thread dumps (and pauses): no event lost or duplicated,
// each thread's events in order. Runs under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "nanomx/profiler.h"
#include "profiler_fixture.h"
#include "trace_file.h"

namespace prof = nanomx::profiler;
using nanomx::testing::json;

namespace {

class ProfilerConcurrency : public nanomx::testing::ProfilerTest {};

constexpr int kThreads = 8;
constexpr int kEventsPerThread = 20000;

// Values each counter "c<k>" has in the trace, in file order.
std::map<std::string, std::vector<uint64_t>> counter_values(const json& trace) {
  std::map<std::string, std::vector<uint64_t>> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "C" || e["cat"] != "Threads") continue;
    std::string name = e["name"];
    out[name].push_back(e["args"][name]);
  }
  return out;
}

void run_producers(prof::Domain& domain, std::atomic<int>* running) {
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      prof::Counter c(domain, "c" + std::to_string(k));
      for (int i = 0; i < kEventsPerThread; ++i) c.set_value(static_cast<uint64_t>(i));
      running->fetch_sub(1);
    });
  }
  for (auto& t : threads) t.join();
}

// Everything on, a continuous-dump thread flushing every 10 ms besides the test's own dumps.
void start_continuous_profiling(const std::string& file) {
  prof::set_config({{"profile_all", "true"},
                    {"filename", file},
                    {"continuous_dump", "true"},
                    {"dump_period", "0.01"},
                    {"aggregate_stats", "true"}});
  prof::set_state(prof::State::kRunning);
}

TEST_F(ProfilerConcurrency, EightThreadsRecordWhileAnotherDumps) {
  start_continuous_profiling("concurrent.json");
  prof::Domain domain("Threads");
  std::atomic<int> running{kThreads};
  std::thread dumper([&] {
    while (running.load() > 0) prof::dump(false);
  });
  run_producers(domain, &running);
  dumper.join();
  prof::dump(true);

  auto values = counter_values(nanomx::testing::read_trace("concurrent.json"));
  ASSERT_EQ(values.size(), static_cast<size_t>(kThreads));
  for (const auto& [name, list] : values) {
    ASSERT_EQ(list.size(), static_cast<size_t>(kEventsPerThread)) << name;
    for (size_t i = 0; i < list.size(); ++i) ASSERT_EQ(list[i], i) << name;
  }
  auto stats = json::parse(prof::dumps(false, prof::StatsFormat::kJson));
  for (int k = 0; k < kThreads; ++k)
    EXPECT_EQ(stats["Time"]["Threads"]["c" + std::to_string(k)]["Count"], kEventsPerThread);
}

TEST_F(ProfilerConcurrency, PausingWhileThreadsRecordLosesNothingThatWasRecorded) {
  start_continuous_profiling("paused_concurrent.json");
  prof::Domain domain("Threads");
  std::atomic<int> running{kThreads};
  std::thread controller([&] {
    for (int round = 0; running.load() > 0; ++round) {
      if (round % 2) {
        prof::pause();
      } else {
        prof::resume();
      }
      prof::dump(false);
      std::this_thread::yield();
    }
    prof::resume();
  });
  run_producers(domain, &running);
  controller.join();
  prof::dump(true);

  auto values = counter_values(nanomx::testing::read_trace("paused_concurrent.json"));
  auto stats = json::parse(prof::dumps(false, prof::StatsFormat::kJson));
  for (const auto& [name, list] : values) {
    for (size_t i = 1; i < list.size(); ++i) ASSERT_LT(list[i - 1], list[i]) << name;
    // What the recording threads counted at record time is exactly what reached the file.
    EXPECT_EQ(stats["Time"]["Threads"][name]["Count"], list.size()) << name;
  }
}

// current_config() copies under the profiler's lock: reading it while another thread calls
// set_config is no data race (ThreadSanitizer reports one against a returned reference).
TEST_F(ProfilerConcurrency, CurrentConfigWhileAnotherThreadSetsConfig) {
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i)
      prof::set_config({{"filename", "config_race_" + std::to_string(i % 2) + ".json"},
                        {"continuous_dump", "false"}});
    done = true;
  });
  while (!done.load()) {
    const std::string name = prof::current_config().filename;
    EXPECT_TRUE(name == "config_race_0.json" || name == "config_race_1.json" ||
                name.rfind("config_race_", 0) != 0)
        << name;
  }
  writer.join();
}

}  // namespace
