// nanomx._capi's autograd functions: one thin wrapper per C call (nanomx/c_api_autograd.h).
// Handles cross as integers; backward releases the GIL (it waits on nothing, but the gradient
// operators it runs may call custom operators' Python bodies on other threads).
#include "capi_autograd.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "capi_common.h"
#include "nanomx/c_api.h"
#include "ndarray_type.h"

namespace py = pybind11;

namespace {

using nanomx_python::check;

// Integers (handles) or None (a null handle).
std::vector<NDArrayHandle> handles(const std::vector<std::optional<uintptr_t>>& list) {
  std::vector<NDArrayHandle> out;
  out.reserve(list.size());
  for (const auto& h : list) out.push_back(h ? reinterpret_cast<NDArrayHandle>(*h) : nullptr);
  return out;
}

}  // namespace

void nanomx_python::add_autograd_functions(py::module_& m) {
  m.def("autograd_set_recording", [](bool on) {
    int prev = 0;
    check(MXAutogradSetIsRecording(on ? 1 : 0, &prev));
    return prev != 0;
  });
  m.def("autograd_set_training", [](bool on) {
    int prev = 0;
    check(MXAutogradSetIsTraining(on ? 1 : 0, &prev));
    return prev != 0;
  });
  m.def("autograd_is_recording", [] {
    bool on = false;
    check(MXAutogradIsRecording(&on));
    return on;
  });
  m.def("autograd_is_training", [] {
    bool on = false;
    check(MXAutogradIsTraining(&on));
    return on;
  });
  m.def("autograd_mark_variables", [](const std::vector<std::optional<uintptr_t>>& vars,
                                      std::vector<mx_uint> reqs,
                                      const std::vector<std::optional<uintptr_t>>& grads) {
    std::vector<NDArrayHandle> v = handles(vars), g = handles(grads);
    if (reqs.size() != v.size() || g.size() != v.size()) {
      throw py::value_error("mark_variables: one gradient and one grad_req per variable");
    }
    check(MXAutogradMarkVariables(static_cast<mx_uint>(v.size()), v.data(), reqs.data(), g.data()));
  });
  // Returns the new gradient handles (empty when variables is empty).
  m.def("autograd_backward",
        [](const std::vector<std::optional<uintptr_t>>& heads,
           const std::optional<std::vector<std::optional<uintptr_t>>>& head_grads,
           const std::vector<std::optional<uintptr_t>>& variables, bool retain_graph,
           bool create_graph, bool train_mode) {
          std::vector<NDArrayHandle> h = handles(heads), v = handles(variables), hg;
          if (head_grads) hg = handles(*head_grads);
          NDArrayHandle* grads = nullptr;
          int rc = 0;
          {
            py::gil_scoped_release release;
            rc = MXAutogradBackwardEx(
                static_cast<mx_uint>(h.size()), h.data(), head_grads ? hg.data() : nullptr,
                static_cast<mx_uint>(v.size()), v.data(), retain_graph ? 1 : 0,
                create_graph ? 1 : 0, train_mode ? 1 : 0, &grads, nullptr);
          }
          check(rc);
          std::vector<uintptr_t> out;
          for (size_t i = 0; i < v.size(); ++i)
            out.push_back(reinterpret_cast<uintptr_t>(grads[i]));
          return out;
        });
  m.def("ndarray_get_grad", [](uintptr_t handle) -> std::optional<uintptr_t> {
    NDArrayHandle out = nullptr;
    check(MXNDArrayGetGrad(reinterpret_cast<NDArrayHandle>(handle), &out));
    if (out == nullptr) return std::nullopt;
    return reinterpret_cast<uintptr_t>(out);
  });
  m.def("ndarray_detach", [](uintptr_t handle) {
    NDArrayHandle out = nullptr;
    check(MXNDArrayDetach(reinterpret_cast<NDArrayHandle>(handle), &out));
    return reinterpret_cast<uintptr_t>(out);
  });
}
