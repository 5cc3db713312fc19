// The 60 s memory stress of docs/profiler.md#memory-bound: busy threads record every kind of
// event (operators, C API calls, memory counters, user counters), each thread replaced by a
// fresh one every `events_per_thread` iterations, with profile_all, no dump and a small
// max_buffer_mb. Prints the resident set size every 5 s and the growth over the start.
//
//   profiler_memory_stress [seconds=60] [threads=4] [max_buffer_mb=16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "nanomx/profiler.h"
#include "profiler_load.h"

namespace prof = nanomx::profiler;

namespace {

double rss_mib() { return static_cast<double>(nanomx::testing::rss_bytes()) / (1 << 20); }

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 60.0;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  const std::string bound = argc > 3 ? argv[3] : "16";
  constexpr int kEventsPerThread = 20000;

  const double before = rss_mib();
  prof::set_config({{"profile_all", "true"},
                    {"filename", "memory_stress.json"},
                    {"continuous_dump", "false"},
                    {"max_buffer_mb", bound}});
  prof::set_state(prof::State::kRunning);
  nanomx::testing::ChurningLoad load(threads, kEventsPerThread);
  std::printf("max_buffer_mb=%s threads=%d: RSS before config %.1f MiB\n", bound.c_str(), threads,
              before);
  const auto start = std::chrono::steady_clock::now();
  double peak = before;
  for (int tick = 1;; ++tick) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(100) * tick);
    peak = std::max(peak, rss_mib());
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tick % 50 == 0 || elapsed >= seconds) {
      std::printf("t=%5.1f s  RSS %.1f MiB  peak %.1f MiB  growth %.1f MiB  dropped %llu\n",
                  elapsed, rss_mib(), peak, peak - before,
                  static_cast<unsigned long long>(prof::dropped_events()));
      std::fflush(stdout);
    }
    if (elapsed >= seconds) break;
  }
  load.stop();
  prof::set_state(prof::State::kStopped);
  prof::dump(true);  // finishes the file now, so the exit-time dump does not write it again
  std::remove("memory_stress.json");
  return 0;
}
