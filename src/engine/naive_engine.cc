// NaiveEngine: every operation runs inside push, on the calling thread. push_async returns once
// the operation completed: when its function completes it (on this thread or another) before
// returning, at once; otherwise push_async waits for the completion (as MXNet's NaiveEngine).
#include <condition_variable>
#include <mutex>
#include <string>

#include "engine/engines.h"
#include "engine/var.h"
#include "nanomx/error.h"

namespace nanomx::engine {
namespace {

class NaiveEngine final : public Engine, private Completer {
 public:
  VarHandle new_variable() override { return new_var(); }

  void push(std::function<void()> fn, Context ctx, std::span<const VarHandle> reads,
            std::span<const VarHandle> writes, const PushOptions& options) override {
    run(function_or_nothing(fn), ctx, reads, writes, options);
  }

  // Everything runs inside push here, so every operation runs inline.
  bool try_run_inline(FunctionRef<void()> fn, Context ctx, std::span<const VarHandle> reads,
                      std::span<const VarHandle> writes, const PushOptions& options) override {
    NANOMX_CHECK(options.prop != FnProperty::kAsync && options.prop != FnProperty::kDeleteVar)
        << "engine: try_run_inline takes only push's operations (not kAsync or kDeleteVar)";
    run(fn, ctx, reads, writes, options);
    return true;
  }

  void run(FunctionRef<void()> fn, Context ctx, std::span<const VarHandle> reads,
           std::span<const VarHandle> writes, const PushOptions& options) {
    OprBlock op;
    init_opr_block(op, ctx, reads, writes, options);
    bool new_error = false;
    ErrorRef error = run_opr_block(op, fn, new_error);
    if (!error) return;
    for (Var* v : op.writes) {
      std::lock_guard lock(v->mutex);
      v->set_error(error);
    }
    if (new_error) {
      std::lock_guard lock(mutex_);
      if (!first_error_) first_error_ = error;
    }
  }

  void push_async(AsyncFn fn, Context ctx, std::span<const VarHandle> reads,
                  std::span<const VarHandle> writes, const PushOptions& options) override {
    OprBlock* op = new_async_opr_block(std::move(fn), this, ctx, reads, writes, options);
    run_async_opr_block(op);
    {
      std::unique_lock lock(mutex_);
      finished_cv_.wait(lock, [op] { return op->async->finished; });
    }
    release_opr_ref(op);
  }

  void finish_async(OprBlock* op, ErrorRef error, bool new_error) override {
    if (error) {
      for (Var* v : op->writes) {
        std::lock_guard lock(v->mutex);
        v->set_error(error);
      }
    }
    std::lock_guard lock(mutex_);
    if (new_error && error && !first_error_) first_error_ = error;
    op->async->finished = true;
    finished_cv_.notify_all();
  }

  void report_late_error(ErrorRef error) noexcept override {
    std::lock_guard lock(mutex_);
    if (!first_error_) first_error_ = std::move(error);
  }

  void delete_variable(std::function<void()> on_delete, Context, VarHandle var) override {
    NANOMX_CHECK(var != nullptr) << "delete_variable: null variable";
    free_var(var);
    if (!on_delete) return;
    // As an operation's error (and as the threaded engine): kept for the next wait_all.
    std::string error;
    try {
      on_delete();
      return;
    } catch (const std::exception& e) {
      error = std::string("operator (unnamed) failed: ") + e.what();
    } catch (...) {
      error = "operator (unnamed) failed: unknown exception";
    }
    std::lock_guard lock(mutex_);
    if (!first_error_) first_error_ = std::make_shared<const std::string>(std::move(error));
  }

  void wait_for_var(VarHandle var) override {
    NANOMX_CHECK(var != nullptr) << "wait_for_var: null variable";
    ErrorRef error;
    {
      std::lock_guard lock(var->mutex);
      error = var->take_error();
    }
    if (error) raise_error(error);
  }

  void wait_all() override {
    ErrorRef error;
    {
      std::lock_guard lock(mutex_);
      std::swap(error, first_error_);
    }
    if (error) raise_error(error);
  }

  EngineType type() const override { return EngineType::kNaive; }

 private:
  std::mutex mutex_;
  std::condition_variable finished_cv_;  // an asynchronous operation finished
  ErrorRef first_error_;
};

}  // namespace

std::unique_ptr<Engine> make_naive_engine() { return std::make_unique<NaiveEngine>(); }

}  // namespace nanomx::engine
