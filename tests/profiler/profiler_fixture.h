// A GoogleTest fixture for profiler tests that write traces. Each test runs in a temporary folder
// of its own (the working directory while it runs, so relative trace names land there and tests
// never share a file), and at teardown every *.json in it is checked by tools/validate_trace.py,
// the same rules the Python tests and CI apply (docs/trace-format.md): valid JSON with a
// traceEvents array, B/E balanced and nested per thread, async b/e paired, one s and one f per
// flow, metadata for every row. The folder is removed when the test passed and kept otherwise.
//
//   class Trace : public nanomx::testing::ProfilerTest {};
//   TEST_F(Trace, Something) { configure("x.json"); ...; }   // x.json is validated at the end
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "nanomx/profiler.h"
#include "trace_file.h"

#ifndef NANOMX_VALIDATE_TRACE
#error "NANOMX_VALIDATE_TRACE (the path of tools/validate_trace.py) must be defined"
#endif
#ifndef NANOMX_PYTHON
#define NANOMX_PYTHON "python3"
#endif

namespace nanomx::testing {

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterized names
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("nanomx-profiler-" + std::to_string(getpid()) + "-" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    previous_dir_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_);
  }

  void TearDown() override {
    // A run still in progress: flush it, so the file holds everything recorded (a flush leaves
    // a complete file; the test's own state is otherwise left as it was).
    if (profiler::state() == profiler::State::kRunning) {
      try {
        profiler::dump(false);
      } catch (const std::exception&) {
        // nothing to flush to (the test left no file open)
      }
    }
    std::filesystem::current_path(previous_dir_);
    const std::string problems = trace_problems();
    if (!problems.empty()) ADD_FAILURE() << problems;
    std::error_code ignored;
    if (!HasFailure()) std::filesystem::remove_all(dir_, ignored);
  }

  // The absolute path of `name` in this test's folder.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  const std::filesystem::path& dir() const { return dir_; }
  // A .json file this test writes that is not a complete trace on purpose.
  void skip_validation(const std::string& name) { skipped_.insert(name); }

  // What tools/validate_trace.py reports about the .json files in this test's folder (those
  // not skipped); "" when every one is a good trace.
  std::string trace_problems() const {
    std::vector<std::string> traces;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      const std::string file = entry.path().filename().string();
      if (entry.is_regular_file() && entry.path().extension() == ".json" && !skipped_.count(file))
        traces.push_back(entry.path().string());
    }
    if (traces.empty()) return "";
    std::sort(traces.begin(), traces.end());
    const std::string report = (dir_ / "validate_trace.out").string();
    std::string command = std::string(NANOMX_PYTHON) + " " + NANOMX_VALIDATE_TRACE;
    for (const std::string& trace : traces) command += " '" + trace + "'";
    command += " > '" + report + "' 2>&1";
    const int status = std::system(command.c_str());
    if (status == 0) return "";
    return "trace validation failed (tools/validate_trace.py, exit status " +
           std::to_string(status) + "):\n" + read_text(report);
  }

 private:
  std::filesystem::path dir_;
  std::filesystem::path previous_dir_;
  std::set<std::string> skipped_;
};

}  // namespace nanomx::testing
