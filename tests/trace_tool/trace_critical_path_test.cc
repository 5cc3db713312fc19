// `nanomx-trace critical-path` on traces built in the test (the format of docs/trace-format.md:
// push flows from the caller, dependency flows between operations, ProfilerStep#N spans), each
// with a known critical path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "critical_path.h"
#include "test_util.h"
#include "trace_file.h"
#include "trace_model.h"

namespace nanomx::trace {
namespace {

using testing::run_command;
using testing::scratch_dir;
using testing::tool;
using testing::write_text;

// Builds a nanomx-style trace: caller thread (pid 1, tid 1), workers (pid 0, tids 10 and 11).
class TraceBuilder {
 public:
  TraceBuilder() {
    add(R"({"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"cpu/0"}})");
    add(R"({"name":"thread_name","ph":"M","pid":0,"tid":10,"args":{"name":"worker 0"}})");
    add(R"({"name":"thread_name","ph":"M","pid":0,"tid":11,"args":{"name":"worker 1"}})");
    add(R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"MXNET_C_API"}})");
    add(R"({"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"main"}})");
  }
  // An operation run on worker `tid` during [start, end] µs, pushed at `push` (no push flow
  // when push < 0).
  TraceBuilder& op(const std::string& name, int tid, double push, double start, double end) {
    ++ids_;
    if (push >= 0) {
      add(event(name, "operator", "s", push, 1, 1) + ",\"id\":" + std::to_string(ids_) + "}");
      add(event(name, "operator", "f", start, 0, tid) +
          ",\"bp\":\"e\",\"id\":" + std::to_string(ids_) + "}");
    }
    add(event(name, "operator", "B", start, 0, tid) + "}");
    add(event(name, "operator", "E", end, 0, tid) + "}");
    return *this;
  }
  // A dependency flow: the operation ending at `end` on `from_tid` made the one starting at
  // `start` on `to_tid` ready.
  TraceBuilder& dependency(int from_tid, double end, int to_tid, double start) {
    ++ids_;
    add(event("dependency", "dependency", "s", end, 0, from_tid) +
        ",\"id\":" + std::to_string(ids_) + "}");
    add(event("dependency", "dependency", "f", start, 0, to_tid) +
        ",\"bp\":\"e\",\"id\":" + std::to_string(ids_) + "}");
    return *this;
  }
  TraceBuilder& step(int n, double start, double end) {
    char line[256];
    std::snprintf(line, sizeof line,
                  R"({"name":"ProfilerStep#%d","cat":"ProfilerStep","ph":"X","ts":%.3f,)"
                  R"("dur":%.3f,"pid":1,"tid":1})",
                  n, start, end - start);
    add(line);
    return *this;
  }
  TraceBuilder& raw(const std::string& event) {
    add(event);
    return *this;
  }
  std::string text() const {
    std::string out = "{\"traceEvents\":[\n";
    for (size_t i = 0; i < events_.size(); ++i)
      out += events_[i] + (i + 1 < events_.size() ? ",\n" : "\n");
    return out + "]}\n";
  }
  std::string write(const std::string& name) const {
    std::string path = scratch_dir() + "/" + name;
    write_text(path, text());
    return path;
  }

 private:
  static std::string event(const std::string& name, const char* cat, const char* ph, double ts,
                           int pid, int tid) {
    char line[256];
    std::snprintf(line, sizeof line,
                  R"({"name":"%s","cat":"%s","ph":"%s","ts":%.3f,"pid":%d,"tid":%d)", name.c_str(),
                  cat, ph, ts, pid, tid);
    return line;
  }
  void add(const std::string& event) { events_.push_back(event); }
  std::vector<std::string> events_;
  int ids_ = 0;
};

CriticalPath path_of(const TraceBuilder& builder, std::optional<int64_t> step = std::nullopt) {
  auto trace = parse_trace(builder.text(), "built.json", 0);
  ModelOptions options;
  options.keep_flows = true;
  TraceModel model = build_model(*trace, options);
  return find_critical_path(model, "built.json", step);
}

int64_t kind_ns(const CriticalPath& path, PathKind kind) {
  return path.by_kind[static_cast<int>(kind)].ns;
}

struct Expected {
  PathKind kind;
  double start_us, end_us;
  std::string name;  // compute only
};

void expect_segments(const CriticalPath& path, const std::vector<Expected>& expected) {
  ASSERT_EQ(path.segments.size(), expected.size()) << format_critical_path_text(path);
  for (size_t i = 0; i < expected.size(); ++i) {
    const PathSegment& segment = path.segments[i];
    SCOPED_TRACE("segment " + std::to_string(i));
    EXPECT_EQ(segment.kind, expected[i].kind);
    EXPECT_EQ(segment.start_ns, static_cast<int64_t>(expected[i].start_us * 1000));
    EXPECT_EQ(segment.end_ns, static_cast<int64_t>(expected[i].end_us * 1000));
    if (segment.kind == PathKind::kCompute) {
      EXPECT_EQ(path.strings[segment.name], expected[i].name);
    }
  }
}

// Step 0 over [0, 100]: A (worker 0) -> C (worker 1) -> D (worker 0) by dependency flows; B runs
// on worker 1 in parallel with A and ends long before C could start: it does not matter.
TraceBuilder chain() {
  TraceBuilder builder;
  builder.step(0, 0, 100)
      .op("A", 10, 1, 5, 30)
      .op("B", 11, 2, 6, 15)
      .op("C", 11, 3, 32, 60)
      .op("D", 10, 4, 62, 90)
      .dependency(10, 30, 11, 32)
      .dependency(11, 60, 10, 62);
  return builder;
}

TEST(CriticalPath, FollowsDependencyFlowsAndSkipsTheParallelBranch) {
  CriticalPath path = path_of(chain());
  EXPECT_EQ(path.edges, PathEdges::kDependencyFlows);
  EXPECT_EQ(path.dependency_edges, 2u);
  EXPECT_EQ(path.push_edges, 4u);
  EXPECT_EQ(path.operations, 4u);
  // The whole trace: from the first push (1 µs) to D's end.
  // A was ready at its push (1 µs) and worker 0 was free: nothing recorded explains the wait
  // until 5 µs, so it is idle.
  expect_segments(path, {{PathKind::kIdle, 1, 5, ""},
                         {PathKind::kCompute, 5, 30, "A"},
                         {PathKind::kDependency, 30, 32, ""},
                         {PathKind::kCompute, 32, 60, "C"},
                         {PathKind::kDependency, 60, 62, ""},
                         {PathKind::kCompute, 62, 90, "D"}});
  EXPECT_EQ(path.length_ns(), 89'000);
  EXPECT_EQ(kind_ns(path, PathKind::kCompute), 81'000);
  EXPECT_EQ(kind_ns(path, PathKind::kDependency), 4'000);
  EXPECT_EQ(kind_ns(path, PathKind::kCaller), 0);
  EXPECT_EQ(kind_ns(path, PathKind::kIdle), 4'000);
  for (const PathTotal& total : path.by_operator) EXPECT_NE(total.key, "B");
  ASSERT_FALSE(path.levers.empty());
  EXPECT_EQ(path.levers[0].what, "make C faster (1 on the path)");  // 28 µs, as D; C sorts first
  EXPECT_EQ(path.levers[0].ns, 28'000);
  ASSERT_GE(path.by_thread.size(), 2u);
  // A, D, the handoff to D and A's wait after its push: a gap counts on the thread of the
  // operation that waited.
  EXPECT_EQ(path.by_thread[0].key, "cpu/0 / worker 0");
  EXPECT_EQ(path.by_thread[0].ns, 59'000);
}

TEST(CriticalPath, StepWindowStartsAtTheStep) {
  CriticalPath path = path_of(chain(), 0);
  EXPECT_EQ(path.window_start_ns, 0);
  EXPECT_EQ(path.window_end_ns, 100'000);
  ASSERT_FALSE(path.segments.empty());
  // Before the first push the caller was busy with something the trace does not show.
  EXPECT_EQ(path.segments[0].kind, PathKind::kCaller);
  EXPECT_EQ(path.segments[0].start_ns, 0);
  EXPECT_EQ(path.segments[0].end_ns, 1'000);
  EXPECT_EQ(path.length_ns(), 90'000);
  EXPECT_EQ(kind_ns(path, PathKind::kCaller), 1'000);
  EXPECT_EQ(path.segments[1].kind, PathKind::kIdle);
}

TEST(CriticalPath, StepKeepsOnlyTheOperationsPushedInIt) {
  TraceBuilder builder;
  // Step 0: X (long) on worker 0. Step 1 [50, 100]: Y then Z, Z depends on Y. X ends inside
  // step 1 but was pushed in step 0.
  builder.step(0, 0, 50)
      .step(1, 50, 100)
      .op("X", 10, 1, 2, 80)
      .op("Y", 11, 51, 52, 60)
      .op("Z", 11, 53, 65, 70)
      .dependency(11, 60, 11, 65);
  CriticalPath path = path_of(builder, 1);
  EXPECT_EQ(path.operations, 2u);
  expect_segments(path, {{PathKind::kCaller, 50, 51, ""},
                         {PathKind::kIdle, 51, 52, ""},
                         {PathKind::kCompute, 52, 60, "Y"},
                         {PathKind::kDependency, 60, 65, ""},
                         {PathKind::kCompute, 65, 70, "Z"}});
  CriticalPath step0 = path_of(builder, 0);
  EXPECT_EQ(step0.operations, 1u);
  EXPECT_EQ(step0.end_ns, 80'000);  // X runs past its step's end; the path follows it
  try {
    path_of(builder, 7);
    FAIL() << "expected a TraceError";
  } catch (const TraceError& error) {
    EXPECT_EQ(std::string(error.what()),
              "built.json: no step 7; the trace has 2 steps, numbered 0 to 1");
  }
}

TEST(CriticalPath, WithoutDependencyFlowsFallsBackToPushFlowsAndThreadOrder) {
  TraceBuilder builder;
  builder.op("A", 10, 1, 5, 30).op("B", 11, 2, 6, 15).op("C", 11, 3, 32, 60).op("D", 10, 4, 62, 90);
  CriticalPath path = path_of(builder);
  EXPECT_EQ(path.edges, PathEdges::kPushFlows);
  // D's latest predecessor is A, before it on worker 0: the gap is idle (nothing recorded
  // says D waited for C).
  expect_segments(path, {{PathKind::kIdle, 1, 5, ""},
                         {PathKind::kCompute, 5, 30, "A"},
                         {PathKind::kIdle, 30, 62, ""},
                         {PathKind::kCompute, 62, 90, "D"}});
  std::string text = format_critical_path_text(path);
  EXPECT_NE(text.find("push flows and thread order only: the trace has no dependency flows"),
            std::string::npos)
      << text;
}

TEST(CriticalPath, WithoutFlowsUsesThreadOrderAndTopLevelSlices) {
  TraceBuilder builder;
  builder.op("A", 10, -1, 5, 30)
      .op("B", 11, -1, 6, 15)
      .op("D", 10, -1, 62, 90)
      .raw(R"({"name":"inner","cat":"operator","ph":"X","ts":70,"dur":5,"pid":0,"tid":10})");
  CriticalPath path = path_of(builder);
  EXPECT_EQ(path.edges, PathEdges::kThreadOrder);
  EXPECT_EQ(path.operations, 3u);  // "inner" is nested in D: not an operation of its own
  expect_segments(path, {{PathKind::kCompute, 5, 30, "A"},
                         {PathKind::kIdle, 30, 62, ""},
                         {PathKind::kCompute, 62, 90, "D"}});
  EXPECT_NE(format_critical_path_text(path).find("thread order only: the trace has no flows"),
            std::string::npos);
}

TEST(CriticalPath, CallerBoundRunWaitsForTheCaller) {
  // Tiny operations, each started right after its push: the caller bounds the run.
  TraceBuilder builder;
  for (int i = 0; i < 5; ++i) {
    double push = 10.0 * i;
    builder.op("tiny", 10, push, push + 1, push + 2);
  }
  CriticalPath path = path_of(builder);
  EXPECT_EQ(path.length_ns(), 42'000);
  EXPECT_EQ(kind_ns(path, PathKind::kCompute), 1'000);  // only the last: the others end early
  EXPECT_EQ(kind_ns(path, PathKind::kCaller), 40'000);  // from push to push on the caller
  EXPECT_EQ(kind_ns(path, PathKind::kIdle), 1'000);     // the last one's push to its start
  ASSERT_FALSE(path.levers.empty());
  EXPECT_EQ(path.levers[0].what.rfind("push the work sooner from MXNET_C_API / main", 0), 0u)
      << path.levers[0].what;
}

TEST(CriticalPath, SyncSlicesOnlyModelKeepsWhatThePathNeeds) {
  TraceBuilder builder = chain();
  builder.raw(R"({"name":"api","cat":"MXNET_C_API","ph":"b","ts":1,"pid":1,"tid":1,"id":1})")
      .raw(R"({"name":"api","cat":"MXNET_C_API","ph":"e","ts":2,"pid":1,"tid":1,"id":1})")
      .raw(R"({"name":"calls","ph":"C","ts":1,"pid":1,"tid":1,"args":{"calls":1}})")
      .raw(R"({"name":"mark","ph":"i","ts":1,"pid":1,"tid":1,"s":"t"})");
  auto trace = parse_trace(builder.text(), "built.json", 0);
  ModelOptions full_options;
  full_options.keep_flows = true;
  ModelOptions sync_options = full_options;
  sync_options.sync_slices_only = true;
  TraceModel full = build_model(*trace, full_options);
  TraceModel sync = build_model(*trace, sync_options);
  EXPECT_EQ(full.slices.size(), 6u);  // 4 operations, the step, the async span
  EXPECT_EQ(sync.slices.size(), 5u);
  EXPECT_EQ(full.counters.size(), 1u);
  EXPECT_TRUE(sync.counters.empty());
  EXPECT_EQ(full.instants.size(), 1u);
  EXPECT_TRUE(sync.instants.empty());
  EXPECT_EQ(sync.flow_points.size(), full.flow_points.size());
  EXPECT_EQ(sync.flow_count, 6u);  // 4 push flows, 2 dependency flows
}

TEST(CriticalPath, FlowIdReusedAfterItsFinishIsANewFlow) {
  TraceBuilder builder;
  builder.raw(R"({"name":"a","cat":"c","ph":"s","ts":1,"pid":0,"tid":10,"id":7})")
      .raw(R"({"name":"a","cat":"c","ph":"f","ts":2,"pid":0,"tid":11,"id":7})")
      .raw(R"({"name":"b","cat":"c","ph":"s","ts":3,"pid":0,"tid":10,"id":7})")
      .raw(R"({"name":"b","cat":"c","ph":"t","ts":4,"pid":0,"tid":11,"id":7})")
      .raw(R"({"name":"b","cat":"c","ph":"f","ts":5,"pid":0,"tid":11,"id":7})");
  auto trace = parse_trace(builder.text(), "built.json", 0);
  ModelOptions options;
  options.keep_flows = true;
  TraceModel model = build_model(*trace, options);
  ASSERT_EQ(model.flow_points.size(), 5u);
  EXPECT_EQ(model.flow_count, 2u);
  EXPECT_EQ(model.flow_points[0].flow, model.flow_points[1].flow);
  EXPECT_EQ(model.flow_points[2].flow, model.flow_points[4].flow);
  EXPECT_NE(model.flow_points[1].flow, model.flow_points[2].flow);
}

TEST(CriticalPath, ViewCommandLine) {
  std::string file = chain().write("view_chain.json");
  std::string page = scratch_dir() + "/view_chain.html";
  auto ok = run_command(tool() + " view " + file + " --critical-path --step 0 -o " + page);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto two = run_command(tool() + " view " + file + " " + file + " --critical-path -o " + page);
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.output.find("--critical-path takes one trace"), std::string::npos) << two.output;
  auto step = run_command(tool() + " view " + file + " --step 0 -o " + page);
  EXPECT_EQ(step.exit_code, 2);
  EXPECT_NE(step.output.find("--step needs --critical-path"), std::string::npos) << step.output;
  auto missing = run_command(tool() + " view " + file + " --critical-path --step 9 -o " + page);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("no step 9"), std::string::npos) << missing.output;
  auto diff = run_command(tool() + " view " + file + " " + file + " -o " + page);
  EXPECT_EQ(diff.exit_code, 0) << diff.output;
  auto three = run_command(tool() + " view " + file + " " + file + " " + file + " -o " + page);
  EXPECT_EQ(three.exit_code, 2);
}

TEST(CriticalPath, CommandLine) {
  std::string file = chain().write("chain.json");
  auto text = run_command(tool() + " critical-path " + file + " --step 0");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("step 0: 90.0 us (the step: 100 us)"), std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("what would shorten the step most"), std::string::npos);
  auto json = run_command(tool() + " critical-path " + file + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(json.output).get(root)) << json.output;
  EXPECT_EQ(std::string_view(root["edges"].get_string().value()), "dependency");
  EXPECT_EQ(root["path"].get_array().value().size(), 6u);
  EXPECT_NEAR(root["length_us"].get_double().value(), 89.0, 1e-9);
  auto missing_step = run_command(tool() + " critical-path " + file + " --step 3");
  EXPECT_EQ(missing_step.exit_code, 1);
  EXPECT_NE(missing_step.output.find("no step 3; the trace has 1 steps, numbered 0 to 0"),
            std::string::npos)
      << missing_step.output;
  std::string empty = scratch_dir() + "/empty_ops.json";
  write_text(empty, "{\"traceEvents\":[]}");
  auto none = run_command(tool() + " critical-path " + empty);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.output.find("the trace holds no operation"), std::string::npos) << none.output;
}

}  // namespace
}  // namespace nanomx::trace
