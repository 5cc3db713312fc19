// The asynchronous dependency engine (MXNet's model, docs/mxnet-compat.md#engine).
//
// Work is pushed as a function plus the variables it reads and writes; `push` returns at once.
// Per variable, operations run in push order except that reads pushed between two writes run
// together: a read waits for every earlier write, a write for every earlier read and write.
// The threaded engine runs work on a worker pool per device, found by device type (CPU devices:
// NANOMX_CPU_WORKER_NTHREADS threads, default 1; a push on a device type without workers, gpu in
// this build, throws naming it); the naive engine (NANOMX_ENGINE_TYPE=NaiveEngine) runs everything
// inside push (push_async returns once the operation completed, waiting for a completion made
// elsewhere).
//
// Errors: an exception thrown by an operation is stored on the variables it writes; later
// operations that read or write such a variable are skipped and inherit the error; the error is
// raised (once) by the next wait_for_var on it, and by wait_all. The engine keeps working.
//
// Asynchronous operations (MXNet's PushAsync): push_async's function receives a Completion and
// the operation ends when that completion is called (once, from any thread), not when the
// function returns; only then are its variables released. The worker is free as soon as the
// function returns. push(fn) is the special case that completes when fn returns.
//
// Profiling: when the push's mode bits are active at push time, the operation is recorded
// category "operator", on its context's device row, with the given shapes, and a flow arrow
// from the pushing thread. A synchronous operation is recorded on the thread that runs it; an
// asynchronous one spans from the start of its function to its completion and is recorded on
// the thread that completes it.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "nanomx/context.h"
#include "nanomx/function_ref.h"
#include "nanomx/profiler.h"
#include "nanomx/shape.h"

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx::engine {

// MXNet's FnProperty. kAsync and kDeleteVar operations that are ready at push time run inline on
// the pushing thread (the rest on the device's workers); kNoSkip runs even when its inputs hold
// an error. The other properties are accepted and scheduled as kNormal.
enum class FnProperty {
  kNormal = 0,
  kCopyFromGPU = 1,
  kCopyToGPU = 2,
  kCPUPrioritized = 3,
  kAsync = 4,
  kDeleteVar = 5,
  kGPUPrioritized = 6,
  kNoSkip = 7,
};

class Var;  // opaque; created by new_variable, destroyed by delete_variable
using VarHandle = Var*;
struct OprBlock;  // opaque: a pushed operation

// The completion of an asynchronous operation (MXNet's CallbackOnComplete). Copyable: copies
// refer to the same operation, and any one of them may be called, once, from any thread.
// - done(): the operation succeeded; done(error) / fail(message): it failed, exactly as if its
//   function had thrown (the error is stored on the written variables, dependents are skipped,
//   and wait_for_var / wait_all raise it).
// - Completing an operation twice throws nanomx::Error (the second call changes nothing).
// - When the last copy is destroyed without the operation being completed, it completes with
//   the error "completion ... destroyed without being called": a lost completion shows up as an
//   error on the written variables instead of a wait that never returns.
// - An exception thrown by the function before it completes completes the operation with that
//   error; one thrown after it completed is raised by the next wait_all.
// A completion must not outlive the engine that made it.
class Completion {
 public:
  Completion() = default;  // refers to no operation; calling it throws
  Completion(const Completion& other) noexcept;
  Completion(Completion&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
  Completion& operator=(const Completion& other) noexcept;
  Completion& operator=(Completion&& other) noexcept;
  ~Completion();

  void done() const;
  void done(std::exception_ptr error) const;  // a null error is done()
  void fail(std::string_view message) const;
  explicit operator bool() const { return op_ != nullptr; }

  // Used by the engines: adopts one reference to op.
  explicit Completion(OprBlock* op) noexcept : op_(op) {}

 private:
  OprBlock* op_ = nullptr;
};
using AsyncFn = std::function<void(Completion)>;

struct PushOptions {
  FnProperty prop = FnProperty::kNormal;
  // Shown in error messages and in the trace; must outlive the operation (a string literal or
  // a registry name). Unnamed operations are never profiled.
  const char* name = nullptr;
  profiler::NameId name_id = 0;  // profiler::intern(name); read only when name is set
  // The profiler mode this push belongs to: kImperative for imperative ops, kSymbolic for an
  // executor's.
  uint32_t profile_mode = profiler::kImperative;
  // Recorded in the event's args; copied (into the operation, without allocating for up to 8
  // shapes of 24 dims in all) only when the push is profiled.
  std::span<const Shape* const> input_shapes;
  std::span<const Shape* const> output_shapes;
  // The bytes the operation reads and writes: its estimated cost. The threaded engine runs an
  // operation that is ready when pushed and touches at most NANOMX_ENGINE_INLINE_BYTES bytes on
  // the pushing thread, inside push (handing it to a worker costs more than such an operation);
  // 0 (unknown) always goes to the workers. docs/runtime.md#engine (inline execution).
  size_t bytes_touched = 0;
};

enum class EngineType { kThreadedPerDevice, kNaive };

class Engine {
 public:
  virtual ~Engine() = default;

  virtual VarHandle new_variable() = 0;
  // A variable that only orders the operations using it and holds no data (the random
  // generator's state): an operation that fails leaves no error on it, so the operations
  // ordered after it still run.
  VarHandle new_ordering_variable();
  // Runs fn once every earlier use of `reads` (writes only) and `writes` (all uses) finished.
  // A variable listed in both is treated as written; duplicates are ignored.
  virtual void push(std::function<void()> fn, Context ctx, std::span<const VarHandle> reads,
                    std::span<const VarHandle> writes, const PushOptions& options = {}) = 0;
  // push without the owning function, for an operation that can run right now: when push would
  // run it inside push (threaded engine: ready at push, on a CPU device and at most the inline
  // bytes, see PushOptions::bytes_touched; naive engine: always), it runs fn here, before
  // returning true, under every rule of push (order, skipping and keeping errors, profiling).
  // Otherwise it returns false having done nothing, and the caller pushes the operation with a
  // function that owns what it needs. An eager operator call so skips building that function
  // and its references to the arrays (ops::invoke). Only push's operations: never kAsync or
  // kDeleteVar.
  virtual bool try_run_inline(FunctionRef<void()> fn, Context ctx, std::span<const VarHandle> reads,
                              std::span<const VarHandle> writes,
                              const PushOptions& options = {}) = 0;
  // The asynchronous form: fn receives the operation's Completion; the operation (and, for the
  // naive engine, this call) ends when the completion is called. Same ordering as push.
  virtual void push_async(AsyncFn fn, Context ctx, std::span<const VarHandle> reads,
                          std::span<const VarHandle> writes, const PushOptions& options = {}) = 0;
  // Runs on_delete (may be empty) after every pending use of var, then destroys var. Nothing
  // may be pushed on var afterwards.
  virtual void delete_variable(std::function<void()> on_delete, Context ctx, VarHandle var) = 0;
  // Blocks until every write pushed so far on var finished; rethrows (and clears) its error.
  virtual void wait_for_var(VarHandle var) = 0;
  // Blocks until everything pushed so far finished; rethrows (and clears) the first error
  // raised by an operation since the last wait_all.
  virtual void wait_all() = 0;
  virtual EngineType type() const = 0;

  // The process engine, chosen at first use from NANOMX_ENGINE_TYPE / MXNET_ENGINE_TYPE
  // (ThreadedEnginePerDevice (default), ThreadedEngine (same), NaiveEngine).
  static Engine& get();
  // The largest operation (bytes touched) the threaded engine runs on the pushing thread when it
  // is ready at push, unless NANOMX_ENGINE_INLINE_BYTES says otherwise (0: never).
  static constexpr size_t kDefaultInlineBytes = 64 * 1024;
  // A separate engine (tests, benchmarks). cpu_workers: threads per CPU device.
  static std::unique_ptr<Engine> create(EngineType type, int cpu_workers,
                                        size_t inline_bytes = kDefaultInlineBytes);
};

// While one lives on a thread, every operation that thread pushes is named "<op_type>::<name>"
// in the trace and the aggregate table (category "Custom Operator"): the operators a custom
// operator's body calls (MXNet's naming, docs/symbolic.md "Custom operators"). Scopes nest;
// the innermost wins. Costs nothing on a push that is not profiled.
class CustomOpScope {
 public:
  explicit CustomOpScope(std::string_view op_type);
  ~CustomOpScope();
  CustomOpScope(const CustomOpScope&) = delete;
  CustomOpScope& operator=(const CustomOpScope&) = delete;

 private:
  const std::string* previous_;
  std::string prefix_;
};

// Parses an engine type name; throws listing the valid names.
EngineType parse_engine_type(std::string_view name);

}  // namespace nanomx::engine

#pragma GCC visibility pop
