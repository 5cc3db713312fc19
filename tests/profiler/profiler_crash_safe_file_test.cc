// The crash-safe commit (src/profiler/crash_safe_file.h) and what the trace writer builds on it:
// the file changes only by whole commits, a failed write leaves it as it was, flow finishes
// wait for their start, and a later dump continues a finished file (docs/profiler.md).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "nanomx/error.h"
#include "profiler/crash_safe_file.h"
#include "profiler/hooks.h"
#include "profiler_fixture.h"
#include "trace_file.h"

namespace prof = nanomx::profiler;
using nanomx::testing::events_named;
using nanomx::testing::json;
using nanomx::testing::read_text;
using nanomx::testing::read_trace;

namespace {

class CrashSafeFile : public nanomx::testing::ProfilerTest {};
class TraceCommit : public nanomx::testing::ProfilerTest {};

bool exists(const std::string& path) { return std::filesystem::exists(path); }

TEST_F(CrashSafeFile, NothingIsVisibleBeforeTheFirstCommit) {
  prof::CrashSafeFile f;
  f.open("a.txt", false);
  f.append("body one|");
  EXPECT_FALSE(exists("a.txt"));  // never an empty or partial file
  EXPECT_TRUE(exists(".a.txt.nanomx-swap"));
  f.commit("end 1");
  EXPECT_EQ(read_text("a.txt"), "body one|end 1");
}

TEST_F(CrashSafeFile, AppendsAreInvisibleUntilTheCommitAndTheTrailerIsReplaced) {
  prof::CrashSafeFile f;
  f.open("b.txt", false);
  f.append("1|");
  f.commit("<T1>");
  for (int i = 2; i <= 6; ++i) {
    f.append(std::to_string(i) + "|");
    EXPECT_EQ(read_text("b.txt"), i == 2 ? "1|<T1>" : read_text("b.txt"));
    const std::string before = read_text("b.txt");
    f.append("x|");
    EXPECT_EQ(read_text("b.txt"), before) << "an append showed before its commit";
    f.commit("<T" + std::to_string(i) + ">");
  }
  // Each file of the pair caught up with what it missed while the other was visible.
  EXPECT_EQ(read_text("b.txt"), "1|2|x|3|x|4|x|5|x|6|x|<T6>");
  EXPECT_EQ(f.body_bytes(), std::string("1|2|x|3|x|4|x|5|x|6|x|").size());
  EXPECT_TRUE(f.exchanges());
  f.close();
  EXPECT_FALSE(exists(".b.txt.nanomx-swap"));  // removed when the file is finished
  EXPECT_EQ(read_text("b.txt"), "1|2|x|3|x|4|x|5|x|6|x|<T6>");
}

TEST_F(CrashSafeFile, ReopenContinuesAfterTheBody) {
  {
    prof::CrashSafeFile f;
    f.open("c.txt", false);
    f.append("old|");
    f.commit("<end>");
  }
  prof::CrashSafeFile f;
  f.reopen("c.txt", 4, false);
  EXPECT_EQ(read_text("c.txt"), "old|<end>");  // visible until the next commit
  f.append("new|");
  f.commit("<end2>");
  EXPECT_EQ(read_text("c.txt"), "old|new|<end2>");
  EXPECT_THROW(prof::CrashSafeFile().reopen("c.txt", 1000, false), nanomx::Error);
}

TEST_F(CrashSafeFile, MissingDirectoryNamesThePath) {
  prof::CrashSafeFile f;
  try {
    f.open("no-such-dir/d.txt", false);
    FAIL();
  } catch (const nanomx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-dir/d.txt'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(f.is_open());
}

// A write that fails (here: the file size limit, as a full disk would) leaves the visible file
// as the last commit, and a later commit with room goes through. In a child process: the limit
// is per process.
TEST_F(CrashSafeFile, AFailedWriteLeavesTheLastCommit) {
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{64 * 1024, 64 * 1024};
    setrlimit(RLIMIT_FSIZE, &limit);
    prof::CrashSafeFile f;
    f.open("e.txt", false);
    f.append("small|");
    f.commit("<ok>");
    bool threw = false;
    try {
      f.append(std::string(100 * 1024, 'y'));  // beyond the limit
      f.commit("<never>");
    } catch (const nanomx::Error&) {
      threw = true;
    }
    if (!threw || read_text("e.txt") != "small|<ok>") _exit(1);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the failed write changed the visible file or did not throw";
  EXPECT_EQ(read_text("e.txt"), "small|<ok>");
}

// Continuous dump on (so that dump(false) keeps the file open, as in MXNet) with a period no
// test reaches: the tests decide when flushes happen.
void configure(const std::string& file) {
  prof::set_config({{"profile_all", "true"},
                    {"filename", file},
                    {"continuous_dump", "true"},
                    {"dump_period", "86400"}});
}

int count_phase(const json& trace, const char* phase, uint64_t id) {
  int n = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == phase && e.contains("id") && e["id"] == id) ++n;
  return n;
}

void record_finish(uint64_t id) {
  uint64_t t = prof::now_ticks();
  prof::record_operator(prof::intern("late_op"), 0, t, t + 10, {}, id);
}

// A finish drained before its start (recorded by another thread, not drained yet) waits in the
// writer instead of going into a file without its start.
TEST_F(TraceCommit, AFinishWaitsForItsStart) {
  configure("wait.json");
  prof::set_state(prof::State::kRunning);
  const uint64_t first = prof::flow_start(prof::intern("operator"), prof::kImperative);
  ASSERT_NE(first, 0u);
  std::thread([&] { record_finish(first + 1); }).join();  // the start of first + 1 comes later
  prof::dump(false);
  json t = read_trace("wait.json");
  EXPECT_EQ(count_phase(t, "f", first + 1), 0) << "a finish was written before its start";
  std::thread([&] { record_finish(first); }).join();
  ASSERT_EQ(prof::flow_start(prof::intern("operator"), prof::kImperative), first + 1);
  prof::dump(true);
  t = read_trace("wait.json");
  EXPECT_EQ(count_phase(t, "s", first + 1), 1);
  EXPECT_EQ(count_phase(t, "f", first + 1), 1);
  EXPECT_EQ(t["otherData"]["flow_finishes_omitted"], 0);
}

// A finish whose start went to an earlier file is left out of the new one and counted.
TEST_F(TraceCommit, AFinishWhoseStartIsInAnEarlierFileIsLeftOut) {
  configure("first.json");
  prof::set_state(prof::State::kRunning);
  const uint64_t id = prof::flow_start(prof::intern("operator"), prof::kImperative);
  std::thread([] { record_finish(0); }).join();  // registers the worker thread
  prof::dump(true);
  skip_validation("first.json");  // its start's finish went to the next file, on purpose
  configure("second.json");
  prof::set_state(prof::State::kRunning);
  std::thread([&] { record_finish(id); }).join();
  // A later flow of the same pusher: its start is in this file, so the earlier one is not.
  const uint64_t later = prof::flow_start(prof::intern("operator"), prof::kImperative);
  std::thread([&] { record_finish(later); }).join();
  prof::dump(true);
  json t = read_trace("second.json");
  EXPECT_EQ(count_phase(t, "f", id), 0);
  EXPECT_EQ(count_phase(t, "f", later), 1);
  EXPECT_EQ(t["otherData"]["flow_finishes_omitted"], 1);
  EXPECT_EQ(events_named(t, "late_op").size(), 4u);  // both operators are written (B and E)
}

// MXNet's tutorial order: dump (finished), run again, dump again: the second dump continues the
// file; a new set_config starts afresh.
TEST_F(TraceCommit, LaterDumpsContinueAFinishedFileAndANewConfigStartsAfresh) {
  prof::Domain d("D");
  prof::Counter c(d, "c");
  configure("tutorial.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(1);
  prof::dump(true);
  prof::set_state(prof::State::kRunning);
  c.set_value(2);
  prof::dump(false);
  c.set_value(3);
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  json t = read_trace("tutorial.json");
  auto values = events_named(t, "c");
  ASSERT_EQ(values.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(values[i]["args"]["c"], i + 1);
  // Row metadata is not repeated when the file is continued.
  int cpu0_names = 0;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 0) ++cpu0_names;
  EXPECT_EQ(cpu0_names, 1);

  configure("tutorial.json");  // deletes the file, as MXNet
  prof::set_state(prof::State::kRunning);
  c.set_value(4);
  prof::dump(true);
  values = events_named(read_trace("tutorial.json"), "c");
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0]["args"]["c"], 4);
}

// The first periodic flush comes one period after continuous dump starts, not at once (an
// immediate flush at the dump thread's start once raced with the tests' own dumps).
TEST_F(TraceCommit, TheFirstPeriodicFlushWaitsOnePeriod) {
  configure("later.json");  // period: one day
  prof::set_state(prof::State::kRunning);
  prof::Domain d("D");
  prof::Counter(d, "c").set_value(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(exists("later.json")) << "a flush ran before its period";
  prof::dump(true);
  EXPECT_EQ(events_named(read_trace("later.json"), "c").size(), 1u);
}

// A file changed by someone else between the dumps is not continued (its end is unknown): the
// next dump starts it afresh.
TEST_F(TraceCommit, AFileChangedBetweenDumpsIsStartedAfresh) {
  prof::Domain d("D");
  prof::Counter c(d, "c");
  configure("changed.json");
  prof::set_state(prof::State::kRunning);
  c.set_value(1);
  prof::dump(true);
  {
    std::FILE* f = std::fopen("changed.json", "a");
    std::fputs("\n", f);
    std::fclose(f);
  }
  prof::set_state(prof::State::kRunning);
  c.set_value(2);
  prof::dump(true);
  auto values = events_named(read_trace("changed.json"), "c");
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0]["args"]["c"], 2);
}

}  // namespace
