// The text formatting shared by the profiler and nanomx-trace: the JSON string escaper and its
// styles, and MXNet's aggregate table / JSON from display rows.
#include <gtest/gtest.h>

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

}  // namespace
