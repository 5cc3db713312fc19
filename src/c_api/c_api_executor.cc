// The C API of executors (nanomx/c_api_executor.h): executors live in a handle table of their
// own kind, like symbols and arrays.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "c_api/c_api_common.h"
#include "c_api/c_api_objects.h"
#include "c_api/handle_table.h"
#include "nanomx/c_api.h"
#include "symbol/executor.h"

using nanomx::Context;
using nanomx::NDArray;
using nanomx::symbol::Executor;
using nanomx::symbol::GradReq;

namespace {

using ExecutorTable =
    nanomx::c_api::HandleTable<std::unique_ptr<Executor>, nanomx::c_api::HandleKind::kExecutor>;
ExecutorTable& executors() {
  static auto* table = new ExecutorTable;  // never destroyed: handles may be freed at exit
  return *table;
}

Executor& executor_of(ExecutorHandle h, const char* function) {
  nanomx::c_api::check_not_null(h, function, "executor");
  return *executors().get(h, function, "executor");
}

void check_out(const void* p, const char* function, const char* what) {
  nanomx::c_api::check_not_null(p, function, what);
}

void check_no_groups(uint32_t n, const char* function) {
  NANOMX_CHECK(n == 0) << function
                       << ": context groups (group2ctx) are not supported: one executor runs on "
                          "one context";
}

GradReq req_of_code(uint32_t code, const char* function) {
  switch (code) {
    case 0:
      return GradReq::kNull;
    case 1:
    case 2:
      return GradReq::kWrite;
    case 3:
      return GradReq::kAdd;
    default:
      NANOMX_THROW() << function << ": grad_req code " << code
                     << " is not one of 0 (null), 1 (write), 2 (inplace), 3 (add)";
  }
  return GradReq::kNull;
}

std::map<std::string, nanomx::ops::PartialShape> shapes_of(uint32_t n, const char** names,
                                                           const int* data, const uint32_t* idx,
                                                           const char* function) {
  std::map<std::string, nanomx::ops::PartialShape> shapes;
  if (n == 0) return shapes;
  check_out(names, function, "provided_arg_shape_names");
  check_out(idx, function, "provided_arg_shape_idx");
  for (uint32_t i = 0; i < n; ++i) {
    check_out(names[i], function, "argument name");
    std::vector<int64_t> dims;
    for (uint32_t j = idx[i]; j < idx[i + 1]; ++j) {
      NANOMX_CHECK(data[j] >= 0) << function << ": shape of " << names[i]
                                 << " has a negative dimension " << data[j];
      dims.push_back(data[j]);
    }
    NANOMX_CHECK(shapes.emplace(names[i], nanomx::Shape(dims)).second)
        << "Duplicate shapes are provided for argument " << names[i] << " in simple_bind";
  }
  return shapes;
}

thread_local std::vector<NDArrayHandle> buf_args, buf_grads, buf_aux, buf_outputs;
thread_local std::string print_buffer;
thread_local std::vector<int> info_buffer;

// New handles for an executor's arrays (none arrays: NULL).
void export_arrays(const std::vector<NDArray>& arrays, std::vector<NDArrayHandle>& buf) {
  buf.clear();
  for (const NDArray& a : arrays) {
    buf.push_back(a.is_none() ? nullptr : nanomx::c_api::ndarray_to_handle(a));
  }
}

void export_bound(const Executor& e, uint32_t* num_in_args, NDArrayHandle** in_args,
                  NDArrayHandle** arg_grads, uint32_t* num_aux_states, NDArrayHandle** aux_states,
                  const char* function) {
  check_out(num_in_args, function, "num_in_args");
  check_out(in_args, function, "in_args");
  check_out(arg_grads, function, "arg_grads");
  check_out(num_aux_states, function, "num_aux_states");
  check_out(aux_states, function, "aux_states");
  export_arrays(e.arg_arrays(), buf_args);
  export_arrays(e.grad_arrays(), buf_grads);
  export_arrays(e.aux_arrays(), buf_aux);
  *num_in_args = static_cast<uint32_t>(buf_args.size());
  *in_args = buf_args.data();
  *arg_grads = buf_grads.data();
  *num_aux_states = static_cast<uint32_t>(buf_aux.size());
  *aux_states = buf_aux.data();
}

GradReq simple_bind_req(const char* text) {
  const std::string t = text ? text : "";
  NANOMX_CHECK(t == "null" || t == "write" || t == "add")
      << "grad_req=" << t
      << " is not a valid input in simple_bind; only 'null', 'write', and 'add' are supported";
  return nanomx::symbol::parse_grad_req(t);
}

}  // namespace

int MXExecutorBindEX(SymbolHandle symbol_handle, int dev_type, int dev_id, uint32_t num_map_keys,
                     const char** /*map_keys*/, const int* /*map_dev_types*/,
                     const int* /*map_dev_ids*/, uint32_t len, NDArrayHandle* in_args,
                     NDArrayHandle* arg_grad_store, uint32_t* grad_req_type,
                     uint32_t aux_states_len, NDArrayHandle* aux_states,
                     ExecutorHandle /*shared_exec*/, ExecutorHandle* out) {
  NANOMX_API_BEGIN(MXExecutorBindEX);
  const char* fn = "MXExecutorBindEX";
  const auto& sym = nanomx::c_api::symbol_from_handle(symbol_handle, fn, "symbol_handle");
  check_out(out, fn, "out");
  check_no_groups(num_map_keys, fn);
  const Context ctx = nanomx::make_context(dev_type, dev_id);
  std::vector<NDArray> args, grads, aux;
  std::vector<GradReq> reqs;
  if (len > 0) check_out(in_args, fn, "in_args");
  for (uint32_t i = 0; i < len; ++i) {
    args.push_back(nanomx::c_api::ndarray_from_handle(in_args[i], fn, "in_args"));
    NDArray g;
    if (arg_grad_store != nullptr && arg_grad_store[i] != nullptr)
      g = nanomx::c_api::ndarray_from_handle(arg_grad_store[i], fn, "arg_grad_store");
    grads.push_back(g);
    reqs.push_back(grad_req_type ? req_of_code(grad_req_type[i], fn) : GradReq::kNull);
  }
  if (aux_states_len > 0) check_out(aux_states, fn, "aux_states");
  for (uint32_t i = 0; i < aux_states_len; ++i)
    aux.push_back(nanomx::c_api::ndarray_from_handle(aux_states[i], fn, "aux_states"));
  auto e = std::make_unique<Executor>(sym, ctx, std::move(args), std::move(grads), std::move(reqs),
                                      std::move(aux));
  *out = executors().emplace(std::move(e));
  NANOMX_API_END();
}

int MXExecutorSimpleBindEx(
    SymbolHandle symbol_handle, int dev_type, int dev_id, uint32_t num_g2c_keys,
    const char** /*g2c_keys*/, const int* /*g2c_dev_types*/, const int* /*g2c_dev_ids*/,
    uint32_t provided_grad_req_list_len, const char** provided_grad_req_names,
    const char** provided_grad_req_types, uint32_t num_provided_arg_shapes,
    const char** provided_arg_shape_names, const int* provided_arg_shape_data,
    const uint32_t* provided_arg_shape_idx, uint32_t num_provided_arg_dtypes,
    const char** provided_arg_dtype_names, const int* provided_arg_dtypes,
    uint32_t num_provided_arg_stypes, const char** /*provided_arg_stype_names*/,
    const int* provided_arg_stypes, uint32_t num_shared_arg_names,
    const char** /*shared_arg_name_list*/, int* shared_buffer_len,
    const char** /*shared_buffer_name_list*/, NDArrayHandle* /*shared_buffer_handle_list*/,
    const char*** updated_shared_buffer_name_list,
    NDArrayHandle** updated_shared_buffer_handle_list, uint32_t* num_in_args,
    NDArrayHandle** in_args, NDArrayHandle** arg_grads, uint32_t* num_aux_states,
    NDArrayHandle** aux_states, ExecutorHandle /*shared_exec_handle*/, ExecutorHandle* out) {
  NANOMX_API_BEGIN(MXExecutorSimpleBindEx);
  const char* fn = "MXExecutorSimpleBindEx";
  const auto& sym = nanomx::c_api::symbol_from_handle(symbol_handle, fn, "symbol_handle");
  check_out(out, fn, "out");
  check_no_groups(num_g2c_keys, fn);
  for (uint32_t i = 0; i < num_provided_arg_stypes; ++i) {
    NANOMX_CHECK(provided_arg_stypes[i] == 0 || provided_arg_stypes[i] == -1)
        << fn << ": only the default storage type is supported";
  }
  NANOMX_CHECK(num_shared_arg_names == 0 &&
               (shared_buffer_len == nullptr || *shared_buffer_len <= 0))
      << fn << ": shared arguments and shared buffers are not supported";
  const Context ctx = nanomx::make_context(dev_type, dev_id);
  const std::vector<std::string> names = sym.list_arguments();
  // grad_req: one for all, one per argument, or by name.
  std::vector<GradReq> reqs(names.size(), GradReq::kNull);
  if (provided_grad_req_types != nullptr) {
    if (provided_grad_req_list_len == 0) {
      reqs.assign(names.size(), simple_bind_req(provided_grad_req_types[0]));
    } else if (provided_grad_req_names == nullptr) {
      NANOMX_CHECK(provided_grad_req_list_len == names.size())
          << fn << ": " << provided_grad_req_list_len << " grad_req values given for "
          << names.size() << " arguments";
      for (size_t i = 0; i < names.size(); ++i)
        reqs[i] = simple_bind_req(provided_grad_req_types[i]);
    } else {
      for (uint32_t k = 0; k < provided_grad_req_list_len; ++k) {
        bool found = false;
        for (size_t i = 0; i < names.size(); ++i) {
          if (names[i] == provided_grad_req_names[k]) {
            reqs[i] = simple_bind_req(provided_grad_req_types[k]);
            found = true;
          }
        }
        NANOMX_CHECK(found) << fn << ": grad_req given for '" << provided_grad_req_names[k]
                            << "', which is not an argument of the symbol";
      }
    }
  }
  const auto shapes = shapes_of(num_provided_arg_shapes, provided_arg_shape_names,
                                provided_arg_shape_data, provided_arg_shape_idx, fn);
  std::map<std::string, nanomx::DType> types;
  for (uint32_t i = 0; i < num_provided_arg_dtypes; ++i) {
    NANOMX_CHECK(nanomx::dtype_valid(provided_arg_dtypes[i]))
        << fn << ": dtype code " << provided_arg_dtypes[i] << " of " << provided_arg_dtype_names[i]
        << " is not a known type";
    types[provided_arg_dtype_names[i]] = static_cast<nanomx::DType>(provided_arg_dtypes[i]);
  }
  auto e = Executor::simple_bind(sym, ctx, shapes, types, std::move(reqs));
  if (updated_shared_buffer_name_list) *updated_shared_buffer_name_list = nullptr;
  if (updated_shared_buffer_handle_list) *updated_shared_buffer_handle_list = nullptr;
  export_bound(*e, num_in_args, in_args, arg_grads, num_aux_states, aux_states, fn);
  *out = executors().emplace(std::move(e));
  NANOMX_API_END();
}

int MXExecutorForward(ExecutorHandle handle, int is_train) {
  NANOMX_API_BEGIN(MXExecutorForward);
  executor_of(handle, "MXExecutorForward").forward(is_train != 0);
  NANOMX_API_END();
}

int MXExecutorBackward(ExecutorHandle handle, uint32_t len, NDArrayHandle* head_grads) {
  return MXExecutorBackwardEx(handle, len, head_grads, 1);
}

int MXExecutorBackwardEx(ExecutorHandle handle, uint32_t len, NDArrayHandle* head_grads,
                         int is_train) {
  NANOMX_API_BEGIN(MXExecutorBackwardEx);
  const char* fn = "MXExecutorBackwardEx";
  Executor& e = executor_of(handle, fn);
  std::vector<NDArray> grads;
  if (len > 0) check_out(head_grads, fn, "head_grads");
  for (uint32_t i = 0; i < len; ++i) {
    grads.push_back(head_grads[i]
                        ? nanomx::c_api::ndarray_from_handle(head_grads[i], fn, "head_grads")
                        : NDArray());
  }
  e.backward(grads, is_train != 0);
  NANOMX_API_END();
}

int MXExecutorOutputs(ExecutorHandle handle, uint32_t* out_size, NDArrayHandle** out) {
  NANOMX_API_BEGIN(MXExecutorOutputs);
  const char* fn = "MXExecutorOutputs";
  Executor& e = executor_of(handle, fn);
  check_out(out_size, fn, "out_size");
  check_out(out, fn, "out");
  export_arrays(e.outputs(), buf_outputs);
  *out_size = static_cast<uint32_t>(buf_outputs.size());
  *out = buf_outputs.data();
  NANOMX_API_END();
}

int MXExecutorPrint(ExecutorHandle handle, const char** out_str) {
  NANOMX_API_BEGIN(MXExecutorPrint);
  Executor& e = executor_of(handle, "MXExecutorPrint");
  check_out(out_str, "MXExecutorPrint", "out_str");
  print_buffer = e.debug_str();
  *out_str = print_buffer.c_str();
  NANOMX_API_END();
}

int MXExecutorFree(ExecutorHandle handle) {
  NANOMX_API_BEGIN(MXExecutorFree);
  nanomx::c_api::check_not_null(handle, "MXExecutorFree", "executor");
  // Destroyed outside the table's lock: the destructor waits for the executor's operations.
  std::unique_ptr<Executor> e = executors().release(handle, "MXExecutorFree", "executor");
  e.reset();
  NANOMX_API_END();
}

int MXExecutorReshapeEx(int partial_shaping, int allow_up_sizing, int dev_type, int dev_id,
                        uint32_t num_map_keys, const char** /*map_keys*/,
                        const int* /*map_dev_types*/, const int* /*map_dev_ids*/,
                        uint32_t num_provided_arg_shapes, const char** provided_arg_shape_names,
                        const int* provided_arg_shape_data, const uint32_t* provided_arg_shape_idx,
                        uint32_t* num_in_args, NDArrayHandle** in_args, NDArrayHandle** arg_grads,
                        uint32_t* num_aux_states, NDArrayHandle** aux_states,
                        ExecutorHandle shared_exec, ExecutorHandle* out) {
  NANOMX_API_BEGIN(MXExecutorReshapeEx);
  const char* fn = "MXExecutorReshapeEx";
  Executor& old = executor_of(shared_exec, fn);
  check_out(out, fn, "out");
  check_no_groups(num_map_keys, fn);
  NANOMX_CHECK(nanomx::make_context(dev_type, dev_id) == old.context())
      << fn << ": the context must be the executor's (" << old.context().str() << ")";
  std::map<std::string, nanomx::Shape> shapes;
  for (const auto& [k, v] : shapes_of(num_provided_arg_shapes, provided_arg_shape_names,
                                      provided_arg_shape_data, provided_arg_shape_idx, fn)) {
    shapes[k] = v.shape();
  }
  auto e = old.reshape(shapes, partial_shaping != 0, allow_up_sizing != 0);
  export_bound(*e, num_in_args, in_args, arg_grads, num_aux_states, aux_states, fn);
  *out = executors().emplace(std::move(e));
  NANOMX_API_END();
}

int NNExecutorGetInfo(ExecutorHandle handle, uint64_t* planned_bytes, uint64_t* allocated_bytes,
                      uint32_t* num_outputs, const int** head_grad_needed) {
  NANOMX_API_BEGIN(NNExecutorGetInfo);
  const char* fn = "NNExecutorGetInfo";
  Executor& e = executor_of(handle, fn);
  if (planned_bytes) *planned_bytes = e.planned_bytes();
  if (allocated_bytes) *allocated_bytes = e.allocated_bytes();
  info_buffer.assign(e.head_grad_needed().begin(), e.head_grad_needed().end());
  if (num_outputs) *num_outputs = static_cast<uint32_t>(info_buffer.size());
  if (head_grad_needed) *head_grad_needed = info_buffer.data();
  NANOMX_API_END();
}
