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

#include "engine/device_workers.h"
#include "engine/engines.h"
#include "engine/var.h"
#include "engine/worker_pool.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "profiler/external_ranges.h"
#include "profiler/hooks.h"

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

// A waiting thread polls for a while before it sleeps (engine/worker_pool.h says why).
constexpr auto kWaitSpin = std::chrono::microseconds(50);
// How far a waiting thread follows the writers a pending write waits for, and how often (in
// polling rounds, ~20 ns each) it looks again: operations that become ready while it polls are
// taken by polling workers at once, so looking often only makes the two threads contend.
constexpr int kHelpDepth = 3;
constexpr uint32_t kHelpEvery = 1024;

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

// The device pool of the calling worker thread (null on CPU workers and other threads).
thread_local DevicePool* tls_device_pool = nullptr;

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
    ErrorRef error = run_in_external_range(op, fn, new_error);
    release_variables(&op, std::move(error), new_error);
    return true;
  }

  // run_opr_block inside an external range (NVTX) named after a profiled operator, so that a
  // device backend's tool (Nsight Systems) shows nanomx's names.
  static ErrorRef run_in_external_range(OprBlock& op, FunctionRef<void()> fn, bool& new_error) {
    if (!op.profiled || op.name == nullptr || !profiler::external_ranges_on()) {
      return run_opr_block(op, fn, new_error);
    }
    profiler::external_range_push(op.name);
    ErrorRef error = run_opr_block(op, fn, new_error);
    profiler::external_range_pop();
    return error;
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

  // The worker threads of each device of a type (`copy`: of its copy pool); 0 when this build
  // has no workers for it (a device backend registers its own: engine/device_workers.h).
  int workers_per_device(DeviceType type, bool copy) const {
    if (Context{type, 0}.is_cpu()) return cpu_workers_;
    DeviceWorkers* workers = device_workers(type);
    return workers != nullptr ? workers->threads(copy) : 0;
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

  // The copy workers of a device (docs/cuda.md) are a pool apart, keyed by its device type code
  // plus this (no code of MXNet's), so that copies run on their own streams beside the compute
  // workers.
  static constexpr int kCopyKeyOffset = 100;

  WorkerPool& pool_for(Context ctx, bool copy = false) {
    if (!copy) {
      if (WorkerPool* pool = find_pool(ctx)) return *pool;
    }
    const auto key =
        std::make_pair(static_cast<int>(ctx.dev_type) + (copy ? kCopyKeyOffset : 0), ctx.dev_id);
    std::lock_guard lock(pools_mutex_);
    auto it = pools_.find(key);
    if (it == pools_.end()) {
      const int threads = workers_per_device(ctx.dev_type, copy);
      const std::string device = ctx.str();  // "gpu(0)": the type's name is before '('
      NANOMX_CHECK(threads > 0) << "engine: no " << device.substr(0, device.find('('))
                                << " worker pool in this build (" << device << ")";
      std::string name =
          ctx.dev_type == DeviceType::kCPU ? "cpu/" + std::to_string(ctx.dev_id) : ctx.str();
      WorkerPool::ThreadSetup setup;
      if (DeviceWorkers* workers = device_workers(ctx.dev_type)) {
        if (copy) name += " copy";
        std::unique_ptr<DevicePool> device_pool = workers->make_pool(
            name, ctx.dev_id,
            [this](OprBlock* op, ErrorRef error, bool new_error, profiler::DeviceRow* span_row) {
              finish(op, std::move(error), new_error, span_row);
            });
        setup = [device_pool = device_pool.get()]() -> std::function<void()> {
          std::function<void()> stop = device_pool->start_worker();
          tls_device_pool = device_pool;
          return [stop = std::move(stop)] {
            tls_device_pool = nullptr;
            stop();
          };
        };
        device_pools_.push_back(std::move(device_pool));
      }
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
    const bool copy =
        (op->prop == FnProperty::kCopyToGPU || op->prop == FnProperty::kCopyFromGPU) &&
        !op->ctx.is_cpu();
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
    // On a device worker the operation's work is still running when its function returns: its
    // pool completes it when the work is done.
    if (tls_device_pool != nullptr && !op->ctx.is_cpu()) {
      op->completed_by_device = true;
      tls_device_pool->execute(*op, [op](bool& new_error) {
        return run_in_external_range(*op, function_or_nothing(op->fn), new_error);
      });
      return;
    }
    ErrorRef error = run_in_external_range(*op, function_or_nothing(op->fn), new_error);
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
  void finish(OprBlock* op, ErrorRef error, bool new_error,
              profiler::DeviceRow* span_row = nullptr) {
    const bool is_async = op->async != nullptr;
    if (!is_async) op->fn = nullptr;  // releases captured arrays now (may push deletions)
    release_variables(op, std::move(error), new_error, /*free_op=*/!is_async, span_row);
    end_pending();
  }

  // The part of finish that try_run_inline's operation (on its stack) shares: keeps the error,
  // releases the variables, starts the dependency flows, frees op when free_op says so, and
  // dispatches what became ready.
  void release_variables(OprBlock* op, ErrorRef error, bool new_error, bool free_op = false,
                         profiler::DeviceRow* span_row = nullptr) {
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
    // for (the critical path follows these arrows). Only between two recorded spans: a device
    // operation completes on its pool's completion thread, so its arrows leave from its device
    // span's row (span_row), and from nowhere when it was not timed.
    if (op->end_ticks != 0) {  // profiled (unprofiled operations pay this one test)
      if (!op->completed_by_device || span_row != nullptr) {
        profiler::DeviceRow* row = span_row;
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
  base::SpinLock push_lock_;             // held while one operation appends itself to its variables
  static constexpr int kFastPools = 64;  // cpu(0) .. cpu(63): found without a lock
  std::array<std::atomic<WorkerPool*>, kFastPools> fast_pools_{};
  std::mutex pools_mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<WorkerPool>> pools_;
  // Declared after pools_, so destroyed first; the destructor has joined the workers by then
  // (pools_.clear()), and each device pool completes what is still queued before it ends.
  std::vector<std::unique_ptr<DevicePool>> device_pools_;
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
