// The trace file: layout, phases per record kind, metadata, escaping, several files per process,
// continuous growth, the memory bound (docs/trace-format.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <fstream>
#include <set>
#include <thread>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler/clock.h"
#include "profiler/hooks.h"
#include "profiler_fixture.h"
#include "trace_file.h"

namespace prof = nanomx::profiler;
using nanomx::testing::events_named;
using nanomx::testing::json;
using nanomx::testing::read_trace;

namespace {

class Trace : public nanomx::testing::ProfilerTest {};

void configure(const std::string& file, prof::KeyValues extra = {}) {
  prof::KeyValues kv = {{"profile_all", "true"}, {"filename", file}, {"continuous_dump", "false"}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  prof::set_config(kv);
}

void record_one_operator(const char* name, int slot, uint64_t flow = 0) {
  int64_t a[2] = {4, 8}, b[1] = {8};
  prof::ShapeView inputs[2] = {{a, 2}, {b, 1}};
  prof::ShapeView outputs[1] = {{b, 1}};
  uint64_t begin = prof::now_ticks();
  prof::record_operator(prof::intern(name), slot, begin, prof::now_ticks() + 1000,
                        {inputs, outputs}, flow);
}

TEST_F(Trace, FileIsAnObjectWithDeviceMetadataAndMsUnit) {
  configure("layout.json");
  prof::set_state(prof::State::kRunning);
  prof::dump(true);
  json t = read_trace("layout.json");
  EXPECT_EQ(t["displayTimeUnit"], "ms");
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 0; i < cpus; ++i)
    EXPECT_EQ(nanomx::testing::process_name(t, i), "cpu/" + std::to_string(i));
  const int pinned = prof::device_slot(prof::device_code::kCPUPinned, 0);
  EXPECT_EQ(nanomx::testing::process_name(t, pinned), "cpu pinned/");
  EXPECT_EQ(nanomx::testing::process_name(t, pinned + 1), "cpu shared/");
  // The anchor nanomx-trace merge uses.
  EXPECT_GT(t["otherData"]["time_zero_unix_ns"].get<uint64_t>(), 1600000000000000000ull);
  EXPECT_TRUE(t["otherData"].contains("time_zero_monotonic_ns"));
  EXPECT_EQ(t["otherData"]["dropped_events"], 0);
}

TEST_F(Trace, PhasesPerRecordKind) {
  configure("phases.json");
  prof::set_state(prof::State::kRunning);
  prof::Domain d("Dom");
  prof::Task task(d, "a task");
  task.start();
  prof::Frame frame(d, "a frame");
  frame.start();
  prof::Event event("an event");
  event.start();
  prof::Counter counter(d, "a counter");
  counter.set_value(42);
  prof::Marker(d, "a marker").mark(prof::MarkerScope::kGlobal);
  prof::Marker(d, "thread marker").mark(prof::MarkerScope::kThread);
  prof::Marker(d, "task marker").mark(prof::MarkerScope::kTask);
  record_one_operator("dot", 0);
  event.stop();
  frame.stop();
  task.stop();
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  json t = read_trace("phases.json");

  auto phases = [&](const std::string& name) {
    std::string p;
    for (const auto& e : events_named(t, name)) p += e["ph"].get<std::string>();
    return p;
  };
  EXPECT_EQ(phases("a task"), "be");
  EXPECT_EQ(phases("a frame"), "be");  // drawn as a slice, unlike MXNet's ( )
  EXPECT_EQ(phases("an event"), "BE");
  EXPECT_EQ(phases("a counter"), "C");
  EXPECT_EQ(phases("a marker"), "n");
  EXPECT_EQ(phases("dot"), "BE");

  json task_begin = events_named(t, "a task")[0];
  EXPECT_EQ(task_begin["cat"], "Dom");
  EXPECT_EQ(task_begin["id"], task_begin["tid"]);  // MXNet: task id = thread id
  EXPECT_EQ(events_named(t, "a frame")[0]["cat"], "Dom,frame");
  EXPECT_EQ(events_named(t, "an event")[0]["cat"], "event");
  json c = events_named(t, "a counter")[0];
  EXPECT_EQ(c["cat"], "Dom");
  EXPECT_EQ(c["args"]["a counter"], 42);  // the args key is the counter's name
  EXPECT_EQ(events_named(t, "a marker")[0]["cat"], "Dom,instant_marker");
  EXPECT_EQ(events_named(t, "a marker")[0]["s"], "g");
  EXPECT_EQ(events_named(t, "thread marker")[0]["s"], "t");
  EXPECT_EQ(events_named(t, "task marker")[0]["s"], "p");

  json op = events_named(t, "dot")[0];
  EXPECT_EQ(op["cat"], "operator");
  EXPECT_EQ(op["pid"], 0);
  EXPECT_EQ(op["args"]["inputs"], json::parse("[[4,8],[8]]"));
  EXPECT_EQ(op["args"]["outputs"], json::parse("[[8]]"));
  // Nested as recorded: the event encloses the operator.
  EXPECT_LE(events_named(t, "an event")[0]["ts"].get<double>(), op["ts"].get<double>());
}

TEST_F(Trace, CustomOperatorSubOpsGoToTheirCategory) {
  configure("custom.json");
  prof::set_state(prof::State::kRunning);
  record_one_operator("MySigmoid::_zeros", 0);
  prof::dump(true);
  EXPECT_EQ(events_named(read_trace("custom.json"), "MySigmoid::_zeros")[0]["cat"],
            "Custom Operator");
}

TEST_F(Trace, CompleteDurationsOption) {
  configure("complete.json", {{"duration_events", "complete"}});
  prof::set_state(prof::State::kRunning);
  record_one_operator("dot", 0);
  prof::dump(true);
  auto ev = events_named(read_trace("complete.json"), "dot");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["ph"], "X");
  EXPECT_GT(ev[0]["dur"].get<double>(), 0);
}

TEST_F(Trace, EveryPidAndThreadHasMetadataAndThreadsAreNamed) {
  configure("threads.json");
  prof::set_state(prof::State::kRunning);
  std::thread worker([] {
    prof::set_thread_name("cpu/0 worker 7");
    record_one_operator("relu", 0);
  });
  worker.join();
  prof::Domain d("D");
  prof::Counter(d, "c").set_value(1);
  prof::dump(true);
  json t = read_trace("threads.json");
  std::set<std::pair<int64_t, int64_t>> used;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] != "M") used.insert({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()});
  for (auto [pid, tid] : used) {
    EXPECT_NE(nanomx::testing::process_name(t, pid), "") << pid;
    EXPECT_NE(nanomx::testing::thread_name(t, pid, tid), "") << pid << "/" << tid;
  }
  json relu = events_named(t, "relu")[0];
  EXPECT_EQ(nanomx::testing::thread_name(t, relu["pid"], relu["tid"]), "cpu/0 worker 7");
  json c = events_named(t, "c")[0];
  EXPECT_EQ(nanomx::testing::thread_name(t, c["pid"], c["tid"]), "main");
}

TEST_F(Trace, NamesAreJsonEscapedAndInvalidUtf8Replaced) {
  configure("escape.json");
  prof::set_state(prof::State::kRunning);
  std::string nasty = "quote\" back\\slash\nnewline \x01 bad\xff utf8 \xc3\xa9";
  prof::Domain d("dom \"x\"");
  prof::Counter(d, nasty).set_value(3);
  prof::dump(true);
  json t = read_trace("escape.json");
  auto ev = events_named(t, "quote\" back\\slash\nnewline \x01 bad\xef\xbf\xbd utf8 \xc3\xa9");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["cat"], "dom \"x\"");
}

TEST_F(Trace, TimestampsAreMicrosecondsWithNanosecondFractions) {
  configure("ts.json");
  prof::set_state(prof::State::kRunning);
  for (int i = 0; i < 200; ++i) {
    prof::Event e("short");
    e.start();
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    e.stop();
  }
  prof::dump(true);
  std::string text = nanomx::testing::read_text("ts.json");
  json t = json::parse(text);
  auto ev = events_named(t, "short");
  double duration_us = ev[1]["ts"].get<double>() - ev[0]["ts"].get<double>();
  EXPECT_GT(duration_us, 2900);
  EXPECT_LT(duration_us, 1e6);
  // The file says what it rounded to, and why: the unit is the clock's resolution's.
  const double resolution = t["otherData"]["clock_resolution_ns"].get<double>();
  const uint64_t unit = t["otherData"]["ts_unit_ns"].get<uint64_t>();
  EXPECT_GT(resolution, 0);
  EXPECT_EQ(unit, prof::timestamp_unit_ns(resolution));
  // Every ts has at most three decimals (nanoseconds), none below the unit, and no trailing
  // zero: "12", "12.5", "12.34", "12.345".
  const size_t max_digits = 3 - static_cast<size_t>(std::log10(static_cast<double>(unit)));
  for (size_t at = text.find("\"ts\":"); at != std::string::npos;
       at = text.find("\"ts\":", at + 1)) {
    size_t begin = at + 5, end = text.find_first_of(",}", begin);
    std::string number = text.substr(begin, end - begin);
    size_t dot = number.find('.');
    if (dot == std::string::npos) continue;
    EXPECT_LE(number.size() - dot - 1, max_digits) << number;
    EXPECT_NE(number.back(), '0') << number;
  }
}

// ts counts from when the file's recording began, and otherData's anchors describe that zero:
// anchor + ts is the event's CLOCK_MONOTONIC time.
TEST_F(Trace, TimestampsCountFromTheFilesZeroWhichTheAnchorsDescribe) {
  prof::Domain d("D");
  prof::Counter c(d, "c");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the process's zero is older
  auto monotonic_us = [] {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
  };
  // Bounds measured around configuring and recording rather than a fixed allowance: a loaded
  // machine may take tens of milliseconds between these lines (it once took 21.9 ms).
  const double before_us = monotonic_us();
  configure("zero.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(1);
  const double after_us = monotonic_us();
  prof::dump(true);
  json t = read_trace("zero.json");
  const double ts = events_named(t, "c").at(0)["ts"].get<double>();
  EXPECT_GE(ts, 0);
  // From the file's zero (set while configuring and starting) the event is at most the span
  // above; from when the library loaded it would be at least the 20 ms sleep more.
  EXPECT_LE(ts, after_us - before_us + 1000)
      << "ts counts from the file's zero, not from when the library loaded";
  const double anchor_us = t["otherData"]["time_zero_monotonic_ns"].get<double>() / 1e3;
  EXPECT_GE(anchor_us + ts, before_us - 1000);
  EXPECT_LE(anchor_us + ts, after_us + 1000);
}

// A user object recorded before the file was configured (MXNet records them before the first
// run) still lands at a ts >= 0: the file's zero moves back to the oldest buffered record.
TEST_F(Trace, RecordsOlderThanTheConfigMoveTheZeroBack) {
  prof::Domain d("D");
  prof::Counter c(d, "early");
  c.set_value(7);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  configure("early.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(8);
  prof::dump(true);
  auto ev = events_named(read_trace("early.json"), "early");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0]["ts"].get<double>(), 0.0);
  EXPECT_GT(ev[1]["ts"].get<double>(), 4000);
}

TEST_F(Trace, TwoFilesInOneProcessAreBothValidWithTheirOwnHeaders) {
  prof::Domain d("D");
  prof::Counter c(d, "c");
  configure("first.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(1);
  prof::dump(true);
  configure("second.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(2);
  prof::dump(true);
  json first = read_trace("first.json"), second = read_trace("second.json");
  ASSERT_EQ(events_named(first, "c").size(), 1u);
  ASSERT_EQ(events_named(second, "c").size(), 1u);
  EXPECT_EQ(events_named(second, "c")[0]["args"]["c"], 2);
  for (const json* t : {&first, &second}) {
    EXPECT_EQ(nanomx::testing::process_name(*t, 0), "cpu/0");
    json ev = events_named(*t, "c")[0];
    EXPECT_EQ(nanomx::testing::process_name(*t, ev["pid"]), "D");
  }
}

// MXNet's profiler tutorial dumps, runs again and dumps again: the second dump continues the
// file instead of erasing what the first one wrote.
TEST_F(Trace, SameFileAgainAfterFinishedDumpIsContinued) {
  prof::Domain d("D");
  prof::Counter c(d, "c");
  configure("again.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(1);
  prof::dump(true);
  prof::set_state(prof::State::kRunning);
  c.set_value(2);
  prof::dump(true);
  auto ev = events_named(read_trace("again.json"), "c");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0]["args"]["c"], 1);
  EXPECT_EQ(ev[1]["args"]["c"], 2);
}

TEST_F(Trace, ContinuousDumpFileIsValidAfterEveryFlushAndOnlyGrows) {
  prof::set_config({{"profile_all", "true"},
                    {"filename", "continuous.json"},
                    {"continuous_dump", "true"},
                    {"dump_period", "100"}});
  prof::set_state(prof::State::kRunning);
  prof::Domain d("D");
  prof::Marker marker(d, "StartIteration");
  size_t last_size = 0;
  for (int i = 0; i < 5; ++i) {
    marker.mark();
    prof::dump(false);
    std::string text = nanomx::testing::read_text("continuous.json");
    EXPECT_GE(text.size(), last_size);
    last_size = text.size();
    json t = json::parse(text);  // valid after each flush
    EXPECT_EQ(events_named(t, "StartIteration").size(), static_cast<size_t>(i + 1));
  }
  prof::dump(true);
  EXPECT_EQ(events_named(read_trace("continuous.json"), "StartIteration").size(), 5u);
}

TEST_F(Trace, ConfigDeletesTheTargetFile) {
  { std::ofstream("stale.json") << "old"; }
  configure("stale.json");
  EXPECT_NE(access("stale.json", F_OK), 0);
}

TEST_F(Trace, UnwritableFileGivesAClearErrorAndKeepsTheEvents) {
  // set_config refuses a path that cannot be created; one that becomes uncreatable after the
  // config (its directory removed) fails at the dump.
  std::filesystem::create_directory("nonexistent-dir");
  configure("nonexistent-dir/x.json");
  std::filesystem::remove_all("nonexistent-dir");
  prof::set_state(prof::State::kRunning);
  prof::Domain d("D");
  prof::Counter(d, "kept").set_value(9);
  try {
    prof::dump(true);
    FAIL() << "expected an error";
  } catch (const nanomx::Error& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("cannot open the directory 'nonexistent-dir' of trace file "
                                     "'nonexistent-dir/x.json'"));
  }
  configure("recovered.json");
  prof::set_state(prof::State::kRunning);
  prof::dump(true);
  EXPECT_EQ(events_named(read_trace("recovered.json"), "kept").size(), 1u);
}

TEST_F(Trace, MemoryBoundDropsAndCountsInsteadOfGrowing) {
  configure("bounded.json", {{"max_buffer_mb", "1"}});
  prof::set_state(prof::State::kRunning);
  prof::Domain d("D");
  prof::Counter c(d, "c");
  const int total = 200000;  // 6.4 MB of records for a 1 MB bound
  for (int i = 0; i < total; ++i) c.set_value(static_cast<uint64_t>(i));
  uint64_t dropped = prof::dropped_events();
  EXPECT_GT(dropped, 0u);
  prof::dump(true);
  json t = read_trace("bounded.json");
  auto kept = events_named(t, "c");
  EXPECT_EQ(kept.size() + dropped, static_cast<size_t>(total));
  EXPECT_EQ(t["otherData"]["dropped_events"].get<uint64_t>(), dropped);
  // The oldest events are kept, in order.
  for (size_t i = 0; i < kept.size(); ++i) ASSERT_EQ(kept[i]["args"]["c"], i);
}

TEST_F(Trace, FlowLinksThePushToTheOperator) {
  configure("flow.json");
  prof::set_state(prof::State::kRunning);
  uint64_t id = prof::flow_start(prof::intern("operator"), prof::kImperative);
  ASSERT_NE(id, 0u);
  std::thread worker([&] { record_one_operator("dot", 0, id); });
  worker.join();
  prof::dump(true);
  json t = read_trace("flow.json");
  int starts = 0, finishes = 0;
  for (const auto& e : t["traceEvents"]) {
    if (!e.contains("id") || e["id"] != id) continue;
    if (e["ph"] == "s") ++starts;
    if (e["ph"] == "f") {
      ++finishes;
      EXPECT_EQ(e["bp"], "e");
      EXPECT_EQ(e["pid"], 0);
      EXPECT_EQ(e["tid"], events_named(t, "dot")[0]["tid"]);
    }
  }
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(finishes, 1);
}

// A GPU operator is two spans (docs/cuda.md): the launch on the worker's thread (category
// "operator launch", finishing the push flow) and the device execution on the stream's own row
// (category "operator", with the shapes), linked by a "launch" flow; the aggregate table counts
// each under its category. The device row is recorded from another thread, as the completer does.
TEST_F(Trace, GpuLaunchAndDeviceExecutionAreLinkedSpansOnTheirOwnRows) {
  configure("gpu.json", {{"aggregate_stats", "true"}});
  prof::set_state(prof::State::kRunning);
  const uint64_t push = prof::flow_start(prof::intern("operator"), prof::kImperative);
  ASSERT_NE(push, 0u);
  const int slot = 0;  // any device row will do: the layout has no GPU slot without CUDA
  const prof::NameId name = prof::intern("dot");
  uint64_t launch_flow = 0, launch_end = 0;
  std::thread worker([&] {
    prof::set_thread_name("gpu(0) worker");
    const uint64_t begin = prof::now_ticks();
    launch_end = begin + 2000;
    launch_flow = prof::record_operator_launch(name, slot, begin, launch_end, push, 0);
  });
  worker.join();
  ASSERT_NE(launch_flow, 0u);
  uint32_t row_tid = 0;
  uint64_t dependency = 0;
  std::thread completer([&] {
    prof::DeviceRow row("gpu(0) stream 1");
    row_tid = row.tid();
    int64_t a[2] = {4, 8}, b[2] = {8, 2}, c[2] = {4, 2};
    const prof::ShapeView in[2] = {{a, 2}, {b, 2}};
    const prof::ShapeView out[1] = {{c, 2}};
    int64_t words[prof::kMaxShapeWords];
    const size_t n = prof::pack_operator_shapes({in, out}, words, prof::kMaxShapeWords);
    row.record_operator(name, slot, launch_end + 500, launch_end + 90500, words, n, launch_flow);
    // The completion made another operation ready: its arrow leaves from the device span.
    dependency = row.dependency_flow_start(slot, launch_end + 90500);
  });
  completer.join();
  ASSERT_NE(dependency, 0u);
  const uint64_t next_begin = prof::now_ticks();
  prof::record_operator_packed(prof::intern("relu"), slot, next_begin, next_begin + 100, nullptr, 0,
                               0, dependency);
  const std::string table = prof::dumps(false);
  prof::dump(true);

  json t = read_trace("gpu.json");
  json launch, device;
  int begins = 0;
  for (const auto& e : events_named(t, "dot")) {
    if (e["ph"] != "B") continue;
    ++begins;
    (e["cat"] == "operator launch" ? launch : device) = e;
  }
  ASSERT_EQ(begins, 2) << t.dump();
  ASSERT_FALSE(launch.is_null());
  ASSERT_FALSE(device.is_null());
  EXPECT_EQ(device["cat"], "operator");
  EXPECT_EQ(launch["pid"], slot);
  EXPECT_EQ(device["pid"], slot);
  EXPECT_NE(launch["tid"], device["tid"]);
  EXPECT_EQ(device["tid"], row_tid);
  EXPECT_EQ(device["args"]["inputs"], json::parse("[[4,8],[8,2]]")) << device.dump();
  // The device row is named as a thread is.
  bool named = false;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == row_tid) {
      named = e["args"]["name"] == "gpu(0) stream 1";
    }
  }
  EXPECT_TRUE(named);
  // One s and one f per flow: the push ends at the launch, the launch flow at the device span.
  int launch_starts = 0, launch_finishes = 0, push_finishes = 0;
  for (const auto& e : t["traceEvents"]) {
    if (!e.contains("id")) continue;
    if (e["id"] == launch_flow && e["ph"] == "s") {
      ++launch_starts;
      EXPECT_EQ(e["tid"], launch["tid"]);
      EXPECT_EQ(e["cat"], "launch");
    }
    if (e["id"] == launch_flow && e["ph"] == "f") {
      ++launch_finishes;
      EXPECT_EQ(e["tid"], row_tid);
    }
    if (e["id"] == push && e["ph"] == "f") {
      ++push_finishes;
      EXPECT_EQ(e["tid"], launch["tid"]);
    }
  }
  int dependency_starts = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e.contains("id") && e["id"] == dependency && e["ph"] == "s") {
      ++dependency_starts;
      EXPECT_EQ(e["tid"], row_tid) << "a GPU op's dependency arrows leave from its device span";
    }
  }
  EXPECT_EQ(dependency_starts, 1);
  EXPECT_EQ(launch_starts, 1);
  EXPECT_EQ(launch_finishes, 1);
  EXPECT_EQ(push_finishes, 1);
  EXPECT_NE(table.find("operator launch"), std::string::npos) << table;
  EXPECT_NE(table.find("\noperator\n"), std::string::npos) << table;
}

TEST_F(Trace, MemoryCountersPerDeviceWithPeak) {
  configure("memory.json");
  prof::set_state(prof::State::kRunning);
  int slot = prof::device_slot(prof::device_code::kCPU, 0);
  uint64_t base = prof::memory_in_use(slot);
  prof::memory_alloc(slot, 1000);
  prof::memory_alloc(slot, 500);
  prof::memory_free(slot, 1000);
  prof::memory_free(slot, 500);
  EXPECT_EQ(prof::memory_in_use(slot), base);
  EXPECT_GE(prof::memory_peak(slot), base + 1500);
  prof::dump(true);
  json t = read_trace("memory.json");
  std::vector<uint64_t> values;
  for (const auto& e : events_named(t, "Memory: cpu/0")) {
    EXPECT_EQ(e["cat"], "Device Storage");
    values.push_back(e["args"]["Memory: cpu/0"]);
  }
  EXPECT_EQ(values, (std::vector<uint64_t>{base + 1000, base + 1500, base + 500, base}));
  EXPECT_GE(t["otherData"]["memory_peak_bytes"]["cpu/0"].get<uint64_t>(), base + 1500);
}

TEST_F(Trace, DeviceSlots) {
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(prof::device_slot(prof::device_code::kCPU, 0), 0);
  const int pinned = prof::device_slot(prof::device_code::kCPUPinned, 0);
  EXPECT_EQ(prof::device_slot(prof::device_code::kCPUShared, 0), pinned + 1);
  EXPECT_EQ(prof::device_slot_count(), pinned + 2);
  EXPECT_EQ(prof::device_slot_name(pinned), "cpu pinned/");
  EXPECT_THROW(prof::device_slot(prof::device_code::kCPU, cpus), nanomx::Error);
  EXPECT_THROW(prof::device_slot(prof::device_code::kGPU, 0), nanomx::Error);
  EXPECT_FALSE(prof::device_slot_configured(cpus));
  // Learning the GPU count later (the runtime asks CUDA lazily) moves no other slot.
  prof::set_gpu_slot_count(2);
  EXPECT_EQ(prof::device_slot(prof::device_code::kGPU, 1), cpus + 1);
  EXPECT_EQ(prof::device_slot_name(cpus + 1), "gpu/1");
  EXPECT_TRUE(prof::device_slot_configured(cpus + 1));
  EXPECT_FALSE(prof::device_slot_configured(cpus + 2));
  EXPECT_EQ(prof::device_slot(prof::device_code::kCPUPinned, 0), pinned);
  EXPECT_THROW(prof::device_slot(prof::device_code::kGPU, 2), nanomx::Error);
  prof::set_gpu_slot_count(0);
}

// The fixture's teardown check is the project's validator: it reports a trace that a viewer
// would misread, and a file that is not JSON at all.
TEST_F(Trace, FixtureReportsUnbalancedAndMalformedTraces) {
  EXPECT_EQ(trace_problems(), "");
  {
    std::ofstream("unbalanced.json")
        << R"({"traceEvents":[{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"p"}},)"
        << R"({"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"t"}},)"
        << R"({"name":"open","cat":"x","ph":"B","ts":1,"pid":0,"tid":1}]})";
  }
  std::string problems = trace_problems();
  EXPECT_NE(problems.find("'B' 'open' at 1 on pid 0 tid 1 never ends"), std::string::npos)
      << problems;
  skip_validation("unbalanced.json");
  { std::ofstream("truncated.json") << R"({"traceEvents":[{"name":)"; }
  problems = trace_problems();
  EXPECT_NE(problems.find("truncated.json"), std::string::npos) << problems;
  skip_validation("truncated.json");
  EXPECT_EQ(trace_problems(), "");
}

}  // namespace
