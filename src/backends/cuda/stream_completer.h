// The completion thread of one GPU worker pool, and the device timing of its operations.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/device_timing.h"
#include "engine/device_workers.h"
#include "engine/var.h"
#include "profiler/clock.h"
#include "profiler/hooks.h"

namespace nanomx::cuda {

using engine::ErrorRef;
using engine::OprBlock;

// Completes the GPU operations of one worker pool once their stream work is done: the worker
// records a CUDA event after launching an operation and hands the operation here; this thread
// waits for the events in order (cudaEventSynchronize on a blocking-sync event: it sleeps, no
// device-wide synchronization, the workers keep launching) and then completes each operation.
//
// While operators are profiled it also times their device execution
// (backends/cuda/device_timing.h): the worker records a timing event before the launch as well,
// against an anchor event of its stream, and this thread, once the end event is done, places the
// span on the stream's own row
// ("gpu(0) stream 1") with the arrow from the launch. A worker waits only to take its stream's
// anchor: once a second while profiling, it drains its stream (begin_timing).
class StreamCompleter {
 public:
  // An anchor: an event of one stream and the profiler ticks at which it completed.
  struct Anchor {
    cudaEvent_t event = nullptr;
    StreamClock clock;      // anchor_ticks and ticks_per_ms (free_at unused)
    uint64_t taken_ns = 0;  // monotonic, for re-anchoring
    ~Anchor() {
      if (event != nullptr) (void)cudaEventDestroy(event);
    }
  };

  // One worker's stream. The worker owns `anchor` (it re-anchors), the completer `row` and
  // `clock` (it places spans); pending operations keep the anchor they were timed against.
  struct Stream {
    cudaStream_t stream = nullptr;
    std::string row_name;
    std::shared_ptr<Anchor> anchor;
    std::unique_ptr<profiler::DeviceRow> row;
    StreamClock clock;
  };

  // What the worker measured of one operation: its start event, the anchor it is relative to,
  // and when the launch began (a null start: not timed).
  struct Timing {
    Stream* stream = nullptr;
    cudaEvent_t start = nullptr;
    std::shared_ptr<Anchor> anchor;
    uint64_t launch_begin = 0;
  };

  StreamCompleter(std::string name, int dev_id, engine::FinishFn finish)
      : name_(name), finish_(std::move(finish)), thread_([this, name = std::move(name), dev_id] {
          profiler::set_thread_name(name);
          (void)cudaSetDevice(dev_id);
          run();
        }) {}
  ~StreamCompleter() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
    for (cudaEvent_t e : free_events_) (void)cudaEventDestroy(e);
    for (cudaEvent_t e : free_timing_events_) (void)cudaEventDestroy(e);
  }
  StreamCompleter(const StreamCompleter&) = delete;
  StreamCompleter& operator=(const StreamCompleter&) = delete;

  // A worker's stream, kept until the completer ends (a worker calls this once, at start).
  Stream* add_stream(cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    auto& s = streams_.emplace_back(std::make_unique<Stream>());
    s->stream = stream;
    s->row_name =
        name_.substr(0, name_.rfind(" completion")) + " stream " + std::to_string(streams_.size());
    return s.get();
  }

  // Called by a worker before launching a profiled operation on its stream: anchors the stream
  // when it has no anchor or an old one (float milliseconds from an anchor lose precision: a
  // microsecond after ten seconds), then records the start event. A CUDA failure leaves the
  // operation untimed (its launch is still recorded as an operator).
  Timing begin_timing(Stream* s) {
    Timing t;
    if (s == nullptr || s->stream == nullptr) return t;
    constexpr uint64_t kReanchorNs = 1'000'000'000;
    const uint64_t now_ns = profiler::monotonic_ns();
    if (!s->anchor || now_ns - s->anchor->taken_ns > kReanchorNs) {
      s->anchor = take_anchor(s->stream);
      if (!s->anchor) return t;
    }
    cudaEvent_t start = acquire_event(/*timing=*/true);
    if (start == nullptr) return t;
    t.launch_begin = profiler::now_ticks();
    if (cudaEventRecord(start, s->stream) != cudaSuccess) {
      release_event(start, true);
      return t;
    }
    t.stream = s;
    t.start = start;
    t.anchor = s->anchor;
    return t;
  }

  // Called by a worker on its own device after op's work was enqueued on `stream`.
  void enqueue(cudaStream_t stream, OprBlock* op, ErrorRef error, bool new_error, Timing timing) {
    const bool timed = timing.start != nullptr;
    cudaEvent_t event = acquire_event(timed);
    cudaError_t status = event == nullptr ? cudaErrorMemoryAllocation : cudaSuccess;
    if (status == cudaSuccess) status = cudaEventRecord(event, stream);
    if (status != cudaSuccess && !error) {
      error = cuda_error(*op, "cannot record the completion event", status);
      new_error = true;
    }
    if (status != cudaSuccess && event != nullptr) {
      release_event(event, timed);
      event = nullptr;
    }
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({event, op, std::move(error), new_error, std::move(timing)});
    }
    cv_.notify_one();
  }

 private:
  static ErrorRef cuda_error(const OprBlock& op, const char* what, cudaError_t status) {
    return std::make_shared<const std::string>(
        std::string("operator ") + (op.name ? op.name : "(unnamed)") + " failed: " + what +
        " (CUDA: " + cudaGetErrorString(status) + ")");
  }

  // The stream is drained first, so the anchor completes as soon as the device sees it; the
  // worker spins on it (a default event) and takes the middle of [record, seen] as its time.
  static std::shared_ptr<Anchor> take_anchor(cudaStream_t stream) {
    auto anchor = std::make_shared<Anchor>();
    if (cudaEventCreateWithFlags(&anchor->event, cudaEventDefault) != cudaSuccess) {
      anchor->event = nullptr;
      return nullptr;
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess) return nullptr;
    const uint64_t before = profiler::now_ticks();
    if (cudaEventRecord(anchor->event, stream) != cudaSuccess) return nullptr;
    cudaError_t status;
    while ((status = cudaEventQuery(anchor->event)) == cudaErrorNotReady) {
    }
    if (status != cudaSuccess) return nullptr;
    const uint64_t after = profiler::now_ticks();
    anchor->clock.anchor_ticks = before + (after - before) / 2;
    anchor->clock.ticks_per_ms = profiler::ticks_per_ns() * 1e6;
    anchor->taken_ns = profiler::monotonic_ns();
    return anchor;
  }

  // A completion event (blocking-sync: the completer sleeps on it); with `timing`, one that
  // also records the device's time.
  cudaEvent_t acquire_event(bool timing) {
    {
      std::lock_guard lock(mutex_);
      auto& list = timing ? free_timing_events_ : free_events_;
      if (!list.empty()) {
        cudaEvent_t e = list.back();
        list.pop_back();
        return e;
      }
    }
    cudaEvent_t event = nullptr;
    const unsigned flags =
        timing ? cudaEventBlockingSync : cudaEventDisableTiming | cudaEventBlockingSync;
    return cudaEventCreateWithFlags(&event, flags) == cudaSuccess ? event : nullptr;
  }
  void release_event(cudaEvent_t event, bool timing) {
    std::lock_guard lock(mutex_);
    (timing ? free_timing_events_ : free_events_).push_back(event);
  }

  struct Pending {
    cudaEvent_t event;
    OprBlock* op;
    ErrorRef error;
    bool new_error;
    Timing timing;
  };

  // The operation's device span on its stream's row, once its end event is done; returns the
  // row (null: none recorded). The span's end becomes the operation's end, where its
  // dependency flows start.
  profiler::DeviceRow* record_device_span(Pending& p, uint64_t observed) {
    Timing& t = p.timing;
    OprBlock& op = *p.op;
    // An operation skipped for an input's error recorded no launch: nothing to place.
    if (op.end_ticks == 0 || !op.device_timed) return nullptr;
    float start_ms = 0, end_ms = 0;
    if (cudaEventElapsedTime(&start_ms, t.anchor->event, t.start) != cudaSuccess ||
        cudaEventElapsedTime(&end_ms, t.anchor->event, p.event) != cudaSuccess) {
      return nullptr;
    }
    Stream& s = *t.stream;
    if (!s.row) s.row = std::make_unique<profiler::DeviceRow>(s.row_name);
    s.clock.anchor_ticks = t.anchor->clock.anchor_ticks;
    s.clock.ticks_per_ms = t.anchor->clock.ticks_per_ms;
    const DeviceSpan span = place_device_span(s.clock, start_ms, end_ms, t.launch_begin, observed);
    s.row->record_operator(op.name_id, op.slot, span.begin, span.end, op.shape_words(),
                           op.num_shape_words, op.launch_flow_id);
    op.end_ticks = span.end;
    return s.row.get();
  }

  void run() {
    for (;;) {
      Pending p;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left
        p = std::move(queue_.front());
        queue_.pop_front();
      }
      const bool timed = p.timing.start != nullptr;
      profiler::DeviceRow* row = nullptr;
      if (p.event != nullptr) {
        const cudaError_t status = cudaEventSynchronize(p.event);
        const uint64_t observed = profiler::now_ticks();
        if (status != cudaSuccess && !p.error) {  // a kernel failed: the op carries the error
          p.error = cuda_error(*p.op, "its kernels failed", status);
          p.new_error = true;
        }
        if (status == cudaSuccess && timed) row = record_device_span(p, observed);
        release_event(p.event, timed);
      }
      if (timed) release_event(p.timing.start, true);
      p.timing.anchor.reset();
      finish_(p.op, std::move(p.error), p.new_error, row);
    }
  }

  const std::string name_;
  engine::FinishFn finish_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  std::vector<cudaEvent_t> free_events_;
  std::vector<cudaEvent_t> free_timing_events_;
  std::vector<std::unique_ptr<Stream>> streams_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace nanomx::cuda
