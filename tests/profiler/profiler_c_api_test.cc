// The profiler's C functions (docs/mxnet-compat.md#c-api): MXNet 1.9.1 signatures, 0/-1 returns,
// MXGetLastError, and no exception or abort for null handles, empty names or calls out of order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "nanomx/c_api.h"
#include "profiler_fixture.h"
#include "trace_file.h"

using nanomx::testing::events_named;
using nanomx::testing::read_trace;
using ::testing::HasSubstr;

namespace {

class ProfilerCApi : public nanomx::testing::ProfilerTest {};

int configure(const char* file, bool aggregate = false) {
  const char* keys[] = {"profile_all", "filename", "continuous_dump", "aggregate_stats"};
  const char* vals[] = {"True", file, "False", aggregate ? "True" : "False"};
  return MXSetProfilerConfig(4, keys, vals);
}

std::string last_error() { return MXGetLastError(); }

TEST_F(ProfilerCApi, ConfigErrorsComeBackAsMinusOne) {
  const char* keys[] = {"profile_everything"};
  const char* vals[] = {"True"};
  EXPECT_EQ(MXSetProfilerConfig(1, keys, vals), -1);
  EXPECT_THAT(last_error(), HasSubstr("Cannot find argument 'profile_everything'"));
  EXPECT_EQ(MXSetProfilerConfig(1, nullptr, vals), -1);
  EXPECT_THAT(last_error(), HasSubstr("keys must not be null"));
  const char* null_value[] = {nullptr};
  EXPECT_EQ(MXSetProfilerConfig(1, keys, null_value), -1);
  EXPECT_EQ(MXSetProfilerConfig(-1, keys, vals), -1);
  EXPECT_EQ(MXSetProfilerConfig(0, nullptr, nullptr), 0);
}

TEST_F(ProfilerCApi, ServerRequestsWithoutAKvstoreFailClearly) {
  const char* keys[] = {"profile_process", "filename"};
  const char* vals[] = {"server", "s.json"};
  EXPECT_EQ(MXSetProcessProfilerConfig(2, keys, vals, nullptr), -1);
  EXPECT_EQ(last_error(), "KVStoreHandle passed to profiler is null");
  EXPECT_EQ(MXSetProcessProfilerState(1, 1, nullptr), -1);
  EXPECT_EQ(last_error(), "Kvstore Handle passed to profiler is null");
  EXPECT_EQ(MXDumpProcessProfile(1, 1, nullptr), -1);
  EXPECT_EQ(MXProcessProfilePause(1, 1, nullptr), -1);
}

TEST_F(ProfilerCApi, StateAndDumpOrder) {
  ASSERT_EQ(configure("c_order.json"), 0);
  EXPECT_EQ(MXDumpProfile(1), -1);
  EXPECT_EQ(last_error(), "Profiler hasn't been run. Config and start profiler first");
  EXPECT_EQ(MXSetProfilerState(2), -1);
  EXPECT_THAT(last_error(), HasSubstr("expected 0 (stop) or 1 (run)"));
  EXPECT_EQ(MXSetProfilerState(1), 0);
  EXPECT_EQ(MXProfilePause(1), 0);
  EXPECT_EQ(MXProfilePause(0), 0);
  EXPECT_EQ(MXSetProfilerState(0), 0);
  EXPECT_EQ(MXDumpProfile(1), 0);
  EXPECT_EQ(MXDumpProfile(1), -1);
  EXPECT_NO_THROW(read_trace("c_order.json"));
}

TEST_F(ProfilerCApi, ObjectsRecordThroughHandles) {
  ASSERT_EQ(configure("c_objects.json"), 0);
  ASSERT_EQ(MXSetProfilerState(1), 0);
  ProfileHandle domain = nullptr, task = nullptr, frame = nullptr, event = nullptr,
                counter = nullptr;
  ASSERT_EQ(MXProfileCreateDomain("CDomain", &domain), 0);
  ASSERT_EQ(MXProfileCreateTask(domain, "ctask", &task), 0);
  ASSERT_EQ(MXProfileCreateFrame(domain, "cframe", &frame), 0);
  ASSERT_EQ(MXProfileCreateEvent("cevent", &event), 0);
  ASSERT_EQ(MXProfileCreateCounter(domain, "ccounter", &counter), 0);
  for (ProfileHandle h : {task, frame, event}) ASSERT_EQ(MXProfileDurationStart(h), 0);
  for (ProfileHandle h : {event, frame, task}) ASSERT_EQ(MXProfileDurationStop(h), 0);
  ASSERT_EQ(MXProfileSetCounter(counter, 10), 0);
  ASSERT_EQ(MXProfileAdjustCounter(counter, -3), 0);
  ASSERT_EQ(MXProfileSetMarker(domain, "cmarker", "thread"), 0);
  for (ProfileHandle h : {task, frame, event, counter}) EXPECT_EQ(MXProfileDestroyHandle(h), 0);
  EXPECT_EQ(MXProfileDestroyHandle(domain), 0);  // domains live forever; destroying is a no-op
  ASSERT_EQ(MXDumpProfile(1), 0);
  auto t = read_trace("c_objects.json");
  EXPECT_EQ(events_named(t, "ctask").size(), 2u);
  EXPECT_EQ(events_named(t, "cframe").size(), 2u);
  EXPECT_EQ(events_named(t, "cevent").size(), 2u);
  auto c = events_named(t, "ccounter");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1]["args"]["ccounter"], 7);
  EXPECT_EQ(events_named(t, "cmarker")[0]["s"], "t");
}

TEST_F(ProfilerCApi, BadHandlesAndNamesNeverCrash) {
  ProfileHandle domain = nullptr, task = nullptr, counter = nullptr, out = nullptr;
  EXPECT_EQ(MXProfileCreateDomain("", &out), -1);
  EXPECT_THAT(last_error(), HasSubstr("must not be empty"));
  EXPECT_EQ(MXProfileCreateDomain(nullptr, &out), -1);
  ASSERT_EQ(MXProfileCreateDomain("D", &domain), 0);
  EXPECT_EQ(MXProfileCreateTask(nullptr, "t", &out), -1);
  EXPECT_EQ(MXProfileCreateTask(domain, nullptr, &out), -1);
  EXPECT_EQ(MXProfileCreateTask(domain, "t", nullptr), -1);
  EXPECT_EQ(MXProfileCreateFrame(nullptr, "f", &out), -1);
  EXPECT_EQ(MXProfileCreateCounter(nullptr, "c", &out), -1);
  EXPECT_EQ(MXProfileCreateEvent("", &out), -1);
  EXPECT_EQ(MXProfileDurationStart(nullptr), -1);
  EXPECT_EQ(MXProfileDurationStop(nullptr), -1);
  EXPECT_EQ(MXProfileSetCounter(nullptr, 1), -1);
  EXPECT_EQ(MXProfileAdjustCounter(nullptr, 1), -1);
  EXPECT_EQ(MXProfileSetMarker(nullptr, "m", "process"), -1);
  EXPECT_EQ(MXProfileDestroyHandle(nullptr), -1);
  EXPECT_EQ(last_error(), "Invalid NULL handle passed to MXProfileDestroyHandle");

  ASSERT_EQ(MXProfileCreateTask(domain, "t", &task), 0);
  ASSERT_EQ(MXProfileCreateCounter(domain, "c", &counter), 0);
  EXPECT_EQ(MXProfileDurationStop(task), -1);  // never started
  EXPECT_THAT(last_error(), HasSubstr("never started"));
  EXPECT_EQ(MXProfileDurationStart(counter), -1);  // wrong kind of handle
  EXPECT_THAT(last_error(), HasSubstr("expected a task, frame or event handle, got a counter"));
  EXPECT_EQ(MXProfileSetCounter(task, 1), -1);
  EXPECT_EQ(MXProfileSetMarker(task, "m", "process"), -1);
  EXPECT_EQ(MXProfileSetMarker(domain, "m", "galaxy"), -1);
  EXPECT_THAT(last_error(), HasSubstr("Invalid Input: 'galaxy'"));
  EXPECT_EQ(MXProfileSetMarker(domain, "m", nullptr), -1);
  int local = 0;
  EXPECT_EQ(MXProfileDestroyHandle(&local), 0);  // unknown handles are ignored, as MXNet
  EXPECT_EQ(MXProfileDestroyHandle(task), 0);
  EXPECT_EQ(MXProfileDestroyHandle(counter), 0);
  EXPECT_EQ(MXProfileDurationStart(task), -1);  // a destroyed handle is refused, not followed
  EXPECT_THAT(last_error(), HasSubstr("not a live profiler object"));
}

TEST_F(ProfilerCApi, AggregatePrintFormatsAndValidation) {
  ASSERT_EQ(configure("c_agg.json", true), 0);
  ASSERT_EQ(MXSetProfilerState(1), 0);
  ProfileHandle domain = nullptr, event = nullptr;
  ASSERT_EQ(MXProfileCreateDomain("D", &domain), 0);
  ASSERT_EQ(MXProfileCreateEvent("agg_event", &event), 0);
  ASSERT_EQ(MXProfileDurationStart(event), 0);
  ASSERT_EQ(MXProfileDurationStop(event), 0);
  const char* out = nullptr;
  ASSERT_EQ(MXAggregateProfileStatsPrint(&out, 0), 0);
  EXPECT_THAT(out, HasSubstr("Profile Statistics:"));
  EXPECT_THAT(out, HasSubstr("agg_event"));
  ASSERT_EQ(MXAggregateProfileStatsPrintEx(&out, 0, 1, 4, 1), 0);
  auto j = nanomx::testing::json::parse(out);
  EXPECT_EQ(j["Time"]["event"]["agg_event"]["Count"], 1);
  EXPECT_EQ(MXAggregateProfileStatsPrintEx(&out, 0, 2, 0, 0), -1);
  EXPECT_THAT(last_error(), HasSubstr("Invalid value for parameter format"));
  EXPECT_EQ(MXAggregateProfileStatsPrintEx(&out, 0, 0, 5, 0), -1);
  EXPECT_THAT(last_error(), HasSubstr("Invalid value for parameter sort_by"));
  EXPECT_EQ(MXAggregateProfileStatsPrint(nullptr, 0), -1);
}

TEST_F(ProfilerCApi, ProfilerControlIsNotProfiledButStatsPrintAndScopeAre) {
  ASSERT_EQ(configure("c_api_calls.json", true), 0);
  ASSERT_EQ(MXSetProfilerState(1), 0);
  ProfileHandle domain = nullptr, task = nullptr;
  ASSERT_EQ(MXProfileCreateDomain("D", &domain), 0);
  ASSERT_EQ(MXProfileCreateTask(domain, "t", &task), 0);
  ASSERT_EQ(MXProfileDurationStart(task), 0);
  ASSERT_EQ(MXProfileDurationStop(task), 0);
  ASSERT_EQ(MXProfilePause(0), 0);
  ASSERT_EQ(MXSetProfilerScope("scope:"), 0);
  const char* out = nullptr;
  ASSERT_EQ(MXAggregateProfileStatsPrint(&out, 0), 0);
  ASSERT_EQ(MXDumpProfile(1), 0);
  auto t = read_trace("c_api_calls.json");
  std::set<std::string> api_names;
  for (const auto& e : t["traceEvents"])
    if (e.contains("cat") && e["cat"] == "MXNET_C_API" && e["ph"] == "b")
      api_names.insert(e["name"]);
  EXPECT_EQ(api_names,
            (std::set<std::string>{"MXAggregateProfileStatsPrint", "MXSetProfilerScope"}));
}

}  // namespace
