// Placing GPU operations' device times on the profiler's clock (src/backends/cuda/device_timing.h):
// the arithmetic the CUDA completer applies to cudaEventElapsedTime results, tested without a
// GPU. Ticks here are nanoseconds (1e6 per ms), as with the monotonic clock.
#include "backends/cuda/device_timing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace nanomx::cuda {
namespace {

StreamClock clock_at(uint64_t anchor_ticks) {
  StreamClock c;
  c.anchor_ticks = anchor_ticks;
  c.ticks_per_ms = 1e6;
  return c;
}

TEST(DeviceTiming, EventTimesAreOffsetsFromTheAnchor) {
  StreamClock c = clock_at(1'000);
  const DeviceSpan s = place_device_span(c, 0.010, 0.050, /*launch_begin=*/1'000,
                                         /*observed=*/1'000'000);
  EXPECT_EQ(s.begin, 11'000u);
  EXPECT_EQ(s.end, 51'000u);
  EXPECT_EQ(c.free_at, 51'000u);
}

TEST(DeviceTiming, TheDeviceCannotStartBeforeTheLaunchBegan) {
  StreamClock c = clock_at(1'000);
  // An anchor placed a little late makes the start look earlier than the launch.
  const DeviceSpan s = place_device_span(c, 0.001, 0.020, /*launch_begin=*/5'000, 1'000'000);
  EXPECT_EQ(s.begin, 5'000u);
  EXPECT_EQ(s.end, 21'000u);
}

TEST(DeviceTiming, AStreamRunsOneOperationAfterTheOther) {
  StreamClock c = clock_at(0);
  const DeviceSpan first = place_device_span(c, 0.000, 0.100, 0, 1'000'000);
  // Rounding of the events could make the next one start before the first ended.
  const DeviceSpan second = place_device_span(c, 0.0995, 0.200, 0, 1'000'000);
  EXPECT_EQ(first.end, 100'000u);
  EXPECT_EQ(second.begin, first.end);
  EXPECT_EQ(second.end, 200'000u);
}

TEST(DeviceTiming, NothingEndsAfterTheCompleterSawItEnd) {
  StreamClock c = clock_at(0);
  const DeviceSpan late_end = place_device_span(c, 0.010, 0.090, 0, /*observed=*/50'000);
  EXPECT_EQ(late_end.begin, 10'000u);
  EXPECT_EQ(late_end.end, 50'000u);
  StreamClock d = clock_at(0);
  const DeviceSpan all_late = place_device_span(d, 0.080, 0.090, 0, /*observed=*/50'000);
  EXPECT_EQ(all_late.begin, 50'000u);
  EXPECT_EQ(all_late.end, 50'000u);
}

TEST(DeviceTiming, NonsenseTimesStayInsideTheBounds) {
  StreamClock c = clock_at(1'000);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const DeviceSpan s = place_device_span(c, nan, -3.0, 2'000, 9'000);
  EXPECT_EQ(s.begin, 2'000u);
  EXPECT_EQ(s.end, 2'000u);
  // An end before the start is the start (a zero-length span), never a negative duration.
  StreamClock d = clock_at(0);
  const DeviceSpan backwards = place_device_span(d, 0.050, 0.020, 0, 1'000'000);
  EXPECT_EQ(backwards.begin, 50'000u);
  EXPECT_EQ(backwards.end, 50'000u);
  // An observation before the lower bound (clocks disagree): the span is the bound, empty.
  StreamClock e = clock_at(0);
  e.free_at = 70'000;
  const DeviceSpan behind = place_device_span(e, 0.010, 0.020, 0, /*observed=*/60'000);
  EXPECT_EQ(behind.begin, 70'000u);
  EXPECT_EQ(behind.end, 70'000u);
}

TEST(DeviceTiming, RateScalesMilliseconds) {
  StreamClock c = clock_at(0);
  c.ticks_per_ms = 2.5e6;  // a 2.5 GHz TSC
  const DeviceSpan s = place_device_span(c, 1.0, 3.0, 0, UINT64_MAX);
  EXPECT_EQ(s.begin, 2'500'000u);
  EXPECT_EQ(s.end, 7'500'000u);
}

}  // namespace
}  // namespace nanomx::cuda
