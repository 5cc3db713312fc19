// The aggregate table and JSON, byte for byte as MXNet prints them
// (docs/mxnet-compat.md#aggregate-statistics), from known per-thread entries. One tick = 1 µs here
// (ns_per_tick = 1000), MXNet's own unit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "nanomx/profiler.h"
#include "profiler/aggregate_stats.h"

namespace prof = nanomx::profiler;
using Snapshot = prof::ThreadStats::Snapshot;
using prof::StatType;

namespace {

Snapshot duration(const char* category, const char* name, uint64_t count, uint64_t total_us,
                  uint64_t min_us, uint64_t max_us) {
  return {prof::intern(category),
          prof::intern(name),
          StatType::kDuration,
          count,
          total_us,
          min_us,
          max_us,
          0,
          0};
}

Snapshot counter(const char* category, const char* name, uint64_t count, uint64_t last,
                 uint64_t min, uint64_t max, uint64_t at = 1) {
  return {prof::intern(category),
          prof::intern(name),
          StatType::kCounter,
          count,
          last,
          min,
          max,
          last,
          at};
}

std::vector<Snapshot> spec_example() {
  return {
      counter("Device Storage", "Memory: cpu/0", 3, 96060, 96060, 5000000000ull),
      duration("MXNET_C_API", "MXImperativeInvoke", 2, 336, 99, 237),
      counter("MXNET_C_API", "MXNet C API Calls", 2, 232, 216, 232),
      {prof::intern("PythonDomain,instant_marker"), prof::intern("StartIteration-0"),
       StatType::kOther, 0, 0, 0, 0, 0, 0},
      duration("operator", "dot", 2, 100, 48, 52),
      duration("operator", "WaitForVar", 1, 22, 22, 22),
      duration("operator", "_random_uniform", 1, 1234567, 1234567, 1234567),
  };
}

const char* kTimeHeader =
    "Name                          Total Count        Time (ms)    Min Time (ms)    Max Time (ms)"
    "    Avg Time (ms)\n"
    "----                          -----------        ---------    -------------    -------------"
    "    -------------\n";

TEST(AggregateTable, MatchesMxnetByteForByte) {
  std::string expected =
      std::string(
          "\nProfile Statistics:\n\tNote the difference in units for different "
          "entries.\n"
          "Device Storage\n=================\n"
          "Name                          Total Count    Min Use  (kB)    Max Use "
          " (kB)    Avg Use  (kB)\n"
          "----                          -----------    -------------    "
          "-------------    -------------\n"
          "Memory: cpu/0                           3          96.0600     "
          "5000000.0000     2499952.0000\n"
          "\n"
          "MXNET_C_API\n=================\n") +
      kTimeHeader +
      "MXImperativeInvoke                      2           0.3360           "
      "0.0990           0.2370           0.1680\n"
      "MXNet C API Calls                       2           0.2320           "
      "0.2160           0.2320           0.0080\n"
      "\n"
      "PythonDomain,instant_marker\n=================\n" +
      kTimeHeader +
      "\n"
      "operator\n=================\n" +
      kTimeHeader +
      "_random_uniform                         1        1234.5670        "
      "1234.5670        1234.5670        1234.5670\n"
      "dot                                     2           0.1000           "
      "0.0480           0.0520           0.0500\n"
      "WaitForVar                              1           0.0220           "
      "0.0220           0.0220           0.0220\n"
      "\n";
  EXPECT_EQ(prof::format_aggregate(spec_example(), 1000.0, prof::StatsFormat::kTable,
                                   prof::SortBy::kTotal, false),
            expected);
}

TEST(AggregateTable, LongNamesPushTheRowRight) {
  std::string text = prof::format_aggregate(
      {duration("c", "a_name_that_is_longer_than_25_chars", 1, 1000, 1000, 1000)}, 1000.0,
      prof::StatsFormat::kTable, prof::SortBy::kTotal, false);
  EXPECT_NE(text.find("a_name_that_is_longer_than_25_chars               1           1.0000"),
            std::string::npos)
      << text;
}

TEST(AggregateJson, MatchesMxnetLayoutWithFourSignificantDigits) {
  std::vector<Snapshot> entries = {
      counter("Device Storage", "Memory: cpu/0", 3, 96060, 96060, 5000000000ull),
      duration("MXNET_C_API", "MXImperativeInvoke", 2, 336, 99, 237),
      counter("MXNET_C_API", "MXNet C API Calls", 2, 232, 216, 232),
      duration("operator", "_random_uniform", 1, 1234567, 1234567, 1234567),
  };
  const char* expected = R"({
    "Time": {
        "MXNET_C_API": {
            "MXImperativeInvoke": {
                "Count": 2,
                "Total": 0.336,
                "Min": 0.099,
                "Max": 0.237,
                "Avg": 0.168
            }
            ,
            "MXNet C API Calls": {
                "Count": 2,
                "Total": 0.232,
                "Min": 0.216,
                "Max": 0.232,
                "Avg": 0.008
            }
        }
        ,
        "operator": {
            "_random_uniform": {
                "Count": 1,
                "Total": 1235,
                "Min": 1235,
                "Max": 1235,
                "Avg": 1235
            }
        }
    }
    ,
    "Memory": {
        "Device Storage": {
            "Memory: cpu/0": {
                "Count": 3,
                "Min": 96.06,
                "Max": 5e+06,
                "Avg": 2.5e+06
            }
        }
    }
,
    "Unit": {
        "Time": "ms",
        "Memory": "kB"
    }
}
)";
  std::string text = prof::format_aggregate(entries, 1000.0, prof::StatsFormat::kJson,
                                            prof::SortBy::kTotal, false);
  EXPECT_EQ(text, expected);
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(AggregateJson, EmptyTableIsStillValidJson) {
  std::string text =
      prof::format_aggregate({}, 1000.0, prof::StatsFormat::kJson, prof::SortBy::kTotal, false);
  EXPECT_NE(text.find("\"Time\": {\n    }"), std::string::npos);
  auto parsed = nlohmann::json::parse(text);
  EXPECT_TRUE(parsed.contains("Memory") && parsed.contains("Time") && parsed.contains("Unit"));
}

TEST(AggregateJson, CategoryWithOnlyMarkersIsAnEmptyObject) {
  std::vector<Snapshot> entries = {
      {prof::intern("D,instant_marker"), prof::intern("m"), StatType::kOther, 0, 0, 0, 0, 0, 0}};
  auto parsed = nlohmann::json::parse(prof::format_aggregate(
      entries, 1000.0, prof::StatsFormat::kJson, prof::SortBy::kTotal, false));
  EXPECT_TRUE(parsed["Time"]["D,instant_marker"].empty());
}

TEST(AggregateJson, NamesAreEscaped) {
  auto parsed = nlohmann::json::parse(
      prof::format_aggregate({duration("c\"at", "na\\me\n", 1, 5, 5, 5)}, 1000.0,
                             prof::StatsFormat::kJson, prof::SortBy::kTotal, false));
  EXPECT_EQ(parsed["Time"]["c\"at"]["na\\me\n"]["Count"], 1);
}

std::vector<std::string> row_order(const std::vector<Snapshot>& entries, prof::SortBy by,
                                   bool ascending) {
  std::string text =
      prof::format_aggregate(entries, 1000.0, prof::StatsFormat::kJson, by, ascending);
  // nlohmann's ordered_json keeps the file order, like the OrderedDict MXNet's test uses.
  auto parsed = nlohmann::ordered_json::parse(text);
  std::vector<std::string> names;
  for (const auto& [category, rows] : parsed["Time"].items())
    for (const auto& [name, row] : rows.items()) names.push_back(name);
  return names;
}

TEST(AggregateSort, EachKeyDescendingByDefaultAndAscendingOnRequest) {
  std::vector<Snapshot> e = {duration("c", "few_long", 2, 900, 400, 500),
                             duration("c", "many_short", 10, 100, 5, 20),
                             duration("c", "one_mid", 1, 300, 300, 300)};
  using V = std::vector<std::string>;
  EXPECT_EQ(row_order(e, prof::SortBy::kTotal, false), (V{"few_long", "one_mid", "many_short"}));
  EXPECT_EQ(row_order(e, prof::SortBy::kTotal, true), (V{"many_short", "one_mid", "few_long"}));
  EXPECT_EQ(row_order(e, prof::SortBy::kAvg, false), (V{"few_long", "one_mid", "many_short"}));
  EXPECT_EQ(row_order(e, prof::SortBy::kMin, false), (V{"few_long", "one_mid", "many_short"}));
  EXPECT_EQ(row_order(e, prof::SortBy::kMax, true), (V{"many_short", "one_mid", "few_long"}));
  EXPECT_EQ(row_order(e, prof::SortBy::kCount, false), (V{"many_short", "few_long", "one_mid"}));
  EXPECT_EQ(row_order(e, prof::SortBy::kCount, true), (V{"one_mid", "few_long", "many_short"}));
}

TEST(AggregateSort, TiesGoByNameDescendingInBothDirections) {
  std::vector<Snapshot> e = {duration("c", "alpha", 1, 7, 7, 7), duration("c", "gamma", 1, 7, 7, 7),
                             duration("c", "beta", 1, 7, 7, 7)};
  using V = std::vector<std::string>;
  EXPECT_EQ(row_order(e, prof::SortBy::kTotal, false), (V{"gamma", "beta", "alpha"}));
  EXPECT_EQ(row_order(e, prof::SortBy::kTotal, true), (V{"gamma", "beta", "alpha"}));
}

TEST(AggregateSort, CounterAvgIsHalfTheRangeWithIntegerDivision) {
  std::string text = prof::format_aggregate({counter("d", "ctr", 4, 9, 2, 9)}, 1000.0,
                                            prof::StatsFormat::kJson, prof::SortBy::kAvg, false);
  auto parsed = nlohmann::json::parse(text);
  EXPECT_FLOAT_EQ(parsed["Time"]["d"]["ctr"]["Avg"].get<float>(), 0.003f);    // (9-2)/2 = 3
  EXPECT_FLOAT_EQ(parsed["Time"]["d"]["ctr"]["Total"].get<float>(), 0.009f);  // last value
}

TEST(AggregateSort, CounterMinimumStartsAtIntMax) {
  // MXNet's quirk: a counter whose values all exceed INT_MAX shows INT_MAX as its minimum
  // (2147483.647 as a float prints as 2147483.7500).
  prof::ThreadStats stats;
  stats.add_counter(prof::intern("d"), prof::intern("big"), 5000000000ull, 1);
  std::vector<Snapshot> snap;
  stats.snapshot(&snap);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_NE(
      prof::format_aggregate(snap, 1000.0, prof::StatsFormat::kTable, prof::SortBy::kTotal, false)
          .find("    2147483.7500 "),
      std::string::npos);
}

TEST(AggregateMerge, ThreadsAreMergedPerName) {
  prof::ThreadStats a, b;
  prof::NameId cat = prof::intern("operator"), name = prof::intern("dot");
  a.add_duration(cat, name, 10);
  a.add_duration(cat, name, 30);
  b.add_duration(cat, name, 5);
  prof::NameId d = prof::intern("D"), c = prof::intern("ctr");
  a.add_counter(d, c, 50, /*at=*/100);
  b.add_counter(d, c, 7, /*at=*/200);  // later: its value is the counter's "total"
  std::vector<Snapshot> snap;
  a.snapshot(&snap);
  b.snapshot(&snap);
  auto parsed = nlohmann::json::parse(
      prof::format_aggregate(snap, 1000.0, prof::StatsFormat::kJson, prof::SortBy::kTotal, false));
  EXPECT_EQ(parsed["Time"]["operator"]["dot"]["Count"], 3);
  EXPECT_FLOAT_EQ(parsed["Time"]["operator"]["dot"]["Total"].get<float>(), 0.045f);
  EXPECT_FLOAT_EQ(parsed["Time"]["operator"]["dot"]["Min"].get<float>(), 0.005f);
  EXPECT_FLOAT_EQ(parsed["Time"]["operator"]["dot"]["Max"].get<float>(), 0.03f);
  EXPECT_EQ(parsed["Time"]["D"]["ctr"]["Count"], 2);
  EXPECT_FLOAT_EQ(parsed["Time"]["D"]["ctr"]["Total"].get<float>(), 0.007f);
  EXPECT_FLOAT_EQ(parsed["Time"]["D"]["ctr"]["Max"].get<float>(), 0.05f);
}

TEST(AggregateMerge, ResetEmptiesEveryThreadsTable) {
  prof::ThreadStats a;
  a.add_duration(prof::intern("c"), prof::intern("n"), 1);
  prof::ThreadStats::reset_all();
  std::vector<Snapshot> snap;
  a.snapshot(&snap);
  EXPECT_TRUE(snap.empty());
  a.add_duration(prof::intern("c"), prof::intern("n"), 4);  // the owner starts a fresh table
  a.snapshot(&snap);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].count, 1u);
  EXPECT_EQ(snap[0].total, 4u);
}

TEST(AggregateMerge, TableGrowsPastItsFirstCapacity) {
  prof::ThreadStats a;
  prof::NameId cat = prof::intern("many");
  for (int i = 0; i < 1000; ++i) a.add_duration(cat, prof::intern("n" + std::to_string(i)), i);
  for (int i = 0; i < 1000; ++i) a.add_duration(cat, prof::intern("n" + std::to_string(i)), i);
  std::vector<Snapshot> snap;
  a.snapshot(&snap);
  ASSERT_EQ(snap.size(), 1000u);
  for (const auto& s : snap) EXPECT_EQ(s.count, 2u);
}

}  // namespace
