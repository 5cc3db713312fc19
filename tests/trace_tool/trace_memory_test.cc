// `nanomx-trace memory` and `view --memory`: the GPU memory profile's CSV as a tree of profiler
// scopes. The fixture memory_profile.csv has names with colons, spaces, parentheses and a doubled
// quote, two devices and MXNet's nvml_amend rows (one per device, the second a wrapped negative);
// memory_profile.expected.txt was checked by hand against its rows (e.g. hybridsequential on gpu 0:
// 1048576 + 524288 + 4096 bytes = 1.50 MiB; the total actual 27792896 bytes = 26.51 MiB).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "csv_line.h"
#include "memory_profile.h"
#include "test_util.h"

namespace nanomx::trace {
namespace {

using testing::fixture;
using testing::read_text;
using testing::run_command;
using testing::scratch_dir;
using testing::tool;
using testing::write_text;

const std::string kHeader =
    "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n";

// Writes `text` as a scratch file and returns its path.
std::string scratch_csv(const std::string& name, const std::string& text) {
  std::string path = scratch_dir() + "/" + name;
  write_text(path, text);
  return path;
}

// `nanomx-trace memory` run in the fixtures folder, so the file names it prints are short.
testing::CommandResult memory_in_fixtures(const std::string& arguments) {
  return run_command("cd " + std::string(NANOMX_TRACE_FIXTURES) + " && " + tool() + " memory " +
                     arguments);
}

// The scope named `name` in a JSON array of scopes.
simdjson::dom::element named(simdjson::dom::array scopes, std::string_view name) {
  for (simdjson::dom::element scope : scopes) {
    if (std::string_view(scope["name"].get_string()) == name) return scope;
  }
  ADD_FAILURE() << "no scope named " << name;
  return scopes.at(0);
}

// The child of `node` (a JSON scope) named `name`.
simdjson::dom::element child(simdjson::dom::element node, std::string_view name) {
  return named(node["children"].get_array(), name);
}

int64_t bytes_of(simdjson::dom::element node, const char* field) {
  return node[field].get_int64().value();
}

TEST(TraceMemory, TreeOfTheFixtureMatchesHandComputedTable) {
  auto result = memory_in_fixtures("memory_profile.csv");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, read_text(fixture("memory_profile.expected.txt")));
}

TEST(TraceMemory, JsonHasExactBytes) {
  auto result = memory_in_fixtures("memory_profile.csv --format json");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(result.output).get(root)) << result.output;
  EXPECT_TRUE(root["depth"].is_null());
  simdjson::dom::element total = root["total"];
  EXPECT_EQ(bytes_of(total, "requested_bytes"), 27373868);
  EXPECT_EQ(bytes_of(total, "actual_bytes"), 27792896);
  EXPECT_EQ(bytes_of(total, "allocations"), 10);
  EXPECT_EQ(bytes_of(total, "reused"), 4);
  simdjson::dom::array devices = total["devices"];
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(bytes_of(devices.at(0), "actual_bytes"), 22548480);
  EXPECT_EQ(bytes_of(devices.at(1), "actual_bytes"), 5244416);
  // nvml_amend: 300 MiB on gpu 0, and 2^64 - 512 on gpu 1 read back as -512.
  EXPECT_EQ(bytes_of(root["nvml_amend"], "bytes"), 314572800 - 512);
  EXPECT_EQ(bytes_of(root["nvml_amend"]["devices"].at(1), "bytes"), -512);

  // The scopes array holds the top-level scopes, largest actual first.
  simdjson::dom::array top = root["scopes"];
  std::vector<std::string> order;
  for (simdjson::dom::element scope : top) {
    order.emplace_back(std::string_view(scope["name"].get_string()));
  }
  EXPECT_EQ(order,
            (std::vector<std::string>{"tensordot", "<unk>", "hybridsequential", "say \"hi\""}));
  simdjson::dom::element tensordot = named(top, "tensordot");
  EXPECT_EQ(bytes_of(tensordot, "actual_bytes"), 20971520);
  EXPECT_EQ(bytes_of(tensordot, "allocations"), 3);
  EXPECT_EQ(bytes_of(child(child(tensordot, "in_arg"), "A"), "requested_bytes"), 8388608);
  simdjson::dom::element resource =
      child(child(named(top, "hybridsequential"), "dense0"), "resource");
  simdjson::dom::element temp = child(resource, "temp_space (fully_connected-inl.h +316)");
  EXPECT_EQ(bytes_of(temp, "requested_bytes"), 300000);
  EXPECT_EQ(bytes_of(temp, "actual_bytes"), 524288);
  EXPECT_EQ(bytes_of(temp, "reused"), 1);
  simdjson::dom::element weight =
      child(child(child(named(top, "hybridsequential"), "dense0"), "in_arg"), "weight");
  EXPECT_EQ(bytes_of(weight, "allocations"), 2);
  EXPECT_EQ(weight["devices"].get_array().size(), 2u);
  EXPECT_EQ(bytes_of(child(named(top, "say \"hi\""), "out"), "requested_bytes"), 1000);
  EXPECT_NEAR(tensordot["actual_pct"].get_double().value(), 100.0 * 20971520 / 27792896, 1e-3);
}

TEST(TraceMemory, DepthSumsDeeperScopesIntoTheirAncestor) {
  // dense0 still holds its whole subtree: 2 MiB of weights and 512 KiB of temp space; the
  // total is unchanged.
  auto text = memory_in_fixtures("memory_profile.csv --depth 2");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(
      text.output,
      "GPU memory per scope: memory_profile.csv\n"
      "10 allocations (4 reused from the pool) on 2 devices: 0, 1\n"
      "\n"
      "Scope                             Requested       Actual   Allocs   Reused  % actual  "
      "gpu 0 actual  gpu 1 actual\n" +
          std::string(112, '-') +
          "\n"
          "tensordot                         20.00 MiB    20.00 MiB        3        1    75.5 %"
          "     16.00 MiB      4.00 MiB\n"
          "  in_arg                          12.00 MiB    12.00 MiB        2        0    45.3 %"
          "      8.00 MiB      4.00 MiB\n"
          "  dot                              8.00 MiB     8.00 MiB        1        1    30.2 %"
          "      8.00 MiB             -\n"
          "<unk>                              3.81 MiB     4.00 MiB        2        1    15.1 %"
          "      4.00 MiB         512 B\n"
          "  _zeros                           3.81 MiB     4.00 MiB        1        0    15.1 %"
          "      4.00 MiB             -\n"
          "  unknown                             100 B        512 B        1        1     0.0 %"
          "             -         512 B\n"
          "hybridsequential                   2.29 MiB     2.50 MiB        4        2     9.4 %"
          "      1.50 MiB      1.00 MiB\n"
          "  dense0                           2.29 MiB     2.50 MiB        3        2     9.4 %"
          "      1.50 MiB      1.00 MiB\n"
          "  dense1                           4.00 KiB     4.00 KiB        1        0     0.0 %"
          "      4.00 KiB             -\n"
          "say \"hi\"                             1000 B     1.00 KiB        1        0     0.0 %"
          "             -      1.00 KiB\n"
          "  out                                1000 B     1.00 KiB        1        0     0.0 %"
          "             -      1.00 KiB\n" +
          std::string(112, '-') +
          "\n"
          "total                             26.11 MiB    26.51 MiB       10        4   100.0 %"
          "     21.50 MiB      5.00 MiB\n"
          "not allocated by nanomx (NVML)            -    300.0 MiB        -        -         -"
          "     300.0 MiB        -512 B\n");

  auto json = memory_in_fixtures("memory_profile.csv --depth 1 --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(json.output).get(root)) << json.output;
  EXPECT_EQ(root["depth"].get_int64().value(), 1);
  simdjson::dom::array scopes = root["scopes"];
  ASSERT_EQ(scopes.size(), 4u);
  for (simdjson::dom::element scope : scopes) {
    EXPECT_EQ(scope["children"].get_array().size(), 0u);
  }
  EXPECT_EQ(bytes_of(scopes.at(2), "actual_bytes"), 2625536);  // hybridsequential, all of it
}

TEST(TraceMemory, SeveralFilesAreSummed) {
  std::string a = scratch_csv("pid_11.csv", kHeader +
                                                "\"model:dense0:unknown\",\"1000\",\"0\",\"1024\","
                                                "\"0\"\n"
                                                "\"nvml_amend\",\"2048\",\"0\",\"2048\",\"0\"\n");
  std::string b = scratch_csv("pid_12.csv", kHeader +
                                                "\"model:dense0:unknown\",\"3000\",\"1\",\"4096\","
                                                "\"1\"\n"
                                                "\"model:dense1:unknown\",\"10\",\"1\",\"512\","
                                                "\"0\"\n"
                                                "\"nvml_amend\",\"4096\",\"1\",\"4096\",\"0\"\n");
  auto text = run_command(tool() + " memory " + a + " " + b);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("GPU memory per scope: 2 files, summed\n  " + a +
                             ": 1 allocation, 1.00 KiB actual\n  " + b +
                             ": 2 allocations, 4.50 KiB actual\n3 allocations (1 reused from the "
                             "pool) on 2 devices: 0, 1\n"),
            std::string::npos)
      << text.output;
  // dense0: 1000 + 3000 bytes requested, 1024 + 4096 actual, one on each device.
  EXPECT_NE(text.output.find("\n  dense0                           3.91 KiB     5.00 KiB        2"
                             "        1    90.9 %      1.00 KiB      4.00 KiB\n"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("\ntotal                              3.92 KiB     5.50 KiB        3"
                             "        1   100.0 %      1.00 KiB      4.50 KiB\n"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("\nnot allocated by nanomx (NVML)            -     6.00 KiB        -"
                             "        -         -      2.00 KiB      4.00 KiB\n"),
            std::string::npos)
      << text.output;

  auto json = run_command(tool() + " memory " + a + " " + b + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(json.output).get(root)) << json.output;
  EXPECT_EQ(root["files"].get_array().size(), 2u);
  EXPECT_EQ(bytes_of(root["files"].at(1), "actual_bytes"), 4608);
  EXPECT_EQ(bytes_of(root["total"], "requested_bytes"), 4010);
  EXPECT_EQ(bytes_of(root["total"], "actual_bytes"), 5632);
  EXPECT_EQ(bytes_of(root["nvml_amend"], "bytes"), 6144);
}

TEST(TraceMemory, MxnetFileOnOneDeviceHasNoDeviceColumns) {
  auto result = memory_in_fixtures("mxnet_gpu_memory_profile.csv");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(
      result.output,
      "GPU memory per scope: mxnet_gpu_memory_profile.csv\n"
      "5 allocations (1 reused from the pool) on device 0\n"
      "\n"
      "Scope                             Requested       Actual   Allocs   Reused  % actual\n"
      "------------------------------------------------------------------------------------\n"
      "tensordot                         96.00 MiB    96.00 MiB        3        1    75.0 %\n"
      "  in_arg                          64.00 MiB    64.00 MiB        2        0    50.0 %\n"
      "    A                             32.00 MiB    32.00 MiB        1        0    25.0 %\n"
      "    B                             32.00 MiB    32.00 MiB        1        0    25.0 %\n"
      "  dot                             32.00 MiB    32.00 MiB        1        1    25.0 %\n"
      "<unk>                             32.00 MiB    32.00 MiB        2        0    25.0 %\n"
      "  _zeros                          32.00 MiB    32.00 MiB        2        0    25.0 %\n"
      "------------------------------------------------------------------------------------\n"
      "total                             128.0 MiB    128.0 MiB        5        1   100.0 %\n"
      "not allocated by nanomx (NVML)            -     1.00 GiB        -        -         -\n");
}

TEST(TraceMemory, LineEndingsByteOrderMarkAndBlankLinesReadTheSame) {
  std::string plain = scratch_csv("plain.csv", kHeader + "\"a:b\",\"5\",\"0\",\"8\",\"0\"\n");
  std::string windows = scratch_csv(
      "windows.csv",
      "\xEF\xBB\xBF\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\r\n"
      "\"a:b\",\"5\",\"0\",\"8\",\"0\"\r\n\r\n");
  // Unquoted fields are CSV too (a spreadsheet saves them so), and a last line may lack "\n".
  std::string bare = scratch_csv(
      "bare.csv", "Attribute Name,Requested Size,Device,Actual Size,Reuse?\na:b,5,0,8,0");
  auto expected = run_command(tool() + " memory " + plain + " --format json");
  ASSERT_EQ(expected.exit_code, 0) << expected.output;
  for (const std::string& path : {windows, bare}) {
    auto result = run_command(tool() + " memory " + path + " --format json");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(result.output.substr(result.output.find("\"devices\"")),
              expected.output.substr(expected.output.find("\"devices\"")))
        << path;
  }
}

TEST(TraceMemory, HeaderOnlyProfileHasNoAllocations) {
  // What nanomx writes when no GPU allocation is live.
  std::string path = scratch_csv("header_only.csv", kHeader);
  auto result = run_command(tool() + " memory " + path);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("\n0 allocations (0 reused from the pool)\n"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("\ntotal          0 B          0 B        0        0         -\n"),
            std::string::npos)
      << result.output;
}

TEST(TraceMemory, SplitCsvLine) {
  std::vector<std::string> fields;
  CsvLineError error;
  ASSERT_TRUE(split_csv_line(R"("say ""hi"":out","1",,x,"")", &fields, &error));
  EXPECT_EQ(fields, (std::vector<std::string>{"say \"hi\":out", "1", "", "x", ""}));
  ASSERT_TRUE(split_csv_line("", &fields, &error));
  EXPECT_EQ(fields, (std::vector<std::string>{""}));
  ASSERT_TRUE(split_csv_line("a,", &fields, &error));
  EXPECT_EQ(fields, (std::vector<std::string>{"a", ""}));
  ASSERT_TRUE(split_csv_line(R"("a,b","""")", &fields, &error));
  EXPECT_EQ(fields, (std::vector<std::string>{"a,b", "\""}));

  EXPECT_FALSE(split_csv_line(R"("ok","open)", &fields, &error));
  EXPECT_EQ(error.column, 6u);
  EXPECT_EQ(error.field, 1u);
  EXPECT_NE(error.what.find("unterminated quote"), std::string::npos);
  EXPECT_FALSE(split_csv_line(R"("a"b,"c")", &fields, &error));
  EXPECT_EQ(error.column, 4u);
  EXPECT_EQ(error.field, 0u);
  EXPECT_FALSE(split_csv_line(R"(x,ab"c)", &fields, &error));
  EXPECT_EQ(error.column, 5u);
  EXPECT_EQ(error.field, 1u);
}

// Each kind of bad input: exit status 1 and a message naming the file, the line and what was
// expected.
TEST(TraceMemory, BadInputIsAClearError) {
  const std::string row = "\"a:b\",\"5\",\"0\",\"8\",\"0\"\n";
  struct Case {
    const char* name;
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"empty.csv", "",
       "empty.csv: empty file (0 bytes); expected a GPU memory profile: a CSV whose first line is "
       "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\""},
      {"wrong_header.csv", "name,size\n" + row,
       "wrong_header.csv: line 1: not a GPU memory profile header: expected \"Attribute "
       "Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\", found \"name,size\""},
      {"trace.csv", "{\"traceEvents\":[]}\n",
       "trace.csv: line 1: not a GPU memory profile header: expected"},
      {"four_fields.csv", kHeader + row + "\"a:c\",\"5\",\"0\",\"8\"\n",
       "four_fields.csv: line 3: 4 fields; expected 5, as in the header \"Attribute "
       "Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\""},
      {"six_fields.csv", kHeader + "\"a:b\",\"5\",\"0\",\"8\",\"0\",\"\"\n",
       "six_fields.csv: line 2: 6 fields; expected 5"},
      {"not_numeric.csv", kHeader + row + row + "\"a:c\",\"12kB\",\"0\",\"8\",\"0\"\n",
       "not_numeric.csv: line 4: \"Requested Size\" is \"12kB\": expected a number of bytes "
       "(digits only, 0 to 9223372036854775807)"},
      {"empty_size.csv", kHeader + "\"a:c\",\"1\",\"0\",\"\",\"0\"\n",
       "empty_size.csv: line 2: \"Actual Size\" is \"\": expected a number of bytes"},
      {"negative.csv", kHeader + "\"a:c\",\"5\",\"0\",\"-8\",\"0\"\n",
       "negative.csv: line 2: \"Actual Size\" is \"-8\", negative: expected a number of bytes, 0 "
       "or more (only an nvml_amend row may be negative)"},
      {"too_large.csv", kHeader + "\"a:c\",\"9223372036854775808\",\"0\",\"8\",\"0\"\n",
       "too_large.csv: line 2: \"Requested Size\" is \"9223372036854775808\": expected a number "
       "of bytes from 0 to 9223372036854775807"},
      {"unterminated.csv", kHeader + row + "\"a:c\",\"5\",\"0\",\"8\",\"0\n",
       "unterminated.csv: line 3, column 19, in \"Reuse?\": unterminated quote: the field that "
       "starts here has no closing quote on this line"},
      {"open_name.csv", kHeader + "\"tensordot:in_arg:A\n",
       "open_name.csv: line 2, column 1, in \"Attribute Name\": unterminated quote"},
      {"stray_quote.csv", kHeader + "\"say \"hi\"\",\"5\",\"0\",\"8\",\"0\"\n",
       "stray_quote.csv: line 2, column 7, in \"Attribute Name\": expected a comma or the end of "
       "the line after the closing quote, found 'h' (a quote inside a quoted field is written "
       "twice: \"\")"},
      {"bad_device.csv", kHeader + "\"a:c\",\"5\",\"gpu0\",\"8\",\"0\"\n",
       "bad_device.csv: line 2: \"Device\" is \"gpu0\": expected a device number (digits only, 0 "
       "to 2147483647)"},
      {"bad_reuse.csv", kHeader + "\"a:c\",\"5\",\"0\",\"8\",\"yes\"\n",
       "bad_reuse.csv: line 2: \"Reuse?\" is \"yes\": expected 0 or 1"},
      {"overflow.csv",
       kHeader + "\"a\",\"1\",\"0\",\"9223372036854775807\",\"0\"\n\"b\",\"1\",\"0\",\"1\",\"0\"\n",
       "overflow.csv: line 3: the actual sizes add up to more than 2^63 - 1 bytes (8 EiB), which "
       "no device holds: is a size wrong?"},
      {"nvml_range.csv", kHeader + "\"nvml_amend\",\"-9223372036854775809\",\"0\",\"1\",\"0\"\n",
       "nvml_range.csv: line 2: \"Requested Size\" is \"-9223372036854775809\": expected a number "
       "of bytes from -9223372036854775808 to 18446744073709551615"},
      {"joined.csv", kHeader + row + kHeader + row,
       "joined.csv: line 3: a second header: files joined together? Give each profile as its own "
       "argument, and they are summed"},
      {"long_line.csv", kHeader + "\"" + std::string(size_t{1} << 20, 'a') + "\"\n",
       "long_line.csv: line 2 is longer than 1 MiB; expected a GPU memory profile, a CSV of short "
       "rows"},
  };
  for (const Case& c : cases) {
    std::string path = scratch_csv(c.name, c.text);
    auto result = run_command("cd " + scratch_dir() + " && " + tool() + " memory " + c.name);
    EXPECT_EQ(result.exit_code, 1) << c.name << ": " << result.output;
    EXPECT_NE(result.output.find("nanomx-trace: " + c.message), std::string::npos)
        << c.name << ": " << result.output;
    // Under the page too, before anything is written.
    std::string page = scratch_dir() + "/never_" + c.name + ".html";
    auto view = run_command(tool() + " view " + fixture("nanomx.json") + " --memory " + path +
                            " -o " + page);
    EXPECT_EQ(view.exit_code, 1) << c.name << ": " << view.output;
    EXPECT_NE(view.output.find(c.message.substr(c.message.find(':'))), std::string::npos)
        << c.name << ": " << view.output;
    EXPECT_FALSE(std::filesystem::exists(page)) << c.name;
  }
}

TEST(TraceMemory, MissingFileAndFolderAreErrors) {
  auto missing = run_command(tool() + " memory " + scratch_dir() + "/absent.csv");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("absent.csv: cannot open: No such file or directory"),
            std::string::npos)
      << missing.output;
  // The second of two files: its name, after the first was read.
  auto second = run_command(tool() + " memory " + fixture("memory_profile.csv") + " " +
                            scratch_dir() + "/absent.csv");
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.output.find("absent.csv: cannot open"), std::string::npos) << second.output;
  auto folder = run_command(tool() + " memory " + scratch_dir());
  EXPECT_EQ(folder.exit_code, 1);
  EXPECT_NE(folder.output.find(": read error: Is a directory"), std::string::npos) << folder.output;
}

TEST(TraceMemory, CommandLineErrors) {
  std::string csv = fixture("memory_profile.csv");
  struct Case {
    std::string arguments, message;
  };
  const std::vector<Case> cases = {
      {"memory", "memory needs at least one CSV file"},
      {"memory " + csv + " --depth 0", "--depth must be at least 1"},
      {"memory " + csv + " --depth two", "--depth needs a whole number"},
      {"memory " + csv + " --depth", "--depth needs a value"},
      {"memory " + csv + " --format table", "--format must be text or json, not \"table\""},
      {"memory " + csv + " -o out.txt", "memory prints to stdout; it takes no -o"},
      {"memory " + csv + " --memory " + csv, "unknown option --memory for memory"},
      {"summary " + fixture("nanomx.json") + " --depth 1", "unknown option --depth for summary"},
      {"view " + fixture("nanomx.json") + " --memory", "--memory needs a value"},
  };
  for (const Case& c : cases) {
    auto result = run_command(tool() + " " + c.arguments);
    EXPECT_EQ(result.exit_code, 2) << c.arguments << ": " << result.output;
    EXPECT_NE(result.output.find("nanomx-trace: " + c.message), std::string::npos)
        << c.arguments << ": " << result.output;
    EXPECT_NE(result.output.find("nanomx-trace memory CSV [CSV...]"), std::string::npos)
        << "the usage text names the command";
  }
}

// A hostile file makes no work beyond its size: one attribute of 20000 components prints 20000
// rows (indent capped), and each JSON level closes.
TEST(TraceMemory, DeepAttributesStayLinear) {
  std::string attribute;
  for (int i = 0; i < 20000; ++i) attribute += "s" + std::to_string(i % 10) + ":";
  attribute += "leaf";
  std::string path =
      scratch_csv("deep.csv", kHeader + "\"" + attribute + "\",\"1\",\"0\",\"512\",\"0\"\n");
  auto text = run_command(tool() + " memory " + path + " > " + scratch_dir() + "/deep.txt");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  std::string table = read_text(scratch_dir() + "/deep.txt");
  EXPECT_LT(table.size(), size_t{20001} * 200);
  EXPECT_NE(table.find("\n  s1  "), std::string::npos);
  auto json =
      run_command(tool() + " memory " + path + " --format json > " + scratch_dir() + "/deep.json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  std::string nested = read_text(scratch_dir() + "/deep.json");
  size_t opened = 0, closed = 0;
  for (char c : nested) {
    opened += c == '{' || c == '[';
    closed += c == '}' || c == ']';
  }
  EXPECT_EQ(opened, closed);
  auto depth = run_command(tool() + " memory " + path + " --depth 3");
  ASSERT_EQ(depth.exit_code, 0) << depth.output;
  EXPECT_NE(depth.output.find("\n    s2 "), std::string::npos) << depth.output;
  EXPECT_EQ(depth.output.find("\n      s3 "), std::string::npos) << depth.output;
}

// Random bytes after a valid header, and random edits of the fixture: always an answer (exit 0 or
// 1 with a message), never a crash.
TEST(TraceMemory, GarbageNeverCrashes) {
  std::mt19937 random(1234);
  std::string base = read_text(fixture("memory_profile.csv"));
  for (int round = 0; round < 40; ++round) {
    std::string text = base;
    if (round % 2) {
      text = kHeader;
      for (int i = 0; i < 300; ++i) text.push_back(static_cast<char>(random() % 256));
    } else {
      for (int edit = 0; edit < 5; ++edit) {
        size_t at = random() % text.size();
        text[at] = "\",\n:-0\r9 x"[random() % 10];
      }
    }
    std::string path = scratch_csv("garbage.csv", text);
    auto result = run_command(tool() + " memory " + path + " --format json");
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.output;
    if (result.exit_code == 1) {
      EXPECT_NE(result.output.find("nanomx-trace: " + path + ": "), std::string::npos)
          << result.output;
    }
  }
}

// ---------------------------------------------------------------- view --memory

std::string decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) continue;  // padding, line breaks
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (++count == 4) {
      out.push_back(static_cast<char>(bits >> 16));
      out.push_back(static_cast<char>(bits >> 8));
      out.push_back(static_cast<char>(bits));
      bits = 0;
      count = 0;
    }
  }
  if (count == 3) {
    out.push_back(static_cast<char>(bits >> 10));
    out.push_back(static_cast<char>(bits >> 2));
  } else if (count == 2) {
    out.push_back(static_cast<char>(bits >> 4));
  }
  return out;
}

// The JSON part of a page's embedded data (view.cc: base64 of [u32 size][gzip of [u32 meta
// length][meta][sections]]).
std::string page_meta(const std::string& page_path) {
  std::string page = read_text(page_path);
  size_t tag = page.find("<script id=\"trace-data\"");
  size_t begin = page.find('>', tag) + 1;
  size_t end = page.find("</script>", begin);
  std::string payload = decode_base64(std::string_view(page).substr(begin, end - begin));
  uint32_t size = 0;
  std::memcpy(&size, payload.data(), 4);
  std::string blob(size, '\0');
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<unsigned char*>(payload.data() + 4);
  stream.avail_in = static_cast<uInt>(payload.size() - 4);
  stream.next_out = reinterpret_cast<unsigned char*>(blob.data());
  stream.avail_out = size;
  EXPECT_EQ(inflate(&stream, Z_FINISH), Z_STREAM_END);
  inflateEnd(&stream);
  uint32_t meta_length = 0;
  std::memcpy(&meta_length, blob.data(), 4);
  return blob.substr(4, meta_length);
}

std::vector<std::string> strings_of(simdjson::dom::array array) {
  std::vector<std::string> out;
  for (simdjson::dom::element e : array) out.emplace_back(std::string_view(e.get_string()));
  return out;
}

TEST(TraceMemoryView, PageEmbedsTheScopeTreeWithTheTablesStrings) {
  std::string page = scratch_dir() + "/memory_view.html";
  auto result = run_command(tool() + " view " + fixture("nanomx.json") + " --memory " +
                            fixture("memory_profile.csv") + " -o " + page);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("memory per scope: 19 scopes from 1 file"), std::string::npos)
      << result.output;
  std::string meta = page_meta(page);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(meta).get(root)) << meta;
  simdjson::dom::element memory = root["memory"];
  EXPECT_EQ(strings_of(memory["files"]), (std::vector<std::string>{"memory_profile.csv"}));
  EXPECT_EQ(std::string_view(memory["overview"].get_string()),
            "10 allocations (4 reused from the pool) on 2 devices: 0, 1");
  // Every row of `nanomx-trace memory`, in its order, with its strings.
  simdjson::dom::array rows = memory["rows"];
  ASSERT_EQ(rows.size(), 19u);
  std::vector<std::string> table_lines;
  std::string table = read_text(fixture("memory_profile.expected.txt"));
  for (size_t at = 0, next; (next = table.find('\n', at)) != std::string::npos; at = next + 1) {
    table_lines.push_back(table.substr(at, next - at));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    simdjson::dom::array row = rows.at(i);
    const std::string_view cells[] = {row.at(2).get_string(), row.at(3).get_string(),
                                      row.at(4).get_string(), row.at(5).get_string(),
                                      row.at(6).get_string()};
    std::string name(row.at(1).get_string().value());
    std::string indent(2 * (row.at(0).get_int64().value() - 1), ' ');
    const std::string& line = table_lines[5 + i];  // after the title, overview and table head
    EXPECT_EQ(line.rfind(indent + name + " ", 0), 0u) << line;
    size_t from = indent.size() + name.size();
    for (std::string_view cell : cells) {
      size_t found = line.find(cell, from);
      ASSERT_NE(found, std::string::npos) << cell << " in " << line;
      from = found + cell.size();
    }
  }
  simdjson::dom::array tensordot = rows.at(0);
  EXPECT_EQ(std::string_view(tensordot.at(1).get_string()), "tensordot");
  EXPECT_EQ(std::string_view(tensordot.at(3).get_string()), "20.00 MiB");
  EXPECT_EQ(strings_of(tensordot.at(7).get_array()),
            (std::vector<std::string>{"16.00 MiB", "4.00 MiB"}));
  EXPECT_EQ(std::string_view(tensordot.at(9).get_string()), "20971520");  // exact bytes
  bool temp_space = false, quoted = false;
  for (simdjson::dom::array row : rows) {
    std::string_view name = row.at(1).get_string();
    temp_space |= name == "temp_space (fully_connected-inl.h +316)";
    quoted |= name == "say \"hi\"";
  }
  EXPECT_TRUE(temp_space);
  EXPECT_TRUE(quoted);
  simdjson::dom::array total = memory["total"];
  EXPECT_EQ(std::string_view(total.at(2).get_string()), "26.51 MiB");
  EXPECT_EQ(std::string_view(total.at(8).get_string()), "27792896");
  simdjson::dom::array nvml = memory["nvml"];
  EXPECT_EQ(std::string_view(nvml.at(0).get_string()), "not allocated by nanomx (NVML)");
  EXPECT_EQ(strings_of(nvml.at(6).get_array()), (std::vector<std::string>{"300.0 MiB", "-512 B"}));
  // A page without --memory has no panel data.
  std::string plain = scratch_dir() + "/plain_view.html";
  ASSERT_EQ(run_command(tool() + " view " + fixture("nanomx.json") + " -o " + plain).exit_code, 0);
  EXPECT_EQ(page_meta(plain).find("\"memory\":{"), std::string::npos);
}

TEST(TraceMemoryView, SeveralProfilesAndTwoTraces) {
  std::string other = scratch_csv(
      "other_process.csv", kHeader + "\"tensordot:in_arg:A\",\"1024\",\"2\",\"1024\",\"0\"\n");
  std::string page = scratch_dir() + "/memory_diff_view.html";
  auto result = run_command(tool() + " view " + fixture("nanomx.json") + " " +
                            fixture("nanomx.json") + " --memory " + fixture("memory_profile.csv") +
                            " --memory " + other + " -o " + page);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::string meta = page_meta(page);
  ASSERT_FALSE(parser.parse(meta).get(root)) << meta;
  EXPECT_TRUE(root["diff"].is_object());
  simdjson::dom::element memory = root["memory"];
  EXPECT_EQ(strings_of(memory["files"]),
            (std::vector<std::string>{"memory_profile.csv", "other_process.csv"}));
  EXPECT_EQ(memory["devices"].get_array().size(), 3u);
  EXPECT_EQ(std::string_view(memory["total"].get_array().at(8).get_string()),
            std::to_string(27792896 + 1024));
}

TEST(MemoryProfileFormat, BytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(300000), "293.0 KiB");
  EXPECT_EQ(format_bytes(1048575), "1.00 MiB");  // not "1024.0 KiB"
  EXPECT_EQ(format_bytes(int64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(format_bytes(-512), "-512 B");
  EXPECT_EQ(format_bytes(-(int64_t{5} << 20)), "-5.00 MiB");
  EXPECT_EQ(format_bytes(INT64_MAX), "8.00 EiB");
  EXPECT_EQ(format_bytes(INT64_MIN), "-8.00 EiB");
}

}  // namespace
}  // namespace nanomx::trace
