// An operator's definition: what it computes, apart from how any device computes it. Parsing,
// shape and dtype inference, the number of outputs, in-place pairs and what the gradient needs
// all work on attributes, shapes and dtypes alone, so a graph can be planned before any array
// exists; kernels are registered per device separately (ops/kernel.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/ops.h"
#include "ops/shape_inference.h"

namespace nanomx::ops {

class Params;  // the attribute text reader (ops/registry.h)

// The parsed attributes of one call: each operator's own struct, held inline when it fits (the
// common case allocates nothing) and on the heap otherwise. It travels with the call to the
// kernel of whichever device runs it, and it knows the operator's name for messages.
class ParsedParams {
 public:
  static constexpr size_t kInlineBytes = 96;

  explicit ParsedParams(const std::string* op_name = nullptr) : op_(op_name) {}
  ParsedParams(const ParsedParams& other)
      : op_(other.op_), is_train_(other.is_train_), unused_outputs_(other.unused_outputs_) {
    copy_from(other);
  }
  ParsedParams(ParsedParams&& other) noexcept
      : op_(other.op_), is_train_(other.is_train_), unused_outputs_(other.unused_outputs_) {
    move_from(other);
  }
  ParsedParams& operator=(const ParsedParams& other) {
    if (this != &other) {
      reset();
      op_ = other.op_;
      is_train_ = other.is_train_;
      unused_outputs_ = other.unused_outputs_;
      copy_from(other);
    }
    return *this;
  }
  ParsedParams& operator=(ParsedParams&& other) noexcept {
    if (this != &other) {
      reset();
      op_ = other.op_;
      is_train_ = other.is_train_;
      unused_outputs_ = other.unused_outputs_;
      move_from(other);
    }
    return *this;
  }
  ~ParsedParams() { reset(); }

  const std::string& op() const {
    static const std::string kNone = "(operator)";
    return op_ ? *op_ : kNone;
  }
  bool empty() const { return vtable_ == nullptr; }
  // Whether the call runs in training mode (MXNet's OpContext::is_train): set only for operators
  // that declare Op::reads_train_mode (Dropout, BatchNorm), from autograd's train mode for an
  // eager call and from forward(is_train) in the executor; false otherwise.
  bool is_train() const { return is_train_; }
  void set_train(bool on) { is_train_ = on; }
  // Whether anything reads output j (MXNet's kNullOp request): the executor marks the outputs of
  // a node nothing reads (a data gradient nobody asked for), and a kernel may skip computing
  // them (_backward_Convolution's data gradient for the first layer). Eager calls want all.
  bool output_wanted(size_t j) const { return j >= 32 || ((unused_outputs_ >> j) & 1u) == 0; }
  void set_output_unused(size_t j) {
    if (j < 32) unused_outputs_ |= 1u << j;
  }
  // Drops any parsed struct and names `op_name`: what a call without attributes to parse holds.
  void clear(const std::string* op_name) {
    reset();
    op_ = op_name;
  }

  template <typename T>
  T& emplace(T value) {
    reset();
    if constexpr (fits_inline<T>()) {
      ptr_ = new (buffer_) T(std::move(value));
      vtable_ = &kInline<T>;
    } else {
      ptr_ = new T(std::move(value));
      vtable_ = &kHeap<T>;
    }
    return *static_cast<T*>(ptr_);
  }
  // The struct the operator's parser made; asking for another type is a bug in the operator.
  template <typename T>
  const T& get() const {
    // Every kernel call reads its attributes here: the check stays two loads and a compare,
    // the message out of line.
    if (vtable_ == nullptr || vtable_->tag != tag<T>()) [[unlikely]]
      wrong_type();
    return *static_cast<const T*>(ptr_);
  }

 private:
  struct VTable {
    const void* tag;
    void (*destroy)(void* p);
    void* (*copy)(const void* src, void* buffer);
    void* (*move)(void* src, void* buffer);  // leaves src to be destroyed
  };
  template <typename T>
  static constexpr bool fits_inline() {
    return sizeof(T) <= kInlineBytes && alignof(T) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<T>;
  }
  template <typename T>
  static const void* tag() {
    static const char t = 0;
    return &t;
  }
  template <typename T>
  static inline const VTable kInline = {tag<T>(), [](void* p) { static_cast<T*>(p)->~T(); },
                                        [](const void* src, void* buffer) -> void* {
                                          return new (buffer) T(*static_cast<const T*>(src));
                                        },
                                        [](void* src, void* buffer) -> void* {
                                          return new (buffer) T(std::move(*static_cast<T*>(src)));
                                        }};
  template <typename T>
  static inline const VTable kHeap = {
      tag<T>(), [](void* p) { delete static_cast<T*>(p); },
      [](const void* src, void*) -> void* { return new T(*static_cast<const T*>(src)); },
      [](void* src, void*) -> void* { return new T(std::move(*static_cast<T*>(src))); }};

  [[noreturn, gnu::noinline, gnu::cold]] void wrong_type() const {
    NANOMX_THROW() << op() << ": internal error: parsed attributes read as the wrong type";
    std::abort();  // unreachable: the line above throws
  }
  void reset() {
    if (vtable_) vtable_->destroy(ptr_);
    vtable_ = nullptr;
    ptr_ = nullptr;
  }
  void copy_from(const ParsedParams& other) {
    if (!other.vtable_) return;
    ptr_ = other.vtable_->copy(other.ptr_, buffer_);
    vtable_ = other.vtable_;
  }
  void move_from(ParsedParams& other) {
    if (!other.vtable_) return;
    ptr_ = other.vtable_->move(other.ptr_, buffer_);
    vtable_ = other.vtable_;
    other.reset();
  }

  const std::string* op_ = nullptr;
  bool is_train_ = false;
  uint32_t unused_outputs_ = 0;
  const VTable* vtable_ = nullptr;
  void* ptr_ = nullptr;
  alignas(std::max_align_t) unsigned char buffer_[kInlineBytes];
};

// Which inputs and outputs of the forward call the gradient reads (by index), for autograd.
struct BackwardNeeds {
  bool differentiable = true;  // false: no gradient flows through (fills, random, indices)
  std::vector<int> inputs = {};
  std::vector<int> outputs = {};
  bool all_inputs = false;  // every input, whatever their number (a variadic Concat)
};

// Fills what can be inferred: outputs from inputs and, where natural (elementwise), unknown
// inputs from outputs. Slots known on entry (a caller's output array) are a constraint the
// function may overwrite; the caller compares. Throws naming the operator and the shapes.
using InferShapeFn = std::function<void(const ParsedParams& p, std::span<PartialShape> in,
                                        std::span<PartialShape> out)>;
using InferTypeFn = std::function<void(const ParsedParams& p, std::span<PartialDType> in,
                                       std::span<PartialDType> out)>;
using ParseFn = std::function<void(const Params& attrs, ParsedParams& out)>;
// The eager call path's shortcut for when every input shape is known (always, for arrays that
// exist): infers straight into `out` (default shapes on entry, one per output) without building
// PartialShape lists, through a plain function pointer. Returns false when it cannot decide alone
// (shapes that do not fit together); the call then runs infer_shape, whose error names the
// operator and the shapes. It must agree with infer_shape wherever it returns true.
using InferKnownShapeFn = bool (*)(const ParsedParams& p, std::span<const Shape* const> in,
                                   std::span<Shape> out);

// An operator whose work happens elsewhere (a custom operator's body, on its own thread) and on
// any device: the call is pushed as an asynchronous engine operation (engine.h's push_async)
// that ends when `done` is called, from any thread. Such an operator has no per-device kernel
// and is never profiled itself (the work it hands off is).
using AsyncRunFn = std::function<void(const ParsedParams& p, std::span<const NDArray> in,
                                      std::span<const NDArray> out, engine::Completion done)>;

struct Op {
  std::string name = {};
  // Argument names, for messages and the generated Python functions. A variadic operator has
  // one name here ("args", "data") and takes any number of arrays.
  std::vector<std::string> inputs = {};
  std::vector<std::string> keys = {};  // accepted attribute keys
  bool any_keys = false;               // every key is accepted (custom operators pass them on)
  // Variadic: the attribute that says how many inputs (MXNet's key_var_num_args, "num_args");
  // filled in from the call when absent, checked when given.
  std::string num_inputs_key = {};
  // A variadic operator whose inputs come in groups (multi_sgd_update: weight, grad for each
  // weight): num_inputs_key counts groups, and `inplace` / `mutate_inputs` index within the
  // group, group g's output being output g.
  int input_group = 1;
  ParseFn parse = {};  // absent: the operator takes no attributes worth parsing
  InferShapeFn infer_shape = {};
  InferKnownShapeFn infer_shape_known = nullptr;  // absent: infer_shape on every call
  InferTypeFn infer_type = {};                    // absent: every input and output has one dtype
  // Absent: one output. Called with the parsed attributes of the call.
  std::function<int(const ParsedParams&)> num_outputs = {};
  // The outputs a caller sees (MXNet's NumVisibleOutputs): the first this many of num_outputs.
  // The rest are kept for the gradient (Dropout's mask, BatchNorm's batch mean and variance):
  // `mx.nd` calls return and symbols list only the visible ones. Absent: all.
  std::function<int(const ParsedParams&)> num_visible_outputs = {};
  // The inputs a call takes when they depend on its attributes (FullyConnected without bias):
  // a prefix of `inputs`. Absent: `inputs`.
  std::function<std::vector<std::string>(const ParsedParams&)> input_names = {};
  // Output names (absent: "output", or "output0".. for several).
  std::function<std::vector<std::string>(const ParsedParams&)> output_names = {};
  // {input, output}: that output may share storage with that input (exactly the same array).
  std::vector<std::pair<int, int>> inplace = {};
  BackwardNeeds backward = {};
  // A further engine variable the kernels write (the random generator's state), or null.
  std::function<engine::VarHandle()> state_var = {};
  // Inputs the kernels also write (an optimizer's momentum, Adam's mean and variance,
  // BatchNorm's moving statistics): their engine variables are pushed as written, so later
  // readers wait for the update. In a symbol, a variable feeding such an input is an auxiliary
  // state (list_auxiliary_states), as MXNet's FMutateInputs makes it.
  std::vector<int> mutate_inputs = {};
  // The kernels read ParsedParams::is_train (training vs inference behaviour).
  bool reads_train_mode = false;
  // {input, initializer JSON}: the `__init__` attribute a variable feeding that input gets in a
  // symbol unless it has one (MXNet's FSetInputVariableAttrs: BatchNorm's moving_mean starts at
  // zero and moving_var at one, whatever the initializer's name rules say).
  std::vector<std::pair<int, std::string>> input_init = {};
  // Where an operator without inputs runs when no output array is given (absent: cpu(0)).
  std::function<Context(const ParsedParams&)> default_context = {};
  // The engine op name when it differs (MXNet's legacy functions: "BinaryOp", "TernaryOp").
  std::string engine_name = {};
  profiler::NameId engine_name_id = 0;
  AsyncRunFn run_async = {};  // set: the call runs through it, not through a kernel
  size_t index = 0;           // set by the registry: the operator's row in the kernel table

  bool variadic() const { return !num_inputs_key.empty(); }
  int outputs_of(const ParsedParams& p) const { return num_outputs ? num_outputs(p) : 1; }
  int visible_outputs_of(const ParsedParams& p) const {
    return num_visible_outputs ? num_visible_outputs(p) : outputs_of(p);
  }
  std::vector<std::string> output_names_of(const ParsedParams& p) const;
  bool mutates(int input) const {
    if (input_group > 1) input %= input_group;
    for (const int i : mutate_inputs) {
      if (i == input) return true;
    }
    return false;
  }
  std::vector<std::string> input_names_of(const ParsedParams& p) const {
    return input_names ? input_names(p) : inputs;
  }
  bool may_share(int input, int output) const {
    if (input_group > 1) {
      const int group = input / input_group;
      if (output != group) return false;
      input %= input_group;
      output = 0;
    }
    for (const auto& [i, o] : inplace) {
      if (i == input && o == output) return true;
    }
    return false;
  }
};

// Parses `attrs` for `op` (unknown keys, duplicates and bad values name the operator), the
// variadic count included. Done once per call.
ParsedParams parse_attrs(const Op& op, const Attrs& attrs, size_t num_inputs);
// As parse_attrs, into `out` (the call path parses straight into what the kernel receives).
void parse_attrs_into(const Op& op, const Attrs& attrs, size_t num_inputs, ParsedParams& out);

// Shape and dtype inference of one call on (partial) shapes and dtypes alone. `out` gives the
// slots for op.outputs_of(p) outputs; known entries are constraints. After it, check complete().
void infer_shapes(const Op& op, const ParsedParams& p, std::span<PartialShape> in,
                  std::span<PartialShape> out);
// infer_shape_known of `op` on fully known input shapes (after the same count checks as
// infer_shapes): false when the operator has none or it could not decide; then use infer_shapes.
bool infer_known_shapes(const Op& op, const ParsedParams& p, std::span<const Shape* const> in,
                        std::span<Shape> out);
void infer_types(const Op& op, const ParsedParams& p, std::span<PartialDType> in,
                 std::span<PartialDType> out);

}  // namespace nanomx::ops
