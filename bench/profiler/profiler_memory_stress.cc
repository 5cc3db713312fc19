// The 60 s memory stress of docs/profiler.md#memory-bound: busy threads record every kind of
// event (operators, C API calls, memory counters, user counters), each thread replaced by a
// fresh one every `events_per_thread` iterations, with profile_all, no dump and a small
// max_buffer_mb. Prints the resident set size every 5 s and the growth over the start.
//
//   profiler_memory_stress [seconds=60] [threads=4] [max_buffer_mb=16]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "nanomx/profiler.h"
#include "profiler/hooks.h"

namespace prof = nanomx::profiler;

namespace {

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) / (1 << 20);
}

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
  const prof::NameId op = prof::intern("stress_op");
  const prof::NameId api = prof::intern("MXStressCall");
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int k = 0; k < threads; ++k) {
    workers.emplace_back([&] {
      prof::Domain domain("stress");
      while (!done.load(std::memory_order_relaxed)) {
        std::thread worker([&] {
          prof::Counter counter(domain, "stress_counter");
          for (int i = 0; i < kEventsPerThread; ++i) {
            prof::ApiCallScope call(api);
            uint64_t t = prof::now_ticks();
            prof::record_operator(op, 0, t, t + 10);
            prof::memory_alloc(0, 64);
            prof::memory_free(0, 64);
            counter.set_value(static_cast<uint64_t>(i));
          }
        });
        worker.join();
      }
    });
  }
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
  done = true;
  for (auto& w : workers) w.join();
  prof::set_state(prof::State::kStopped);
  prof::dump(true);  // finishes the file now, so the exit-time dump does not write it again
  std::remove("memory_stress.json");
  return 0;
}
