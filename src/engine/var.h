// Engine internals shared by the threaded and naive engines.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "nanomx/engine.h"

namespace nanomx::engine {

struct OprBlock;

// A variable: the queue of operations waiting on it and what is running on it.
class Var {
 public:
  std::mutex mutex;
  struct Pending {
    OprBlock* op;
    bool write;
  };
  std::vector<Pending> queue;  // pending uses in push order, from `head`
  size_t head = 0;
  int running_reads = 0;
  bool write_active = false;
  bool deleting = false;
  std::exception_ptr error;  // guarded by mutex
};

struct OprBlock {
  std::function<void()> fn;
  Context ctx;
  std::vector<Var*> reads;
  std::vector<Var*> writes;
  FnProperty prop = FnProperty::kNormal;
  const char* name = nullptr;
  profiler::NameId name_id = 0;
  bool profiled = false;
  int slot = 0;
  uint64_t flow_id = 0;
  // Shapes for the trace, inputs then outputs: inline when they fit, else on the heap.
  static constexpr size_t kInlineDims = 24;
  static constexpr size_t kInlineShapes = 8;
  int64_t dims_inline[kInlineDims];
  int ndims_inline[kInlineShapes];
  std::vector<int64_t> dims_heap;
  std::vector<int> ndims_heap;
  size_t num_shapes = 0;
  size_t num_input_shapes = 0;
  const int64_t* dims() const { return dims_heap.empty() ? dims_inline : dims_heap.data(); }
  const int* ndims() const { return ndims_heap.empty() ? ndims_inline : ndims_heap.data(); }
  std::atomic<int> wait{0};
};

// Fills op's read/write lists (deduplicated; a var both read and written counts as written) and
// its profiling fields from options (profiling is decided here, at push time).
void init_opr_block(OprBlock& op, Context ctx, std::span<const VarHandle> reads,
                    std::span<const VarHandle> writes, const PushOptions& options);

// Runs op->fn unless an input holds an error (then returns that error), recording the profiler
// event. Returns the error the op produced or inherited (null when it succeeded).
std::exception_ptr run_opr_block(OprBlock& op, bool& new_error);

}  // namespace nanomx::engine
