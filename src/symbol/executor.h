// The symbolic executor (MXNet's GraphExecutor): a symbol bound to arrays on one context. At
// bind it builds the gradient graph (gradient_graph.h) when any argument wants a gradient, plans
// the internal buffers (plan_memory.h), allocates them in one arena and prepares one engine
// operation per operator node (kernel, parsed attributes, arrays, engine variables, shapes), so
// that forward and backward are loops of pushes. Each push is named after the operator and
// recorded as a symbolic operator event (profile_symbolic) on the context's device row.
// docs/symbolic.md ("Executor") describes the behaviour.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/engine.h"
#include "nanomx/ndarray.h"
#include "symbol/plan_memory.h"
#include "symbol/symbol.h"

namespace nanomx::symbol {

// MXNet's OpReqType codes as grad_req uses them.
enum class GradReq { kNull = 0, kWrite = 1, kAdd = 3 };

// Parses "null", "write", "add" (MXNet also accepts "inplace" as write); throws otherwise.
GradReq parse_grad_req(const std::string& text);

struct ExecutorOptions {
  PlanOptions plan = plan_options_from_env();
  // Recompute cheap activations in backward (MXNET_BACKWARD_DO_MIRROR by default).
  bool mirror = false;
  // Fold Convolution + BatchNorm + residual add + ReLU into one node when nothing wants a
  // gradient (symbol/fuse.h; NANOMX_FUSE=0 turns it off).
  bool fuse = true;
  // The options MXNet reads from the environment at every bind.
  static ExecutorOptions from_env();
};

class Executor {
 public:
  // `args` in list_arguments() order; `grads` and `reqs` the same length (a none gradient array
  // means no gradient, whatever the req); `aux` in list_auxiliary_states() order. The arrays are
  // used as given (no copy).
  Executor(const Symbol& symbol, Context ctx, std::vector<NDArray> args, std::vector<NDArray> grads,
           std::vector<GradReq> reqs, std::vector<NDArray> aux,
           const ExecutorOptions& options = ExecutorOptions::from_env());
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // MXNet's simple_bind: shapes (and dtypes) of some arguments, everything else inferred;
  // zero-filled arguments, gradients (req not null) and aux states on ctx. `reqs`: one per
  // argument. Shapes that cannot be inferred are an error naming the arguments.
  static std::unique_ptr<Executor> simple_bind(
      const Symbol& symbol, Context ctx, const std::map<std::string, ops::PartialShape>& shapes,
      const std::map<std::string, DType>& types, std::vector<GradReq> reqs,
      const ExecutorOptions& options = ExecutorOptions::from_env());

  // Pushes every forward node; is_train reaches the operators that read it (Dropout,
  // BatchNorm). A fused executor runs forward(is_train=true) through an unfused copy of itself.
  void forward(bool is_train);
  // Copies `head_grads` (one per output, none where not given) into the head-gradient arrays
  // and pushes every backward node. Throws when an output needs a head gradient and has none.
  void backward(std::span<const NDArray> head_grads, bool is_train = true);

  // A new executor for other argument shapes, sharing this one's arrays where they fit
  // (MXNet's Executor.reshape): a smaller array is a view of the old one's storage.
  std::unique_ptr<Executor> reshape(const std::map<std::string, Shape>& shapes,
                                    bool partial_shaping, bool allow_up_sizing) const;

  const Symbol& symbol() const { return symbol_; }
  Context context() const { return ctx_; }
  const std::vector<NDArray>& outputs() const { return outputs_; }
  const std::vector<NDArray>& arg_arrays() const { return args_; }
  const std::vector<NDArray>& grad_arrays() const { return grads_; }
  const std::vector<NDArray>& aux_arrays() const { return aux_; }
  const std::vector<GradReq>& grad_reqs() const { return reqs_; }
  // Per output: whether backward needs a head gradient for it (false for loss outputs).
  const std::vector<bool>& head_grad_needed() const { return head_needed_; }
  // The forward and backward graph in Symbol::debug_str's layout, then MXNet's two
  // "Total ..." lines.
  std::string debug_str() const;
  // MXNet's storage_allocated_bytes (4 bytes an element), and the bytes actually allocated.
  size_t planned_bytes() const { return plan_.planned_bytes; }
  size_t allocated_bytes() const { return plan_.allocated_bytes; }
  size_t num_forward_nodes() const { return num_forward_steps_; }
  // Whether the bound graph is the fused one (symbol/fuse.h).
  bool fused() const { return fused_; }
  size_t num_backward_nodes() const { return steps_.size() - num_forward_steps_; }

 private:
  struct Step;  // one prepared engine operation (executor.cc)
  void build(const ExecutorOptions& options);
  void push_steps(size_t begin, size_t end, bool is_train);

  Symbol symbol_;
  Context ctx_;
  std::vector<NDArray> args_, grads_, aux_;
  std::vector<GradReq> reqs_;
  Symbol full_;  // forward outputs, then one gradient per argument with a gradient
  std::vector<NDArray> outputs_;
  std::vector<NDArray> head_grads_;  // none where not needed
  std::vector<bool> head_needed_;
  MemoryPlan plan_;
  std::vector<NDArray> entries_;  // per entry of full_
  std::vector<engine::VarHandle> block_vars_;
  std::vector<std::unique_ptr<Step>> steps_;
  size_t num_forward_steps_ = 0;
  ExecutorOptions options_;
  bool fused_ = false;
  // Made at the first forward(is_train=true) of a fused executor: the same arrays, unfused.
  std::unique_ptr<Executor> unfused_;
};

}  // namespace nanomx::symbol
