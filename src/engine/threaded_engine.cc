// ThreadedEnginePerDevice: a FIFO worker pool per CPU device, dependency tracking per variable.
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engines.h"
#include "engine/var.h"
#include "nanomx/error.h"

namespace nanomx::engine {
namespace {

using ReadyList = std::vector<OprBlock*>;

class WorkerPool {
 public:
  using Executor = std::function<void(OprBlock*)>;
  WorkerPool(std::string name, int threads, Executor execute) : execute_(std::move(execute)) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, thread_name = name + " worker " + std::to_string(i)] {
        profiler::set_thread_name(thread_name);
        run();
      });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void push(OprBlock* op, bool front) {
    bool wake;
    {
      std::lock_guard lock(mutex_);
      if (front) {
        queue_.push_front(op);
      } else {
        queue_.push_back(op);
      }
      wake = sleepers_ > 0;
    }
    if (wake) cv_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      OprBlock* op;
      {
        std::unique_lock lock(mutex_);
        if (queue_.empty() && !stop_) {
          ++sleepers_;
          cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
          --sleepers_;
        }
        if (queue_.empty()) return;  // stopping, nothing left
        op = queue_.front();
        queue_.pop_front();
      }
      execute_(op);
    }
  }

  int sleepers_ = 0;  // guarded by mutex_

  Executor execute_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<OprBlock*> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

class ThreadedEngine final : public Engine {
 public:
  explicit ThreadedEngine(int cpu_workers) : cpu_workers_(cpu_workers) {}

  ~ThreadedEngine() override {
    try {
      wait_all();
    } catch (...) {  // an error nobody waited for: dropped with the engine
    }
    std::lock_guard lock(pools_mutex_);
    pools_.clear();  // joins the workers
  }

  VarHandle new_variable() override { return new Var; }

  void push(std::function<void()> fn, Context ctx, std::span<const VarHandle> reads,
            std::span<const VarHandle> writes, const PushOptions& options) override {
    auto* op = new OprBlock;
    op->fn = std::move(fn);
    try {
      init_opr_block(*op, ctx, reads, writes, options);
    } catch (...) {
      delete op;
      throw;
    }
    pending_.fetch_add(1, std::memory_order_relaxed);
    op->wait.store(static_cast<int>(op->reads.size() + op->writes.size()) + 1,
                   std::memory_order_relaxed);
    for (Var* v : op->reads) append_read(v, op);
    for (Var* v : op->writes) append_write(v, op);
    if (op->wait.fetch_sub(1, std::memory_order_acq_rel) == 1) dispatch(op, true);
  }

  void delete_variable(std::function<void()> on_delete, Context ctx, VarHandle var) override {
    NANOMX_CHECK(var != nullptr) << "delete_variable: null variable";
    PushOptions options;
    options.prop = FnProperty::kDeleteVar;
    const VarHandle writes[] = {var};
    push(std::move(on_delete), ctx, {}, writes, options);
  }

  void wait_for_var(VarHandle var) override {
    NANOMX_CHECK(var != nullptr) << "wait_for_var: null variable";
    bool ready;
    {
      std::lock_guard lock(var->mutex);
      ready = var->head == var->queue.size() && !var->write_active;
    }
    if (!ready) {
      struct Sync {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
      } sync;
      static const profiler::NameId kWaitName = profiler::intern("WaitForVar");
      PushOptions options;
      options.prop = FnProperty::kNoSkip;
      options.name = "WaitForVar";
      options.name_id = kWaitName;
      const VarHandle reads[] = {var};
      push(
          [&sync] {
            std::lock_guard lock(sync.mutex);
            sync.done = true;
            sync.cv.notify_all();
          },
          Context::cpu(0), reads, {}, options);
      std::unique_lock lock(sync.mutex);
      sync.cv.wait(lock, [&sync] { return sync.done; });
    }
    std::exception_ptr error;
    {
      std::lock_guard lock(var->mutex);
      std::swap(error, var->error);
    }
    if (error) std::rethrow_exception(error);
  }

  void wait_all() override {
    {
      std::unique_lock lock(finish_mutex_);
      finish_cv_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    std::exception_ptr error;
    {
      std::lock_guard lock(error_mutex_);
      std::swap(error, first_error_);
    }
    if (error) std::rethrow_exception(error);
  }

  EngineType type() const override { return EngineType::kThreadedPerDevice; }

 private:
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
      compact(v);
      grant(next, ready);
    }
  }

  // Returns true when the variable was deleted.
  static bool complete_write(Var* v, bool deleting, ReadyList& ready) {
    {
      std::lock_guard lock(v->mutex);
      v->write_active = false;
      if (!deleting) {
        while (v->head < v->queue.size() && !v->queue[v->head].write) {
          ++v->running_reads;
          grant(v->queue[v->head++].op, ready);
        }
        if (v->running_reads == 0 && v->head < v->queue.size()) {
          v->write_active = true;
          grant(v->queue[v->head++].op, ready);
        }
        compact(v);
        return false;
      }
    }
    delete v;
    return true;
  }

  WorkerPool& pool_for(Context ctx) {
    const auto key = std::make_pair(static_cast<int>(ctx.dev_type), ctx.dev_id);
    std::lock_guard lock(pools_mutex_);
    auto it = pools_.find(key);
    if (it == pools_.end()) {
      NANOMX_CHECK(ctx.is_cpu()) << "engine: no GPU worker pool in this build (" << ctx.str()
                                 << ")";
      std::string name =
          ctx.dev_type == DeviceType::kCPU ? "cpu/" + std::to_string(ctx.dev_id) : ctx.str();
      it = pools_
               .emplace(key, std::make_unique<WorkerPool>(name, cpu_workers_,
                                                          [this](OprBlock* op) { execute(op); }))
               .first;
    }
    return *it->second;
  }

  void dispatch(OprBlock* op, bool at_push) {
    // As MXNet: only async and delete-var operations run inline on the pushing thread;
    // everything else (WaitForVar included) runs on the device's workers.
    const bool inline_prop = op->prop == FnProperty::kAsync || op->prop == FnProperty::kDeleteVar;
    if (at_push && inline_prop) {
      execute(op);
      return;
    }
    pool_for(op->ctx).push(op, op->prop == FnProperty::kDeleteVar);
  }

  void execute(OprBlock* op) {
    bool new_error = false;
    std::exception_ptr error = run_opr_block(*op, new_error);
    const bool deleting = op->prop == FnProperty::kDeleteVar;
    if (error && !deleting) {
      for (Var* v : op->writes) {
        std::lock_guard lock(v->mutex);
        v->error = error;
      }
    }
    if (new_error) {
      std::lock_guard lock(error_mutex_);
      if (!first_error_) first_error_ = error;
    }
    op->fn = nullptr;  // releases captured arrays now (may push deletions)
    ReadyList ready;
    for (Var* v : op->reads) complete_read(v, ready);
    for (Var* v : op->writes) complete_write(v, deleting, ready);
    delete op;
    for (OprBlock* next : ready) dispatch(next, false);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(finish_mutex_);
      finish_cv_.notify_all();
    }
  }

  const int cpu_workers_;
  std::mutex pools_mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<WorkerPool>> pools_;
  std::atomic<int64_t> pending_{0};
  std::mutex finish_mutex_;
  std::condition_variable finish_cv_;
  std::mutex error_mutex_;
  std::exception_ptr first_error_;
};

}  // namespace

std::unique_ptr<Engine> make_threaded_engine(int cpu_workers) {
  return std::make_unique<ThreadedEngine>(cpu_workers);
}

}  // namespace nanomx::engine
