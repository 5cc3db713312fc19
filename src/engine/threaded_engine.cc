// ThreadedEnginePerDevice: a FIFO worker pool per CPU device, dependency tracking per variable.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "engine/device_timing.h"
#include "engine/engines.h"
#include "engine/var.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "profiler/hooks.h"
#include "profiler/nvtx.h"
#ifdef NANOMX_HAVE_CUDA
#include "base/cuda_util.h"
#include "profiler/clock.h"
#endif

namespace nanomx::engine {

// The thread blocked in wait_for_var: its WaitForVar operation is handed to it when ready.
struct WaitSync {
  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<OprBlock*> op{nullptr};
  bool sleeping = false;  // guarded by mutex
  const std::thread::id owner = std::this_thread::get_id();
  bool handed_by_owner = false;  // written by the owner only
};

namespace {

// Busy-wait budgets. Sleeping and waking a thread are futex calls, which cost microseconds on a
// virtual machine, so a worker polls its queue for a while after its last operation before it
// sleeps, and a waiting thread polls before it sleeps.
constexpr auto kWorkerSpin = std::chrono::microseconds(50);
constexpr auto kWaitSpin = std::chrono::microseconds(50);
// An operation ready when it is pushed is left to the pushing thread for this long by a polling
// worker: when that thread waits for it right away, it runs it itself (no hand-off).
constexpr auto kPusherGrace = std::chrono::microseconds(2);
// How far a waiting thread follows the writers a pending write waits for, and how often (in
// polling rounds, ~20 ns each) it looks again: operations that become ready while it polls are
// taken by polling workers at once, so looking often only makes the two threads contend.
constexpr int kHelpDepth = 3;
constexpr uint32_t kHelpEvery = 1024;

// Polls for at most `budget`, reading the clock every 16 rounds and yielding the CPU every 128
// (a few µs): on an oversubscribed machine a polling thread must not keep the thread it waits
// for off the CPU.
class SpinTimer {
 public:
  explicit SpinTimer(std::chrono::steady_clock::duration budget) : budget_(budget) {}
  // Pauses once; false once the budget is spent.
  bool spin() {
    base::cpu_relax();
    if (++rounds_ % 16 != 0) return true;
    if (rounds_ % 128 == 0) std::this_thread::yield();
    const auto now = std::chrono::steady_clock::now();
    if (rounds_ == 16) start_ = now;
    return now - start_ < budget_;
  }

 private:
  std::chrono::steady_clock::duration budget_;
  std::chrono::steady_clock::time_point start_{};
  uint32_t rounds_ = 0;
};

// Ready operations inline in the completing thread (rarely more than a few).
class ReadyList {
 public:
  void push_back(OprBlock* op) {
    if (size_ < kInline) {
      inline_[size_++] = op;
    } else {
      overflow_.push_back(op);
    }
  }
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < size_; ++i) f(inline_[i]);
    for (OprBlock* op : overflow_) f(op);
  }

 private:
  static constexpr size_t kInline = 8;
  OprBlock* inline_[kInline];
  size_t size_ = 0;
  std::vector<OprBlock*> overflow_;
};

class WorkerPool {
 public:
  using Executor = std::function<void(OprBlock*)>;
  // A device's per-thread state (a GPU worker's device and stream): made on the worker thread
  // before its first operation, released by the returned function when the thread ends.
  using ThreadSetup = std::function<std::function<void()>()>;
  WorkerPool(std::string name, int threads, Executor execute, ThreadSetup setup = {})
      : execute_(std::move(execute)) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, setup, thread_name = name + " worker " + std::to_string(i)] {
        profiler::set_thread_name(thread_name);
        std::function<void()> teardown = setup ? setup() : std::function<void()>{};
        run();
        if (teardown) teardown();
      });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(sleep_mutex_);
      stop_.store(true);
    }
    sleep_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  // fresh: ready when pushed (a polling worker leaves it to the pusher for kPusherGrace).
  void push(OprBlock* op, bool front, bool fresh) {
    {
      std::lock_guard lock(queue_lock_);
      if (fresh) {
        fresh_.push_back(op);
        fresh_count_.fetch_add(1);  // seq_cst: pairs with sleepers_ (no lost wake-up)
      } else {
        if (front) {
          queue_.push_front(op);
        } else {
          queue_.push_back(op);
        }
        queued_.fetch_add(1);
      }
    }
    if (sleepers_.load() > 0) {
      std::lock_guard lock(sleep_mutex_);
      sleep_cv_.notify_one();
    }
  }
  // Removes op from the queue if it is there (ready, and no worker took it yet): the caller
  // then owns it and runs it.
  bool try_claim(OprBlock* op) {
    if (fresh_count_.load(std::memory_order_relaxed) == 0 &&
        queued_.load(std::memory_order_relaxed) == 0) {
      return false;
    }
    std::lock_guard lock(queue_lock_);
    return erase(fresh_, fresh_count_, op) || erase(queue_, queued_, op);
  }
  // The oldest queued operation (fresh ones last), or nullptr.
  OprBlock* try_pop(bool fresh_too = true) {
    if (queued_.load(std::memory_order_relaxed) == 0 &&
        (!fresh_too || fresh_count_.load(std::memory_order_relaxed) == 0)) {
      return nullptr;
    }
    std::lock_guard lock(queue_lock_);
    if (!queue_.empty()) return pop_front(queue_, queued_);
    if (fresh_too && !fresh_.empty()) return pop_front(fresh_, fresh_count_);
    return nullptr;
  }

 private:
  static bool erase(std::deque<OprBlock*>& q, std::atomic<int64_t>& count, OprBlock* op) {
    for (auto it = q.rbegin(); it != q.rend(); ++it) {
      if (*it == op) {
        q.erase(std::next(it).base());
        count.fetch_sub(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }
  static OprBlock* pop_front(std::deque<OprBlock*>& q, std::atomic<int64_t>& count) {
    OprBlock* op = q.front();
    q.pop_front();
    count.fetch_sub(1, std::memory_order_relaxed);
    return op;
  }

  void run() {
    using Clock = std::chrono::steady_clock;
    bool take_fresh = false;
    for (;;) {
      if (OprBlock* op = try_pop(take_fresh)) {
        execute_(op);
        take_fresh = false;
        continue;
      }
      // Poll: other work at once, a fresh operation once the pusher's grace is over.
      take_fresh = false;
      SpinTimer timer(kWorkerSpin);
      Clock::time_point fresh_since{};
      bool work = false;
      for (;;) {
        if (queued_.load(std::memory_order_relaxed) > 0 || stop_.load(std::memory_order_relaxed)) {
          work = true;
          break;
        }
        if (fresh_count_.load(std::memory_order_relaxed) > 0) {
          const auto now = Clock::now();
          if (fresh_since == Clock::time_point{}) {
            fresh_since = now;
          } else if (now - fresh_since >= kPusherGrace) {
            take_fresh = work = true;
            break;
          }
        } else {
          fresh_since = {};
        }
        if (!timer.spin()) break;
      }
      if (!work) {
        std::unique_lock lock(sleep_mutex_);
        sleepers_.fetch_add(1);
        sleep_cv_.wait(
            lock, [this] { return queued_.load() > 0 || fresh_count_.load() > 0 || stop_.load(); });
        sleepers_.fetch_sub(1);
        take_fresh = true;  // waking up took longer than the grace
      }
      if (stop_.load() && queued_.load() <= 0 && fresh_count_.load() <= 0) return;
    }
  }

  Executor execute_;
  base::SpinLock queue_lock_;
  std::deque<OprBlock*> queue_;  // guarded by queue_lock_
  std::deque<OprBlock*> fresh_;  // guarded by queue_lock_
  std::atomic<int64_t> queued_{0};
  std::atomic<int64_t> fresh_count_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::vector<std::thread> threads_;
};

// On a GPU pool's completer thread, while it completes an operation whose device span it
// recorded: that span's row, where the operation's dependency flows start.
thread_local profiler::DeviceRow* tls_device_span_row = nullptr;

#ifdef NANOMX_HAVE_CUDA
// Completes the GPU operations of one worker pool once their stream work is done: the worker
// records a CUDA event after launching an operation and hands the operation here; this thread
// waits for the events in order (cudaEventSynchronize on a blocking-sync event: it sleeps, no
// device-wide synchronization, the workers keep launching) and then completes each operation.
//
// While operators are profiled it also times their device execution (engine/device_timing.h):
// the worker records a timing event before the launch as well, against an anchor event of its
// stream, and this thread, once the end event is done, places the span on the stream's own row
// ("gpu(0) stream 1") with the arrow from the launch. A worker waits only to take its stream's
// anchor: once a second while profiling, it drains its stream (begin_timing).
class StreamCompleter {
 public:
  using Finish = std::function<void(OprBlock*, ErrorRef, bool)>;

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

  StreamCompleter(std::string name, int dev_id, Finish finish)
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
      tls_device_span_row = row;
      finish_(p.op, std::move(p.error), p.new_error);
      tls_device_span_row = nullptr;
    }
  }

  const std::string name_;
  Finish finish_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  std::vector<cudaEvent_t> free_events_;
  std::vector<cudaEvent_t> free_timing_events_;
  std::vector<std::unique_ptr<Stream>> streams_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

// The completer of the calling GPU worker's pool and the worker's stream there (null on other
// threads).
thread_local StreamCompleter* tls_completer = nullptr;
thread_local StreamCompleter::Stream* tls_stream = nullptr;
#endif  // NANOMX_HAVE_CUDA

class ThreadedEngine final : public Engine, private Completer {
 public:
  ThreadedEngine(int cpu_workers, size_t inline_bytes)
      : cpu_workers_(cpu_workers), inline_bytes_(inline_bytes) {}

  ~ThreadedEngine() override {
    try {
      wait_all();
    } catch (...) {  // an error nobody waited for: dropped with the engine
    }
    // A thread that completed the last operation may still be leaving finish_async.
    while (completing_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    std::lock_guard lock(pools_mutex_);
    for (auto& pool : fast_pools_) pool.store(nullptr);
    pools_.clear();  // joins the workers
  }

  VarHandle new_variable() override { return new_var(); }

  void push(std::function<void()> fn, Context ctx, std::span<const VarHandle> reads,
            std::span<const VarHandle> writes, const PushOptions& options) override {
    if (find_pool(ctx) == nullptr) pool_for(ctx);  // a device without workers: fail here
    auto* op = new OprBlock;
    op->fn = std::move(fn);
    try {
      init_opr_block(*op, ctx, reads, writes, options);
    } catch (...) {
      delete op;
      throw;
    }
    // GPU work runs only on its device's workers, which hold its stream.
    op->run_inline =
        options.bytes_touched != 0 && options.bytes_touched <= inline_bytes_ && ctx.is_cpu();
    submit(op);
  }

  // What submit + dispatch do for an operation that runs at push, without the heap block and
  // the owning function: the operation lives on this stack, each variable is granted to it
  // under its lock as append_read / append_write would grant it, it runs through the code the
  // workers run (run_opr_block), and release_variables ends it as finish does. When a variable
  // is not free (pending work, or another thread got there first), the variables granted so far
  // are handed back and the caller pushes the operation instead.
  bool try_run_inline(FunctionRef<void()> fn, Context ctx, std::span<const VarHandle> reads,
                      std::span<const VarHandle> writes, const PushOptions& options) override {
    NANOMX_CHECK(options.prop != FnProperty::kAsync && options.prop != FnProperty::kDeleteVar)
        << "engine: try_run_inline takes only push's operations (not kAsync or kDeleteVar)";
    // As push decides run_inline.
    if (options.bytes_touched == 0 || options.bytes_touched > inline_bytes_ || !ctx.is_cpu()) {
      return false;
    }
    if (find_pool(ctx) == nullptr) pool_for(ctx);  // as push: its workers exist from now on
    OprBlock op;
    init_opr_block(op, ctx, reads, writes, options);
    size_t granted_reads = 0, granted_writes = 0;
    auto hand_back = [&] {
      ReadyList ready;
      for (size_t i = 0; i < granted_reads; ++i) complete_read(op.reads.begin()[i], ready);
      for (size_t i = 0; i < granted_writes; ++i)
        complete_write(op.writes.begin()[i], false, ready);
      ready.for_each([this](OprBlock* next) { dispatch(next, false); });
    };
    bool free = true;
    try {
      for (Var* v : op.reads) {
        if (!(free = try_grant_read(v))) break;
        ++granted_reads;
      }
      for (Var* v : op.writes) {
        if (!free || !(free = try_grant_write(v))) break;
        ++granted_writes;
      }
    } catch (...) {  // a deleted variable: push would have refused it too
      hand_back();
      throw;
    }
    if (!free) {
      hand_back();
      return false;
    }
    bool new_error = false;
    ErrorRef error = run_in_nvtx_range(op, fn, new_error);
    release_variables(&op, std::move(error), new_error);
    return true;
  }

  // run_opr_block inside an NVTX range named after a profiled operator, so that Nsight Systems
  // shows nanomx's names (CUDA builds; a plain run_opr_block otherwise).
  static ErrorRef run_in_nvtx_range(OprBlock& op, FunctionRef<void()> fn, bool& new_error) {
#ifdef NANOMX_HAVE_CUDA
    const bool nvtx_range = op.profiled && op.name != nullptr;
    if (nvtx_range) profiler::nvtx::push(op.name);
    ErrorRef error = run_opr_block(op, fn, new_error);
    if (nvtx_range) profiler::nvtx::pop();
    return error;
#else
    return run_opr_block(op, fn, new_error);
#endif
  }

  void push_async(AsyncFn fn, Context ctx, std::span<const VarHandle> reads,
                  std::span<const VarHandle> writes, const PushOptions& options) override {
    if (find_pool(ctx) == nullptr) pool_for(ctx);
    submit(new_async_opr_block(std::move(fn), this, ctx, reads, writes, options));
  }

  void delete_variable(std::function<void()> on_delete, Context ctx, VarHandle var) override {
    NANOMX_CHECK(var != nullptr) << "delete_variable: null variable";
    // Nothing queued or running on var (every temporary of an eager loop): the delete operation
    // would be granted at push and run inline, right here, so do what it does without building
    // it (a third of a small operator call's engine work). An error from on_delete goes where
    // the operation's would: to the next wait_all.
    bool idle = false;
    {
      std::lock_guard lock(var->mutex);
      NANOMX_CHECK(!var->deleting) << "engine: variable used after delete_variable";
      if (var->head == var->queue.size() && !var->write_active && var->running_reads == 0) {
        var->deleting = true;
        idle = true;
      }
    }
    if (idle) {
      if (on_delete) {
        try {
          on_delete();
        } catch (const std::exception& e) {  // worded as run_opr_block words it
          keep_first_error(std::string("operator (unnamed) failed: ") + e.what());
        } catch (...) {
          keep_first_error("operator (unnamed) failed: unknown exception");
        }
      }
      free_var(var);
      return;
    }
    PushOptions options;
    options.prop = FnProperty::kDeleteVar;
    const VarHandle writes[] = {var};
    push(std::move(on_delete), ctx, {}, writes, options);
  }

  void keep_first_error(std::string message) {
    std::lock_guard lock(error_mutex_);
    if (!first_error_) first_error_ = std::make_shared<const std::string>(std::move(message));
  }

  // Waits help: the operation holding the variable's write, when it is queued but no worker
  // took it yet, runs on the waiting thread; the WaitForVar operation itself always does.
  void wait_for_var(VarHandle var) override {
    NANOMX_CHECK(var != nullptr) << "wait_for_var: null variable";
    bool ready;
    {
      std::lock_guard lock(var->mutex);
      ready = var->head == var->queue.size() && !var->write_active;
    }
    if (!ready) {
      WaitSync sync;
      static const profiler::NameId kWaitName = profiler::intern("WaitForVar");
      PushOptions options;
      options.prop = FnProperty::kNoSkip;
      options.name = "WaitForVar";
      options.name_id = kWaitName;
      const VarHandle reads[] = {var};
      auto* wait_op = new OprBlock;
      init_opr_block(*wait_op, Context::cpu(0), reads, {}, options);
      wait_op->waiter = &sync;
      submit(wait_op);
      OprBlock* ready_op = nullptr;
      SpinTimer timer(kWaitSpin);
      for (uint32_t round = 0;; ++round) {
        ready_op = sync.op.load(std::memory_order_acquire);
        if (ready_op) break;
        if (round % kHelpEvery == 0 && help_writer(var)) {
          timer = SpinTimer(kWaitSpin);
          continue;
        }
        if (timer.spin()) continue;
        // A last look before sleeping: preemption may have cut the polling short.
        if (help_writer(var)) {
          timer = SpinTimer(kWaitSpin);
          continue;
        }
        std::unique_lock lock(sync.mutex);
        sync.sleeping = true;
        sync.cv.wait(lock, [&sync] { return sync.op.load(std::memory_order_relaxed); });
        ready_op = sync.op.load(std::memory_order_relaxed);
        break;
      }
      if (!sync.handed_by_owner) {
        std::lock_guard lock(sync.mutex);  // the hand-over no longer touches sync
      }
      execute(ready_op);
    }
    if (!var->has_error.load(std::memory_order_acquire)) return;
    ErrorRef error;
    {
      std::lock_guard lock(var->mutex);
      error = var->take_error();
    }
    if (error) raise_error(error);
  }

  // Helps too: queued operations of any device run on the waiting thread.
  void wait_all() override {
    SpinTimer timer(kWaitSpin);
    while (pending_.load(std::memory_order_acquire) != 0) {
      if (OprBlock* op = try_pop_any()) {
        execute(op);
        timer = SpinTimer(kWaitSpin);
        continue;
      }
      if (timer.spin()) continue;
      std::unique_lock lock(finish_mutex_);
      all_waiters_.fetch_add(1);  // seq_cst: pairs with pending_ in execute
      finish_cv_.wait(lock, [this] { return pending_.load() == 0; });
      all_waiters_.fetch_sub(1);
    }
    ErrorRef error;
    {
      std::lock_guard lock(error_mutex_);
      std::swap(error, first_error_);
    }
    if (error) raise_error(error);
  }

  EngineType type() const override { return EngineType::kThreadedPerDevice; }

 private:
  void submit(OprBlock* op) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    op->wait.store(static_cast<int>(op->reads.size() + op->writes.size()) + 1,
                   std::memory_order_relaxed);
    {
      // One operation's appends are not interleaved with another's: threads pushing at once
      // could otherwise queue A before B on one variable and B before A on another, and each
      // would wait for the other for good (A holds a granted read that B's write waits for while
      // B holds the write A waits for). With the lock every variable's queue follows one push
      // order. An operation on one variable holds nothing while it waits, so it skips the lock
      // (deletions, waits); try_run_inline never waits while it holds a grant, so it needs none.
      std::unique_lock lock(push_lock_, std::defer_lock);
      if (op->reads.size() + op->writes.size() > 1) lock.lock();
      for (Var* v : op->reads) append_read(v, op);
      for (Var* v : op->writes) append_write(v, op);
    }
    // The push flow links the pushing thread to wherever the operation runs later; one that
    // runs right here, inside push, needs none. Only this push's own count is left when every
    // variable was ready (the others were taken as each became ready), and nothing else can
    // dispatch op before the fetch_sub below, so reading it here is safe.
    if (op->profiled && !op->async &&
        !(runs_at_push(op) && op->wait.load(std::memory_order_acquire) == 1)) {
      start_push_flow(*op);
    }
    if (op->wait.fetch_sub(1, std::memory_order_acq_rel) == 1) dispatch(op, true);
  }

  // Help-while-waiting: claims the operation holding var's write if it is queued on a worker
  // pool (ready, not started), else one that this writer waits for (the writers of its other
  // variables, a few levels deep), and runs it here. False when there is nothing to claim.
  bool help_writer(Var* var) {
    OprBlock* claimed = nullptr;
    {
      std::lock_guard lock(var->mutex);  // keeps the writer alive: it cannot complete meanwhile
      claimed = claim_for(var, 0);
    }
    if (claimed == nullptr) return false;
    execute(claimed);
    return true;
  }

  // Called with var->mutex held. Nested variables are only try-locked (no lock order exists
  // between variables).
  OprBlock* claim_for(Var* var, int depth) {
    OprBlock* writer = var->write_active ? var->writer : nullptr;
    if (writer == nullptr) return nullptr;
    // GPU operations are never helped: only their device's workers hold its stream.
    WorkerPool* pool = writer->ctx.is_cpu() ? find_pool(writer->ctx) : nullptr;
    if (pool != nullptr && pool->try_claim(writer)) return writer;
    if (depth >= kHelpDepth) return nullptr;
    for (const auto* list : {&writer->reads, &writer->writes}) {
      for (Var* v : *list) {
        if (v == var || !v->mutex.try_lock()) continue;
        OprBlock* op = claim_for(v, depth + 1);
        v->mutex.unlock();
        if (op != nullptr) return op;
      }
    }
    return nullptr;
  }

  OprBlock* try_pop_any() {
    std::lock_guard lock(pools_mutex_);
    for (auto& [key, pool] : pools_) {
      if (key.first != static_cast<int>(DeviceType::kCPU) &&
          key.first != static_cast<int>(DeviceType::kCPUPinned) &&
          key.first != static_cast<int>(DeviceType::kCPUShared)) {
        continue;  // GPU pools (and their copy pools): only their workers hold the streams
      }
      if (OprBlock* op = pool->try_pop()) return op;
    }
    return nullptr;
  }

  static void hand_to_waiter(OprBlock* op) {
    WaitSync* sync = op->waiter;
    if (sync->owner == std::this_thread::get_id()) {  // the waiter ran what it waited for
      sync->handed_by_owner = true;
      sync->op.store(op, std::memory_order_relaxed);
      return;
    }
    std::lock_guard lock(sync->mutex);
    sync->op.store(op, std::memory_order_release);
    if (sync->sleeping) sync->cv.notify_one();
  }

  static void grant(OprBlock* op, ReadyList& ready) {
    if (op->wait.fetch_sub(1, std::memory_order_acq_rel) == 1) ready.push_back(op);
  }

  static void compact(Var* v) {
    if (v->head == v->queue.size()) {
      v->queue.clear();
      v->head = 0;
    } else if (v->head >= 64 && v->head * 2 >= v->queue.size()) {
      v->queue.erase(v->queue.begin(), v->queue.begin() + static_cast<ptrdiff_t>(v->head));
      v->head = 0;
    }
  }

  // The grant append_read / append_write give a free variable, or false (nothing changed) when
  // the variable has pending work: try_run_inline's operation then waits its turn in push.
  static bool try_grant_read(Var* v) {
    std::lock_guard lock(v->mutex);
    NANOMX_CHECK(!v->deleting) << "engine: variable used after delete_variable";
    if (v->head != v->queue.size() || v->write_active) return false;
    ++v->running_reads;
    return true;
  }

  static bool try_grant_write(Var* v) {
    std::lock_guard lock(v->mutex);
    NANOMX_CHECK(!v->deleting) << "engine: variable used after delete_variable";
    if (v->head != v->queue.size() || v->write_active || v->running_reads != 0) return false;
    v->write_active = true;
    v->writer = nullptr;  // nothing to claim for a waiter: it runs on this thread now
    return true;
  }

  void append_read(Var* v, OprBlock* op) {
    bool granted = false;
    {
      std::lock_guard lock(v->mutex);
      NANOMX_CHECK(!v->deleting) << "engine: variable used after delete_variable";
      if (v->head == v->queue.size() && !v->write_active) {
        ++v->running_reads;
        granted = true;
      } else {
        v->queue.push_back({op, false});
      }
    }
    if (granted) op->wait.fetch_sub(1, std::memory_order_acq_rel);  // never the last: +1 held
  }

  void append_write(Var* v, OprBlock* op) {
    bool granted = false;
    {
      std::lock_guard lock(v->mutex);
      NANOMX_CHECK(!v->deleting) << "engine: variable used after delete_variable";
      if (op->prop == FnProperty::kDeleteVar) v->deleting = true;
      if (v->head == v->queue.size() && !v->write_active && v->running_reads == 0) {
        v->write_active = true;
        v->writer = op;
        granted = true;
      } else {
        v->queue.push_back({op, true});
      }
    }
    if (granted) op->wait.fetch_sub(1, std::memory_order_acq_rel);
  }

  static void complete_read(Var* v, ReadyList& ready) {
    std::lock_guard lock(v->mutex);
    if (--v->running_reads == 0 && v->head < v->queue.size()) {
      // Reads run only while no write is active, so what waits behind them is a write.
      OprBlock* next = v->queue[v->head++].op;
      v->write_active = true;
      v->writer = next;
      compact(v);
      grant(next, ready);
    }
  }

  // Returns true when the variable was deleted.
  static bool complete_write(Var* v, bool deleting, ReadyList& ready) {
    {
      std::lock_guard lock(v->mutex);
      v->write_active = false;
      v->writer = nullptr;
      if (!deleting) {
        while (v->head < v->queue.size() && !v->queue[v->head].write) {
          ++v->running_reads;
          grant(v->queue[v->head++].op, ready);
        }
        if (v->running_reads == 0 && v->head < v->queue.size()) {
          v->write_active = true;
          v->writer = v->queue[v->head].op;
          grant(v->queue[v->head++].op, ready);
        }
        compact(v);
        return false;
      }
    }
    free_var(v);
    return true;
  }

  // The worker threads of each device of a type; 0 when this build has no workers for it (a
  // device layer, CUDA, adds its type here).
  int workers_per_device(DeviceType type) const {
    switch (type) {
      case DeviceType::kCPU:
      case DeviceType::kCPUPinned:
      case DeviceType::kCPUShared:
        return cpu_workers_;
#ifdef NANOMX_HAVE_CUDA
      case DeviceType::kGPU:  // none without a visible GPU: as a build without CUDA
        return num_gpus() > 0 ? gpu_workers_ : 0;
#endif
      default:
        return 0;
    }
  }

  // The pool of a context, or nullptr when none was created yet.
  WorkerPool* find_pool(Context ctx) {
    if (ctx.dev_type == DeviceType::kCPU && ctx.dev_id >= 0 && ctx.dev_id < kFastPools) {
      return fast_pools_[static_cast<size_t>(ctx.dev_id)].load(std::memory_order_acquire);
    }
    std::lock_guard lock(pools_mutex_);
    auto it = pools_.find(std::make_pair(static_cast<int>(ctx.dev_type), ctx.dev_id));
    return it == pools_.end() ? nullptr : it->second.get();
  }

  // The copy workers of a GPU (docs/cuda.md) are a pool apart, keyed by this device type code
  // (none of MXNet's), so that copies run on their own streams beside the compute workers.
  static constexpr int kGpuCopyKey = 102;

  WorkerPool& pool_for(Context ctx, bool copy = false) {
    if (!copy) {
      if (WorkerPool* pool = find_pool(ctx)) return *pool;
    }
    const auto key =
        std::make_pair(copy ? kGpuCopyKey : static_cast<int>(ctx.dev_type), ctx.dev_id);
    std::lock_guard lock(pools_mutex_);
    auto it = pools_.find(key);
    if (it == pools_.end()) {
      int threads = workers_per_device(ctx.dev_type);
      const std::string device = ctx.str();  // "gpu(0)": the type's name is before '('
      NANOMX_CHECK(threads > 0) << "engine: no " << device.substr(0, device.find('('))
                                << " worker pool in this build (" << device << ")";
      std::string name =
          ctx.dev_type == DeviceType::kCPU ? "cpu/" + std::to_string(ctx.dev_id) : ctx.str();
      WorkerPool::ThreadSetup setup;
#ifdef NANOMX_HAVE_CUDA
      if (ctx.dev_type == DeviceType::kGPU) {
        if (copy) {
          threads = gpu_copy_workers_;
          name += " copy";
        }
        auto completer = std::make_unique<StreamCompleter>(
            name + " completion", ctx.dev_id, [this](OprBlock* op, ErrorRef error, bool new_error) {
              finish(op, std::move(error), new_error);
            });
        setup = [completer = completer.get(), dev_id = ctx.dev_id]() -> std::function<void()> {
          cudaStream_t stream = nullptr;
          if (cudaSetDevice(dev_id) != cudaSuccess ||
              cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
            stream = nullptr;  // its operations then fail, saying so (no stream)
          }
          cuda::set_current_device(dev_id);
          cuda::set_current_stream(stream);
          tls_completer = completer;
          tls_stream = completer->add_stream(stream);
          return [stream] {
            if (stream != nullptr) {
              (void)cudaStreamSynchronize(stream);
              (void)cudaStreamDestroy(stream);
            }
            cuda::set_current_stream(nullptr);
            tls_completer = nullptr;
            tls_stream = nullptr;
          };
        };
        completers_.push_back(std::move(completer));
      }
#endif
      it = pools_
               .emplace(key, std::make_unique<WorkerPool>(
                                 name, threads, [this](OprBlock* op) { execute(op); }, setup))
               .first;
      if (ctx.dev_type == DeviceType::kCPU && ctx.dev_id >= 0 && ctx.dev_id < kFastPools) {
        fast_pools_[static_cast<size_t>(ctx.dev_id)].store(it->second.get(),
                                                           std::memory_order_release);
      }
    }
    return *it->second;
  }

  // Whether op, when ready at push, runs inside push on the pushing thread (see dispatch).
  static bool runs_at_push(const OprBlock* op) {
    return op->waiter == nullptr &&
           (op->prop == FnProperty::kAsync || op->prop == FnProperty::kDeleteVar || op->run_inline);
  }

  void dispatch(OprBlock* op, bool at_push) {
    if (op->waiter != nullptr) {  // WaitForVar: runs on the thread that waits
      hand_to_waiter(op);
      return;
    }
    // Async and delete-var operations run inline on the pushing thread (as MXNet), and so do
    // small ones ready at push: a hand-off to a worker costs more than they do. Everything else
    // runs on the device's workers (or on a thread that waits for it).
    if (at_push && runs_at_push(op)) {
      execute(op);
      return;
    }
    const bool deleting = op->prop == FnProperty::kDeleteVar;
    const bool copy = op->ctx.dev_type == DeviceType::kGPU &&
                      (op->prop == FnProperty::kCopyToGPU || op->prop == FnProperty::kCopyFromGPU);
    pool_for(op->ctx, copy).push(op, deleting, at_push && !deleting);
  }

  void execute(OprBlock* op) {
    if (op->async) {  // ends when its completion is called (finish_async)
      // wait_all also waits for the function to return: an error it throws after completing
      // is then kept before wait_all looks.
      pending_.fetch_add(1, std::memory_order_relaxed);
      run_async_opr_block(op);
      release_opr_ref(op);
      end_pending();
      return;
    }
    bool new_error = false;
#ifdef NANOMX_HAVE_CUDA
    // On a GPU worker the operation's kernels are still running when its function returns: it
    // completes when they are, and a profiled one is timed on the device.
    if (tls_completer != nullptr && op->ctx.dev_type == DeviceType::kGPU) {
      StreamCompleter::Timing timing;
      if (op->profiled) timing = tls_completer->begin_timing(tls_stream);
      op->device_timed = timing.start != nullptr;
      ErrorRef error = run_in_nvtx_range(*op, function_or_nothing(op->fn), new_error);
      tls_completer->enqueue(cuda::current_stream(), op, std::move(error), new_error,
                             std::move(timing));
      return;
    }
#endif
    ErrorRef error = run_in_nvtx_range(*op, function_or_nothing(op->fn), new_error);
    finish(op, std::move(error), new_error);
  }

  void finish_async(OprBlock* op, ErrorRef error, bool new_error) override {
    completing_.fetch_add(1, std::memory_order_relaxed);
    struct Leave {
      std::atomic<int>& count;
      ~Leave() { count.fetch_sub(1, std::memory_order_release); }
    } leave{completing_};
    finish(op, std::move(error), new_error);
  }

  void report_late_error(ErrorRef error) noexcept override {
    std::lock_guard lock(error_mutex_);
    if (!first_error_) first_error_ = std::move(error);
  }

  // Ends op: keeps its error, releases its variables, frees a synchronous op (an asynchronous
  // one is freed by its last reference) and dispatches what became ready.
  void finish(OprBlock* op, ErrorRef error, bool new_error) {
    const bool is_async = op->async != nullptr;
    if (!is_async) op->fn = nullptr;  // releases captured arrays now (may push deletions)
    release_variables(op, std::move(error), new_error, /*free_op=*/!is_async);
    end_pending();
  }

  // The part of finish that try_run_inline's operation (on its stack) shares: keeps the error,
  // releases the variables, starts the dependency flows, frees op when free_op says so, and
  // dispatches what became ready.
  void release_variables(OprBlock* op, ErrorRef error, bool new_error, bool free_op = false) {
    const bool deleting = op->prop == FnProperty::kDeleteVar;
    if (error && !deleting) {
      for (Var* v : op->writes) {
        std::lock_guard lock(v->mutex);
        v->set_error(error);
      }
    }
    if (new_error && error) {
      std::lock_guard lock(error_mutex_);
      if (!first_error_) first_error_ = error;
    }
    error.reset();
    ReadyList ready;
    for (Var* v : op->reads) complete_read(v, ready);
    for (Var* v : op->writes) complete_write(v, deleting, ready);
    // Dependency flows: op's completion made these ready, so op's span is what each waited
    // for (the critical path follows these arrows). Only between two recorded spans: a GPU
    // operation's completion runs on its pool's completer thread, so its arrows leave from its
    // device span's row (tls_device_span_row), and from nowhere when it was not timed.
    if (op->end_ticks != 0) {  // profiled (unprofiled operations pay this one test)
      profiler::DeviceRow* row =
          op->ctx.dev_type == DeviceType::kGPU ? tls_device_span_row : nullptr;
      if (op->ctx.dev_type != DeviceType::kGPU || row != nullptr) {
        ready.for_each([op, row](OprBlock* next) {
          if (!next->profiled) return;
          next->dependency_flow_id = row ? row->dependency_flow_start(op->slot, op->end_ticks)
                                         : profiler::dependency_flow_start(op->slot, op->end_ticks);
        });
      }
    }
    if (free_op) delete op;
    ready.for_each([this](OprBlock* next) { dispatch(next, false); });
  }

  void end_pending() {
    if (pending_.fetch_sub(1) == 1 && all_waiters_.load() > 0) {
      std::lock_guard lock(finish_mutex_);
      finish_cv_.notify_all();
    }
  }

  const int cpu_workers_;
  const size_t inline_bytes_;
  base::SpinLock push_lock_;  // held while one operation appends itself to its variables
#ifdef NANOMX_HAVE_CUDA
  // MXNet's MXNET_GPU_WORKER_NTHREADS (2) and MXNET_GPU_COPY_NTHREADS (2; here 1 by default).
  const int gpu_workers_ = env::get_int("GPU_WORKER_NTHREADS", 2);
  const int gpu_copy_workers_ = env::get_int("GPU_COPY_NTHREADS", 1);
#endif
  static constexpr int kFastPools = 64;  // cpu(0) .. cpu(63): found without a lock
  std::array<std::atomic<WorkerPool*>, kFastPools> fast_pools_{};
  std::mutex pools_mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<WorkerPool>> pools_;
#ifdef NANOMX_HAVE_CUDA
  // Declared after pools_, so destroyed first; the destructor has joined the workers by then
  // (pools_.clear()), and each completer completes what is still queued before it ends.
  std::vector<std::unique_ptr<StreamCompleter>> completers_;
#endif
  std::atomic<int64_t> pending_{0};
  std::atomic<int> all_waiters_{0};  // threads asleep in wait_all
  std::mutex finish_mutex_;
  std::condition_variable finish_cv_;
  std::mutex error_mutex_;
  ErrorRef first_error_;
  std::atomic<int> completing_{0};  // threads inside finish_async
};

}  // namespace

std::unique_ptr<Engine> make_threaded_engine(int cpu_workers, size_t inline_bytes) {
  return std::make_unique<ThreadedEngine>(cpu_workers, inline_bytes);
}

}  // namespace nanomx::engine
