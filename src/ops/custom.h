// Custom operators: operators defined at run time by user code (MXNet's mx.operator.CustomOp
// and CustomOpProp, docs/symbolic.md "Custom operators"). The operator `Custom` (and its
// gradient `_backward_Custom`) looks up the type named by its `op_type` attribute in a runtime
// table that the C API fills; the user's property object answers the definition questions
// (inputs, outputs, shapes, dtypes) on the calling thread, and the user's body runs on a
// custom-operator worker thread (inline with the naive engine), on aliases of the arrays (new
// engine variables over the same storage), so that what the body pushes and waits for never
// queues behind the operation that called it. The body's operators are named
// "<op_type>::<op>" in the profiler, and the body itself is a task "<op_type>::pure_python"
// ("_backward_<op_type>::pure_python") in domain "Custom Operator".
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "nanomx/shape.h"

namespace nanomx::ops::custom {

// MXNet's OpReqType codes, as the user's forward/backward receive them.
enum Req : int { kNullOp = 0, kWriteTo = 1, kWriteInplace = 2, kAddTo = 3 };

// One instance of the user's operator (CustomOp), made per call by Prop::create_operator.
// Errors are thrown (nanomx::Error); they reach the caller at the next wait on the outputs.
class Operator {
 public:
  virtual ~Operator() = default;
  virtual void forward(bool is_train, std::span<const int> req, std::span<const NDArray> in_data,
                       std::span<const NDArray> out_data, std::span<const NDArray> aux) = 0;
  virtual void backward(std::span<const int> req, std::span<const NDArray> out_grad,
                        std::span<const NDArray> in_data, std::span<const NDArray> out_data,
                        std::span<const NDArray> in_grad, std::span<const NDArray> aux) = 0;
};

// The user's property object (CustomOpProp), made once per call's attributes. Called on the
// thread that parses, infers or runs the call.
class Prop {
 public:
  virtual ~Prop() = default;
  virtual std::vector<std::string> list_arguments() = 0;
  virtual std::vector<std::string> list_outputs() = 0;
  virtual std::vector<std::string> list_auxiliary_states() = 0;
  // `in`: one shape per argument, then per auxiliary state. Fills `out` (one per output) and
  // `aux`; may change `in`.
  virtual void infer_shape(std::vector<Shape>& in, std::vector<Shape>& out,
                           std::vector<Shape>& aux) = 0;
  // MXNet type codes, laid out as infer_shape's shapes.
  virtual void infer_type(std::vector<int>& in, std::vector<int>& out, std::vector<int>& aux) = 0;
  // Which of backward's possible inputs it reads, by MXNet's ids: output gradients
  // 0..n_out-1, inputs n_out..n_out+n_args-1, outputs after them. An output gradient left out
  // (a loss: need_top_grad=False) is not required from the caller.
  virtual std::vector<int> declare_backward_dependency(std::span<const int> out_grad,
                                                       std::span<const int> in_data,
                                                       std::span<const int> out_data) = 0;
  virtual std::unique_ptr<Operator> create_operator(Context ctx, const std::vector<Shape>& shapes,
                                                    const std::vector<int>& dtypes) = 0;
  // The training flag of the call (autograd's, captured when the call was made).
  virtual bool is_train() const = 0;
};

// Makes the property object of one call: op_type and the call's other attributes, as text.
using PropCreator =
    std::function<std::unique_ptr<Prop>(const std::string& op_type, const Attrs& kwargs)>;

// Registers `op_type`; a second registration replaces the first (MXNet logs a warning, as here
// on stderr). Thread-safe.
void register_op(const std::string& op_type, PropCreator creator);
// Whether `op_type` is registered.
bool registered(const std::string& op_type);

}  // namespace nanomx::ops::custom
