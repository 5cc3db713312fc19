// Rotating files (docs/profiler.md#rotating-files): a series <stem>.json, <stem>.1.json, ...,
// each a complete trace below the size bound (plus one event and the closing part) that names
// its predecessor; every event in exactly one file; max_files keeps the last files; flows
// across a boundary never leave a finish without its start.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nanomx/profiler.h"
#include "profiler/hooks.h"
#include "profiler_fixture.h"
#include "trace_file.h"

namespace prof = nanomx::profiler;
using nanomx::testing::json;
using nanomx::testing::read_trace;

namespace {

class Rotation : public nanomx::testing::ProfilerTest {};

constexpr double kMaxFileMb = 0.02;
const uint64_t kMaxFileBytes = static_cast<uint64_t>(kMaxFileMb * 1048576.0);

void configure(prof::KeyValues extra) {
  // Continuous dump (with a period that never comes): dump(false) then flushes without
  // finishing the file, as a long run's periodic flushes do.
  prof::KeyValues kv = {{"profile_all", "true"},
                        {"filename", "run.json"},
                        {"continuous_dump", "true"},
                        {"dump_period", "86400"},
                        {"max_file_mb", std::to_string(kMaxFileMb)}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  prof::set_config(kv);
}

std::string series_name(int index) {
  return index == 0 ? "run.json" : "run." + std::to_string(index) + ".json";
}

// Values 0..count-1 of the counter "progress", flushed every `flush_every`.
void record_progress(uint64_t count, uint64_t flush_every) {
  prof::Domain domain("Rotation");
  prof::Counter progress(domain, "progress");
  for (uint64_t i = 0; i < count; ++i) {
    progress.set_value(i);
    if (i % flush_every == flush_every - 1) prof::dump(false);
  }
}

// The counter's values in a file, in order.
std::vector<uint64_t> progress_in(const json& trace) {
  std::vector<uint64_t> values;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "C" && e["name"] == "progress")
      values.push_back(e["args"]["progress"].get<uint64_t>());
  return values;
}

TEST_F(Rotation, SeriesOfBoundedFilesNamingTheirPredecessorsWithEveryEventOnce) {
  configure({});
  prof::set_state(prof::State::kRunning);
  record_progress(4000, 700);
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  std::vector<uint64_t> all;
  json zero;
  int files = 0;
  for (; std::filesystem::exists(series_name(files)); ++files) {
    const std::string name = series_name(files);
    const json trace = read_trace(name);
    // One ts = 0 for the whole series: stitching it is concatenating the events.
    if (files == 0) zero = trace["otherData"]["time_zero_monotonic_ns"];
    EXPECT_EQ(trace["otherData"]["time_zero_monotonic_ns"], zero) << name;
    const json& rotation = trace["otherData"]["rotation"];
    EXPECT_EQ(rotation["series"], "run.json") << name;
    EXPECT_EQ(rotation["index"], files) << name;
    if (files == 0) {
      EXPECT_TRUE(rotation["previous"].is_null());
    } else {
      EXPECT_EQ(rotation["previous"], series_name(files - 1)) << name;
    }
    // Past the bound by at most one event and the closing part.
    EXPECT_LE(std::filesystem::file_size(name), kMaxFileBytes + 4096) << name;
    // Its own metadata: the counter's row is named in every file that uses it.
    EXPECT_FALSE(nanomx::testing::process_name(trace, 1000).empty()) << name;
    const std::vector<uint64_t> values = progress_in(trace);
    EXPECT_FALSE(values.empty()) << name;
    all.insert(all.end(), values.begin(), values.end());
  }
  EXPECT_GE(files, 10);
  ASSERT_EQ(all.size(), 4000u);
  for (uint64_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i) << "lost or duplicated";
}

TEST_F(Rotation, MaxFilesKeepsTheLastFiles) {
  configure({{"max_files", "3"}});
  prof::set_state(prof::State::kRunning);
  record_progress(4000, 4000);
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir()))
    if (entry.path().extension() == ".json") files.insert(entry.path().filename().string());
  ASSERT_EQ(files.size(), 3u);
  int last = 0;
  while (files.count(series_name(last + 1)) || !files.count(series_name(last))) ++last;
  EXPECT_GE(last, 3);
  EXPECT_EQ(files, (std::set<std::string>{series_name(last - 2), series_name(last - 1),
                                          series_name(last)}));
  // The kept files end the run without a gap.
  std::vector<uint64_t> kept;
  for (int k = last - 2; k <= last; ++k) {
    const std::vector<uint64_t> values = progress_in(read_trace(series_name(k)));
    kept.insert(kept.end(), values.begin(), values.end());
  }
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.back(), 3999u);
  for (size_t i = 1; i < kept.size(); ++i) ASSERT_EQ(kept[i], kept[i - 1] + 1);
}

// Flows and dependency flows whose start and finish fall in different files: the finish is left
// out of the later file and counted there; every file is a valid trace on its own (a start whose
// finish went to the next file is allowed, as in any file written while operators ran).
TEST_F(Rotation, FlowsAcrossABoundaryNeverLeaveAFinishWithoutItsStart) {
  configure({});
  prof::set_state(prof::State::kRunning);
  const prof::NameId category = prof::intern("operator"), name = prof::intern("rotated_op");
  constexpr int kOps = 3000;
  uint64_t previous_end = 0;
  for (int i = 0; i < kOps; ++i) {
    const uint64_t flow = prof::flow_start(category, prof::kImperative);
    const uint64_t dependency =
        previous_end != 0 ? prof::dependency_flow_start(0, previous_end) : 0;
    const uint64_t begin = prof::now_ticks();
    previous_end = prof::now_ticks();
    prof::record_operator_packed(name, 0, begin, previous_end, nullptr, 0, flow, dependency);
  }
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  std::map<std::string, uint64_t> starts, finishes;  // by category
  uint64_t omitted = 0;
  std::string command = std::string(NANOMX_PYTHON) + " " + NANOMX_VALIDATE_TRACE + " --partial";
  int files = 0;
  for (; std::filesystem::exists(series_name(files)); ++files) {
    const std::string file = series_name(files);
    skip_validation(file);
    command += " '" + path(file) + "'";
    const json trace = read_trace(file);
    std::set<std::pair<std::string, uint64_t>> started;
    for (const auto& e : trace["traceEvents"]) {
      const std::string ph = e["ph"];
      if (ph != "s" && ph != "f") continue;
      const std::pair<std::string, uint64_t> key{e["cat"].get<std::string>(),
                                                 e["id"].get<uint64_t>()};
      if (ph == "s") {
        ++starts[key.first];
        started.insert(key);
      } else {
        ++finishes[key.first];
        EXPECT_TRUE(started.count(key)) << file << ": " << e.dump();
      }
    }
    omitted += trace["otherData"]["flow_finishes_omitted"].get<uint64_t>();
  }
  EXPECT_GE(files, 10);
  EXPECT_EQ(starts["operator"], uint64_t{kOps});
  EXPECT_EQ(starts["dependency"], uint64_t{kOps - 1});
  EXPECT_EQ(finishes["operator"] + finishes["dependency"] + omitted, uint64_t{2 * kOps - 1});
  EXPECT_GT(omitted, 0u);
  EXPECT_EQ(std::system((command + " > /dev/null").c_str()), 0) << command;
}

// Without max_file_mb nothing changes: one file, no rotation key.
TEST_F(Rotation, OffByDefault) {
  prof::set_config(
      {{"profile_all", "true"}, {"filename", "one.json"}, {"continuous_dump", "false"}});
  prof::set_state(prof::State::kRunning);
  record_progress(2000, 1u << 30);
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  EXPECT_FALSE(std::filesystem::exists("one.1.json"));
  const json trace = read_trace("one.json");
  EXPECT_FALSE(trace["otherData"].contains("rotation"));
  EXPECT_EQ(progress_in(trace).size(), 2000u);
}

}  // namespace
