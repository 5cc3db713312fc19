#include "profiler/clock.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>

#include "profiler/hooks.h"

namespace nanomx::profiler {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t unix_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

// The TSC is a usable clock only when it ticks at a constant rate through frequency changes
// and sleep states; otherwise fall back to the vDSO clock (about twice the cost per read).
bool tsc_is_invariant() {
#if defined(__x86_64__)
  if (const char* force = getenv("NANOMX_PROFILER_CLOCK");
      force && std::string(force) == "monotonic")
    return false;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

TimeZero g_time_zero{};
uint64_t g_tick_quantum = 1;

}  // namespace

// The gcd of the steps between consecutive readings, spaced unevenly so that the gcd is the
// counter's step and not the cost of a read (which can be a near-constant number of ticks).
// Stops at 1, which bare metal reaches within a few readings.
uint64_t measure_tick_quantum(uint64_t (*read_ticks)(), int readings) {
  uint64_t quantum = 0;
  uint64_t previous = read_ticks();
  for (int i = 0; i < readings && quantum != 1; ++i) {
    for (int spin = 0; spin < i % 13; ++spin) asm volatile("");
    uint64_t t = read_ticks();
    quantum = std::gcd(quantum, t - previous);
    previous = t;
  }
  return quantum == 0 ? 1 : quantum;
}

namespace detail {
// Written once by the priority constructor below, before any C++ dynamic initializer of this
// library or of a program linking it can record, so every record uses one tick source.
bool use_tsc = false;

uint64_t now_ticks_slow() { return monotonic_ns(); }
}  // namespace detail

namespace {
// A (ticks, CLOCK_MONOTONIC) pair read as close together as possible: the monotonic read is
// bracketed by two tick reads and the tightest of several tries wins. A single read can be
// late by tens of µs (first vDSO use, preemption), which would tilt the tick rate and shift
// the time-zero anchor that merges rely on.
struct ClockPair {
  uint64_t ticks;
  uint64_t monotonic_ns;
};
ClockPair read_clock_pair() {
  ClockPair best{0, 0};
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    uint64_t before = now_ticks();
    uint64_t mono = monotonic_ns();
    uint64_t after = now_ticks();
    if (after - before < best_gap) {
      best_gap = after - before;
      best = {before + (after - before) / 2, mono};
    }
  }
  return best;
}
}  // namespace

__attribute__((constructor(101))) static void init_profiler_clock() {
  detail::use_tsc = tsc_is_invariant();
  for (int i = 0; i < 4; ++i) {  // warm up the vDSO and the TSC read path
    (void)monotonic_ns();
    (void)unix_ns();
    (void)now_ticks();
  }
  g_tick_quantum = measure_tick_quantum(now_ticks, 4000);
  ClockPair zero = read_clock_pair();
  // The Unix time of the same instant, from a realtime read bracketed by monotonic reads.
  uint64_t best_gap = UINT64_MAX, unix_at_zero = 0;
  for (int i = 0; i < 16; ++i) {
    uint64_t m0 = monotonic_ns();
    uint64_t u = unix_ns();
    uint64_t m1 = monotonic_ns();
    if (m1 - m0 < best_gap) {
      best_gap = m1 - m0;
      int64_t mid = static_cast<int64_t>(m0 + (m1 - m0) / 2);
      unix_at_zero = u - static_cast<uint64_t>(mid - static_cast<int64_t>(zero.monotonic_ns));
    }
  }
  g_time_zero = {zero.ticks, zero.monotonic_ns, unix_at_zero};
}

const TimeZero& time_zero() { return g_time_zero; }
const char* tick_source() { return detail::use_tsc ? "tsc" : "CLOCK_MONOTONIC"; }
uint64_t tick_quantum() { return g_tick_quantum; }

uint64_t timestamp_unit_ns(double resolution_ns) {
  uint64_t unit = 1;
  while (unit < 1000 && static_cast<double>(unit * 10) <= resolution_ns) unit *= 10;
  return unit;
}

double ticks_per_ns() {
  if (!detail::use_tsc) return 1.0;
  const ClockPair now = read_clock_pair();
  const uint64_t ns = now.monotonic_ns - g_time_zero.monotonic_ns;
  if (ns == 0 || now.ticks <= g_time_zero.ticks) return 1.0;
  return static_cast<double>(now.ticks - g_time_zero.ticks) / static_cast<double>(ns);
}

double TickConverter::ns_per_tick() const {
  if (!detail::use_tsc || anchors_.size() < 2) return 1.0;
  const Anchor& first = anchors_.front();
  const Anchor& last = anchors_.back();
  return static_cast<double>(last.ns - first.ns) / static_cast<double>(last.ticks - first.ticks);
}

void TickConverter::anchor_now() {
  if (!detail::use_tsc) return;  // ticks are already nanoseconds
  if (anchors_.empty()) anchors_.push_back({g_time_zero.ticks, 0});
  // The first slope needs a long enough baseline: 10 ms gives a rate good to a few ppm.
  constexpr uint64_t kMinBaselineNs = 10'000'000;
  constexpr uint64_t kMinSpacingNs = 50'000'000;
  uint64_t elapsed = monotonic_ns() - g_time_zero.monotonic_ns;
  if (anchors_.size() == 1 && elapsed < kMinBaselineNs) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(kMinBaselineNs - elapsed));
  }
  ClockPair pair = read_clock_pair();
  uint64_t ticks = pair.ticks;
  uint64_t ns = pair.monotonic_ns - g_time_zero.monotonic_ns;
  if (anchors_.size() > 1 && ns - anchors_.back().ns < kMinSpacingNs) return;
  if (ticks <= anchors_.back().ticks || ns <= anchors_.back().ns) return;
  anchors_.push_back({ticks, ns});
}

uint64_t TickConverter::to_ns(uint64_t ticks) const {
  if (!detail::use_tsc) {
    return ticks > g_time_zero.monotonic_ns ? ticks - g_time_zero.monotonic_ns : 0;
  }
  if (anchors_.size() < 2 || ticks <= anchors_.front().ticks) return 0;
  // Segment whose start is the last anchor at or before `ticks`; past the last anchor the last
  // segment's slope extends.
  auto it = std::upper_bound(anchors_.begin(), anchors_.end(), ticks,
                             [](uint64_t t, const Anchor& a) { return t < a.ticks; });
  size_t hi = static_cast<size_t>(it - anchors_.begin());
  if (hi >= anchors_.size()) hi = anchors_.size() - 1;
  const Anchor& a = anchors_[hi - 1];
  const Anchor& b = anchors_[hi];
  __int128 delta = static_cast<__int128>(ticks - a.ticks) * static_cast<__int128>(b.ns - a.ns) /
                   static_cast<__int128>(b.ticks - a.ticks);
  return a.ns + static_cast<uint64_t>(delta);
}

}  // namespace nanomx::profiler
