// Placing a GPU operation's execution on the profiler's clock (docs/cuda.md, "Profiler").
//
// The GPU worker records a CUDA event before and after an operation's work on its stream; the
// device stamps them when the stream reaches them. cudaEventElapsedTime gives each one's time
// relative to an anchor event of the same stream, whose completion the worker observed on the
// profiler's clock (it records the anchor on its drained stream and waits for it, spinning).
// The result is then held to what is certain: the device cannot start an operation before the
// worker began launching it, nor before the stream finished the previous one, and it finished
// no later than the completer saw it finish. Those bounds keep a stream's spans in order and
// inside the truth whatever the anchor's error.
//
// Kept free of CUDA so that the arithmetic is tested on machines without a GPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nanomx::cuda {

// One stream's mapping: the anchor's completion in profiler ticks, the tick rate, and the end of
// the last span placed on the stream.
struct StreamClock {
  uint64_t anchor_ticks = 0;
  double ticks_per_ms = 1e6;  // profiler ticks per millisecond
  uint64_t free_at = 0;
};

struct DeviceSpan {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// `start_ms` / `end_ms`: the operation's two events relative to the anchor (elapsed time from
// the anchor, as cudaEventElapsedTime returns it); `launch_begin`: when the worker began the
// launch; `observed`: when the completer saw the end event complete. Updates clock.free_at.
inline DeviceSpan place_device_span(StreamClock& clock, double start_ms, double end_ms,
                                    uint64_t launch_begin, uint64_t observed) {
  auto at = [&clock](double ms) -> uint64_t {
    if (!(ms > 0)) return clock.anchor_ticks;  // also NaN: no later than the anchor
    return clock.anchor_ticks + static_cast<uint64_t>(std::llround(ms * clock.ticks_per_ms));
  };
  const uint64_t lo = std::max(launch_begin, clock.free_at);
  const uint64_t hi = std::max(observed, lo);
  DeviceSpan span;
  span.begin = std::clamp(at(start_ms), lo, hi);
  span.end = std::clamp(at(std::max(end_ms, start_ms)), span.begin, hi);
  clock.free_at = span.end;
  return span;
}

}  // namespace nanomx::cuda
