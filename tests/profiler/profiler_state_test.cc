// The state machine and its gates (docs/mxnet-compat.md#state-machine): run/stop/pause interplay,
// mode bits, dump rules, dumps() and its reset, user-object semantics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler/hooks.h"
#include "profiler_fixture.h"
#include "trace_file.h"

namespace prof = nanomx::profiler;
using nanomx::testing::events_named;
using nanomx::testing::read_trace;
using ::testing::HasSubstr;

namespace {

class ProfilerState : public nanomx::testing::ProfilerTest {};

void configure(const std::string& file, prof::KeyValues extra = {}) {
  prof::KeyValues kv = {{"filename", file}, {"continuous_dump", "false"}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  prof::set_config(kv);
}

void one_operator(const char* name) {
  uint64_t t = prof::now_ticks();
  if (prof::active(prof::kImperative)) prof::record_operator(prof::intern(name), 0, t, t + 10);
}

void one_api_call(const char* name) { prof::ApiCallScope scope(prof::intern(name)); }

TEST_F(ProfilerState, DumpBeforeRunIsAnError) {
  configure("never.json");
  try {
    prof::dump(true);
    FAIL();
  } catch (const nanomx::Error& e) {
    EXPECT_STREQ(e.what(), "Profiler hasn't been run. Config and start profiler first");
  }
}

TEST_F(ProfilerState, SecondDumpAfterAFinishedDumpIsAnErrorAndStopIsStillAllowed) {
  configure("once.json");
  prof::set_state(prof::State::kRunning);
  prof::dump(true);
  EXPECT_THROW(prof::dump(true), nanomx::Error);
  EXPECT_NO_THROW(prof::set_state(prof::State::kStopped));
}

TEST_F(ProfilerState, RunClearsPauseAndStopSetsIt) {
  EXPECT_FALSE(prof::paused());
  prof::pause();
  EXPECT_TRUE(prof::paused());
  prof::set_state(prof::State::kRunning);
  EXPECT_FALSE(prof::paused());
  prof::set_state(prof::State::kStopped);
  EXPECT_TRUE(prof::paused());
  prof::resume();
  EXPECT_FALSE(prof::paused());
  EXPECT_EQ(prof::state(), prof::State::kStopped);
}

TEST_F(ProfilerState, PauseIsNotNested) {
  prof::pause();
  prof::pause();
  prof::resume();
  EXPECT_FALSE(prof::paused());
}

TEST_F(ProfilerState, UserObjectsRecordBeforeTheFirstRunButNotAfterStop) {
  prof::Domain d("D");
  prof::Counter c(d, "c");
  c.set_value(1);  // before any run: kept (as MXNet)
  configure("q14.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(2);
  prof::set_state(prof::State::kStopped);
  c.set_value(3);  // after stop: dropped
  prof::resume();
  c.set_value(4);  // stopped but resumed: kept (as MXNet)
  EXPECT_EQ(c.value(), 4u);
  prof::dump(true);
  std::vector<uint64_t> values;
  for (const auto& e : events_named(read_trace("q14.json"), "c")) values.push_back(e["args"]["c"]);
  EXPECT_EQ(values, (std::vector<uint64_t>{1, 2, 4}));
}

TEST_F(ProfilerState, NothingIsRecordedWhilePaused) {
  configure("paused.json", {{"profile_all", "true"}});
  prof::set_state(prof::State::kRunning);
  prof::Domain d("D");
  prof::Counter c(d, "c");
  prof::Task task(d, "t");
  prof::pause();
  EXPECT_FALSE(prof::active(prof::kImperative));
  one_operator("paused_op");
  one_api_call("MXPausedCall");
  prof::memory_alloc(0, 64);
  prof::memory_free(0, 64);
  c.set_value(7);
  task.start();
  task.stop();
  prof::Marker(d, "m").mark();
  prof::resume();
  c.set_value(8);
  prof::dump(true);
  auto t = read_trace("paused.json");
  EXPECT_TRUE(events_named(t, "paused_op").empty());
  EXPECT_TRUE(events_named(t, "MXPausedCall").empty());
  EXPECT_TRUE(events_named(t, "Memory: cpu/0").empty());
  EXPECT_TRUE(events_named(t, "t").empty());
  EXPECT_TRUE(events_named(t, "m").empty());
  ASSERT_EQ(events_named(t, "c").size(), 1u);
  EXPECT_EQ(events_named(t, "c")[0]["args"]["c"], 8);
}

TEST_F(ProfilerState, ModeBitsGateEachSource) {
  configure("modes.json", {{"profile_api", "true"},
                           {"profile_symbolic", "false"},
                           {"profile_imperative", "false"},
                           {"profile_memory", "false"}});  // api only
  prof::set_state(prof::State::kRunning);
  EXPECT_TRUE(prof::active(prof::kApi));
  EXPECT_FALSE(prof::active(prof::kImperative));
  EXPECT_FALSE(prof::active(prof::kMemory));
  one_operator("gated_op");
  one_api_call("MXAllowedCall");
  prof::memory_alloc(0, 64);
  prof::memory_free(0, 64);
  prof::dump(true);
  auto t = read_trace("modes.json");
  EXPECT_TRUE(events_named(t, "gated_op").empty());
  EXPECT_TRUE(events_named(t, "Memory: cpu/0").empty());
  EXPECT_EQ(events_named(t, "MXAllowedCall").size(), 2u);  // b + e
  EXPECT_EQ(events_named(t, "MXNet C API Calls").size(), 1u);
  EXPECT_EQ(events_named(t, "MXNet C API Concurrency").size(), 2u);  // +1 then -1
}

TEST_F(ProfilerState, RunningBitIgnoresTheModeButNotThePause) {
  configure("running.json", {{"profile_api", "true"},
                             {"profile_symbolic", "false"},
                             {"profile_imperative", "false"},
                             {"profile_memory", "false"}});  // no operator mode bit
  EXPECT_FALSE(prof::active(prof::detail::kRunningBit));
  prof::set_state(prof::State::kRunning);
  EXPECT_TRUE(prof::active(prof::detail::kRunningBit));
  EXPECT_FALSE(prof::active(prof::kSymbolic));
  prof::pause();
  EXPECT_FALSE(prof::active(prof::detail::kRunningBit));
  prof::resume();
  prof::set_state(prof::State::kStopped);
  EXPECT_FALSE(prof::active(prof::detail::kRunningBit));
}

TEST_F(ProfilerState, StoppedRecordsNoOperatorsEvenWithModeOn) {
  configure("stopped.json", {{"profile_all", "true"}});
  EXPECT_FALSE(prof::active(prof::kImperative));
  prof::set_state(prof::State::kRunning);
  EXPECT_TRUE(prof::active(prof::kImperative));
  prof::set_state(prof::State::kStopped);
  EXPECT_FALSE(prof::active(prof::kImperative));
}

TEST_F(ProfilerState, ApiCallsNestAndToleratesStateChangesMidCall) {
  configure("api.json", {{"profile_api", "true"}});
  prof::set_state(prof::State::kRunning);
  {
    prof::ApiCallScope outer(prof::intern("MXOuter"));
    one_api_call("MXInner");
    prof::set_state(prof::State::kStopped);  // stops in the middle of MXOuter
  }
  prof::set_state(prof::State::kRunning);
  { prof::ApiCallScope late(prof::intern("MXLate")); }
  prof::dump(true);
  auto t = read_trace("api.json");
  EXPECT_EQ(events_named(t, "MXInner").size(), 2u);
  EXPECT_EQ(events_named(t, "MXLate").size(), 2u);
  // The concurrency counter came back to 0 after every completed call.
  auto conc = events_named(t, "MXNet C API Concurrency");
  ASSERT_FALSE(conc.empty());
  EXPECT_EQ(conc.back()["args"]["MXNet C API Concurrency"], 0);
  EXPECT_EQ(events_named(t, "MXNet C API Calls").back()["args"]["MXNet C API Calls"], 3);
}

TEST_F(ProfilerState, DumpsIsEmptyWithoutAggregateAndResetDoesNotCrash) {
  configure("noagg.json");
  EXPECT_EQ(prof::dumps(), "");
  EXPECT_EQ(prof::dumps(true), "");
}

TEST_F(ProfilerState, DumpsDoesNotTouchTheTraceFile) {
  configure("untouched.json", {{"aggregate_stats", "true"}, {"profile_all", "true"}});
  prof::set_state(prof::State::kRunning);
  one_operator("sqrt");
  EXPECT_THAT(prof::dumps(), HasSubstr("sqrt"));
  EXPECT_NE(access("untouched.json", F_OK), 0);  // nothing written, nothing finished
  prof::dump(true);                              // and output is still enabled afterwards
  EXPECT_EQ(events_named(read_trace("untouched.json"), "sqrt").size(), 2u);
}

TEST_F(ProfilerState, DumpsCountsEachOperatorOnce) {
  // MXNet's skipped test_aggregate_duplication: the shadow task must not be counted.
  configure("dup.json", {{"aggregate_stats", "true"}, {"profile_all", "true"}});
  prof::set_state(prof::State::kRunning);
  prof::dumps(true);
  one_operator("sqrt");
  one_operator("_plus_scalar");
  one_operator("_plus_scalar");
  auto j = nanomx::testing::json::parse(prof::dumps(false, prof::StatsFormat::kJson));
  EXPECT_EQ(j["Time"]["operator"]["sqrt"]["Count"], 1);
  EXPECT_EQ(j["Time"]["operator"]["_plus_scalar"]["Count"], 2);
}

TEST_F(ProfilerState, ResetClearsEverythingAfterBuildingTheText) {
  configure("reset.json", {{"aggregate_stats", "true"}, {"profile_all", "true"}});
  prof::set_state(prof::State::kRunning);
  one_operator("before_reset");
  EXPECT_THAT(prof::dumps(true), HasSubstr("before_reset"));
  EXPECT_THAT(prof::dumps(), ::testing::Not(HasSubstr("before_reset")));
  one_operator("after_reset");
  EXPECT_THAT(prof::dumps(), HasSubstr("after_reset"));
}

TEST_F(ProfilerState, AggregateTableSurvivesReconfigurationWhileOn) {
  configure("agg1.json", {{"aggregate_stats", "true"}, {"profile_all", "true"}});
  prof::set_state(prof::State::kRunning);
  one_operator("kept_op");
  configure("agg2.json", {{"aggregate_stats", "true"}, {"profile_all", "true"}});
  EXPECT_THAT(prof::dumps(), HasSubstr("kept_op"));
  configure("agg3.json", {{"aggregate_stats", "false"}});
  configure("agg4.json", {{"aggregate_stats", "true"}});
  EXPECT_THAT(prof::dumps(), ::testing::Not(HasSubstr("kept_op")));
}

TEST_F(ProfilerState, DurationStopWithoutStartIsAnError) {
  prof::Domain d("D");
  prof::Task t(d, "never started");
  try {
    t.stop();
    FAIL();
  } catch (const nanomx::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'never started', which was never started"));
  }
}

TEST_F(ProfilerState, EmptyNamesAreErrorsNotAborts) {
  EXPECT_THROW(prof::Domain(""), nanomx::Error);
  prof::Domain d("D");
  EXPECT_THROW(prof::Task(d, ""), nanomx::Error);
  EXPECT_THROW(prof::Event(""), nanomx::Error);
}

TEST_F(ProfilerState, CounterWrapsBelowZeroAsUnsigned) {
  prof::Domain d("D");
  prof::Counter c(d, "c");
  c.decrement();
  EXPECT_EQ(c.value(), 18446744073709551615ull);
  c.increment(2);
  EXPECT_EQ(c.value(), 1u);
  c.set_value(5);
  c.increment(-7);
  EXPECT_EQ(c.value(), 18446744073709551614ull);
}

TEST_F(ProfilerState, CounterStatsFollowMxnetUnits) {
  // MXNet's test_profiler.py counter test: value 5, +1, then 50001 increments and 49999 decrements:
  // final 8.
  configure("counter.json", {{"aggregate_stats", "true"}});
  prof::set_state(prof::State::kRunning);
  prof::dumps(true);
  prof::Domain d("PythonDomain::test_profile_counter");
  prof::Counter c(d, "PythonCounter::test_profile_counter");
  c.set_value(5);
  c.increment(1);
  for (int i = 0; i < 100000; ++i) {
    if (i <= 50000)
      c.increment(1);
    else
      c.decrement(1);
  }
  EXPECT_EQ(c.value(), 8u);
  auto j = nanomx::testing::json::parse(prof::dumps(false, prof::StatsFormat::kJson));
  auto row = j["Time"]["PythonDomain::test_profile_counter"]["PythonCounter::test_profile_counter"];
  EXPECT_EQ(row["Count"], 100002);
  EXPECT_FLOAT_EQ(row["Total"].get<float>(), 0.008f);
  EXPECT_FLOAT_EQ(row["Max"].get<float>(), 50.01f);  // 50007 / 1000, 4 digits
  EXPECT_FLOAT_EQ(row["Min"].get<float>(), 0.005f);
}

TEST_F(ProfilerState, ScopeIsProcessGlobal) {
  EXPECT_EQ(prof::scope(), "<unk>:");
  prof::set_scope("tensordot:");
  EXPECT_EQ(prof::scope(), "tensordot:");
}

}  // namespace
