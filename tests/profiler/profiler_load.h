// The busy, thread-churning recording load of docs/profiler.md#memory-bound, shared by
// profiler_memory_bound_test and bench/profiler/profiler_memory_stress, and the resident set
// size they watch under it.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <thread>
#include <vector>

#include "nanomx/profiler.h"
#include "profiler/hooks.h"

namespace nanomx::testing {

// The resident set size of this process, in bytes.
inline uint64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// `threads` threads record every kind of event (operators, C API calls, memory counters, user
// counters), each replacing its recording thread by a fresh one after `events_per_thread`
// iterations (exited threads' buffers are what a run without dumps keeps), until stop().
class ChurningLoad {
 public:
  ChurningLoad(int threads, int events_per_thread) {
    namespace prof = nanomx::profiler;
    const prof::NameId op = prof::intern("stress_op");
    const prof::NameId api = prof::intern("MXStressCall");
    for (int k = 0; k < threads; ++k) {
      workers_.emplace_back([this, op, api, events_per_thread] {
        prof::Domain domain("stress");
        while (!done_.load(std::memory_order_relaxed)) {
          std::thread worker([&] {
            prof::Counter counter(domain, "stress_counter");
            for (int i = 0; i < events_per_thread; ++i) {
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
  }
  ChurningLoad(const ChurningLoad&) = delete;
  ChurningLoad& operator=(const ChurningLoad&) = delete;
  ~ChurningLoad() { stop(); }

  // Ends the load: returns when every thread has exited.
  void stop() {
    done_ = true;
    for (auto& w : workers_) {
      if (w.joinable()) w.join();
    }
  }

 private:
  std::atomic<bool> done_{false};
  std::vector<std::thread> workers_;
};

}  // namespace nanomx::testing
