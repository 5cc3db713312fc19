// `nanomx-trace convert` (.json <-> .json.gz) and the parts of `view` that need no browser.
#include <gtest/gtest.h>

#include <string>

#include "convert.h"
#include "test_util.h"
#include "trace_file.h"
#include "view.h"

namespace nanomx::trace {
namespace {

using testing::fixture;
using testing::read_text;
using testing::run_command;
using testing::tool;
using testing::write_text;

TEST(TraceConvert, RoundTripIsByteIdentical) {
  std::string dir = testing::scratch_dir();
  std::string gz = dir + "/roundtrip.json.gz", back = dir + "/roundtrip.json";
  // Several megabytes, so the streaming loop runs over many chunks.
  std::string big = "[";
  for (int i = 0; i < 60000; ++i) {
    if (i) big += ",\n";
    big += "{\"name\":\"op" + std::to_string(i % 97) +
           "\",\"ph\":\"X\",\"ts\":" + std::to_string(i * 3) +
           ".125,\"dur\":2,\"pid\":0,\"tid\":" + std::to_string(i % 5) + "}";
  }
  big += "]";
  std::string source = dir + "/roundtrip_source.json";
  write_text(source, big);
  auto compressed = run_command(tool() + " convert " + source + " -o " + gz);
  ASSERT_EQ(compressed.exit_code, 0) << compressed.output;
  EXPECT_TRUE(is_gzip_file(gz));
  EXPECT_LT(read_text(gz).size(), big.size() / 4);
  auto decompressed = run_command(tool() + " convert " + gz + " -o " + back);
  ASSERT_EQ(decompressed.exit_code, 0) << decompressed.output;
  EXPECT_EQ(read_text(back), big);
  // Not a terminal: no progress bar in the output.
  EXPECT_EQ(compressed.output.find('\r'), std::string::npos);
}

TEST(TraceConvert, DrawsAProgressBarOnATerminal) {
  // util-linux's `script` runs the command on a pseudo-terminal.
  std::string out = testing::scratch_dir() + "/progress.json.gz";
  auto result = run_command("script -qec '" + tool() + " convert " + fixture("mxnet_pretty.json") +
                            " -o " + out + "' /dev/null");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("\rconvert [#########################] 100%"), std::string::npos)
      << result.output;
}

TEST(TraceConvert, NothingToConvertIsAnError) {
  std::string out = testing::scratch_dir() + "/plain_again.json";
  auto result = run_command(tool() + " convert " + fixture("nanomx.json") + " -o " + out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("is not gzip-compressed and"), std::string::npos) << result.output;
}

TEST(TraceConvert, CutGzipStreamIsAnErrorAndLeavesNoOutput) {
  std::string dir = testing::scratch_dir();
  std::string gz = dir + "/cut.json.gz", cut = dir + "/cut_short.json.gz";
  std::string out = dir + "/cut_out.json";
  convert_file(fixture("mxnet_pretty.json"), gz, false);
  std::string bytes = read_text(gz);
  write_text(cut, bytes.substr(0, bytes.size() / 2));
  std::remove(out.c_str());
  auto result = run_command(tool() + " convert " + cut + " -o " + out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("the gzip stream is cut short"), std::string::npos) << result.output;
  EXPECT_FALSE(std::ifstream(out).good());
}

TEST(TraceView, PageIsSelfContained) {
  std::string page_path = testing::scratch_dir() + "/self_contained.html";
  ViewResult result = write_view(fixture("nanomx.json"), page_path);
  EXPECT_EQ(result.events, 21u);
  // Threads with events: cpu/0 worker 0, main (API), the marker's and the event's thread; plus
  // the two counter series (API calls, memory).
  EXPECT_EQ(result.rows, 6u);
  std::string page = read_text(page_path);
  size_t data_begin = page.find("<script id=\"trace-data\"");
  size_t data_end = page.find("</script>", data_begin);
  ASSERT_NE(data_begin, std::string::npos);
  std::string outside_data = page.substr(0, data_begin) + page.substr(data_end);
  for (const char* external : {"http:", "https:", "src=", "<link", "@import", "url("}) {
    EXPECT_EQ(outside_data.find(external), std::string::npos) << external;
  }
  // The data is base64 (gzip): no name from the trace appears as markup anywhere in the page.
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
}

TEST(TraceView, BadInputIsAnError) {
  auto result = run_command(tool() + " view " + fixture("not_json.txt") + " -o " +
                            testing::scratch_dir() + "/never.html");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("not a JSON trace"), std::string::npos);
}

}  // namespace
}  // namespace nanomx::trace
