// Operator registry internals: attribute text parsing, registration, and the call path shared
// by the C++ and C APIs.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/ops.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "ops/small_vector.h"

namespace nanomx::ops {

// Parsed view of the string attributes of one call; every getter's error names the op, the
// attribute and the bad value.
class Params {
 public:
  Params(const Op& op, const Attrs& attrs);
  bool has(std::string_view key) const { return find(key) != nullptr; }
  double get_float(std::string_view key, std::optional<double> fallback = std::nullopt) const;
  int64_t get_int(std::string_view key, std::optional<int64_t> fallback = std::nullopt) const;
  bool get_bool(std::string_view key, std::optional<bool> fallback = std::nullopt) const;
  std::string get_string(std::string_view key,
                         std::optional<std::string> fallback = std::nullopt) const;
  DType get_dtype(std::string_view key, DType fallback) const;
  // "(1, None, 3)", "[2,3]", "4", "()"; None entries are nullopt. Absent key: nullopt.
  std::optional<std::vector<std::optional<int64_t>>> get_tuple(std::string_view key) const;
  // A tuple of ints without None; absent key: nullopt.
  std::optional<std::vector<int64_t>> get_ints(std::string_view key) const;
  // A tuple of numbers ("(0.1, 0.2)", "[1e-3]", "0.5"); absent key: nullopt.
  std::optional<std::vector<double>> get_floats(std::string_view key) const;
  Shape get_shape(std::string_view key) const;  // required
  const std::string& op() const { return op_name_; }
  // Every attribute as given (custom operators pass them on to the user's code).
  const Attrs& all() const { return attrs_; }

 private:
  const std::string* find(std::string_view key) const;
  const std::string* require(std::string_view key) const;
  [[noreturn]] void bad(std::string_view key, const std::string& value, const char* kind) const;
  const std::string& op_name_;
  const Attrs& attrs_;
};

// A ParseFn from a function that reads the attributes into the operator's own struct.
template <typename T>
ParseFn parser(T (*fn)(const Params&)) {
  return [fn](const Params& p, ParsedParams& out) { out.emplace<T>(fn(p)); };
}

class Registry {
 public:
  Op& add(Op op, std::vector<std::string> aliases = {});
};

// Registers an elementwise operator: every input and output has one shape, inferred both ways
// (an output's known dims fill unknown input dims), with the eager shortcut.
void register_same_shape(Registry& r, Op op, std::vector<std::string> aliases = {});

// Each definition file registers its operators here (called once, in this order, by the
// registry), then each device's kernel file its kernels.
void register_elemwise_ops(Registry& r);
void register_layout_ops(Registry& r);
void register_reduce_ops(Registry& r);
void register_linalg_ops(Registry& r);
void register_init_ops(Registry& r);
void register_index_ops(Registry& r);
void register_random_ops(Registry& r);
void register_math_ops(Registry& r);
void register_nn_ops(Registry& r);
void register_convolution_ops(Registry& r);        // ops/convolution.cc
void register_pooling_ops(Registry& r);            // ops/pooling.cc
void register_normalization_ops(Registry& r);      // ops/normalization.cc
void register_nn_layer_ops(Registry& r);           // ops/nn_layers.cc
void register_fused_convolution_ops(Registry& r);  // ops/fused_convolution.cc
// Their gradient rules (called by register_gradient_rules, after every operator exists).
void register_convolution_rules();
void register_pooling_rules();
void register_normalization_rules();
void register_nn_layer_rules();
void register_optimizer_ops(Registry& r);
// Custom and _backward_Custom (ops/custom.cc), and Custom's gradient rule.
void register_custom_ops(Registry& r);
void register_custom_gradient();
// The backward operators gradient rules add (ops/backward_ops.cc); after every forward one.
void register_backward_ops(Registry& r);
// After every operator: each operator's gradient rule (ops/gradient.h), in ops/gradient_rules.cc.
void register_gradient_rules();

// Output shape = f(parsed attributes, known input shapes), once every input shape is known.
template <typename F>
InferShapeFn when_known(F f) {
  return [f](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
    for (const PartialShape& s : in) {
      if (!s.known()) return;
    }
    std::vector<Shape> shapes;
    for (const PartialShape& s : in) shapes.push_back(s.shape());
    out[0] = f(p, shapes);
  };
}

// A no-input operator's output shape (fills, random draws): its parsed `shape` attribute (P's
// optional `shape`) or, without one, the caller's output, whose rank must then be known.
template <typename P>
void shape_from_attribute(const ParsedParams& p, std::span<PartialShape>,
                          std::span<PartialShape> out) {
  const auto& a = p.get<P>();
  if (a.shape) {
    out[0] = *a.shape;
  } else {
    NANOMX_CHECK(out[0].rank_known()) << p.op() << ": required attribute 'shape' is missing";
  }
}

// The dtype of the first input, the other inputs free (indices, conditions).
inline void first_type(const ParsedParams&, std::span<PartialDType> in,
                       std::span<PartialDType> out) {
  for (PartialDType& o : out) o = in[0];
}

// Context attribute "cpu(0)" style (absent: cpu(0)).
Context parse_ctx(const Params& p);

// The results of one call: a few inline, more on the heap.
using OutputList = SmallVector<NDArray, 4>;
// Runs op: parses, infers, allocates the outputs (or checks the given ones), finds the kernel
// for the outputs' device and pushes it. `results` receives every output, hidden ones
// (Op::num_visible_outputs) last; `outputs` gives all of them or only the visible ones. A
// nonzero `expect_outputs` is checked against the operator's output count before anything runs.
// `num_visible`, when given, receives how many of `results` a caller shows.
void invoke_into(const Op& op, std::span<const NDArray> inputs, const Attrs& attrs,
                 std::span<const NDArray> outputs, OutputList& results, size_t expect_outputs = 0,
                 size_t* num_visible = nullptr);

}  // namespace nanomx::ops
