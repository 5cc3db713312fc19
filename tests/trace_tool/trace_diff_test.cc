// `nanomx-trace diff` on traces built in the test: rows, sorting, verdict, threshold, the JSON
// form, --fail-above and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "diff.h"
#include "test_util.h"
#include "trace_file.h"

namespace nanomx::trace {
namespace {

using testing::run_command;
using testing::scratch_dir;
using testing::tool;
using testing::write_text;

struct Op {
  const char* name;
  const char* cat;
  double ts, dur;  // µs
};

std::string trace_text(const std::vector<Op>& ops) {
  std::string out = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < ops.size(); ++i) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                  "\"pid\":0,\"tid\":1}%s\n",
                  ops[i].name, ops[i].cat, ops[i].ts, ops[i].dur, i + 1 < ops.size() ? "," : "");
    out += line;
  }
  return out + "]}\n";
}

std::string write_trace(const std::string& name, const std::vector<Op>& ops) {
  std::string path = scratch_dir() + "/" + name;
  write_text(path, trace_text(ops));
  return path;
}

// BASE: dot 2 x 10 ms, _copyto 2 ms, relu 1 ms. NEW: dot 2 x 25.5 ms, _copyto 6 ms, softmax
// 0.5 ms (new), relu gone.
std::string base_path() {
  return write_trace("base.json", {{"dot", "operator", 0, 10000},
                                   {"dot", "operator", 20000, 10000},
                                   {"_copyto", "operator", 40000, 2000},
                                   {"relu", "operator", 50000, 1000}});
}
std::string new_path() {
  return write_trace("new.json", {{"dot", "operator", 0, 25500},
                                  {"dot", "operator", 30000, 25500},
                                  {"_copyto", "operator", 60000, 6000},
                                  {"softmax", "operator", 70000, 500}});
}

TEST(TraceDiff, RowsSortedByAbsoluteChangeWithVerdict) {
  DiffResult result = diff_traces(base_path(), new_path(), {});
  ASSERT_EQ(result.rows.size(), 4u);
  EXPECT_EQ(result.rows[0].key, "dot");
  EXPECT_EQ(result.rows[0].change_ns(), 31'000'000);
  EXPECT_EQ(result.rows[0].base.count, 2u);
  EXPECT_DOUBLE_EQ(result.rows[0].next.mean_ns(), 25'500'000.0);
  EXPECT_EQ(result.rows[1].key, "_copyto");
  EXPECT_EQ(result.rows[2].key, "relu");  // -1 ms: larger in magnitude than softmax's +0.5 ms
  EXPECT_EQ(result.rows[2].next.count, 0u);
  EXPECT_EQ(result.rows[3].key, "softmax");
  EXPECT_TRUE(std::isinf(result.rows[3].change_pct()));
  // 23 ms -> 57.5 ms: +150 %.
  EXPECT_NEAR(result.change_pct(), 150.0, 1e-9);
  EXPECT_EQ(result.verdict,
            "NEW is 150.0 % slower: dot +31.0 ms, _copyto +4.00 ms, softmax +500 us");
}

TEST(TraceDiff, FasterVerdictNamesTheGains) {
  DiffResult result = diff_traces(new_path(), base_path(), {});
  EXPECT_EQ(result.verdict.rfind("NEW is 60.0 % faster: dot -31.0 ms, _copyto -4.00 ms", 0), 0u)
      << result.verdict;
}

TEST(TraceDiff, ThresholdHidesSmallRelativeChanges) {
  DiffOptions options;
  options.threshold_pct = 175;  // dot +155 %, _copyto +200 %, relu -100 %, softmax new
  DiffResult result = diff_traces(base_path(), new_path(), options);
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_EQ(result.rows[0].key, "_copyto");
  EXPECT_EQ(result.rows[1].key, "softmax");
  EXPECT_EQ(result.hidden_rows, 2u);
  // The verdict still compares everything.
  EXPECT_NEAR(result.change_pct(), 150.0, 1e-9);
}

TEST(TraceDiff, ByCategory) {
  std::string a = write_trace(
      "cat_a.json", {{"dot", "operator", 0, 1000}, {"MXImperativeInvoke", "MXNET_C_API", 0, 300}});
  std::string b = write_trace("cat_b.json", {{"dot", "operator", 0, 1500},
                                             {"relu", "operator", 2000, 500},
                                             {"MXImperativeInvoke", "MXNET_C_API", 0, 200}});
  DiffOptions options;
  options.by = DiffBy::kCategory;
  DiffResult result = diff_traces(a, b, options);
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_EQ(result.rows[0].key, "operator");
  EXPECT_EQ(result.rows[0].change_ns(), 1'000'000);
  EXPECT_EQ(result.rows[0].next.count, 2u);
  EXPECT_EQ(result.rows[1].key, "MXNET_C_API");
}

TEST(TraceDiff, ByStepComparesMeanStepTime) {
  std::string a = write_trace("step_a.json", {{"ProfilerStep#0", "ProfilerStep", 0, 10000},
                                              {"ProfilerStep#1", "ProfilerStep", 10000, 10000},
                                              {"dot", "operator", 0, 5000}});
  std::string b = write_trace("step_b.json", {{"ProfilerStep#0", "ProfilerStep", 0, 11000},
                                              {"ProfilerStep#1", "ProfilerStep", 11000, 13000},
                                              {"ProfilerStep#2", "ProfilerStep", 24000, 12000},
                                              {"dot", "operator", 0, 5000}});
  DiffOptions options;
  options.by = DiffBy::kStep;
  DiffResult result = diff_traces(a, b, options);
  ASSERT_EQ(result.rows.size(), 3u);
  EXPECT_EQ(result.rows[0].key, "ProfilerStep#2");  // +12 ms (new)
  EXPECT_EQ(result.rows[1].key, "ProfilerStep#1");
  // Mean step: 10 ms -> 12 ms.
  EXPECT_NEAR(result.change_pct(), 20.0, 1e-9);
  EXPECT_EQ(result.verdict.rfind("NEW is 20.0 % slower per step: ", 0), 0u) << result.verdict;
  // --by name leaves the steps out.
  DiffResult by_name = diff_traces(a, b, {});
  ASSERT_EQ(by_name.rows.size(), 1u);
  EXPECT_EQ(by_name.rows[0].key, "dot");
  EXPECT_EQ(by_name.verdict, "NEW takes the same time as BASE");
}

TEST(TraceDiff, ByStepWithoutStepsIsAClearError) {
  DiffOptions options;
  options.by = DiffBy::kStep;
  try {
    diff_traces(base_path(), new_path(), options);
    FAIL() << "expected a TraceError";
  } catch (const TraceError& error) {
    EXPECT_NE(std::string(error.what()).find("base.json: --by step needs steps"), std::string::npos)
        << error.what();
  }
}

TEST(TraceDiff, CommandLineTextJsonAndFailAbove) {
  std::string base = base_path(), next = new_path();
  auto text = run_command(tool() + " diff " + base + " " + next);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("NEW is 150.0 % slower: dot +31.0 ms"), std::string::npos);
  EXPECT_NE(text.output.find("gone"), std::string::npos);
  EXPECT_LT(text.output.find("dot "), text.output.find("_copyto "));

  auto json = run_command(tool() + " diff " + base + " " + next + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(json.output).get(root)) << json.output;
  EXPECT_EQ(std::string_view(root["by"].get_string().value()), "name");
  EXPECT_NEAR(root["change_pct"].get_double().value(), 150.0, 1e-9);
  simdjson::dom::array rows = root["rows"].get_array().value();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(std::string_view(rows.at(0)["key"].get_string().value()), "dot");
  EXPECT_NEAR(rows.at(0)["change_ms"].get_double().value(), 31.0, 1e-9);
  EXPECT_TRUE(rows.at(3)["change_pct"].is_null());
  EXPECT_EQ(std::string_view(rows.at(3)["status"].get_string().value()), "new");

  auto fails = run_command(tool() + " diff " + base + " " + next + " --fail-above 100");
  EXPECT_EQ(fails.exit_code, 1) << fails.output;
  EXPECT_NE(fails.output.find("above --fail-above 100 %"), std::string::npos) << fails.output;
  auto passes = run_command(tool() + " diff " + base + " " + next + " --fail-above 200");
  EXPECT_EQ(passes.exit_code, 0) << passes.output;
  auto faster = run_command(tool() + " diff " + next + " " + base + " --fail-above 0");
  EXPECT_EQ(faster.exit_code, 0) << faster.output;
}

TEST(TraceDiff, FromAnEmptyBaseIsInfinitelySlower) {
  std::string empty = write_trace("empty_base.json", {});
  DiffResult result = diff_traces(empty, new_path(), {});
  EXPECT_TRUE(std::isinf(result.change_pct()));
  EXPECT_EQ(result.verdict.rfind("NEW is slower (BASE has no timed events): dot +51.0 ms", 0), 0u)
      << result.verdict;
  auto fails = run_command(tool() + " diff " + empty + " " + new_path() + " --fail-above 1000");
  EXPECT_EQ(fails.exit_code, 1) << fails.output;
  auto json = run_command(tool() + " diff " + empty + " " + new_path() + " --format json");
  EXPECT_NE(json.output.find("\"change_pct\":null,\"verdict\""), std::string::npos) << json.output;
}

TEST(TraceDiff, CommandLineErrors) {
  std::string base = base_path();
  auto missing = run_command(tool() + " diff " + base + " " + scratch_dir() + "/absent.json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("absent.json: cannot open"), std::string::npos) << missing.output;
  std::string garbage = scratch_dir() + "/garbage.json";
  write_text(garbage, "hello");
  auto bad = run_command(tool() + " diff " + garbage + " " + base);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("garbage.json: byte 0: not a JSON trace"), std::string::npos)
      << bad.output;
  auto one = run_command(tool() + " diff " + base);
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.output.find("diff takes exactly two files"), std::string::npos);
  auto by = run_command(tool() + " diff " + base + " " + base + " --by op");
  EXPECT_EQ(by.exit_code, 2);
  EXPECT_NE(by.output.find("--by must be name, category or step"), std::string::npos);
  auto pct = run_command(tool() + " diff " + base + " " + base + " --fail-above -3");
  EXPECT_EQ(pct.exit_code, 2);
  EXPECT_NE(pct.output.find("--fail-above needs a percentage"), std::string::npos);
  auto steps = run_command(tool() + " diff " + base + " " + base + " --by step");
  EXPECT_EQ(steps.exit_code, 1);
  EXPECT_NE(steps.output.find("--by step needs steps"), std::string::npos) << steps.output;
}

}  // namespace
}  // namespace nanomx::trace
