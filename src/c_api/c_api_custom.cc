// MXCustomOpRegister (nanomx/c_api_custom.h): adapts MXNet's callback ABI to the custom
// operator interface of the operators layer (ops/custom.h). The body runs with recording off and
// training set to the call's flag (autograd's, captured when the call was made), as MXNet's
// custom-operator workers do.
#include "nanomx/c_api_custom.h"

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.h"
#include "c_api/c_api_common.h"
#include "c_api/ndarray_handles.h"
#include "nanomx/c_api.h"
#include "nanomx/error.h"
#include "ops/custom.h"

using nanomx::NDArray;
using nanomx::Shape;

namespace {

namespace custom = nanomx::ops::custom;

// A callback list from the user; the entry `index` cast to its real type, or null.
class Callbacks {
 public:
  Callbacks() = default;
  explicit Callbacks(const MXCallbackList& list) : list_(list) {}
  template <typename Fn>
  Fn get(int index) const {
    if (index >= list_.num_callbacks || list_.callbacks == nullptr) return nullptr;
    // Through void(*)(void), the generic function pointer type (MXNet's list stores int(*)()).
    return reinterpret_cast<Fn>(reinterpret_cast<void (*)(void)>(list_.callbacks[index]));
  }
  void* state(int index) const {
    return list_.contexts == nullptr ? nullptr : list_.contexts[index];
  }

 private:
  MXCallbackList list_{0, nullptr, nullptr};
};

// The arrays a body receives: new handles the callee owns.
class HandleList {
 public:
  void add(const NDArray& a, int tag) {
    ptrs_.push_back(nanomx::c_api::new_ndarray_handle(a));
    tags_.push_back(tag);
  }
  void add(std::span<const NDArray> arrays, int tag) {
    for (const NDArray& a : arrays) add(a, tag);
  }
  int size() const { return static_cast<int>(ptrs_.size()); }
  void** ptrs() { return ptrs_.data(); }
  int* tags() { return tags_.data(); }

 private:
  std::vector<void*> ptrs_;
  std::vector<int> tags_;
};

// Runs a user callback with the thread's last error cleared, so that a failure's reason is the
// one the callback gave (MXAPISetLastError).
template <typename Call>
int run_user(Call&& call) {
  MXAPISetLastError("");
  return call();
}

// ": <reason>" for the message of a failed callback.
std::string user_reason() {
  const std::string reason = MXGetLastError();
  return reason.empty() ? ": the callback failed (its error is printed above)" : ": " + reason;
}

// Recording off and training set while the user's body runs.
class BodyFlags {
 public:
  explicit BodyFlags(bool is_train)
      : recording_(nanomx::autograd::set_recording(false)),
        training_(nanomx::autograd::set_training(is_train)) {}
  ~BodyFlags() {
    nanomx::autograd::set_recording(recording_);
    nanomx::autograd::set_training(training_);
  }
  BodyFlags(const BodyFlags&) = delete;
  BodyFlags& operator=(const BodyFlags&) = delete;

 private:
  bool recording_, training_;
};

class CApiOperator final : public custom::Operator {
 public:
  CApiOperator(std::string op_type, const MXCallbackList& list)
      : op_type_(std::move(op_type)), callbacks_(list) {}
  ~CApiOperator() override {
    if (auto del = callbacks_.get<CustomOpDelFunc>(kCustomOpDelete)) {
      del(callbacks_.state(kCustomOpDelete));
    }
  }

  void forward(bool is_train, std::span<const int> req, std::span<const NDArray> in_data,
               std::span<const NDArray> out_data, std::span<const NDArray> aux) override {
    HandleList list;
    list.add(in_data, 0);
    list.add(out_data, 1);
    list.add(aux, 4);
    call(kCustomOpForward, "forward", list, req, is_train);
  }
  void backward(std::span<const int> req, std::span<const NDArray> out_grad,
                std::span<const NDArray> in_data, std::span<const NDArray> out_data,
                std::span<const NDArray> in_grad, std::span<const NDArray> aux) override {
    HandleList list;
    list.add(in_data, 0);
    list.add(out_data, 1);
    list.add(in_grad, 2);
    list.add(out_grad, 3);
    list.add(aux, 4);
    call(kCustomOpBackward, "backward", list, req, true);
  }

 private:
  void call(int index, const char* what, HandleList& list, std::span<const int> req,
            bool is_train) {
    auto fn = callbacks_.get<CustomOpFBFunc>(index);
    NANOMX_CHECK(fn != nullptr) << "custom operator " << op_type_ << ": no " << what << " callback";
    BodyFlags flags(is_train);
    NANOMX_CHECK(run_user([&] {
                   return fn(list.size(), list.ptrs(), list.tags(), req.data(), is_train ? 1 : 0,
                             callbacks_.state(index));
                 }) != 0)
        << "Error in CustomOp." << what << " of custom operator " << op_type_ << user_reason();
  }
  std::string op_type_;
  Callbacks callbacks_;
};

class CApiProp final : public custom::Prop {
 public:
  CApiProp(std::string op_type, const MXCallbackList& list, bool is_train)
      : op_type_(std::move(op_type)), callbacks_(list), is_train_(is_train) {}
  ~CApiProp() override {
    if (auto del = callbacks_.get<CustomOpDelFunc>(kCustomOpPropDelete)) {
      del(callbacks_.state(kCustomOpPropDelete));
    }
  }

  std::vector<std::string> list_arguments() override {
    return list(kCustomOpPropListArguments, "list_arguments", {"data"});
  }
  std::vector<std::string> list_outputs() override {
    return list(kCustomOpPropListOutputs, "list_outputs", {"output"});
  }
  std::vector<std::string> list_auxiliary_states() override {
    return list(kCustomOpPropListAuxiliaryStates, "list_auxiliary_states", {});
  }

  void infer_shape(std::vector<Shape>& in, std::vector<Shape>& out,
                   std::vector<Shape>& aux) override {
    auto fn = callbacks_.get<CustomOpInferShapeFunc>(kCustomOpPropInferShape);
    const size_t n_in = in.size(), n_out = list_outputs().size(), n_aux = aux.size();
    if (fn == nullptr) {  // MXNet's default: every output has the first input's shape
      out.assign(n_out, in.empty() ? Shape() : in[0]);
      return;
    }
    const size_t n = n_in + n_out + n_aux;
    std::vector<int> ndims(n, 0);
    std::vector<int*> shapes(n, nullptr);
    std::vector<std::vector<int>> given;
    for (size_t i = 0; i < n_in + n_aux; ++i) {
      const Shape& s = i < n_in ? in[i] : aux[i - n_in];
      given.emplace_back(s.begin(), s.end());
      const size_t slot = i < n_in ? i : i + n_out;
      ndims[slot] = s.ndim();
      shapes[slot] = given.back().data();
    }
    NANOMX_CHECK(run_user([&] {
                   return fn(static_cast<int>(n), ndims.data(), shapes.data(),
                             callbacks_.state(kCustomOpPropInferShape));
                 }) != 0)
        << "Error in " << op_type_ << ".infer_shape" << user_reason();
    auto shape_at = [&](size_t i) {
      NANOMX_CHECK(ndims[i] >= 0 && (ndims[i] == 0 || shapes[i] != nullptr))
          << op_type_ << ".infer_shape returned an invalid shape for slot " << i;
      return Shape(std::vector<int64_t>(shapes[i], shapes[i] + ndims[i]));
    };
    for (size_t i = 0; i < n_in; ++i) in[i] = shape_at(i);
    out.clear();
    for (size_t i = 0; i < n_out; ++i) out.push_back(shape_at(n_in + i));
    for (size_t i = 0; i < n_aux; ++i) aux[i] = shape_at(n_in + n_out + i);
  }

  void infer_type(std::vector<int>& in, std::vector<int>& out, std::vector<int>& aux) override {
    auto fn = callbacks_.get<CustomOpInferTypeFunc>(kCustomOpPropInferType);
    const size_t n_in = in.size(), n_out = list_outputs().size(), n_aux = aux.size();
    if (fn == nullptr) {  // MXNet's default: everything has the first input's type
      const int t = in.empty() ? 0 : in[0];
      out.assign(n_out, t);
      return;
    }
    std::vector<int> types(n_in + n_out + n_aux, -1);
    for (size_t i = 0; i < n_in; ++i) types[i] = in[i];
    for (size_t i = 0; i < n_aux; ++i) types[n_in + n_out + i] = aux[i];
    NANOMX_CHECK(run_user([&] {
                   return fn(static_cast<int>(types.size()), types.data(),
                             callbacks_.state(kCustomOpPropInferType));
                 }) != 0)
        << "Error in " << op_type_ << ".infer_type" << user_reason();
    for (size_t i = 0; i < n_in; ++i) in[i] = types[i];
    out.assign(types.begin() + static_cast<std::ptrdiff_t>(n_in),
               types.begin() + static_cast<std::ptrdiff_t>(n_in + n_out));
    for (size_t i = 0; i < n_aux; ++i) aux[i] = types[n_in + n_out + i];
  }

  std::vector<int> declare_backward_dependency(std::span<const int> out_grad,
                                               std::span<const int> in_data,
                                               std::span<const int> out_data) override {
    auto fn = callbacks_.get<CustomOpBwdDepFunc>(kCustomOpPropDeclareBackwardDependency);
    std::vector<int> all(out_grad.begin(), out_grad.end());
    all.insert(all.end(), in_data.begin(), in_data.end());
    all.insert(all.end(), out_data.begin(), out_data.end());
    if (fn == nullptr) return all;  // MXNet's default (need_top_grad): everything
    int num = 0;
    int* deps = nullptr;
    NANOMX_CHECK(run_user([&] {
                   return fn(out_grad.data(), in_data.data(), out_data.data(), &num, &deps,
                             callbacks_.state(kCustomOpPropDeclareBackwardDependency));
                 }) != 0)
        << "Error in " << op_type_ << ".declare_backward_dependency" << user_reason();
    NANOMX_CHECK(num >= 0 && (num == 0 || deps != nullptr))
        << op_type_ << ".declare_backward_dependency returned an invalid list";
    return std::vector<int>(deps, deps + num);
  }

  std::unique_ptr<custom::Operator> create_operator(nanomx::Context ctx,
                                                    const std::vector<Shape>& shapes,
                                                    const std::vector<int>& dtypes) override {
    auto fn = callbacks_.get<CustomOpCreateFunc>(kCustomOpPropCreateOperator);
    NANOMX_CHECK(fn != nullptr) << "custom operator " << op_type_
                                << ": no create_operator callback";
    std::vector<std::vector<unsigned>> dims;
    std::vector<unsigned*> shape_ptrs;
    std::vector<int> ndims;
    for (const Shape& s : shapes) {
      dims.emplace_back(s.begin(), s.end());
      ndims.push_back(s.ndim());
    }
    for (auto& d : dims) shape_ptrs.push_back(d.data());
    const std::string ctx_text = ctx.str();
    MXCallbackList ret{0, nullptr, nullptr};
    NANOMX_CHECK(run_user([&] {
                   return fn(ctx_text.c_str(), static_cast<int>(shapes.size()), shape_ptrs.data(),
                             ndims.data(), dtypes.data(), &ret,
                             callbacks_.state(kCustomOpPropCreateOperator));
                 }) != 0)
        << "Error in " << op_type_ << ".create_operator" << user_reason();
    return std::make_unique<CApiOperator>(op_type_, ret);
  }

  bool is_train() const override { return is_train_; }

 private:
  std::vector<std::string> list(int index, const char* what, std::vector<std::string> fallback) {
    auto fn = callbacks_.get<CustomOpListFunc>(index);
    if (fn == nullptr) return fallback;
    char** names = nullptr;
    NANOMX_CHECK(run_user([&] { return fn(&names, callbacks_.state(index)); }) != 0)
        << "Error in " << op_type_ << "." << what << user_reason();
    std::vector<std::string> out;
    for (char** p = names; p != nullptr && *p != nullptr; ++p) out.emplace_back(*p);
    return out;
  }
  std::string op_type_;
  Callbacks callbacks_;
  bool is_train_;
};

}  // namespace

int MXCustomOpRegister(const char* op_type, CustomOpPropCreator creator) {
  NANOMX_API_BEGIN(MXCustomOpRegister);
  nanomx::c_api::check_not_null(op_type, "MXCustomOpRegister", "op_type");
  nanomx::c_api::check_not_null(reinterpret_cast<const void*>(creator), "MXCustomOpRegister",
                                "creator");
  custom::register_op(
      op_type,
      [creator](const std::string& type,
                const nanomx::ops::Attrs& kw) -> std::unique_ptr<custom::Prop> {
        std::vector<const char*> keys, vals;
        for (const auto& [k, v] : kw) {
          keys.push_back(k.c_str());
          vals.push_back(v.c_str());
        }
        MXCallbackList list{0, nullptr, nullptr};
        NANOMX_CHECK(run_user([&] {
                       return creator(type.c_str(), static_cast<int>(keys.size()), keys.data(),
                                      vals.data(), &list);
                     }) != 0)
            << "Error in the property creator of custom operator " << type << user_reason();
        return std::make_unique<CApiProp>(type, list, nanomx::autograd::is_training());
      });
  NANOMX_API_END();
}
