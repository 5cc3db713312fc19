// The text formatting shared by the profiler and nanomx-trace: the JSON string escaper and its
// styles, and MXNet's aggregate table / JSON from display rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "profiler/aggregate_table.h"
#include "profiler/json_string.h"

namespace prof = nanomx::profiler;

namespace {

std::string escaped(std::string_view text, prof::JsonStringStyle style = {}) {
  std::string out;
  prof::append_json_string(&out, text, style);
  return out;
}

TEST(JsonString, TraceStyleEscapesControlCharactersAsUnicode) {
  EXPECT_EQ(escaped("a\"b\\c\nd\te<f>"), R"("a\"b\\c\u000ad\u0009e<f>")");
  EXPECT_EQ(escaped("\x01"), R"("\u0001")");
}

TEST(JsonString, InvalidUtf8BecomesReplacementCharacter) {
  EXPECT_EQ(escaped("x\xff"
                    "y"),
            R"("x\ufffdy")");
  EXPECT_EQ(escaped("\xc3\xa9"), "\"\xc3\xa9\"");  // valid UTF-8 passes through
}

TEST(JsonString, ToolStyleUsesShortEscapesAndIsHtmlSafe) {
  const prof::JsonStringStyle tool{.short_escapes = true, .html_safe = true};
  EXPECT_EQ(escaped("a\nb\rc\td", tool), R"("a\nb\rc\td")");
  EXPECT_EQ(escaped("</script>", tool), R"("\u003c/script\u003e")");
  EXPECT_EQ(escaped("\x02", tool), R"("\u0002")");
}

std::vector<prof::AggregateCategory> sample(std::vector<prof::AggregateRow>* ops,
                                            std::vector<prof::AggregateRow>* memory) {
  *ops = {{"dot", 2, 1.5f, 0.5f, 1.0f, 0.75f}};
  *memory = {{"Memory: cpu/0", 3, 4.0f, 1.0f, 2.0f, 0.5f}};
  return {{"Device Storage", *memory}, {"operator", *ops}};
}

TEST(AggregateTable, TableHasMxnetLayoutWithoutTotalForMemory) {
  std::vector<prof::AggregateRow> ops, memory;
  const std::string expected =
      "\nProfile Statistics:\n\tNote the difference in units for different entries.\n"
      "Device Storage\n=================\n"
      "Name                          Total Count    Min Use  (kB)    Max Use  (kB)    Avg Use  "
      "(kB)\n"
      "----                          -----------    -------------    -------------    "
      "-------------\n"
      "Memory: cpu/0                           3           1.0000           2.0000           "
      "0.5000\n"
      "\n"
      "operator\n=================\n"
      "Name                          Total Count        Time (ms)    Min Time (ms)    Max Time (ms)"
      "    Avg Time (ms)\n"
      "----                          -----------        ---------    -------------    -------------"
      "    -------------\n"
      "dot                                     2           1.5000           0.5000           1.0000"
      "           0.7500\n"
      "\n";
  EXPECT_EQ(prof::format_aggregate_table(sample(&ops, &memory)), expected);
}

TEST(AggregateTable, JsonSplitsTimeAndMemoryAndEscapesNames) {
  std::vector<prof::AggregateRow> ops = {{"a\"b", 1, 0.25f, 0.25f, 0.25f, 0.25f}};
  std::vector<prof::AggregateCategory> categories = {{"operator", ops}};
  const std::string json = prof::format_aggregate_json(categories);
  EXPECT_NE(json.find(R"("a\"b": {)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("Total": 0.25,)"), std::string::npos) << json;
  EXPECT_NE(json.find("\"Memory\": {\n    }"), std::string::npos) << json;
}

TEST(AggregateTable, NumbersAsPrintf) {
  char buffer[64];
  EXPECT_EQ(prof::format_fixed4(0.00005f, buffer), "0.0000");  // below half of the last digit
  EXPECT_EQ(prof::format_fixed4(2147483.647f, buffer), "2147483.7500");
  EXPECT_EQ(prof::format_fixed4(-1.5f, buffer), "-1.5000");
  EXPECT_EQ(prof::format_general4(1234567.0f, buffer), "1.235e+06");
  EXPECT_EQ(prof::format_general4(0.5f, buffer), "0.5");
}

TEST(AggregateTable, PrintOrderIsMxnetsHeap) {
  std::vector<std::pair<double, std::string>> order = {{1, "b"}, {2, "a"}, {1, "c"}};
  auto name = [](const std::string& s) -> const std::string& { return s; };
  prof::sort_in_print_order(&order, false, name);
  EXPECT_EQ(order[0].second, "a");
  EXPECT_EQ(order[1].second, "c");  // ties by name, descending
  EXPECT_EQ(order[2].second, "b");
  std::vector<std::pair<double, std::string>> ascending = {{1, "b"}, {2, "a"}, {1, "c"}};
  prof::sort_in_print_order(&ascending, true, name);
  EXPECT_EQ(ascending[0].second, "c");  // smallest key first, ties still name-descending
  EXPECT_EQ(ascending[1].second, "b");
  EXPECT_EQ(ascending[2].second, "a");
}

// The table writes its numbers straight into the row (docs/profiler.md#aggregate-statistics):
// every column must still be exactly printf's "%16.4f" / "%16llu", on half-way cases, the
// 1e11 boundary of the fast path, huge and negative values and counts wider than the field.
TEST(AggregateTable, RowNumbersAreExactlyPrintfs) {
  std::vector<float> values = {0.0f,     -0.0f,    0.00005f,     0.00015f,       0.00025f,
                               1.23445f, 0.99995f, 2147483.647f, 99999999999.0f, 1e11f,
                               1e12f,    3.4e38f,  -1.5f,        -123456.789f,   1e-30f};
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i)
    values.push_back(std::ldexp(std::uniform_real_distribution<float>(1, 2)(rng),
                                std::uniform_int_distribution<int>(-20, 40)(rng)));
  std::vector<uint64_t> counts = {0, 7, 9999999999999999ull, 10000000000000000ull,
                                  18446744073709551615ull};
  std::vector<prof::AggregateRow> rows;
  std::string expected;
  std::vector<std::string> names;
  names.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    names.push_back(i % 50 == 0 ? std::string(30, 'n') : "row" + std::to_string(i));
    const float v = values[i];
    const uint64_t count = counts[i % counts.size()];
    rows.push_back({names.back(), count, v, v, v, v});
    char line[512];
    std::snprintf(line, sizeof line, "%-25s%16llu %16.4f %16.4f %16.4f %16.4f\n",
                  names.back().c_str(), static_cast<unsigned long long>(count),
                  static_cast<double>(v), static_cast<double>(v), static_cast<double>(v),
                  static_cast<double>(v));
    expected += line;
  }
  std::vector<prof::AggregateCategory> categories = {{"operator", rows}};
  const std::string table = prof::format_aggregate_table(categories);
  const size_t body = table.find("-------------\n") + 14;
  EXPECT_EQ(table.substr(body), expected + "\n");
}

// The radix print order equals a comparison sort by (key descending, name descending), with
// many ties, negative keys and -0.0 == 0.0.
TEST(AggregateTable, PrintOrderEqualsTheComparisonSort) {
  std::mt19937 rng(11);
  for (bool ascending : {false, true}) {
    std::vector<std::pair<double, std::string>> order;
    for (int i = 0; i < 3000; ++i) {
      double key = std::uniform_int_distribution<int>(-50, 50)(rng) * 0.5;
      if (i % 7 == 0) key = std::uniform_real_distribution<double>(-1e9, 1e9)(rng);
      if (i % 97 == 0) key = -0.0;
      order.emplace_back(key, "n" + std::to_string(i));
    }
    auto expected = order;
    for (auto& e : expected)
      if (ascending) e.first = -e.first;
    std::sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return a.second > b.second;
    });
    prof::sort_in_print_order(&order, ascending,
                              [](const std::string& s) -> const std::string& { return s; });
    ASSERT_EQ(order.size(), expected.size());
    for (size_t i = 0; i < order.size(); ++i)
      ASSERT_EQ(order[i].second, expected[i].second) << "at " << i << " ascending " << ascending;
  }
}

}  // namespace
