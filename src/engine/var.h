// Engine internals shared by the threaded and naive engines.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/object_pool.h"
#include "base/spin_lock.h"
#include "nanomx/engine.h"

namespace nanomx::engine {

// A few pointers inline, more on the heap (an operation's read and write lists).
template <typename T, size_t N>
class SmallVector {
 public:
  void push_back(T value) {
    if (size_ < N) {
      inline_[size_] = value;
    } else {
      if (size_ == N) heap_.assign(inline_, inline_ + N);
      heap_.push_back(value);
    }
    ++size_;
  }
  void reserve(size_t) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return size_ <= N ? inline_ : heap_.data(); }
  const T* end() const { return begin() + size_; }

 private:
  T inline_[N];
  std::vector<T> heap_;
  size_t size_ = 0;
};

// An operation's error: the message of the nanomx::Error that waits raise. Shared between
// threads as a shared_ptr (not an exception_ptr: a fresh Error is thrown by each wait, so no
// exception object is ever shared between threads).
using ErrorRef = std::shared_ptr<const std::string>;
[[noreturn]] void raise_error(const ErrorRef& error);

struct OprBlock;
struct WaitSync;  // threaded engine: the thread blocked in wait_for_var

// How an engine ends an asynchronous operation: called once per operation (by try_complete),
// on whichever thread completes it.
class Completer {
 public:
  // Stores `error` (null on success) on op's written variables, releases its variables and lets
  // what waited on them run. `new_error`: the error is op's own (not inherited from an input).
  // Must not free op (its references do, see release_opr_ref).
  virtual void finish_async(OprBlock* op, ErrorRef error, bool new_error) = 0;
  // An error raised by an operation's function after the operation completed: kept for the
  // next wait_all.
  virtual void report_late_error(ErrorRef error) noexcept = 0;

 protected:
  ~Completer() = default;
};

// A variable: the queue of operations waiting on it and what is running on it. Made by
// new_var and returned by free_var (a pool of constructed variables, see below).
class Var {
 public:
  base::SpinLock mutex;
  struct Pending {
    OprBlock* op;
    bool write;
  };
  std::vector<Pending> queue;  // pending uses in push order, from `head`
  size_t head = 0;
  int running_reads = 0;
  bool write_active = false;
  OprBlock* writer = nullptr;  // the operation holding the write while write_active
  bool deleting = false;
  ErrorRef error;  // guarded by mutex
  // Whether `error` is set: read without the lock by operations about to run.
  std::atomic<bool> has_error{false};

  // A variable that only orders operations and holds no data (the random generator's state,
  // Engine::new_ordering_variable): a failed operation's error never sticks to it, or one bad
  // call would fail every later operation ordered on it, for the rest of the process.
  bool orders_only = false;

  void set_error(ErrorRef e) {  // call with mutex held
    if (orders_only) return;
    error = std::move(e);
    has_error.store(true, std::memory_order_release);
  }
  ErrorRef take_error() {  // call with mutex held
    has_error.store(false, std::memory_order_relaxed);
    return std::exchange(error, nullptr);
  }

  Var* next_free = nullptr;  // on the variable pool's free list
};

// Variables are created on the pushing thread and usually deleted on a worker: a process-wide
// free list (spin lock, never shrinks: it keeps the most variables that were ever alive at once)
// hands deleted ones back, constructed, with their queue's buffer (up to a small capacity), so
// that steady state allocates nothing.
Var* new_var();
void free_var(Var* v) noexcept;
// Variables allocated from the system so far, and on the free list now (tests).
size_t var_pool_allocated();
size_t var_pool_free();

// An asynchronous operation's function and completion state. The operation is alive while
// `refs` > 0: one per Completion copy plus the engine's own; it completes once (`completed`), at
// the latest when `handles` (Completion copies, including the one the engine holds while the
// function runs) reaches zero.
struct AsyncState : base::Pooled<AsyncState> {
  AsyncFn fn;
  Completer* completer = nullptr;
  std::atomic<int> refs{0};
  std::atomic<int> handles{0};
  std::atomic<bool> completed{false};
  bool started = false;   // the function was called (it is profiled from begin_ticks)
  bool finished = false;  // naive engine: finish_async ran (guarded by its mutex)
  uint64_t begin_ticks = 0;
};

// Allocated from a process-wide block pool (base/object_pool.h): pushed on one thread, freed
// on another.
struct OprBlock : base::Pooled<OprBlock> {
  std::function<void()> fn;
  Context ctx;
  SmallVector<Var*, 4> reads;
  SmallVector<Var*, 4> writes;
  FnProperty prop = FnProperty::kNormal;
  const char* name = nullptr;
  profiler::NameId name_id = 0;
  bool profiled = false;
  // Threaded engine: small enough to run on the pushing thread when ready at push.
  bool run_inline = false;
  int slot = 0;
  // The push flow (pushing thread -> the operation's row): its category and profiler mode,
  // kept so the engine can start it once it knows the operation will not run inside push
  // (start_push_flow), and its id (0: none).
  profiler::NameId flow_category = 0;
  uint32_t profile_mode = 0;
  uint64_t flow_id = 0;
  // Profiled operations: when the operator's span ended (0 until it is recorded; it stays 0 for
  // an operation skipped for an input's error), and the dependency flow its start finishes (set
  // by the thread whose completion made it ready; 0 when it was ready at push).
  uint64_t end_ticks = 0;
  uint64_t dependency_flow_id = 0;
  // A profiled operation on a device worker whose device execution is timed (CUDA events): its
  // span on the worker is the launch (profiler::record_operator_launch), and launch_flow_id the
  // arrow from it to the device span its pool's completer records.
  bool device_timed = false;
  // Run on a device backend's worker (engine/device_workers.h), which completes it later.
  bool completed_by_device = false;
  uint64_t launch_flow_id = 0;
  // Shapes for the trace, packed at push as the profiler's record carries them
  // (profiler::pack_operator_shapes): inline when they fit, else on the heap.
  static constexpr size_t kInlineShapeWords = 36;  // e.g. 8 shapes of 24 dims in all
  int64_t shape_words_inline[kInlineShapeWords];
  std::vector<int64_t> shape_words_heap;
  size_t num_shape_words = 0;
  const int64_t* shape_words() const {
    return shape_words_heap.empty() ? shape_words_inline : shape_words_heap.data();
  }
  std::atomic<int> wait{0};
  // Threaded engine: a WaitForVar operation, handed to the thread that waits when it is ready
  // (it runs there, not on a worker).
  WaitSync* waiter = nullptr;
  // Asynchronous operations only (push_async): their function and completion state, apart so
  // that the synchronous path's block keeps its size.
  std::unique_ptr<AsyncState> async;
};

// Fills op's read/write lists (deduplicated; a var both read and written counts as written) and
// its profiling fields from options (profiling is decided here, at push time). The push flow is
// not started here: an operation that runs inside push, on the pushing thread, has nothing to
// link (the engine calls start_push_flow for every other one, on the pushing thread).
void init_opr_block(OprBlock& op, Context ctx, std::span<const VarHandle> reads,
                    std::span<const VarHandle> writes, const PushOptions& options);

// Records the start of op's push flow on the calling (pushing) thread when op is profiled.
void start_push_flow(OprBlock& op);

// A heap block for push_async (both engines): checks fn, gives the block its AsyncState with
// one reference held by the pushing engine, and fills it as init_opr_block does (the block is
// deleted again when that throws).
OprBlock* new_async_opr_block(AsyncFn fn, Completer* completer, Context ctx,
                              std::span<const VarHandle> reads, std::span<const VarHandle> writes,
                              const PushOptions& options);

// Runs fn as op's function (op.fn itself, through function_or_nothing, or the inline path's
// function with op.fn empty) unless an input holds an error (then returns that error), recording
// the profiler event. Returns the error the op produced or inherited (null when it succeeded).
ErrorRef run_opr_block(OprBlock& op, FunctionRef<void()> fn, bool& new_error);
// `fn` as a FunctionRef, or one that does nothing when `fn` is empty (a push of no function is
// an operation that only orders its variables).
FunctionRef<void()> function_or_nothing(const std::function<void()>& fn);

// Asynchronous operations. The caller holds one reference to op (refs >= 1) and drops it with
// release_opr_ref when done with op. run_async_opr_block calls op->async->fn with a Completion
// unless an input holds an error (then op completes with that error at once); a function that
// throws before completing completes op with its error.
void run_async_opr_block(OprBlock* op);
// Completes op (records its profiler span, then op->completer->finish_async) unless it already
// completed; returns whether this call completed it.
bool try_complete(OprBlock* op, ErrorRef error, bool new_error);
void release_opr_ref(OprBlock* op) noexcept;

}  // namespace nanomx::engine
