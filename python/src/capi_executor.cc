// nanomx._capi's executor functions: thin wrappers over the MXExecutor* C calls
// (nanomx/c_api_executor.h); nanomx/executor.py builds MXNet's Executor on them. Handles are
// ints; array handles returned are new (the Python side wraps each in an NDArray).
#include "capi_executor.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capi_common.h"
#include "nanomx/c_api.h"
#include "ndarray_type.h"

namespace py = pybind11;

namespace nanomx_python {
namespace {

std::vector<std::optional<uintptr_t>> handle_list(NDArrayHandle* list, uint32_t n) {
  std::vector<std::optional<uintptr_t>> out;
  for (uint32_t i = 0; i < n; ++i) {
    if (list[i] == nullptr) {
      out.emplace_back();
    } else {
      out.emplace_back(as_int(list[i]));
    }
  }
  return out;
}

std::vector<NDArrayHandle> handles(const std::vector<std::optional<uintptr_t>>& list) {
  std::vector<NDArrayHandle> out;
  for (const auto& h : list) out.push_back(h ? handle(*h) : nullptr);
  return out;
}

using Bound =
    std::tuple<uintptr_t, std::vector<std::optional<uintptr_t>>,
               std::vector<std::optional<uintptr_t>>, std::vector<std::optional<uintptr_t>>>;

}  // namespace
}  // namespace nanomx_python

void nanomx_python::add_executor_functions(py::module_& m) {
  // grad_req: req_names None with one type (all arguments) or one per argument (list_len > 0),
  // or by name.
  m.def("executor_simple_bind",
        [](uintptr_t sym, int dev_type, int dev_id, uint32_t req_list_len,
           const std::optional<std::vector<std::string>>& req_names,
           const std::vector<std::string>& req_types, const std::vector<std::string>& shape_names,
           const std::vector<int>& shape_data, const std::vector<uint32_t>& shape_idx,
           const std::vector<std::string>& dtype_names, const std::vector<int>& dtypes) -> Bound {
          auto rn = req_names ? pointers(*req_names) : std::vector<const char*>();
          auto rt = pointers(req_types);
          auto sn = pointers(shape_names);
          auto dn = pointers(dtype_names);
          uint32_t n_args = 0, n_aux = 0;
          NDArrayHandle *args = nullptr, *grads = nullptr, *aux = nullptr;
          ExecutorHandle out = nullptr;
          int shared_len = 0;
          check(MXExecutorSimpleBindEx(
              handle(sym), dev_type, dev_id, 0, nullptr, nullptr, nullptr, req_list_len,
              req_names ? rn.data() : nullptr, rt.empty() ? nullptr : rt.data(),
              static_cast<uint32_t>(sn.size()), sn.data(), shape_data.data(), shape_idx.data(),
              static_cast<uint32_t>(dn.size()), dn.data(), dtypes.data(), 0, nullptr, nullptr, 0,
              nullptr, &shared_len, nullptr, nullptr, nullptr, nullptr, &n_args, &args, &grads,
              &n_aux, &aux, nullptr, &out));
          return {as_int(out), handle_list(args, n_args), handle_list(grads, n_args),
                  handle_list(aux, n_aux)};
        });
  m.def(
      "executor_bind",
      [](uintptr_t sym, int dev_type, int dev_id, const std::vector<std::optional<uintptr_t>>& args,
         const std::vector<std::optional<uintptr_t>>& grads, std::vector<uint32_t> reqs,
         const std::vector<std::optional<uintptr_t>>& aux) {
        auto a = handles(args), g = handles(grads), x = handles(aux);
        ExecutorHandle out = nullptr;
        check(MXExecutorBindEX(handle(sym), dev_type, dev_id, 0, nullptr, nullptr, nullptr,
                               static_cast<uint32_t>(a.size()), a.data(), g.data(), reqs.data(),
                               static_cast<uint32_t>(x.size()), x.data(), nullptr, &out));
        return as_int(out);
      });
  m.def("executor_forward",
        [](uintptr_t h, bool is_train) { check(MXExecutorForward(handle(h), is_train ? 1 : 0)); });
  m.def("executor_backward",
        [](uintptr_t h, const std::vector<std::optional<uintptr_t>>& grads, bool is_train) {
          auto g = handles(grads);
          check(MXExecutorBackwardEx(handle(h), static_cast<uint32_t>(g.size()), g.data(),
                                     is_train ? 1 : 0));
        });
  m.def("executor_outputs", [](uintptr_t h) {
    uint32_t n = 0;
    NDArrayHandle* out = nullptr;
    check(MXExecutorOutputs(handle(h), &n, &out));
    std::vector<uintptr_t> result;
    for (uint32_t i = 0; i < n; ++i) result.push_back(as_int(out[i]));
    return result;
  });
  m.def("executor_print", [](uintptr_t h) {
    const char* s = nullptr;
    check(MXExecutorPrint(handle(h), &s));
    return std::string(s);
  });
  // Freeing waits for the executor's pending operations: without the GIL.
  m.def("executor_free", [](uintptr_t h) {
    int rc = 0;
    {
      py::gil_scoped_release release;
      rc = MXExecutorFree(handle(h));
    }
    check(rc);
  });
  m.def("executor_reshape",
        [](uintptr_t h, bool partial_shaping, bool allow_up_sizing, int dev_type, int dev_id,
           const std::vector<std::string>& shape_names, const std::vector<int>& shape_data,
           const std::vector<uint32_t>& shape_idx) -> Bound {
          auto sn = pointers(shape_names);
          uint32_t n_args = 0, n_aux = 0;
          NDArrayHandle *args = nullptr, *grads = nullptr, *aux = nullptr;
          ExecutorHandle out = nullptr;
          check(MXExecutorReshapeEx(
              partial_shaping ? 1 : 0, allow_up_sizing ? 1 : 0, dev_type, dev_id, 0, nullptr,
              nullptr, nullptr, static_cast<uint32_t>(sn.size()), sn.data(), shape_data.data(),
              shape_idx.data(), &n_args, &args, &grads, &n_aux, &aux, handle(h), &out));
          return {as_int(out), handle_list(args, n_args), handle_list(grads, n_args),
                  handle_list(aux, n_aux)};
        });
  // (planned bytes as MXNet counts them, bytes allocated, per output: needs a head gradient)
  m.def("executor_info", [](uintptr_t h) {
    uint64_t planned = 0, allocated = 0;
    uint32_t n = 0;
    const int* needed = nullptr;
    check(NNExecutorGetInfo(handle(h), &planned, &allocated, &n, &needed));
    return py::make_tuple(planned, allocated, std::vector<bool>(needed, needed + n));
  });
}
