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
// The smallest step the tick counter takes, in ticks, measured once at load as the greatest
// common divisor of the steps between many readings. 1 on bare metal; some hypervisors advance
// the TSC in coarser steps (21 ticks, about 10 ns, on the 2-core VMs this project runs on).
// It is a measurement, not a guarantee: such a VM's TSC was seen, once in 10^5 readings, to
// step off its grid later in the run (by a single tick). Two readings that close share a
// rounded timestamp; rounding is monotone, so no order is ever reversed.
uint64_t tick_quantum();
// The measurement itself: the gcd of the steps between `readings` + 1 calls of read_ticks.
// An off-grid step while it runs only makes the quantum finer (safe: more digits, never fewer).
uint64_t measure_tick_quantum(uint64_t (*read_ticks)(), int readings);
// The decimal unit (1, 10, 100 or 1000 ns) a trace's timestamps are rounded to: the largest one
// not coarser than the clock's resolution, so rounding never merges two readings the clock
// tells apart and the file prints no digit the clock cannot resolve.
uint64_t timestamp_unit_ns(double resolution_ns);

// Profiler ticks per nanosecond over the time since load (1 when ticks are nanoseconds), for
// placing times measured by another clock (a GPU's) on the profiler's: each end of the baseline
// is a bracketed pair of readings, so the rate is good to about 100 ns over the baseline (1 ppm
// 100 ms after load).
double ticks_per_ns();

class TickConverter {
 public:
  // Adds an anchor now (at most one per 50 ms) and makes sure a first slope exists.
  void anchor_now();
  // Nanoseconds since time zero; monotonic in `ticks`. Ticks before time zero map to 0.
  uint64_t to_ns(uint64_t ticks) const;
  // Nanoseconds per tick over the anchors so far (1 when ticks are nanoseconds or before a
  // first slope).
  double ns_per_tick() const;
  // The clock's resolution in nanoseconds: tick_quantum() ticks.
  double resolution_ns() const { return static_cast<double>(tick_quantum()) * ns_per_tick(); }

 private:
  struct Anchor {
    uint64_t ticks;
    uint64_t ns;  // since time zero
  };
  std::vector<Anchor> anchors_;
};

}  // namespace nanomx::profiler
