// One of the two processes of the merge test: records a nanomx trace with the real profiler,
// marking a series of shared moments. A moment is a CLOCK_MONOTONIC deadline given on the command
// line (the same for both processes); each process waits for the deadline and marks it, so in a
// correctly merged timeline the two processes' marks of one moment coincide.
//
// On a busy machine a process can be descheduled at a deadline and mark it late. So for each
// mark the program writes, to OUT.json.clock, "k before after": the CLOCK_MONOTONIC readings
// just before and just after the mark. When they are close, the mark's true time is known, and
// the test can tell the merge's error apart from the scheduler's.
//
// usage: trace_merge_marker OUT.json FIRST_DEADLINE_NS MOMENTS PERIOD_NS
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "nanomx/profiler.h"

namespace {

// Sleep until this long before a deadline, then spin: a process that mostly sleeps is scheduled
// promptly when it wakes, where one that spins for the whole period gets preempted.
constexpr uint64_t kSpinNs = 300000;

uint64_t monotonic_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<uint64_t>(now.tv_nsec);
}

void sleep_until(uint64_t ns) {
  timespec until;
  until.tv_sec = static_cast<time_t>(ns / 1000000000ULL);
  until.tv_nsec = static_cast<long>(ns % 1000000000ULL);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) != 0) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s OUT.json FIRST_DEADLINE_NS MOMENTS PERIOD_NS\n", argv[0]);
    return 2;
  }
  namespace profiler = nanomx::profiler;
  const std::string out = argv[1];
  const uint64_t first_deadline = std::strtoull(argv[2], nullptr, 10);
  const int moments = std::atoi(argv[3]);
  const uint64_t period = std::strtoull(argv[4], nullptr, 10);

  profiler::set_config({{"profile_all", "true"}, {"filename", out}, {"continuous_dump", "false"}});
  profiler::set_state(profiler::State::kRunning);
  profiler::Domain domain("merge_test");
  std::vector<std::unique_ptr<profiler::Marker>> markers;
  for (int k = 0; k < moments; ++k) {
    markers.push_back(std::make_unique<profiler::Marker>(domain, "moment " + std::to_string(k)));
  }
  // The first record of a thread sets up its buffer (page faults, registration): do that before
  // the first moment, not in it.
  profiler::Marker warm_up(domain, "warm up");
  warm_up.mark(profiler::MarkerScope::kThread);

  std::string clock_log;
  for (int k = 0; k < moments; ++k) {
    const uint64_t deadline = first_deadline + static_cast<uint64_t>(k) * period;
    if (monotonic_ns() + kSpinNs < deadline) sleep_until(deadline - kSpinNs);
    if (monotonic_ns() > deadline) continue;  // started too late for this moment
    uint64_t before = monotonic_ns();
    while (before < deadline) before = monotonic_ns();
    markers[k]->mark(profiler::MarkerScope::kGlobal);
    uint64_t after = monotonic_ns();
    clock_log +=
        std::to_string(k) + " " + std::to_string(before) + " " + std::to_string(after) + "\n";
  }
  profiler::set_state(profiler::State::kStopped);
  profiler::dump(true);

  FILE* list = std::fopen((out + ".clock").c_str(), "w");
  if (!list || std::fputs(clock_log.c_str(), list) < 0 || std::fclose(list) != 0) {
    std::fprintf(stderr, "cannot write %s.clock\n", out.c_str());
    return 1;
  }
  return 0;
}
