// The dependency engine against a sequential replay, plus ordering, errors and deletion.
#include "nanomx/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/object_pool.h"
#include "engine/var.h"
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

// How a test hands an operation to the engine: push, or (for every other one) try_run_inline
// first and push only when it did not run (what ops::invoke does).
void submit(Engine& engine, bool try_inline, int i, std::function<void()> fn,
            std::span<const VarHandle> reads, std::span<const VarHandle> writes,
            PushOptions options = {}) {
  if (try_inline && i % 2 == 1) {
    options.bytes_touched = 8;  // small: inline whenever its variables are free
    if (engine.try_run_inline(fn, Context::cpu(0), reads, writes, options)) return;
  }
  engine.push(std::move(fn), Context::cpu(0), reads, writes, options);
}

// Random ops over a few variables; each op records the values it read and writes a function of
// them. Replaying the ops in push order must give the same observations and final values.
void random_dag_matches_sequential_replay(const EngineParam& param, bool try_inline) {
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
    submit(
        *engine, try_inline, i,
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
        reads, writes);
    // Frequent waits: the waiting thread runs queued operations itself (help-while-waiting).
    if (i % 7 == 0) engine->wait_for_var(vars[rng() % kVars]);
    if (i % 500 == 0) engine->wait_all();
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

TEST_P(EngineDagTest, RandomDagMatchesSequentialReplay) {
  random_dag_matches_sequential_replay(GetParam(), false);
}

// Half the operations through try_run_inline: those that run inside it (their variables free)
// and those pushed after it declined keep the same order as pushing all of them.
TEST_P(EngineDagTest, RandomDagThroughTryRunInlineMatchesSequentialReplay) {
  random_dag_matches_sequential_replay(GetParam(), true);
}

// The same with failing operations: an op that throws stores its error on its outputs; an op
// that reads or writes a variable holding an error is skipped and passes it on. At quiet points
// (after wait_all) every variable is waited for, which raises and clears its error. The waits in
// between help run operations on this thread. Must match a sequential model exactly.
void random_dag_with_errors_matches_sequential_model(const EngineParam& param, bool try_inline) {
  auto engine = Engine::create(param.type, param.workers);
  constexpr int kVars = 6;
  constexpr int kOps = 3000;
  std::mt19937 rng(99 + param.workers);
  struct OpSpec {
    std::vector<int> reads, writes;
    bool fails = false;
  };
  std::vector<OpSpec> specs(kOps);
  for (auto& s : specs) {
    for (int v = 0; v < kVars; ++v) {
      const int r = static_cast<int>(rng() % 5);
      if (r == 0) s.writes.push_back(v);
      if (r == 1) s.reads.push_back(v);
    }
    s.fails = rng() % 40 == 0;
  }
  std::vector<uint64_t> state(kVars, 0);
  std::vector<char> ran(kOps, 0);
  std::vector<VarHandle> vars;
  for (int v = 0; v < kVars; ++v) vars.push_back(engine->new_variable());
  // The model: which variables hold an error, replayed in push order.
  std::vector<uint64_t> expect_state(kVars, 0);
  std::vector<char> expect_ran(kOps, 0);
  std::vector<char> poisoned(kVars, 0);
  std::vector<char> expect_raised, raised;
  for (int i = 0; i < kOps; ++i) {
    std::vector<VarHandle> reads, writes;
    for (int v : specs[i].reads) reads.push_back(vars[v]);
    for (int v : specs[i].writes) writes.push_back(vars[v]);
    PushOptions options;
    options.name = "random_op";
    submit(
        *engine, try_inline, i,
        [&, i] {
          ran[i] = 1;
          if (specs[i].fails) throw Error("op " + std::to_string(i) + " fails");
          uint64_t acc = static_cast<uint64_t>(i);
          for (int v : specs[i].reads) acc = mix(acc, state[v]);
          for (int v : specs[i].writes) state[v] = mix(acc, state[v]);
        },
        reads, writes, options);
    bool skip = false;
    for (const auto* list : {&specs[i].reads, &specs[i].writes}) {
      for (int v : *list) skip = skip || poisoned[v];
    }
    if (!skip) {
      expect_ran[i] = 1;
      if (!specs[i].fails) {
        uint64_t acc = static_cast<uint64_t>(i);
        for (int v : specs[i].reads) acc = mix(acc, expect_state[v]);
        for (int v : specs[i].writes) expect_state[v] = mix(acc, expect_state[v]);
      }
    }
    if (skip || specs[i].fails) {
      for (int v : specs[i].writes) poisoned[v] = 1;
    }
    if (i % 100 == 99) {
      try {
        engine->wait_all();
      } catch (const Error&) {
      }
      for (int v = 0; v < kVars; ++v) {
        bool threw = false;
        try {
          engine->wait_for_var(vars[v]);
        } catch (const Error& e) {
          threw = true;
          EXPECT_NE(std::string(e.what()).find("random_op"), std::string::npos) << e.what();
        }
        raised.push_back(threw);
        expect_raised.push_back(poisoned[v]);
        poisoned[v] = 0;
      }
    } else if (i % 5 == 0) {
      // A wait in the middle: must not raise an error that the model does not have yet.
      const int v = static_cast<int>(rng() % kVars);
      if (!poisoned[v]) {
        EXPECT_NO_THROW(engine->wait_for_var(vars[v])) << "op " << i;
      }
    }
  }
  try {
    engine->wait_all();
  } catch (const Error&) {
  }
  EXPECT_EQ(ran, expect_ran);
  EXPECT_EQ(state, expect_state);
  EXPECT_EQ(raised, expect_raised);
  for (VarHandle v : vars) engine->delete_variable({}, Context::cpu(0), v);
  try {
    engine->wait_all();
  } catch (const Error&) {
  }
}

TEST_P(EngineDagTest, RandomDagWithErrorsMatchesSequentialModel) {
  random_dag_with_errors_matches_sequential_model(GetParam(), false);
}

TEST_P(EngineDagTest, RandomDagWithErrorsThroughTryRunInlineMatchesSequentialModel) {
  random_dag_with_errors_matches_sequential_model(GetParam(), true);
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

// A variable with nothing pending is deleted inside delete_variable, on the calling thread (the
// threaded engine's fast path does what the delete operation would do at push); an error from
// the callback reaches wait_all.
TEST_P(EngineErrorTest, IdleVariableIsDeletedAtOnceAndItsErrorReachesWaitAll) {
  auto engine = Engine::create(GetParam(), 2);
  VarHandle var = engine->new_variable();
  std::thread::id deleted_on;
  engine->delete_variable([&] { deleted_on = std::this_thread::get_id(); }, Context::cpu(0), var);
  EXPECT_EQ(deleted_on, std::this_thread::get_id());
  engine->wait_all();

  VarHandle other = engine->new_variable();
  engine->delete_variable([] { throw nanomx::Error("the storage would not go"); }, Context::cpu(0),
                          other);
  try {
    engine->wait_all();
    ADD_FAILURE() << "wait_all did not raise the callback's error";
  } catch (const nanomx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the storage would not go"), std::string::npos)
        << e.what();
  }
  engine->wait_all();  // reported once
}

// An ordering variable (the random generator's) orders its operations but keeps no error: after
// one fails, the next ones ordered on it still run (its own outputs keep the error).
TEST_P(EngineErrorTest, OrderingVariableKeepsNoError) {
  auto engine = Engine::create(GetParam(), 2);
  VarHandle order = engine->new_ordering_variable();
  VarHandle out1 = engine->new_variable();
  VarHandle out2 = engine->new_variable();
  std::vector<int> ran;
  engine->push([&] { ran.push_back(1); }, Context::cpu(0), {}, std::vector<VarHandle>{order});
  engine->push([] { throw Error("bad parameters"); }, Context::cpu(0), {},
               std::vector<VarHandle>{order, out1});
  engine->push([&] { ran.push_back(3); }, Context::cpu(0), {}, std::vector<VarHandle>{order, out2});
  EXPECT_NO_THROW(engine->wait_for_var(out2));
  EXPECT_NO_THROW(engine->wait_for_var(order));
  EXPECT_EQ(ran, (std::vector<int>{1, 3}));
  EXPECT_THROW(engine->wait_for_var(out1), Error);
  EXPECT_THROW(engine->wait_all(), Error);  // the engine's first error, as for any failure
  for (VarHandle v : {order, out1, out2}) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
  // A variable from the pool after an ordering one is an ordinary one again.
  VarHandle plain = engine->new_variable();
  engine->push([] { throw Error("kept"); }, Context::cpu(0), {}, std::vector<VarHandle>{plain});
  EXPECT_THROW(engine->wait_for_var(plain), Error);
  EXPECT_THROW(engine->wait_all(), Error);
  engine->delete_variable({}, Context::cpu(0), plain);
  engine->wait_all();
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

// Nobody waits: a worker runs the operation.
TEST(ThreadedEngine, RunsOnAWorkerThread) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1);
  VarHandle var = engine->new_variable();
  std::thread::id ran_on;
  std::atomic<bool> done{false};
  engine->push(
      [&] {
        ran_on = std::this_thread::get_id();
        done = true;
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var});
  while (!done.load()) std::this_thread::yield();
  EXPECT_NE(ran_on, std::this_thread::get_id());
  engine->wait_for_var(var);
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

// Inline execution: a small operation ready at push runs inside push on the pushing thread.
TEST(ThreadedEngine, SmallReadyOperationRunsInsidePush) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1, /*inline_bytes=*/4096);
  VarHandle var = engine->new_variable();
  std::thread::id ran_on;
  bool ran = false;
  PushOptions small;
  small.bytes_touched = 40;
  engine->push(
      [&] {
        ran_on = std::this_thread::get_id();
        ran = true;
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var}, small);
  EXPECT_TRUE(ran);  // done when push returned: no wait was needed
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

// Unknown cost (0), a cost over the limit, or a limit of 0: the workers run it.
TEST(ThreadedEngine, LargeOrUnknownOperationsGoToTheWorkers) {
  for (auto [limit, bytes] : {std::pair<size_t, size_t>{4096, 0}, {4096, 4097}, {0, 40}}) {
    auto engine = Engine::create(EngineType::kThreadedPerDevice, 1, limit);
    VarHandle var = engine->new_variable();
    std::atomic<bool> done{false};
    std::thread::id ran_on;
    PushOptions options;
    options.bytes_touched = bytes;
    engine->push(
        [&] {
          ran_on = std::this_thread::get_id();
          done = true;
        },
        Context::cpu(0), {}, std::vector<VarHandle>{var}, options);
    while (!done.load()) std::this_thread::yield();
    EXPECT_NE(ran_on, std::this_thread::get_id()) << "limit " << limit << ", bytes " << bytes;
    engine->delete_variable({}, Context::cpu(0), var);
    engine->wait_all();
  }
}

// A small operation whose variable has pending work is not run inside push (that would block
// the caller on the pending work), nor by try_run_inline: pushed, it runs after that work, in
// order, on a worker (what ops::invoke does when try_run_inline declines).
TEST(ThreadedEngine, SmallOperationWithPendingWorkStaysAsynchronous) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1, 4096);
  VarHandle var = engine->new_variable();
  std::atomic<bool> release{false};
  std::vector<int> order;
  std::mutex order_mutex;
  engine->push(
      [&] {
        while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
        std::lock_guard lock(order_mutex);
        order.push_back(1);
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var});
  PushOptions small;
  small.bytes_touched = 8;
  const std::vector<VarHandle> writes{var};
  EXPECT_FALSE(engine->try_run_inline([] { ADD_FAILURE() << "ran before the pending work"; },
                                      Context::cpu(0), {}, writes, small));
  engine->push(
      [&] {
        std::lock_guard lock(order_mutex);
        order.push_back(2);
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var}, small);
  {
    std::lock_guard lock(order_mutex);
    EXPECT_TRUE(order.empty());  // push returned although the small op could not run yet
  }
  release = true;
  engine->wait_for_var(var);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

// A chain of large operations returns from its pushes before the work is done.
TEST(ThreadedEngine, ChainOfLargeOperationsReturnsBeforeTheWorkIsDone) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1, 4096);
  VarHandle var = engine->new_variable();
  std::atomic<int> finished{0};
  PushOptions large;
  large.bytes_touched = 64 << 20;
  for (int i = 0; i < 5; ++i) {
    engine->push(
        [&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          ++finished;
        },
        Context::cpu(0), {}, std::vector<VarHandle>{var}, large);
  }
  EXPECT_LT(finished.load(), 5);
  engine->wait_for_var(var);
  EXPECT_EQ(finished.load(), 5);
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

// An error of an operation run inside push is kept on its outputs and raised at the next wait,
// as on the asynchronous path; push itself does not throw.
TEST(ThreadedEngine, InlineOperationErrorIsRaisedAtTheWait) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1, 4096);
  VarHandle var = engine->new_variable();
  PushOptions small;
  small.bytes_touched = 8;
  EXPECT_NO_THROW(engine->push([] { NANOMX_THROW() << "inline failure"; }, Context::cpu(0), {},
                               std::vector<VarHandle>{var}, small));
  EXPECT_THROW(engine->wait_for_var(var), Error);
  EXPECT_THROW(engine->wait_all(), Error);
  EXPECT_NO_THROW(engine->wait_all());
  engine->delete_variable({}, Context::cpu(0), var);
  engine->wait_all();
}

// Occupies the only worker of `engine` until release is set (or 20 s passed, so that a broken
// engine fails the test instead of hanging it).
void occupy_worker(Engine& engine, VarHandle busy_var, std::atomic<bool>& started,
                   std::atomic<bool>& release) {
  engine.push(
      [&] {
        started = true;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!release.load() && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
      },
      Context::cpu(0), {}, std::vector<VarHandle>{busy_var});
  while (!started.load()) std::this_thread::yield();
}

// Help-while-waiting: the op that writes the waited variable is ready but no worker took it (the
// only worker is busy), so the waiting thread runs it; the worker never sees it.
TEST(ThreadedEngine, WaitRunsTheQueuedWriterOnTheWaitingThread) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1);
  VarHandle busy = engine->new_variable();
  VarHandle var = engine->new_variable();
  std::atomic<bool> started{false}, release{false};
  occupy_worker(*engine, busy, started, release);
  std::thread::id first_on, second_on;
  int value = 0;
  engine->push(
      [&] {
        first_on = std::this_thread::get_id();
        value = 1;
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var});
  engine->push(  // a second write behind the first: run as soon as the first completes
      [&] {
        second_on = std::this_thread::get_id();
        value *= 10;
      },
      Context::cpu(0), {}, std::vector<VarHandle>{var});
  engine->wait_for_var(var);
  EXPECT_EQ(first_on, std::this_thread::get_id());
  EXPECT_EQ(second_on, std::this_thread::get_id());
  EXPECT_EQ(value, 10);
  EXPECT_FALSE(release.load());  // the worker is still busy: it ran neither
  release = true;
  engine->wait_all();
  for (VarHandle v : {busy, var}) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

// The helped op's error stays on its outputs (raised by this wait), and ops depending on it
// are skipped; wait_all helps too and keeps the ordering.
TEST(ThreadedEngine, HelpedOpsKeepErrorsAndOrdering) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1);
  VarHandle busy = engine->new_variable();
  VarHandle a = engine->new_variable();
  VarHandle b = engine->new_variable();
  std::atomic<bool> started{false}, release{false};
  occupy_worker(*engine, busy, started, release);
  PushOptions failing;
  failing.name = "helped_failing_op";
  engine->push([] { throw Error("helped and failed"); }, Context::cpu(0), {},
               std::vector<VarHandle>{a}, failing);
  bool dependent_ran = false;
  engine->push([&] { dependent_ran = true; }, Context::cpu(0), std::vector<VarHandle>{a},
               std::vector<VarHandle>{b});
  // b's writer waits for a's (the failing op): the wait runs the failing op, then the skipped one.
  try {
    engine->wait_for_var(b);
    FAIL() << "the skipped op's error was not raised";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("helped_failing_op"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(dependent_ran);
  try {
    engine->wait_for_var(a);
    FAIL() << "the helped op's error was not raised";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("helped and failed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(release.load());  // all of it ran on this thread
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 3; ++i) {
    engine->push(
        [&, i] {
          order.push_back(i);
          threads.push_back(std::this_thread::get_id());
        },
        Context::cpu(0), {}, std::vector<VarHandle>{a});
  }
  // wait_all runs the queued ops here while the worker is busy, then raises the first error.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    release = true;
  });
  EXPECT_THROW(engine->wait_all(), Error);
  releaser.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads[0], std::this_thread::get_id());
  for (VarHandle v : {busy, a, b}) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

// try_run_inline runs the operation inside the call exactly when push would run it inside
// push: small, on a CPU device, every variable free. Otherwise it does nothing and says so,
// and the variables it had already taken are free again.
TEST(ThreadedEngine, TryRunInlineRunsOnlyWhatPushWouldRunInside) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 1, /*inline_bytes=*/4096);
  VarHandle busy = engine->new_variable();
  VarHandle a = engine->new_variable();
  VarHandle b = engine->new_variable();
  const std::vector<VarHandle> none, just_a{a}, just_b{b}, just_busy{busy};
  PushOptions small;
  small.bytes_touched = 8;
  std::thread::id ran_on;
  int runs = 0;
  auto fn = [&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  };
  EXPECT_TRUE(engine->try_run_inline(fn, Context::cpu(0), just_a, just_b, small));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  for (size_t bytes : {size_t{0}, size_t{4097}}) {  // unknown cost, or over the limit
    PushOptions options;
    options.bytes_touched = bytes;
    EXPECT_FALSE(engine->try_run_inline(fn, Context::cpu(0), just_a, just_b, options)) << bytes;
  }
  EXPECT_EQ(runs, 1);
  // A variable with pending work: declined, also when free variables were taken before it.
  std::atomic<bool> started{false}, release{false};
  occupy_worker(*engine, busy, started, release);
  EXPECT_FALSE(engine->try_run_inline(fn, Context::cpu(0), just_busy, none, small));
  EXPECT_FALSE(engine->try_run_inline(fn, Context::cpu(0), just_a, just_busy, small));
  EXPECT_FALSE(
      engine->try_run_inline(fn, Context::cpu(0), none, std::vector<VarHandle>{a, busy}, small));
  EXPECT_EQ(runs, 1);
  // a was handed back each time: a write on it runs inline again, as does a read.
  EXPECT_TRUE(engine->try_run_inline(fn, Context::cpu(0), none, just_a, small));
  EXPECT_TRUE(engine->try_run_inline(fn, Context::cpu(0), just_a, none, small));
  EXPECT_EQ(runs, 3);
  release = true;
  engine->wait_for_var(busy);
  EXPECT_TRUE(engine->try_run_inline(fn, Context::cpu(0), just_busy, just_a, small));
  EXPECT_EQ(runs, 4);
  // Only push's operations.
  PushOptions async = small;
  async.prop = FnProperty::kAsync;
  EXPECT_THROW(engine->try_run_inline(fn, Context::cpu(0), none, just_a, async), Error);
  for (VarHandle v : {busy, a, b}) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

// Errors inside try_run_inline follow push's rules on both engines: the call does not throw,
// the error is kept on the written variables and raised by the next wait; an operation reading
// a variable that holds an error is skipped and passes the error on.
TEST(Engine, TryRunInlineKeepsAndPassesOnErrors) {
  for (EngineType type : {EngineType::kThreadedPerDevice, EngineType::kNaive}) {
    auto engine = Engine::create(type, 1, 4096);
    VarHandle a = engine->new_variable();
    VarHandle b = engine->new_variable();
    PushOptions small;
    small.bytes_touched = 8;
    small.name = "inline_failing_op";
    const std::vector<VarHandle> none, just_a{a}, just_b{b};
    bool ran = false;
    EXPECT_TRUE(engine->try_run_inline([] { throw Error("inline and failed"); }, Context::cpu(0),
                                       none, just_a, small));
    small.name = "skipped_op";
    EXPECT_TRUE(
        engine->try_run_inline([&] { ran = true; }, Context::cpu(0), just_a, just_b, small));
    EXPECT_FALSE(ran);
    for (VarHandle v : {b, a}) {  // b inherited a's error; a keeps its own
      try {
        engine->wait_for_var(v);
        ADD_FAILURE() << "no error raised";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("inline_failing_op failed: inline and failed"),
                  std::string::npos)
            << e.what();
      }
    }
    EXPECT_THROW(engine->wait_all(), Error);
    EXPECT_NO_THROW(engine->wait_all());
    EXPECT_TRUE(
        engine->try_run_inline([&] { ran = true; }, Context::cpu(0), just_a, just_b, small));
    EXPECT_TRUE(ran);  // the errors were raised and cleared
    for (VarHandle v : {a, b}) engine->delete_variable({}, Context::cpu(0), v);
    engine->wait_all();
  }
}

// Several threads pushing (and running inline) on shared variables: every variable's uses run
// one write at a time, in each thread's order, and no two pushes wait on each other for good
// (each op reads one variable and writes another, around a cycle: two threads' appends
// interleaved per variable would deadlock, see submit). TSan runs this test too.
void pushes_from_several_threads(bool try_inline) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 2, 4096);
  constexpr int kShared = 3, kThreads = 3, kOps = 2000;
  // Variables 0..2 are shared; kShared + t is thread t's own.
  constexpr int kVars = kShared + kThreads;
  std::vector<VarHandle> vars;
  for (int v = 0; v < kVars; ++v) vars.push_back(engine->new_variable());
  // Plain ints: a write that overlapped another use of its variable would be a race (TSan) and
  // would lose increments (the counts below).
  std::vector<int> counts(kVars, 0);
  std::vector<int> last_seen(kThreads * kVars, -1);
  std::atomic<int> inline_runs{0};
  auto worker = [&](int t) {
    const int own = kShared + t;
    for (int i = 0; i < kOps; ++i) {
      const int v = (i + t) % kShared;
      int read = 0, write = 0;
      // Pushing alone: every op around the cycle, no waits (before the push lock this hung in
      // most runs); with try_run_inline a mix, waits included, so that some ops find their
      // variables free.
      switch (try_inline ? i % 4 : 0) {
        case 0:  // shared to shared, around a cycle
          read = (v + 1) % kShared, write = v;
          break;
        case 1:  // shared to own: free whenever no other thread's write is queued on v
          read = v, write = own;
          break;
        case 2:  // own to shared
          read = own, write = v;
          break;
        default:  // own, read and written (counts as written)
          read = own, write = own;
      }
      const std::vector<VarHandle> writes{vars[write]};
      const std::vector<VarHandle> reads{vars[read]};
      auto fn = [&, t, write, i] {
        ++counts[write];
        int& last = last_seen[t * kVars + write];
        EXPECT_LT(last, i);  // this thread's uses of the variable in push order
        last = i;
      };
      PushOptions options;
      options.bytes_touched = i % 5 == 0 ? 0 : 8;  // some always go to the workers
      if (try_inline && engine->try_run_inline(fn, Context::cpu(0), reads, writes, options)) {
        ++inline_runs;
      } else {
        engine->push(fn, Context::cpu(0), reads, writes, options);
      }
      if (try_inline && i % 64 == 63) engine->wait_for_var(vars[own]);  // lets queues drain
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& thread : threads) thread.join();
  engine->wait_all();
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0), kThreads * kOps);
  // How many ran inline depends on timing (a variable with queued work declines), so it is not
  // asserted; the single-threaded tests above pin down when try_run_inline runs.
  ::testing::Test::RecordProperty("inline_runs", inline_runs.load());
  for (VarHandle v : vars) engine->delete_variable({}, Context::cpu(0), v);
  engine->wait_all();
}

TEST(ThreadedEngine, PushesFromSeveralThreadsNeverWaitOnEachOther) {
  pushes_from_several_threads(false);
}

TEST(ThreadedEngine, TryRunInlineFromSeveralThreadsKeepsEachVariableExclusive) {
  pushes_from_several_threads(true);
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

// The process-wide engine finishes every pushed operation before the process exits (a kernel
// still running on a worker while the libraries' destructors run would crash, as OpenBLAS did).
TEST(GlobalEngine, PendingWorkFinishesBeforeTheProcessExits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string marker = ::testing::TempDir() + "nanomx_engine_exit_marker";
  std::remove(marker.c_str());
  EXPECT_EXIT(
      {
        Engine& engine = Engine::get();
        VarHandle var = engine.new_variable();
        engine.push(
            [marker] {
              std::this_thread::sleep_for(std::chrono::milliseconds(300));
              std::ofstream(marker) << "done";
            },
            Context::cpu(0), {}, std::vector<VarHandle>{var});
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  std::ifstream in(marker);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "done") << "the operation pushed before exit did not run to its end";
  std::remove(marker.c_str());
}

// The block and variable pools (base/object_pool.h, engine/var.h): what one thread frees another
// reuses, and steady pushing allocates nothing new.
TEST(ObjectPool, BlocksFreedOnAnotherThreadAreReused) {
  struct Obj : nanomx::base::Pooled<Obj> {
    int64_t payload[5] = {1, 2, 3, 4, 5};
  };
  auto& pool = nanomx::base::PoolFor<Obj>::get();
  std::vector<Obj*> objs;
  for (int i = 0; i < 100; ++i) objs.push_back(new Obj);
  const size_t allocated = pool.allocated();
  EXPECT_GE(allocated, 100u);
  std::thread freer([&objs] {
    for (Obj* o : objs) delete o;
  });
  freer.join();
  EXPECT_EQ(pool.free_blocks(), allocated);
  std::vector<Obj*> again;
  for (int i = 0; i < 100; ++i) {
    again.push_back(new Obj);
    EXPECT_EQ(again.back()->payload[4], 5);
  }
  EXPECT_EQ(pool.allocated(), allocated);  // all reused
  std::sort(objs.begin(), objs.end());
  for (Obj* o : again) EXPECT_TRUE(std::binary_search(objs.begin(), objs.end(), o));
  // Freed concurrently from several threads, then all back on the free list.
  std::vector<std::thread> freers;
  for (int t = 0; t < 4; ++t) {
    freers.emplace_back([&again, t] {
      for (size_t i = static_cast<size_t>(t); i < again.size(); i += 4) delete again[i];
    });
  }
  for (auto& t : freers) t.join();
  EXPECT_EQ(pool.free_blocks(), allocated);
  EXPECT_EQ(pool.allocated(), allocated);
}

TEST(ObjectPool, SteadyPushingReusesOperationsAndVariables) {
  auto engine = Engine::create(EngineType::kThreadedPerDevice, 2);
  auto round = [&engine] {
    std::vector<VarHandle> vars;
    for (int i = 0; i < 200; ++i) vars.push_back(engine->new_variable());
    std::atomic<int> runs{0};
    // Everything waits behind a gate until all is pushed: each round has all its operations
    // and variables alive at once.
    std::atomic<bool> open{false};
    const VarHandle gate[] = {vars[0]};
    engine->push(
        [&open] {
          while (!open.load()) std::this_thread::yield();
        },
        Context::cpu(0), {}, gate);
    for (int k = 0; k < 5; ++k) {
      for (size_t i = 1; i < vars.size(); ++i) {
        const VarHandle reads[] = {vars[i - 1]};
        const VarHandle writes[] = {vars[i]};
        engine->push([&runs] { runs.fetch_add(1, std::memory_order_relaxed); }, Context::cpu(0),
                     reads, writes);
      }
    }
    for (VarHandle v : vars) engine->delete_variable([] {}, Context::cpu(0), v);
    open.store(true);
    engine->wait_all();
    EXPECT_EQ(runs.load(), 5 * 199);
  };
  round();
  // Later rounds have as many operations and variables alive at once as the first, so the
  // pools serve them without allocating.
  const size_t vars_allocated = nanomx::engine::var_pool_allocated();
  const size_t ops_allocated = nanomx::base::PoolFor<nanomx::engine::OprBlock>::get().allocated();
  for (int r = 0; r < 3; ++r) round();
  EXPECT_EQ(nanomx::engine::var_pool_allocated(), vars_allocated);
  EXPECT_EQ(nanomx::base::PoolFor<nanomx::engine::OprBlock>::get().allocated(), ops_allocated);
  EXPECT_GE(nanomx::engine::var_pool_free(), 200u);
}

}  // namespace
}  // namespace nanomx::engine
