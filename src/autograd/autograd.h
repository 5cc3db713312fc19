// Autograd: records imperative operator calls on a tape while recording is on, and runs the
// recorded calls backward through the operators' gradient rules (ops/gradient.h). MXNet's model
// (docs/symbolic.md, "Autograd"): two thread-local flags (recording, training); arrays marked as
// variables are the graph's leaves, with a gradient buffer and a request (write, add, null); a
// call is recorded only when one of its inputs is already in a graph; backward walks the graph
// from the heads in reverse and writes or adds each leaf's gradient into its buffer.
//
// The graph hangs off the arrays themselves (NDArray::autograd_entry): an output of a recorded
// call refers to its call, which refers to its inputs' entries, down to the leaves. Dropping the
// last array of a graph frees it; backward without retain_graph frees the saved arrays of every
// call it went through.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nanomx/ndarray.h"
#include "nanomx/ops.h"

namespace nanomx::autograd {

// MXNet's OpReqType codes as mark_variables takes them.
enum class GradReq : uint32_t { kNull = 0, kWrite = 1, kAdd = 3 };

// Thread-local flags, both false on a new thread. The setters return the previous value.
bool is_recording();
bool is_training();
bool set_recording(bool on);
bool set_training(bool on);

// Makes each variable a fresh leaf with gradient buffer grads[i] (same shape) and request
// reqs[i]; a variable's earlier history is dropped. Throws for mismatched lists or shapes.
void mark_variables(std::span<NDArray> variables, std::span<const NDArray> grads,
                    std::span<const GradReq> reqs);

// The gradient buffer of a marked variable (a none array otherwise).
NDArray grad_of(const NDArray& array);

// True when `array` is in a graph (a marked variable or an output of a recorded call).
bool in_graph(const NDArray& array);

// Throws MXNet's message when an output an operator call would write into is already in a graph
// (in-place writes inside record() would corrupt the gradients). Call before the operator runs.
void check_outputs(std::span<const NDArray> outputs);

// Records the call of `op` (already invoked) when one of its inputs is in a graph: each output
// becomes an entry of the new node. Returns whether it recorded. Only while recording.
bool record(const ops::Op& op, const ops::Attrs& attrs, std::span<const NDArray> inputs,
            std::span<NDArray> outputs);

// Backward from `heads` (head_grads: one per head, a none array meaning ones; or empty). With
// `variables` empty, every marked leaf reachable from the heads whose request is not null gets
// its gradient written or added into its buffer and the result is empty; otherwise nothing is
// written and the result holds the gradient of each variable (MXNet's autograd.grad). Without
// retain_graph the calls it went through are freed (a second backward raises). Runs with
// recording off and training = train_mode, then restores both. create_graph (recording the
// backward pass for higher-order gradients) is not supported and is refused.
std::vector<NDArray> backward(std::span<const NDArray> heads, std::span<const NDArray> head_grads,
                              std::span<const NDArray> variables, bool retain_graph,
                              bool create_graph, bool train_mode);

}  // namespace nanomx::autograd
