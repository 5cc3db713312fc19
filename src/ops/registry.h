// Operator registry internals: the Op record, attribute parsing, and the kernel plan.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/ops.h"

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
  Shape get_shape(std::string_view key) const;  // required
  const std::string& op() const { return op_name_; }

 private:
  const std::string* find(std::string_view key) const;
  const std::string* require(std::string_view key) const;
  [[noreturn]] void bad(std::string_view key, const std::string& value, const char* kind) const;
  const std::string& op_name_;
  const Attrs& attrs_;
};

using Kernel = std::function<void(std::span<const NDArray> in, const NDArray& out)>;

struct Plan {
  Shape shape;
  DType dtype = DType::kFloat32;
  Context ctx = Context::cpu(0);  // used when there are no inputs and no output given
  Kernel kernel;
  // Further engine variables the kernel writes (the random generator's state).
  std::vector<engine::VarHandle> extra_writes;
};

// Validates attributes and input shapes/dtypes, and says what to produce and how. `out` is the
// output array when the caller gave one (null otherwise).
using PlanFn =
    std::function<Plan(const Params& p, std::span<const NDArray> in, const NDArray* out)>;

// The most inputs an operator may have (the engine operation keeps them inline).
inline constexpr size_t kMaxInputs = 3;

struct Op {
  std::string name = {};
  std::vector<std::string> inputs = {};  // argument names, for messages
  std::vector<std::string> keys = {};    // accepted attribute keys
  PlanFn plan = {};
  // The engine op name when it differs (MXNet's legacy functions: "BinaryOp", "TernaryOp").
  std::string engine_name = {};
  // The kernel is correct when the output is one of the inputs (elementwise; in-place updates).
  bool inplace_ok = false;
  profiler::NameId engine_name_id = 0;
};

class Registry {
 public:
  Op& add(Op op, std::vector<std::string> aliases = {});
};

// Each kernel file registers its operators here (called once, in this order, by the registry).
void register_elemwise_ops(Registry& r);
void register_layout_ops(Registry& r);
void register_reduce_ops(Registry& r);
void register_dot_ops(Registry& r);
void register_index_ops(Registry& r);
void register_random_ops(Registry& r);

// Shared helpers for kernels.
std::string shape_list(std::span<const NDArray> in);
// MXNet's Reshape shape inference (codes 0, -1, -2, -3, -4; `reverse` matches from the right).
// Throws naming both shapes.
Shape infer_reshape(const std::vector<int64_t>& spec, const Shape& src, bool reverse);
// Context attribute "cpu(0)" style (absent: cpu(0)).
Context parse_ctx(const Params& p);

}  // namespace nanomx::ops
