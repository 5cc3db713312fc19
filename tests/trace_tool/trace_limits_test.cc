// nanomx-trace on hostile input: every limit of docs/nanomx-trace.md ("Limits") ends in a clear
// error and a non-zero exit, never in std::bad_alloc, a silent success or a wrong number. The bad
// inputs are generated here and kept small (the limits are lowered by their flags).
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "test_util.h"
#include "trace_file.h"
#include "trace_model.h"

namespace nanomx::trace {
namespace {

using testing::run_command;
using testing::scratch_dir;
using testing::tool;
using testing::write_text;

const std::string kEvent =
    R"({"name":"op","cat":"operator","ph":"X","ts":1,"dur":2,"pid":1,"tid":1})";

std::string events_json(size_t count) {
  std::string text = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < count; ++i) text += kEvent + (i + 1 < count ? ",\n" : "\n");
  return text + "]}\n";
}

// A gzip file of about `megabytes` MB of events that compresses ~300x: a small gzip bomb.
std::string write_gzip_bomb(const std::string& name, size_t megabytes) {
  std::string path = scratch_dir() + "/" + name;
  gzFile file = gzopen(path.c_str(), "wb9");
  EXPECT_NE(file, nullptr);
  std::string line = kEvent + ",\n";
  std::string block;
  while (block.size() < (1 << 20)) block += line;
  gzputs(file, "{\"traceEvents\":[\n");
  for (size_t i = 0; i < megabytes; ++i) {
    gzwrite(file, block.data(), static_cast<unsigned>(block.size()));
  }
  gzputs(file, (kEvent + "]}\n").c_str());
  gzclose(file);
  return path;
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = scratch_dir() + "/" + name;
  write_text(path, text);
  return path;
}

// Restores the default limits after a test that changed them in this process.
struct LimitsGuard {
  ReadLimits saved = read_limits();
  ~LimitsGuard() { set_read_limits(saved); }
};

TEST(TraceLimits, DecompressedCapIsRelativeToTheFileWithAFloor) {
  LimitsGuard guard;
  set_read_limits(ReadLimits{});
  EXPECT_EQ(decompressed_cap(1 << 20), kDecompressedFloor);
  EXPECT_EQ(decompressed_cap(uint64_t{10} << 20), uint64_t{640} << 20);
  ReadLimits lifted;
  lifted.max_decompressed_bytes = UINT64_MAX;
  set_read_limits(lifted);
  EXPECT_EQ(decompressed_cap(1 << 20), UINT64_MAX);
}

TEST(TraceLimits, GzipBombBeyondTheCapIsRefusedByEveryCommand) {
  std::string bomb = write_gzip_bomb("bomb.json.gz", 64);
  for (std::string command : {" summary " + bomb, " view " + bomb + " -o " + bomb + ".html",
                              " merge " + bomb + " -o " + bomb + ".merged.json"}) {
    auto result = run_command(tool() + command + " --max-decompressed-mb 16");
    EXPECT_EQ(result.exit_code, 1) << command << "\n" << result.output;
    EXPECT_NE(result.output.find("decompresses to more than 16.0 MiB"), std::string::npos)
        << result.output;
    EXPECT_NE(result.output.find("--max-decompressed-mb"), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("bad_alloc"), std::string::npos) << result.output;
  }
  // Lifting the cap reads the whole file.
  auto lifted = run_command(tool() + " summary " + bomb + " --max-decompressed-mb 0");
  EXPECT_EQ(lifted.exit_code, 0) << lifted.output;
  EXPECT_NE(lifted.output.find("op"), std::string::npos);
}

TEST(TraceLimits, GzipBombBeyondTheCapIsRefusedWhenLoadedWhole) {
  LimitsGuard guard;
  std::string bomb = write_gzip_bomb("bomb_whole.json.gz", 8);
  ReadLimits limits;
  limits.max_decompressed_bytes = 4 << 20;
  set_read_limits(limits);
  try {
    load_trace(bomb);
    FAIL() << "expected a TraceError";
  } catch (const TraceError& error) {
    EXPECT_NE(std::string(error.what()).find("decompresses to more than 4.0 MiB"),
              std::string::npos)
        << error.what();
  }
}

TEST(TraceLimits, EventLongerThanTheLimitIsRefused) {
  std::string name(3 << 20, 'a');
  std::string one_line = write_file(
      "long_event.json", "[" + kEvent + ",\n{\"name\":\"" + name + "\",\"ph\":\"X\",\"ts\":1}]");
  auto result = run_command(tool() + " summary " + one_line + " --max-event-mb 1");
  EXPECT_EQ(result.exit_code, 1) << result.output.substr(0, 500);
  EXPECT_NE(result.output.find("event 1 (from byte 73) is longer than 1.0 MiB"), std::string::npos)
      << result.output.substr(0, 500);
  EXPECT_NE(result.output.find("--max-event-mb"), std::string::npos);
}

TEST(TraceLimits, NameLongerThanTheLimitIsRefused) {
  std::string name((1 << 20) + 1, 'n');
  std::string path = write_file(
      "long_name.json", "[" + kEvent + ",\n{\"name\":\"" + name + "\",\"ph\":\"X\",\"ts\":1}]");
  auto result = run_command(tool() + " summary " + path);
  EXPECT_EQ(result.exit_code, 1) << result.output.substr(0, 500);
  EXPECT_NE(result.output.find("event 1: \"name\" is 1048577 bytes long; the limit is 1048576"),
            std::string::npos)
      << result.output.substr(0, 500);
  EXPECT_NE(result.output.find("(bytes 73-"), std::string::npos) << result.output.substr(0, 500);
}

TEST(TraceLimits, MoreEventsThanTheLimitAreRefused) {
  std::string path = write_file("many.json", events_json(5));
  auto result = run_command(tool() + " summary " + path + " --max-events 3");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("more than 3 events"), std::string::npos) << result.output;
  EXPECT_EQ(run_command(tool() + " summary " + path + " --max-events 5").exit_code, 0);
  // merge reads whole files: the same limit.
  auto merged =
      run_command(tool() + " merge " + path + " -o " + path + ".merged.json" + " --max-events 3");
  EXPECT_EQ(merged.exit_code, 1) << merged.output;
  EXPECT_NE(merged.output.find("more than 3 events"), std::string::npos) << merged.output;
}

TEST(TraceLimits, BadLimitFlagsAreUsageErrors) {
  std::string path = write_file("flags.json", events_json(1));
  for (const char* flag : {"--max-events abc", "--max-events -1", "--max-events 0x10",
                           "--max-event-mb 0", "--max-decompressed-mb 1e3", "--max-events"}) {
    auto result = run_command(tool() + " summary " + path + " " + flag);
    EXPECT_EQ(result.exit_code, 2) << flag << "\n" << result.output;
    EXPECT_NE(result.output.find(std::string(flag).substr(0, 12)), std::string::npos)
        << result.output;
  }
}

TEST(TraceLimits, TimestampsOutOfRangeAreRefusedWithTheOffset) {
  struct Case {
    const char* field;
    const char* value;
  };
  for (Case c : {Case{"ts", "1e300"}, Case{"dur", "1e300"}, Case{"ts", "-1e300"},
                 Case{"ts", "9000000000000000000"}, Case{"ts", "18000000000000000000"},
                 Case{"ts", "\"inf\""}, Case{"dur", "\"nan\""}}) {
    std::string event = std::string("{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"") +
                        c.field + "\":" + c.value + "}";
    std::string path = write_file("time.json", "[" + kEvent + ",\n" + event + "]");
    auto result = run_command(tool() + " summary " + path);
    EXPECT_EQ(result.exit_code, 1) << c.field << "=" << c.value << "\n" << result.output;
    EXPECT_NE(result.output.find(std::string("event 1: \"") + c.field + "\" is "),
              std::string::npos)
        << result.output;
    EXPECT_NE(result.output.find("out of range"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("(bytes 73-"), std::string::npos) << result.output;
  }
  // The largest accepted value still works.
  std::string edge = write_file(
      "edge.json", R"([{"name":"a","ph":"X","ts":4000000000000000,"dur":4000000000000000}])");
  EXPECT_EQ(run_command(tool() + " summary " + edge).exit_code, 0);
}

TEST(TraceLimits, NonObjectAndDeeplyNestedEventsAreRefused) {
  struct Case {
    const char* label;
    std::string text;
    const char* expected;
  };
  std::string deep_object = "[";
  for (int i = 0; i < 100000; ++i) deep_object += "{\"a\":";
  Case cases[] = {
      {"brackets", std::string(1000000, '['), "event 0 (byte 1) is not a JSON object"},
      {"object_brackets", "{\"traceEvents\":" + std::string(100000, '['),
       "event 0 (byte 16) is not a JSON object: expected '{', found '['"},
      {"numbers", "[" + kEvent + ",\n1,2]", "event 1 (byte 73) is not a JSON object"},
      {"string", "[\"x\"]", "event 0 (byte 1) is not a JSON object"},
      {"deep_object_cut", deep_object, "truncated"},
      {"deep_object", deep_object + "1" + std::string(100000, '}') + "]", "event 0"},
  };
  for (const Case& c : cases) {
    std::string path = write_file(std::string(c.label) + ".json", c.text);
    auto result = run_command(tool() + " summary " + path);
    if (std::string(c.expected) == "truncated") {
      // A cut file whose only event is unfinished: no event, said on stderr; not an error, but
      // never a crash or a stack overflow.
      EXPECT_EQ(result.exit_code, 0) << c.label << "\n" << result.output;
    } else {
      EXPECT_EQ(result.exit_code, 1) << c.label << "\n" << result.output;
    }
    EXPECT_NE(result.output.find(c.expected), std::string::npos) << c.label << "\n"
                                                                 << result.output;
  }
}

TEST(TraceLimits, EventWithoutPhaseIsRefusedWithTheOffset) {
  std::string path = write_file("no_ph.json", "[" + kEvent + ",\n{\"name\":\"b\",\"ts\":1}]");
  for (std::string command : {" summary " + path, " view " + path + " -o " + path + ".html"}) {
    auto result = run_command(tool() + command);
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_NE(result.output.find("event 1 has no \"ph\""), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("(bytes 73-92)"), std::string::npos) << result.output;
  }
}

}  // namespace
}  // namespace nanomx::trace
