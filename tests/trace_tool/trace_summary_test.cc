// `nanomx-trace summary` against hand-computed tables (fixtures/*.expected.*). Each expected file
// was checked line by line against MXNet's table (docs/mxnet-compat.md#aggregate-statistics): the
// nanomx fixture reproduces the spec's verbatim example numbers (MXImperativeInvoke
// 0.3360/0.0990/0.2370/0.1680, the counter's last value 232 -> 0.2320 and Avg (232-216)/2 ->
// 0.0080, Memory Avg (5e9-96060)/2 bytes -> 2499952.0000 kB after the float conversion), the MXNet
// fixture leaves the operator shadow tasks out and shows the INT_MAX minimum of a counter above
// 2^31.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "summary.h"
#include "test_util.h"
#include "trace_file.h"
#include "trace_model.h"

namespace nanomx::trace {
namespace {

using testing::fixture;
using testing::read_text;
using testing::run_command;
using testing::tool;

std::string summarize(const std::string& path, SummaryFormat format = SummaryFormat::kTable,
                      SortKey sort_by = SortKey::kTotal, bool ascending = false) {
  auto trace = load_trace(path);
  TraceModel model = build_model(*trace);
  auto rows = display_rows(aggregate(model), sort_by, ascending);
  return format == SummaryFormat::kJson ? format_json(rows) : format_table(rows);
}

TEST(TraceSummary, NanomxTraceMatchesHandComputedTable) {
  EXPECT_EQ(summarize(fixture("nanomx.json")), read_text(fixture("nanomx.expected.txt")));
}

TEST(TraceSummary, NanomxTraceJsonMatchesHandComputedLayout) {
  EXPECT_EQ(summarize(fixture("nanomx.json"), SummaryFormat::kJson),
            read_text(fixture("nanomx.expected.json")));
}

TEST(TraceSummary, MxnetPrettyPrintedTraceMatchesHandComputedTable) {
  EXPECT_EQ(summarize(fixture("mxnet_pretty.json")),
            read_text(fixture("mxnet_pretty.expected.txt")));
}

TEST(TraceSummary, TorchCompleteEventTraceMatchesHandComputedTable) {
  EXPECT_EQ(summarize(fixture("torch_x.json")), read_text(fixture("torch_x.expected.txt")));
}

// The summary's JSON goes through the profiler's escaper (one formatter for both), so a name
// with a quote or a backslash still gives valid JSON.
TEST(TraceSummary, JsonEscapesNamesAsTheProfilerDoes) {
  const std::string path = testing::scratch_dir() + "/quoted_names.json";
  testing::write_text(path,
                      R"([{"name": "say \"hi\" \\ now", "cat": "operator", "ph": "X", "ts": 1, )"
                      R"("dur": 2, "tid": 1, "pid": 0}])");
  const std::string json = summarize(path, SummaryFormat::kJson);
  EXPECT_NE(json.find(R"("say \"hi\" \\ now": {)"), std::string::npos) << json;
}

TEST(TraceSummary, TruncatedTraceReadsCompleteEventsAndCountsIgnoredBytes) {
  auto trace = load_trace(fixture("truncated.json"));
  EXPECT_TRUE(trace->truncated);
  // The file ends with ",\n" and 34 bytes of an unfinished event.
  EXPECT_EQ(trace->ignored_bytes, 36u);
  EXPECT_EQ(summarize(fixture("truncated.json")), read_text(fixture("truncated.expected.txt")));
}

TEST(TraceSummary, CommandLineReportsTruncation) {
  auto result = run_command(tool() + " summary " + fixture("truncated.json"));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.output.find("truncated (the events array is not closed): read 15 events, "
                               "ignored the last 36 bytes"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("_random_uniform"), std::string::npos);
}

TEST(TraceSummary, SortByCountAscendingWithCategoryFilter) {
  auto result = run_command(tool() + " summary " + fixture("nanomx.json") +
                            " --sort-by count --ascending --category MXNET_C_API");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, read_text(fixture("nanomx.count_ascending_api.expected.txt")));
}

TEST(TraceSummary, GzipInputGivesTheSameTable) {
  std::string gz = testing::scratch_dir() + "/summary_gzip.json.gz";
  auto convert = run_command(tool() + " convert " + fixture("nanomx.json") + " -o " + gz);
  ASSERT_EQ(convert.exit_code, 0) << convert.output;
  EXPECT_EQ(summarize(gz), read_text(fixture("nanomx.expected.txt")));
}

TEST(TraceSummary, EmptyFileIsAClearError) {
  auto result = run_command(tool() + " summary " + fixture("empty.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("empty.json: empty file (0 bytes); expected a Chrome trace"),
            std::string::npos)
      << result.output;
}

TEST(TraceSummary, NonJsonFileIsAClearError) {
  auto result = run_command(tool() + " summary " + fixture("not_json.txt"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("not_json.txt: byte 0: not a JSON trace: expected '{' or '[', "
                               "found 'h'"),
            std::string::npos)
      << result.output;
}

TEST(TraceSummary, MalformedEventIsReportedWithItsIndexAndOffset) {
  auto result = run_command(tool() + " summary " + fixture("malformed.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("malformed.json: event 1 (bytes 55-92) is not valid JSON"),
            std::string::npos)
      << result.output;
}

TEST(TraceSummary, MissingFileAndBadOptionsFail) {
  auto missing = run_command(tool() + " summary /nonexistent/trace.json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent/trace.json: cannot open"), std::string::npos);
  auto bad_sort = run_command(tool() + " summary " + fixture("nanomx.json") + " --sort-by speed");
  EXPECT_EQ(bad_sort.exit_code, 2);
  EXPECT_NE(bad_sort.output.find("--sort-by must be one of total, avg, min, max, count"),
            std::string::npos);
  auto bad_category =
      run_command(tool() + " summary " + fixture("nanomx.json") + " --category nope");
  EXPECT_EQ(bad_category.exit_code, 1);
  EXPECT_NE(bad_category.output.find("no category \"nope\"; the trace has: \"Device Storage\""),
            std::string::npos)
      << bad_category.output;
}

// The command line reads in chunks (stream_events); every chunk size, down to one byte, must give
// the table the whole-file reader gives, whatever the layout (one event per line, MXNet's pretty
// printing, an array form, a truncated tail).
TEST(TraceSummary, ChunkedReadingMatchesWholeFileReading) {
  for (const char* name : {"nanomx.json", "mxnet_pretty.json", "torch_x.json", "truncated.json"}) {
    std::string whole = summarize(fixture(name));
    for (size_t chunk : {1, 2, 7, 64, 333, 4096}) {
      StreamInfo info;
      ModelOptions options;
      options.keep_slices = false;
      TraceModel model = stream_model(fixture(name), options, &info, chunk);
      std::string streamed = format_table(display_rows(aggregate(model), SortKey::kTotal, false));
      EXPECT_EQ(streamed, whole) << name << " read in chunks of " << chunk << " bytes";
      EXPECT_EQ(info.truncated, std::string(name) == "truncated.json") << name;
      EXPECT_EQ(info.ignored_bytes, info.truncated ? 36u : 0u) << name << ", chunk " << chunk;
    }
  }
}

TEST(TraceSummary, ChunkedReadingReportsBadEventsWithTheirOffset) {
  try {
    StreamInfo info;
    stream_model(fixture("malformed.json"), ModelOptions{}, &info, 16);
    FAIL() << "malformed.json was accepted";
  } catch (const TraceError& error) {
    EXPECT_NE(std::string(error.what()).find("event 1 (bytes 55-92) is not valid JSON"),
              std::string::npos)
        << error.what();
  }
}

// merge reads whole files (load_trace): its errors must be as precise.
TEST(TraceSummary, WholeFileReaderReportsTheSameErrors) {
  auto message_of = [](const std::string& name) -> std::string {
    try {
      load_trace(fixture(name));
    } catch (const TraceError& error) {
      return error.what();
    }
    return "accepted";
  };
  EXPECT_NE(message_of("malformed.json").find("event 1 (bytes 55-92) is not valid JSON"),
            std::string::npos);
  EXPECT_NE(message_of("empty.json").find("empty file (0 bytes)"), std::string::npos);
  EXPECT_NE(message_of("not_json.txt").find("byte 0: not a JSON trace"), std::string::npos);
  auto cut = load_trace(fixture("truncated.json"));
  EXPECT_EQ(cut->events.size(), 15u);
}

TEST(TraceSummary, EpochMicrosecondTimestampsKeepNanosecondDurations) {
  // 1.7e15 µs * 1000 does not fit a double's mantissa; integers must convert exactly.
  std::string text =
      "[{\"name\":\"a\",\"cat\":\"c\",\"ph\":\"B\",\"ts\":1764670000001000,\"pid\":0,\"tid\":1},"
      "{\"name\":\"a\",\"cat\":\"c\",\"ph\":\"E\",\"ts\":1764670000001001,\"pid\":0,\"tid\":1},"
      "{\"name\":\"b\",\"cat\":\"c\",\"ph\":\"X\",\"ts\":1764670000002000.125,\"dur\":0.25,"
      "\"pid\":0,\"tid\":1}]";
  auto trace = parse_trace(text, "inline", text.size());
  TraceModel model = build_model(*trace);
  ASSERT_EQ(model.slices.size(), 2u);
  for (const Slice& slice : model.slices) {
    int64_t expected = model.strings[slice.name] == "a" ? 1000 : 250;
    EXPECT_EQ(slice.dur_ns, expected) << model.strings[slice.name];
  }
}

TEST(TraceSummary, RecordsOutOfTimeOrderStillPair) {
  // MXNet writes records in queue order, not time order (each record's B and E together).
  std::string text =
      "[{\"name\":\"late\",\"cat\":\"c\",\"ph\":\"B\",\"ts\":50,\"pid\":0,\"tid\":1},"
      "{\"name\":\"late\",\"cat\":\"c\",\"ph\":\"E\",\"ts\":60,\"pid\":0,\"tid\":1},"
      "{\"name\":\"outer\",\"cat\":\"c\",\"ph\":\"B\",\"ts\":10,\"pid\":0,\"tid\":1},"
      "{\"name\":\"outer\",\"cat\":\"c\",\"ph\":\"E\",\"ts\":40,\"pid\":0,\"tid\":1},"
      "{\"name\":\"inner\",\"cat\":\"c\",\"ph\":\"B\",\"ts\":20,\"pid\":0,\"tid\":1},"
      "{\"name\":\"inner\",\"cat\":\"c\",\"ph\":\"E\",\"ts\":25,\"pid\":0,\"tid\":1}]";
  auto trace = parse_trace(text, "inline", text.size());
  StatTable table = aggregate(build_model(*trace));
  EXPECT_EQ(table["c"]["outer"].total, 30000);
  EXPECT_EQ(table["c"]["inner"].total, 5000);
  EXPECT_EQ(table["c"]["late"].total, 10000);
}

// `summary --per-step`: each ProfilerStep#N span's own table, from the slices that start in it on
// any thread, with counters and markers in it; slices outside every step are counted on stderr.
TEST(TraceSummary, PerStepTablesCutAtTheStepSpans) {
  const std::string text = R"({"traceEvents":[
{"name":"ProfilerStep#0","cat":"ProfilerStep","ph":"X","ts":0,"dur":100,"pid":1,"tid":1},
{"name":"ProfilerStep#1","cat":"ProfilerStep","ph":"X","ts":100,"dur":100,"pid":1,"tid":1},
{"name":"dot","cat":"operator","ph":"X","ts":10,"dur":50,"pid":0,"tid":2},
{"name":"dot","cat":"operator","ph":"X","ts":90,"dur":40,"pid":0,"tid":3},
{"name":"relu","cat":"operator","ph":"X","ts":120,"dur":5,"pid":0,"tid":2},
{"name":"late","cat":"operator","ph":"X","ts":250,"dur":5,"pid":0,"tid":2},
{"name":"mem","cat":"Device Storage","ph":"C","ts":150,"pid":0,"args":{"mem":4096}}
]})";
  const std::string path = testing::scratch_dir() + "/per_step.json";
  testing::write_text(path, text);
  auto trace = parse_trace(text, "per_step.json", 0);
  TraceModel model = build_model(*trace);
  size_t outside = 0;
  std::vector<StepTable> steps = aggregate_per_step(model, &outside);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "ProfilerStep#0");
  EXPECT_EQ(steps[0].table["operator"]["dot"].count, 2u);  // both start in step 0
  EXPECT_EQ(steps[0].table["operator"]["dot"].total, 90000);
  EXPECT_EQ(steps[0].table["operator"].count("relu"), 0u);
  EXPECT_EQ(steps[1].table["operator"]["relu"].count, 1u);
  EXPECT_EQ(steps[1].table["Device Storage"]["mem"].count, 1u);
  EXPECT_EQ(steps[1].table.count("ProfilerStep"), 0u);  // the spans themselves are not rows
  EXPECT_EQ(outside, 1u);

  auto table = run_command(tool() + " summary " + path + " --per-step");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  size_t first = table.output.find("ProfilerStep#0: 0.100000 ms, from 0.000000 ms");
  size_t second = table.output.find("ProfilerStep#1: 0.100000 ms, from 0.100000 ms");
  ASSERT_NE(first, std::string::npos) << table.output;
  ASSERT_NE(second, std::string::npos) << table.output;
  EXPECT_NE(table.output.find("relu"), std::string::npos);
  EXPECT_GT(table.output.find("relu"), second);
  EXPECT_NE(table.output.find("1 slices start outside every step"), std::string::npos);
  auto json =
      run_command("(" + tool() + " summary " + path + " --per-step --format json 2>/dev/null)");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(json.output).get(root)) << json.output;
  ASSERT_EQ(root.get_array().value().size(), 2u);
  EXPECT_EQ(std::string_view(root.at(1)["step"].get_string().value()), "ProfilerStep#1");
  EXPECT_EQ(root.at(1)["stats"]["Time"]["operator"]["relu"]["Count"].get_int64().value(), 1);
  auto none = run_command(tool() + " summary " + fixture("nanomx.json") + " --per-step");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.output.find("--per-step needs steps"), std::string::npos) << none.output;
}

}  // namespace
}  // namespace nanomx::trace
