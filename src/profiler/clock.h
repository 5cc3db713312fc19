// The profiler's clock. Records carry raw ticks (TSC where it is invariant, else
// CLOCK_MONOTONIC nanoseconds); the collector turns ticks into nanoseconds since the trace's
// time zero with a piecewise-linear map through (ticks, CLOCK_MONOTONIC) anchors taken at time
// zero and at each dump, so long runs do not drift.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace nanomx::profiler {

uint64_t monotonic_ns();
uint64_t unix_ns();

struct TimeZero {
  uint64_t ticks;
  uint64_t monotonic_ns;
  uint64_t unix_ns;
};
// Taken once when the library loads; every trace of the process shares it.
const TimeZero& time_zero();
// "tsc" or "CLOCK_MONOTONIC": what now_ticks() reads.
const char* tick_source();

class TickConverter {
 public:
  // Adds an anchor now (at most one per 50 ms) and makes sure a first slope exists.
  void anchor_now();
  // Nanoseconds since time zero; monotonic in `ticks`. Ticks before time zero map to 0.
  uint64_t to_ns(uint64_t ticks) const;

 private:
  struct Anchor {
    uint64_t ticks;
    uint64_t ns;  // since time zero
  };
  std::vector<Anchor> anchors_;
};

}  // namespace nanomx::profiler
