// The dependency engine against a sequential replay, plus ordering, errors and deletion.
#include "nanomx/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "nanomx/error.h"

namespace nanomx::engine {
namespace {

struct EngineParam {
  EngineType type;
  int workers;
};

class EngineDagTest : public ::testing::TestWithParam<EngineParam> {};

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
  x ^= x >> 31;
  return x * 0xBF58476D1CE4E5B9ull;
}

// Random ops over a few variables; each op records the values it read and writes a function of
// them. Replaying the ops in push order must give the same observations and final values.
TEST_P(EngineDagTest, RandomDagMatchesSequentialReplay) {
  const auto param = GetParam();
  auto engine = Engine::create(param.type, param.workers);
  constexpr int kVars = 5;
  constexpr int kOps = 3000;
  std::mt19937 rng(1234 + param.workers);
  struct OpSpec {
    std::vector<int> reads, writes;
  };
  std::vector<OpSpec> specs(kOps);
  for (auto& s : specs) {
    for (int v = 0; v < kVars; ++v) {
      const int r = static_cast<int>(rng() % 4);
      if (r == 0) s.writes.push_back(v);
      if (r == 1) s.reads.push_back(v);
    }
  }
  std::vector<uint64_t> state(kVars, 0);
  std::vector<std::vector<uint64_t>> observed(kOps);
  std::vector<VarHandle> vars;
  for (int v = 0; v < kVars; ++v) vars.push_back(engine->new_variable());
  for (int i = 0; i < kOps; ++i) {
    std::vector<VarHandle> reads, writes;
    for (int v : specs[i].reads) reads.push_back(vars[v]);
    for (int v : specs[i].writes) writes.push_back(vars[v]);
    engine->push(
        [&, i] {
          uint64_t acc = static_cast<uint64_t>(i);
          for (int v : specs[i].reads) {
            observed[i].push_back(state[v]);
            acc = mix(acc, state[v]);
          }
          for (int v : specs[i].writes) {
            observed[i].push_back(state[v]);
            state[v] = mix(acc, state[v]);
          }
        },
        Context::cpu(0), reads, writes);
    if (i % 500 == 0) engine->wait_for_var(vars[static_cast<size_t>(i) % kVars]);
  }
  engine->wait_all();

  std::vector<uint64_t> expect_state(kVars, 0);
  for (int i = 0; i < kOps; ++i) {
    std::vector<uint64_t> expect_obs;
    uint64_t acc = static_cast<uint64_t>(i);
    for (int v : specs[i].reads) {
      expect_obs.push_back(expect_state[v]);
      acc = mix(acc, expect_state[v]);
    }
    for (int v : specs[i].writes) {
      expect_obs.push_back(expect_state[v]);
      expect_state[v] = mix(acc, expect_state[v]);
    }
    ASSERT_EQ(observed[i], expect_obs) << "op " << i;
  }
  EXPECT_EQ(state, expect_state);
  for (VarHandle v : vars) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineDagTest,
                         ::testing::Values(EngineParam{EngineType::kThreadedPerDevice, 1},
                                           EngineParam{EngineType::kThreadedPerDevice, 4},
                                           EngineParam{EngineType::kNaive, 1}),
                         [](const auto& info) {
                           return std::string(info.param.type == EngineType::kNaive ? "Naive"
                                                                                    : "Threaded") +
                                  std::to_string(info.param.workers);
                         });

// Two reads pushed between writes run at the same time: each waits for the other to start.
TEST(ThreadedEngine, ReadsBetweenWritesRunTogether) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 2);
  VarHandle var = engine->new_variable();
  engine->push([] {}, Context::cpu(0), {}, std::vector<VarHandle>{var});
  std::mutex mutex;
  std::condition_variable cv;
  int started = 0;
  std::atomic<int> met{0};
  auto reader = [&] {
    std::unique_lock lock(mutex);
    ++started;
    cv.notify_all();
    // Fails (instead of hanging) if the other read never starts while this one runs.
    if (cv.wait_for(lock, std::chrono::seconds(20), [&] { return started == 2; })) ++met;
  };
  engine->push(reader, Context::cpu(0), std::vector<VarHandle>{var}, {});
  engine->push(reader, Context::cpu(0), std::vector<VarHandle>{var}, {});
  engine->wait_all();
  EXPECT_EQ(met.load(), 2);
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

// A write waits for every earlier read; a read waits for the earlier write.
TEST(ThreadedEngine, WriteWaitsForEarlierReads) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 4);
  VarHandle var = engine->new_variable();
  std::atomic<int> reads_done{0};
  int seen_by_write = -1;
  int value = 0;
  int seen_by_read = -1;
  for (int i = 0; i < 3; ++i) {
    engine->push(
        [&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          ++reads_done;
        },
        Context::cpu(0), std::vector<VarHandle>{var}, {});
  }
  engine->push(
      [&] {
        seen_by_write = reads_done.load();
        value = 42;
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var});
  engine->push([&] { seen_by_read = value; }, Context::cpu(0), std::vector<VarHandle>{var}, {});
  engine->wait_for_var(var);
  EXPECT_EQ(seen_by_write, 3);
  engine->wait_all();
  EXPECT_EQ(seen_by_read, 42);
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

class EngineErrorTest : public ::testing::TestWithParam<EngineType> {};

TEST_P(EngineErrorTest, ErrorIsKeptOnOutputsAndRaisedAtWait) {
  auto engine = Engine::create(GetParam(), 2);
  VarHandle a = engine->new_variable();
  VarHandle b = engine->new_variable();
  VarHandle c = engine->new_variable();
  PushOptions failing;
  failing.name = "failing_op";
  engine->push([] { throw Error("bad things"); }, Context::cpu(0), {}, std::vector<VarHandle>{a},
               failing);
  bool dependent_ran = false;
  bool independent_ran = false;
  engine->push([&] { dependent_ran = true; }, Context::cpu(0), std::vector<VarHandle>{a},
               std::vector<VarHandle>{b});
  engine->push([&] { independent_ran = true; }, Context::cpu(0), {}, std::vector<VarHandle>{c});
  try {
    engine->wait_for_var(b);
    FAIL() << "wait_for_var on a skipped op's output did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failing_op"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad things"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(dependent_ran);
  engine->wait_for_var(c);
  EXPECT_TRUE(independent_ran);
  EXPECT_THROW(engine->wait_for_var(a), Error);
  EXPECT_NO_THROW(engine->wait_for_var(a));  // raised once
  EXPECT_THROW(engine->wait_all(), Error);
  EXPECT_NO_THROW(engine->wait_all());
  // The engine keeps working, and the cleared variable is usable again.
  int value = 0;
  engine->push([&] { value = 7; }, Context::cpu(0), {}, std::vector<VarHandle>{a});
  engine->wait_for_var(a);
  EXPECT_EQ(value, 7);
  for (VarHandle v : {a, b, c}) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

TEST_P(EngineErrorTest, DeleteRunsAfterPendingUses) {
  auto engine = Engine::create(GetParam(), 2);
  VarHandle var = engine->new_variable();
  std::atomic<int> order{0};
  int write_at = -1;
  int delete_at = -1;
  engine->push(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        write_at = order++;
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var});
  engine->delete_variable([&] { delete_at = order++; }, Context::cpu(0), var);
  engine->wait_all();
  EXPECT_EQ(write_at, 0);
  EXPECT_EQ(delete_at, 1);
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineErrorTest,
                         ::testing::Values(EngineType::kThreadedPerDevice, EngineType::kNaive),
                         [](const auto& info) {
                           return info.param == EngineType::kNaive ? "Naive" : "Threaded";
                         });

TEST(NaiveEngine, RunsInsidePushOnTheCallingThread) {
  auto engine = Engine::create(EngineType::kNaive, 1);
  VarHandle var = engine->new_variable();
  std::thread::id ran_on;
  engine->push([&] { ran_on = std::this_thread::get_id(); }, Context::cpu(0), {},
               std::vector<VarHandle>{var});
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  engine->delete_variable({}, Context::cpu(0), var);
}

TEST(ThreadedEngine, RunsOnAWorkerThread) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1);
  VarHandle var = engine->new_variable();
  std::thread::id ran_on;
  engine->push([&] { ran_on = std::this_thread::get_id(); }, Context::cpu(0), {},
               std::vector<VarHandle>{var});
  engine->wait_for_var(var);
  EXPECT_NE(ran_on, std::this_thread::get_id());
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

TEST(Engine, ParsesEngineTypes) {
  EXPECT_EQ(parse_engine_type("NaiveEngine"), EngineType::kNaive);
  EXPECT_EQ(parse_engine_type("ThreadedEnginePerDevice"), EngineType::kThreadedPerDevice);
  try {
    parse_engine_type("Bogus");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NaiveEngine"), std::string::npos);
  }
  EXPECT_THROW(Engine::create(EngineType::kThreadedPerDevice, 0), Error);
}

}  // namespace
}  // namespace nanomx::engine
