// The C API of autograd (declared in nanomx/c_api_autograd.h).
#include "nanomx/c_api_autograd.h"

#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "c_api/c_api_common.h"
#include "c_api/ndarray_handles.h"

using nanomx::NDArray;
using nanomx::c_api::check_not_null;
using nanomx::c_api::ndarray_of;

namespace {

thread_local std::vector<NDArrayHandle> grad_list;
thread_local std::vector<int> grad_stype_list;

std::vector<NDArray> arrays_of(const NDArrayHandle* handles, mx_uint n, const char* function,
                               const char* what, bool none_for_null = false) {
  std::vector<NDArray> out;
  out.reserve(n);
  for (mx_uint i = 0; i < n; ++i) {
    if (none_for_null && handles[i] == nullptr) {
      out.emplace_back();
      continue;
    }
    const std::string argument = std::string(what) + " #" + std::to_string(i);
    out.push_back(ndarray_of(handles[i], function, argument.c_str()));
  }
  return out;
}

}  // namespace

int MXAutogradSetIsRecording(int is_recording, int* prev) {
  NANOMX_API_BEGIN(MXAutogradSetIsRecording);
  check_not_null(prev, "MXAutogradSetIsRecording", "prev");
  *prev = nanomx::autograd::set_recording(is_recording != 0) ? 1 : 0;
  NANOMX_API_END();
}

int MXAutogradSetIsTraining(int is_training, int* prev) {
  NANOMX_API_BEGIN(MXAutogradSetIsTraining);
  check_not_null(prev, "MXAutogradSetIsTraining", "prev");
  *prev = nanomx::autograd::set_training(is_training != 0) ? 1 : 0;
  NANOMX_API_END();
}

int MXAutogradIsRecording(bool* curr) {
  NANOMX_API_BEGIN(MXAutogradIsRecording);
  check_not_null(curr, "MXAutogradIsRecording", "curr");
  *curr = nanomx::autograd::is_recording();
  NANOMX_API_END();
}

int MXAutogradIsTraining(bool* curr) {
  NANOMX_API_BEGIN(MXAutogradIsTraining);
  check_not_null(curr, "MXAutogradIsTraining", "curr");
  *curr = nanomx::autograd::is_training();
  NANOMX_API_END();
}

int MXAutogradMarkVariables(mx_uint num_var, NDArrayHandle* var_handles, mx_uint* reqs_array,
                            NDArrayHandle* grad_handles) {
  NANOMX_API_BEGIN(MXAutogradMarkVariables);
  constexpr const char* kFunction = "MXAutogradMarkVariables";
  if (num_var > 0) {
    check_not_null(var_handles, kFunction, "var_handles");
    check_not_null(reqs_array, kFunction, "reqs_array");
    check_not_null(grad_handles, kFunction, "grad_handles");
  }
  std::vector<NDArray> vars = arrays_of(var_handles, num_var, kFunction, "variable");
  const std::vector<NDArray> grads = arrays_of(grad_handles, num_var, kFunction, "gradient");
  std::vector<nanomx::autograd::GradReq> reqs;
  for (mx_uint i = 0; i < num_var; ++i) {
    reqs.push_back(static_cast<nanomx::autograd::GradReq>(reqs_array[i]));
  }
  nanomx::autograd::mark_variables(vars, grads, reqs);
  for (mx_uint i = 0; i < num_var; ++i) {
    ndarray_of(var_handles[i], kFunction, "variable").set_autograd_entry(vars[i].autograd_entry());
  }
  NANOMX_API_END();
}

int MXAutogradBackwardEx(mx_uint num_output, NDArrayHandle* output_handles,
                         NDArrayHandle* ograd_handles, mx_uint num_variables,
                         NDArrayHandle* var_handles, int retain_graph, int create_graph,
                         int is_train, NDArrayHandle** grad_handles, int** grad_stypes) {
  NANOMX_API_BEGIN(MXAutogradBackwardEx);
  constexpr const char* kFunction = "MXAutogradBackwardEx";
  if (num_output > 0) check_not_null(output_handles, kFunction, "output_handles");
  if (num_variables > 0) {
    check_not_null(var_handles, kFunction, "var_handles");
    check_not_null(grad_handles, kFunction, "grad_handles");
  }
  const std::vector<NDArray> heads = arrays_of(output_handles, num_output, kFunction, "head");
  std::vector<NDArray> head_grads;
  if (ograd_handles != nullptr) {
    head_grads = arrays_of(ograd_handles, num_output, kFunction, "head gradient", true);
  }
  const std::vector<NDArray> vars = arrays_of(var_handles, num_variables, kFunction, "variable");
  std::vector<NDArray> grads = nanomx::autograd::backward(
      heads, head_grads, vars, retain_graph != 0, create_graph != 0, is_train != 0);
  if (num_variables > 0) {
    grad_list.clear();
    grad_stype_list.assign(grads.size(), 0);
    for (NDArray& g : grads) grad_list.push_back(nanomx::c_api::new_ndarray_handle(std::move(g)));
    *grad_handles = grad_list.data();
    if (grad_stypes != nullptr) *grad_stypes = grad_stype_list.data();
  }
  NANOMX_API_END();
}

int MXAutogradBackward(mx_uint num_output, NDArrayHandle* output_handles,
                       NDArrayHandle* ograd_handles, int retain_graph) {
  NANOMX_API_BEGIN(MXAutogradBackward);
  if (num_output > 0) check_not_null(output_handles, "MXAutogradBackward", "output_handles");
  const std::vector<NDArray> heads =
      arrays_of(output_handles, num_output, "MXAutogradBackward", "head");
  std::vector<NDArray> head_grads;
  if (ograd_handles != nullptr) {
    head_grads = arrays_of(ograd_handles, num_output, "MXAutogradBackward", "head gradient", true);
  }
  nanomx::autograd::backward(heads, head_grads, {}, retain_graph != 0, false, true);
  NANOMX_API_END();
}

int MXNDArrayGetGrad(NDArrayHandle handle, NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArrayGetGrad);
  check_not_null(out, "MXNDArrayGetGrad", "out");
  NDArray grad = nanomx::autograd::grad_of(ndarray_of(handle, "MXNDArrayGetGrad", "handle"));
  *out = grad.is_none() ? nullptr : nanomx::c_api::new_ndarray_handle(std::move(grad));
  NANOMX_API_END();
}

int MXNDArrayDetach(NDArrayHandle handle, NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArrayDetach);
  check_not_null(out, "MXNDArrayDetach", "out");
  *out =
      nanomx::c_api::new_ndarray_handle(ndarray_of(handle, "MXNDArrayDetach", "handle").detach());
  NANOMX_API_END();
}
