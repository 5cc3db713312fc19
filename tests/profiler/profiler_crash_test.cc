// Processes that die or start in unusual ways: SIGKILL during continuous dump leaves a loadable
// file with every event up to the last flush; MXNET_PROFILER_AUTOSTART / MXNET_PROFILER_MODE.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler_fixture.h"
#include "trace_file.h"

using nanomx::testing::events_named;
using nanomx::testing::json;
using nanomx::testing::read_trace;

namespace {

class ProfilerCrash : public nanomx::testing::ProfilerTest {};

// Starts the child with its stdout on a pipe; returns its pid and the read end.
pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env,
            int* out_fd) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(NANOMX_PROFILER_CHILD));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(NANOMX_PROFILER_CHILD, argv.data());
    _exit(127);
  }
  close(fds[1]);
  *out_fd = fds[0];
  return pid;
}

std::string run_to_end(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int fd = -1;
  pid_t pid = spawn(args, env, &fd);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  return out;
}

TEST_F(ProfilerCrash, SigkillDuringContinuousDumpLeavesAValidFile) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::string file = "killed_" + std::to_string(attempt) + ".json";
    int fd = -1;
    pid_t pid = spawn({"continuous", file}, {}, &fd);
    ASSERT_GT(pid, 0);
    FILE* out = fdopen(fd, "r");
    unsigned long long last_flushed = 0;
    int flushes = 0;
    char line[128];
    // Kill after a varying number of acknowledged flushes, at whatever the child is doing.
    while (flushes < 5 + attempt * 7 && fgets(line, sizeof line, out)) {
      ASSERT_EQ(sscanf(line, "flushed %llu", &last_flushed), 1) << line;
      ++flushes;
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    fclose(out);
    ASSERT_TRUE(WIFSIGNALED(status));

    json trace = read_trace(file);  // throws when the file is not valid JSON
    auto progress = events_named(trace, "progress");
    ASSERT_GT(progress.size(), last_flushed) << "events up to the last flush are missing";
    for (unsigned long long i = 0; i <= last_flushed; ++i)
      ASSERT_EQ(progress[i]["args"]["progress"], i);
  }
}

// The final dump at exit runs after static destructors registered later than the profiler's exit
// hook: it must not use anything they free (the otherData fields were once such a static, and
// the trailer then held freed memory).
TEST_F(ProfilerCrash, ExitAfterAFlushWritesAValidTrailer) {
  const std::string file = "flush_then_exit.json";
  run_to_end({"flush-then-exit", file}, {});
  json trace = read_trace(file);  // throws when the file is not valid JSON
  ASSERT_TRUE(trace.contains("otherData"));
  EXPECT_EQ(trace["otherData"]["producer"], "nanomx 0.1.0");
  EXPECT_EQ(events_named(trace, "before flush").size(), 1u);
  EXPECT_EQ(events_named(trace, "after flush").size(), 1u);
}

TEST_F(ProfilerCrash, AutostartWritesProfileJsonAtExit) {
  std::string dir = "autostart_dir";
  mkdir(dir.c_str(), 0755);
  std::remove((dir + "/profile.json").c_str());
  ASSERT_EQ(chdir(dir.c_str()), 0);
  run_to_end({"record"}, {"MXNET_PROFILER_AUTOSTART=1", "MXNET_PROFILER_MODE=15"});
  json trace = read_trace("profile.json");
  ASSERT_EQ(chdir(".."), 0);
  EXPECT_EQ(events_named(trace, "child counter").size(), 1u);
  EXPECT_EQ(events_named(trace, "child_op").size(), 2u);
}

TEST_F(ProfilerCrash, ModeFromEnvironment) {
  EXPECT_EQ(run_to_end({"mode"}, {}), "13 0\n");
  EXPECT_EQ(run_to_end({"mode"}, {"MXNET_PROFILER_MODE=6"}), "6 0\n");
  EXPECT_EQ(run_to_end({"mode"}, {"NANOMX_PROFILER_MODE=2", "MXNET_PROFILER_MODE=6"}), "2 0\n");
  EXPECT_EQ(run_to_end({"mode"}, {"NANOMX_PROFILER_AUTOSTART=1"}), "13 1\n");
}

}  // namespace
