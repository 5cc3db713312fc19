// Steps and step schedules (docs/profiler.md#step-schedules): ProfilerStep spans, the phases of
// a schedule (skip_first, wait, warmup, active, repeat), one file per active window, the
// on_trace_ready callback, per-window aggregate tables, and how pause, stop, continuous dump
// and the C API fit in.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nanomx/c_api.h"
#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler/hooks.h"
#include "profiler_fixture.h"
#include "trace_file.h"

namespace prof = nanomx::profiler;
using nanomx::testing::json;
using nanomx::testing::read_trace;

namespace {

class Schedule : public nanomx::testing::ProfilerTest {};

void configure(const prof::KeyValues& extra) {
  prof::KeyValues kv = {
      {"profile_all", "true"}, {"filename", "train.json"}, {"continuous_dump", "false"}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  prof::set_config(kv);
}

// One user event per step, named after it.
void work(uint64_t n) {
  prof::Event e("work " + std::to_string(n));
  e.start();
  e.stop();
}

std::set<std::string> work_in(const json& trace) {
  std::set<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (name.rfind("work ", 0) == 0 && e["ph"] != "E") names.insert(name);
  }
  return names;
}

// The step numbers of the ProfilerStep spans, checking their form (docs/trace-format.md#steps).
std::vector<uint64_t> steps_in(const json& trace) {
  std::vector<uint64_t> steps;
  for (const auto& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (name.rfind("ProfilerStep#", 0) != 0) continue;
    EXPECT_EQ(e["cat"], "ProfilerStep");
    EXPECT_EQ(e["ph"], "X");
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    steps.push_back(std::stoull(name.substr(13)));
  }
  return steps;
}

std::set<std::string> json_files(const std::filesystem::path& dir) {
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.insert(entry.path().filename().string());
  return files;
}

// wait 1, warmup 1, active 2, repeat 2: steps 0 off, 1 warmup, 2-3 kept (train.step3.json),
// 4 off, 5 warmup, 6-7 kept (train.step7.json), then nothing.
TEST_F(Schedule, WindowsFilesCallbackAndPerWindowAggregates) {
  configure({{"schedule_wait", "1"},
             {"schedule_warmup", "1"},
             {"schedule_active", "2"},
             {"schedule_repeat", "2"},
             {"aggregate_stats", "true"}});
  std::vector<std::string> ready, tables;
  prof::set_on_trace_ready([&](const std::string& path) {
    ready.push_back(path);
    tables.push_back(prof::dumps());
  });
  prof::set_state(prof::State::kRunning);
  std::vector<std::string> returned;
  for (uint64_t n = 0; n < 12; ++n) {
    EXPECT_EQ(prof::current_step(), n);
    work(n);
    returned.push_back(prof::step());
  }
  prof::set_state(prof::State::kStopped);
  prof::set_on_trace_ready(nullptr);

  EXPECT_EQ(ready, (std::vector<std::string>{"train.step3.json", "train.step7.json"}));
  for (uint64_t n = 0; n < 12; ++n) {
    EXPECT_EQ(returned[n], n == 3 ? "train.step3.json" : n == 7 ? "train.step7.json" : "") << n;
  }
  EXPECT_EQ(json_files(dir()), (std::set<std::string>{"train.step3.json", "train.step7.json"}));
  const json first = read_trace("train.step3.json");
  EXPECT_EQ(work_in(first), (std::set<std::string>{"work 2", "work 3"}));
  EXPECT_EQ(steps_in(first), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(first["otherData"]["schedule"], json::parse(R"({"first_step":2,"last_step":3})"));
  EXPECT_FALSE(first["otherData"].contains("rotation"));
  const json second = read_trace("train.step7.json");
  EXPECT_EQ(work_in(second), (std::set<std::string>{"work 6", "work 7"}));
  EXPECT_EQ(steps_in(second), (std::vector<uint64_t>{6, 7}));
  // The table in the callback is the window's: warmup and earlier windows are not in it.
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_NE(tables[0].find("work 2"), std::string::npos);
  EXPECT_NE(tables[0].find("work 3"), std::string::npos);
  EXPECT_EQ(tables[0].find("work 1"), std::string::npos) << tables[0];
  EXPECT_NE(tables[1].find("work 7"), std::string::npos);
  EXPECT_EQ(tables[1].find("work 3"), std::string::npos) << tables[1];
  EXPECT_EQ(tables[1].find("work 5"), std::string::npos) << tables[1];
}

// skip_first 2, active 1, repeat 0: one window per step from step 2 on, until stopped.
TEST_F(Schedule, SkipFirstThenOneWindowPerStepUntilStopped) {
  configure({{"schedule_active", "1"}, {"schedule_skip_first", "2"}});
  prof::set_state(prof::State::kRunning);
  for (uint64_t n = 0; n < 6; ++n) {
    work(n);
    EXPECT_EQ(prof::step(), n < 2 ? "" : "train.step" + std::to_string(n) + ".json");
  }
  // Step 6 is active too: the stop finishes its window.
  prof::set_state(prof::State::kStopped);
  EXPECT_EQ(json_files(dir()),
            (std::set<std::string>{"train.step2.json", "train.step3.json", "train.step4.json",
                                   "train.step5.json", "train.step6.json"}));
  for (uint64_t n = 2; n < 6; ++n) {
    const json trace = read_trace("train.step" + std::to_string(n) + ".json");
    EXPECT_EQ(work_in(trace), (std::set<std::string>{"work " + std::to_string(n)}));
    EXPECT_EQ(steps_in(trace), (std::vector<uint64_t>{n}));
  }
}

// Paused steps still count; what they would record is not in the window.
TEST_F(Schedule, PausedStepsCountAndRecordNothing) {
  configure({{"schedule_active", "3"}});
  prof::set_state(prof::State::kRunning);
  work(0);
  prof::step();
  prof::pause();
  work(1);
  prof::step();
  prof::resume();
  work(2);
  EXPECT_EQ(prof::step(), "train.step2.json");
  prof::set_state(prof::State::kStopped);
  const json trace = read_trace("train.step2.json");
  EXPECT_EQ(work_in(trace), (std::set<std::string>{"work 0", "work 2"}));
  EXPECT_EQ(steps_in(trace), (std::vector<uint64_t>{0, 2}));
}

// A stop in a window finishes its file at the stop; the next run counts on from there and
// resumes the window's file.
TEST_F(Schedule, StopFinishesTheOpenWindowAndStepsCountOn) {
  configure({{"schedule_active", "4"}});
  prof::set_state(prof::State::kRunning);
  work(0);
  prof::step();
  work(1);
  prof::set_state(prof::State::kStopped);
  const json trace = read_trace("train.step3.json");
  EXPECT_EQ(work_in(trace), (std::set<std::string>{"work 0", "work 1"}));
  EXPECT_EQ(steps_in(trace), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(trace["otherData"]["schedule"], json::parse(R"({"first_step":0,"last_step":1})"));
  EXPECT_EQ(prof::step(), "");  // stopped: no step
  prof::set_state(prof::State::kRunning);
  EXPECT_EQ(prof::current_step(), 2u);
  work(2);
  EXPECT_EQ(prof::step(), "");
  EXPECT_EQ(prof::step(), "train.step3.json");
  for (int i = 0; i < 4; ++i) prof::step();  // steps 4..7: the next window
  prof::set_state(prof::State::kStopped);
  const json resumed = read_trace("train.step3.json");
  EXPECT_EQ(work_in(resumed), (std::set<std::string>{"work 0", "work 1", "work 2"}));
  EXPECT_EQ(steps_in(resumed), (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(resumed["otherData"]["schedule"], json::parse(R"({"first_step":0,"last_step":3})"));
  EXPECT_EQ(steps_in(read_trace("train.step7.json")), (std::vector<uint64_t>{4, 5, 6, 7}));
}

// Continuous dump flushes the open window's file while it runs; between windows it writes
// nothing, and the configured file itself is never written.
TEST_F(Schedule, ContinuousDumpFlushesTheOpenWindow) {
  configure({{"schedule_wait", "1"},
             {"schedule_active", "2"},
             {"continuous_dump", "true"},
             {"dump_period", "0.005"}});
  prof::set_state(prof::State::kRunning);
  prof::step();  // step 0: off
  work(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists("train.step2.json") &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(std::filesystem::exists("train.step2.json"));
  EXPECT_EQ(work_in(read_trace("train.step2.json")), (std::set<std::string>{"work 1"}));
  prof::step();
  work(2);
  EXPECT_EQ(prof::step(), "train.step2.json");
  work(3);  // step 3: off, never written
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  prof::set_state(prof::State::kStopped);
  prof::dump(true);  // between windows: nothing to write
  EXPECT_EQ(json_files(dir()), (std::set<std::string>{"train.step2.json"}));
  EXPECT_EQ(work_in(read_trace("train.step2.json")), (std::set<std::string>{"work 1", "work 2"}));
}

// A flow started in a warmup step (discarded) and finished in the active window: the finish is
// left out and counted, never written without its start.
TEST_F(Schedule, FlowStartedInWarmupIsLeftOutOfTheWindow) {
  configure({{"schedule_warmup", "1"}, {"schedule_active", "1"}});
  prof::set_state(prof::State::kRunning);
  const uint64_t flow = prof::flow_start(prof::intern("operator"), prof::kImperative);
  ASSERT_NE(flow, 0u);
  prof::step();
  const uint64_t begin = prof::now_ticks();
  prof::record_operator(prof::intern("late_op"), 0, begin, prof::now_ticks(), {}, flow);
  EXPECT_EQ(prof::step(), "train.step1.json");
  prof::set_state(prof::State::kStopped);
  const json trace = read_trace("train.step1.json");
  EXPECT_EQ(nanomx::testing::events_where(trace, "ph", "f").size(), 0u);
  EXPECT_EQ(nanomx::testing::events_where(trace, "ph", "s").size(), 0u);
  EXPECT_EQ(trace["otherData"]["flow_finishes_omitted"], 1);
  EXPECT_EQ(nanomx::testing::events_named(trace, "late_op").size(), 2u);  // B and E
}

// Without a schedule step() only adds the ProfilerStep spans to the usual file; a run that
// never calls it has none.
TEST_F(Schedule, WithoutAScheduleStepsAreSpansInTheUsualFile) {
  configure({});
  prof::set_state(prof::State::kRunning);
  for (int n = 0; n < 3; ++n) {
    work(static_cast<uint64_t>(n));
    EXPECT_EQ(prof::step(), "");
  }
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  const json trace = read_trace("train.json");
  EXPECT_EQ(steps_in(trace), (std::vector<uint64_t>{0, 1, 2}));
  double last_end = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "ProfilerStep") continue;
    EXPECT_GE(e["ts"].get<double>(), last_end);
    last_end = e["ts"].get<double>() + e["dur"].get<double>();
  }
  EXPECT_FALSE(trace["otherData"].contains("schedule"));

  configure({{"filename", "plain.json"}});
  prof::set_state(prof::State::kRunning);
  work(0);
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  EXPECT_TRUE(steps_in(read_trace("plain.json")).empty());
}

TEST_F(Schedule, CApiStepReturnsTheFinishedFile) {
  const char* keys[] = {"filename", "continuous_dump", "schedule_active", "schedule_wait"};
  const char* values[] = {"c.json", "false", "1", "1"};
  ASSERT_EQ(MXSetProfilerConfig(4, keys, values), 0) << MXGetLastError();
  ASSERT_EQ(MXSetProfilerState(1), 0);
  const char* finished = nullptr;
  ASSERT_EQ(MXProfileStep(&finished), 0);
  EXPECT_STREQ(finished, "");
  ASSERT_EQ(MXProfileStep(&finished), 0);
  EXPECT_STREQ(finished, "c.step1.json");
  ASSERT_EQ(MXProfileStep(nullptr), 0);
  ASSERT_EQ(MXSetProfilerState(0), 0);
  EXPECT_EQ(steps_in(read_trace("c.step1.json")), (std::vector<uint64_t>{1}));
}

TEST_F(Schedule, BadScheduleKeysAreRefusedBeforeAnyChange) {
  configure({});
  EXPECT_THROW(prof::set_config({{"schedule_warmup", "1"}}), nanomx::Error);
  EXPECT_EQ(prof::current_config().filename, "train.json");
}

}  // namespace
