// The C API of arrays and imperative operators (declared in nanomx/c_api_ndarray.h).
#include "nanomx/c_api_ndarray.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/autograd.h"
#include "c_api/c_api_common.h"
#include "c_api/c_api_objects.h"
#include "c_api/handle_table.h"
#include "c_api/ndarray_handles.h"
#include "nanomx/gpu.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/registry.h"

using nanomx::NDArray;
using nanomx::c_api::check_not_null;

namespace {

// Every NDArray handle given out and not freed yet (handle_table.h): a stale, double-freed or
// made-up handle is an error, never dereferenced. Never destroyed: handles may be freed during
// static destruction.
using ArrayTable = nanomx::c_api::HandleTable<NDArray, nanomx::c_api::HandleKind::kNDArray>;
ArrayTable& arrays() {
  static auto* table = new ArrayTable;
  return *table;
}

NDArray& array_of(NDArrayHandle handle, const char* function, const char* argument = "handle") {
  check_not_null(handle, function, argument);
  return arrays().get(handle, function, argument);
}

// As array_of for a list of handles: list[i] = the array of handles[i].
template <class List>
void arrays_of(const NDArrayHandle* handles, size_t n, const char* function, List& list) {
  const ArrayTable& table = arrays();
  for (size_t i = 0; i < n; ++i) {
    check_not_null(handles[i], function, "array handle");
    const NDArray* array = table.find(handles[i]);
    if (array == nullptr) {
      const std::string argument = "array handle #" + std::to_string(i) + " of the list";
      table.fail(handles[i], function, argument.c_str());
    }
    list[i] = *array;
  }
}

NDArrayHandle new_handle(NDArray array) { return arrays().emplace(std::move(array)); }

// Frees a handle; the array itself is released after the table's lock is dropped (that may push
// its storage's deletion to the engine).
void free_handle(NDArrayHandle handle) {
  NDArray released = arrays().release(handle, "MXNDArrayFree", "handle");
}

// Operators are never unregistered, so each has one handle for the process's life.
using OpTable = nanomx::c_api::HandleTable<const nanomx::ops::Op*, nanomx::c_api::HandleKind::kOp>;
OpTable& ops_table() {
  static auto* table = new OpTable;
  return *table;
}

OpHandle op_handle_of(const nanomx::ops::Op& op) {
  static std::mutex mutex;
  static auto* handles = new std::unordered_map<const nanomx::ops::Op*, OpHandle>;
  std::lock_guard lock(mutex);
  auto [it, inserted] = handles->try_emplace(&op, nullptr);
  if (inserted) {
    try {
      it->second = ops_table().emplace(&op);
    } catch (...) {
      handles->erase(it);
      throw;
    }
  }
  return it->second;
}

const nanomx::ops::Op& op_of(AtomicSymbolCreator creator, const char* function) {
  check_not_null(creator, function, "op handle");
  return *ops_table().get(creator, function, "op handle");
}

// Up to N arrays on the stack, more on the heap: the array lists of one C call (only the
// arrays in use are constructed).
template <size_t N>
class ArrayList {
 public:
  explicit ArrayList(size_t n) : list_(n) {}
  NDArray& operator[](size_t i) { return list_[i]; }
  std::span<const NDArray> span() const { return list_.span(); }

 private:
  nanomx::ops::SmallVector<NDArray, N> list_;
};

thread_local std::vector<int> shape_buffer;
thread_local std::vector<int64_t> shape64_buffer;
thread_local std::string bytes_buffer;
// Each function that returns a list keeps its own buffers (valid until its next call).
thread_local std::vector<NDArrayHandle> load_handles;
thread_local std::vector<std::string> load_names;
thread_local std::vector<const char*> load_name_pointers;
thread_local std::vector<std::string> op_names;
thread_local std::vector<const char*> op_name_pointers;
thread_local NDArrayHandle invoke_output = nullptr;      // trivial: no per-access TLS init check
thread_local std::vector<NDArrayHandle> invoke_outputs;  // operators with several outputs
thread_local nanomx::ops::Attrs invoke_attrs;
thread_local std::vector<const char*> info_names;
thread_local std::vector<const char*> info_types;
thread_local std::vector<const char*> info_descriptions;

}  // namespace

nanomx::NDArray& nanomx::c_api::ndarray_from_handle(NDArrayHandle handle, const char* function,
                                                    const char* argument) {
  return array_of(handle, function, argument);
}
NDArrayHandle nanomx::c_api::ndarray_to_handle(NDArray array) {
  return new_handle(std::move(array));
}

int MXNDArrayCreateNone(NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArrayCreateNone);
  check_not_null(out, "MXNDArrayCreateNone", "out");
  *out = new_handle(NDArray());
  NANOMX_API_END();
}

int MXNDArrayCreateEx(const mx_uint* shape, mx_uint ndim, int dev_type, int dev_id,
                      int /*delay_alloc*/, int dtype, NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArrayCreateEx);
  check_not_null(out, "MXNDArrayCreateEx", "out");
  if (ndim > 0) check_not_null(shape, "MXNDArrayCreateEx", "shape");
  NANOMX_CHECK(nanomx::dtype_valid(dtype))
      << "MXNDArrayCreateEx: unsupported dtype " << dtype
      << " (valid: 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64)";
  // The limit of the .params format (docs/mxnet-compat.md#file-formats): an array that could not
  // be saved is refused here, and a wild ndim never reaches an allocation.
  constexpr mx_uint kMaxNDim = 32;
  NANOMX_CHECK(ndim <= kMaxNDim) << "MXNDArrayCreateEx: ndim " << ndim << " is out of range "
                                 << "(expected 0.." << kMaxNDim << ")";
  std::vector<int64_t> dims(shape, shape + ndim);
  const size_t element_size = nanomx::dtype_size(static_cast<nanomx::DType>(dtype));
  uint64_t bytes = element_size;
  for (int64_t d : dims) {
    NANOMX_CHECK(!__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) &&
                 bytes <= static_cast<uint64_t>(INT64_MAX))
        << "MXNDArrayCreateEx: shape " << nanomx::Shape(dims) << " of " << element_size
        << "-byte elements is too large (more than 2^63 bytes)";
  }
  try {
    *out = new_handle(NDArray(nanomx::Shape(dims), nanomx::make_context(dev_type, dev_id),
                              static_cast<nanomx::DType>(dtype)));
  } catch (const std::bad_alloc&) {
    NANOMX_THROW() << "MXNDArrayCreateEx: out of memory allocating " << bytes
                   << " bytes for an array of shape " << nanomx::Shape(dims);
  }
  NANOMX_API_END();
}

int MXNDArrayFree(NDArrayHandle handle) {
  NANOMX_API_BEGIN(MXNDArrayFree);
  if (handle == nullptr) return 0;  // as free(NULL)
  free_handle(handle);
  NANOMX_API_END();
}

int MXNDArrayGetShapeEx(NDArrayHandle handle, int* out_dim, const int** out_pdata) {
  NANOMX_API_BEGIN(MXNDArrayGetShapeEx);
  const NDArray& a = array_of(handle, "MXNDArrayGetShapeEx");
  check_not_null(out_dim, "MXNDArrayGetShapeEx", "out_dim");
  check_not_null(out_pdata, "MXNDArrayGetShapeEx", "out_pdata");
  shape_buffer.clear();
  for (int64_t d : a.shape().dims()) {
    NANOMX_CHECK(d <= INT32_MAX) << "MXNDArrayGetShapeEx: dimension " << d
                                 << " does not fit in int; use MXNDArrayGetShapeEx64";
    shape_buffer.push_back(static_cast<int>(d));
  }
  *out_dim = a.is_none() ? 0 : a.shape().ndim();
  *out_pdata = shape_buffer.data();
  NANOMX_API_END();
}

int MXNDArrayGetShapeEx64(NDArrayHandle handle, int* out_dim, const int64_t** out_pdata) {
  NANOMX_API_BEGIN(MXNDArrayGetShapeEx64);
  const NDArray& a = array_of(handle, "MXNDArrayGetShapeEx64");
  check_not_null(out_dim, "MXNDArrayGetShapeEx64", "out_dim");
  check_not_null(out_pdata, "MXNDArrayGetShapeEx64", "out_pdata");
  shape64_buffer.assign(a.shape().begin(), a.shape().end());
  *out_dim = a.is_none() ? 0 : a.shape().ndim();
  *out_pdata = shape64_buffer.data();
  NANOMX_API_END();
}

int MXNDArrayGetDType(NDArrayHandle handle, int* out_dtype) {
  NANOMX_API_BEGIN(MXNDArrayGetDType);
  const NDArray& a = array_of(handle, "MXNDArrayGetDType");
  check_not_null(out_dtype, "MXNDArrayGetDType", "out_dtype");
  *out_dtype = a.is_none() ? -1 : static_cast<int>(a.dtype());
  NANOMX_API_END();
}

int MXNDArrayGetContext(NDArrayHandle handle, int* out_dev_type, int* out_dev_id) {
  NANOMX_API_BEGIN(MXNDArrayGetContext);
  const NDArray& a = array_of(handle, "MXNDArrayGetContext");
  check_not_null(out_dev_type, "MXNDArrayGetContext", "out_dev_type");
  check_not_null(out_dev_id, "MXNDArrayGetContext", "out_dev_id");
  *out_dev_type = static_cast<int>(a.ctx().dev_type);
  *out_dev_id = a.ctx().dev_id;
  NANOMX_API_END();
}

int MXNDArraySyncCopyFromCPU(NDArrayHandle handle, const void* data, size_t size) {
  NANOMX_API_BEGIN(MXNDArraySyncCopyFromCPU);
  const NDArray& a = array_of(handle, "MXNDArraySyncCopyFromCPU");
  NANOMX_CHECK(!a.is_none()) << "MXNDArraySyncCopyFromCPU: the array is none (no shape)";
  NANOMX_CHECK(size == static_cast<size_t>(a.size()))
      << "MXNDArraySyncCopyFromCPU: " << size << " elements given, the array of shape " << a.shape()
      << " has " << a.size();
  a.sync_copy_from_cpu(data, a.nbytes());
  NANOMX_API_END();
}

int MXNDArraySyncCopyToCPU(NDArrayHandle handle, void* data, size_t size) {
  NANOMX_API_BEGIN(MXNDArraySyncCopyToCPU);
  const NDArray& a = array_of(handle, "MXNDArraySyncCopyToCPU");
  NANOMX_CHECK(!a.is_none()) << "MXNDArraySyncCopyToCPU: the array is none (no shape)";
  NANOMX_CHECK(size == static_cast<size_t>(a.size()))
      << "MXNDArraySyncCopyToCPU: room for " << size << " elements given, the array of shape "
      << a.shape() << " has " << a.size();
  a.sync_copy_to_cpu(data, a.nbytes());
  NANOMX_API_END();
}

int MXNDArrayWaitToRead(NDArrayHandle handle) {
  NANOMX_API_BEGIN(MXNDArrayWaitToRead);
  array_of(handle, "MXNDArrayWaitToRead").wait_to_read();
  NANOMX_API_END();
}

int MXNDArrayWaitToWrite(NDArrayHandle handle) {
  NANOMX_API_BEGIN(MXNDArrayWaitToWrite);
  array_of(handle, "MXNDArrayWaitToWrite").wait_to_write();
  NANOMX_API_END();
}

int MXNDArrayWaitAll() {
  NANOMX_API_BEGIN(MXNDArrayWaitAll);
  nanomx::engine::Engine::get().wait_all();
  NANOMX_API_END();
}

int MXNDArraySlice(NDArrayHandle handle, mx_uint slice_begin, mx_uint slice_end,
                   NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArraySlice);
  const NDArray& a = array_of(handle, "MXNDArraySlice");
  check_not_null(out, "MXNDArraySlice", "out");
  *out = new_handle(a.slice(slice_begin, slice_end));
  NANOMX_API_END();
}

int MXNDArrayAt(NDArrayHandle handle, mx_uint idx, NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArrayAt);
  const NDArray& a = array_of(handle, "MXNDArrayAt");
  check_not_null(out, "MXNDArrayAt", "out");
  *out = new_handle(a.at(idx));
  NANOMX_API_END();
}

int MXNDArrayReshape64(NDArrayHandle handle, int ndim, dim_t* dims, bool reverse,
                       NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArrayReshape64);
  const NDArray& a = array_of(handle, "MXNDArrayReshape64");
  check_not_null(out, "MXNDArrayReshape64", "out");
  // A spec entry is a dimension or one of MXNet's codes (-4 takes two more entries), so a valid
  // spec for at most 32 dimensions has at most 64 entries; a wild ndim never allocates.
  NANOMX_CHECK(ndim >= 0 && ndim <= 64)
      << "MXNDArrayReshape64: ndim " << ndim << " is out of range (expected 0..64)";
  if (ndim > 0) check_not_null(dims, "MXNDArrayReshape64", "dims");
  const std::vector<int64_t> spec(dims, dims + ndim);
  NDArray view = a.reshape(nanomx::ops::infer_reshape(spec, a.shape(), reverse));
  // While recording, a view of an array in a graph is recorded as the Reshape it is (MXNet's
  // ReshapeWithRecord), so that gradients flow through x.reshape(...).
  if (nanomx::autograd::is_recording() && nanomx::autograd::in_graph(a)) {
    static const nanomx::ops::Op& reshape = nanomx::ops::get_op("Reshape");
    const nanomx::ops::Attrs attrs = {{"shape", view.shape().str()}};
    nanomx::autograd::record(reshape, attrs, {&a, 1}, {&view, 1});
  }
  *out = new_handle(std::move(view));
  NANOMX_API_END();
}

int MXNDArraySave(const char* fname, mx_uint num_args, NDArrayHandle* args, const char** keys) {
  NANOMX_API_BEGIN(MXNDArraySave);
  check_not_null(fname, "MXNDArraySave", "fname");
  if (num_args > 0) check_not_null(args, "MXNDArraySave", "args");
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  for (mx_uint i = 0; i < num_args; ++i) {
    arrays.push_back(array_of(args[i], "MXNDArraySave"));
    if (keys != nullptr) {
      check_not_null(keys[i], "MXNDArraySave", "key");
      names.emplace_back(keys[i]);
    }
  }
  nanomx::save_file(fname, arrays, names);
  NANOMX_API_END();
}

int MXNDArrayLoad(const char* fname, mx_uint* out_size, NDArrayHandle** out_arr,
                  mx_uint* out_name_size, const char*** out_names) {
  NANOMX_API_BEGIN(MXNDArrayLoad);
  check_not_null(fname, "MXNDArrayLoad", "fname");
  check_not_null(out_size, "MXNDArrayLoad", "out_size");
  check_not_null(out_arr, "MXNDArrayLoad", "out_arr");
  check_not_null(out_name_size, "MXNDArrayLoad", "out_name_size");
  check_not_null(out_names, "MXNDArrayLoad", "out_names");
  nanomx::LoadedArrays loaded = nanomx::load_file(fname);
  load_handles.clear();
  for (NDArray& a : loaded.arrays) load_handles.push_back(new_handle(std::move(a)));
  load_names = std::move(loaded.names);
  load_name_pointers.clear();
  for (const std::string& n : load_names) load_name_pointers.push_back(n.c_str());
  *out_size = static_cast<mx_uint>(load_handles.size());
  *out_arr = load_handles.data();
  *out_name_size = static_cast<mx_uint>(load_name_pointers.size());
  *out_names = load_name_pointers.data();
  NANOMX_API_END();
}

int MXNDArraySaveRawBytes(NDArrayHandle handle, size_t* out_size, const char** out_buf) {
  NANOMX_API_BEGIN(MXNDArraySaveRawBytes);
  const NDArray& a = array_of(handle, "MXNDArraySaveRawBytes");
  check_not_null(out_size, "MXNDArraySaveRawBytes", "out_size");
  check_not_null(out_buf, "MXNDArraySaveRawBytes", "out_buf");
  bytes_buffer.clear();
  nanomx::save_blob(a, bytes_buffer);
  *out_size = bytes_buffer.size();
  *out_buf = bytes_buffer.data();
  NANOMX_API_END();
}

int MXNDArrayLoadFromRawBytes(const void* buf, size_t size, NDArrayHandle* out) {
  NANOMX_API_BEGIN(MXNDArrayLoadFromRawBytes);
  check_not_null(out, "MXNDArrayLoadFromRawBytes", "out");
  *out = new_handle(nanomx::load_blob(buf, size, "raw bytes"));
  NANOMX_API_END();
}

int MXGetDTypeTable(mx_uint* out_size, const int** out_codes, const char*** out_names,
                    const mx_uint** out_sizes) {
  NANOMX_API_BEGIN(MXGetDTypeTable);
  check_not_null(out_size, "MXGetDTypeTable", "out_size");
  check_not_null(out_codes, "MXGetDTypeTable", "out_codes");
  check_not_null(out_names, "MXGetDTypeTable", "out_names");
  check_not_null(out_sizes, "MXGetDTypeTable", "out_sizes");
  // Built once from nanomx/dtype.h, the one table; never freed, so the pointers stay valid.
  struct Table {
    std::vector<int> codes;
    std::vector<const char*> names;
    std::vector<mx_uint> sizes;
  };
  static Table* const table = [] {
    auto* t = new Table;
    // Type codes are small (MXNet's go up to 12); scan past them for whatever this build has.
    for (int32_t code = 0; code < 64; ++code) {
      if (!nanomx::dtype_valid(code)) continue;
      const auto dtype = static_cast<nanomx::DType>(code);
      t->codes.push_back(code);
      t->names.push_back(nanomx::dtype_name(dtype));
      t->sizes.push_back(static_cast<mx_uint>(nanomx::dtype_size(dtype)));
    }
    return t;
  }();
  *out_size = static_cast<mx_uint>(table->codes.size());
  *out_codes = table->codes.data();
  *out_names = table->names.data();
  *out_sizes = table->sizes.data();
  NANOMX_API_END();
}

int MXListAllOpNames(mx_uint* out_size, const char*** out_array) {
  NANOMX_API_BEGIN(MXListAllOpNames);
  check_not_null(out_size, "MXListAllOpNames", "out_size");
  check_not_null(out_array, "MXListAllOpNames", "out_array");
  op_names = nanomx::ops::list_op_names();
  op_name_pointers.clear();
  for (const std::string& n : op_names) op_name_pointers.push_back(n.c_str());
  *out_size = static_cast<mx_uint>(op_name_pointers.size());
  *out_array = op_name_pointers.data();
  NANOMX_API_END();
}

int NNGetOpHandle(const char* op_name, OpHandle* op_out) {
  NANOMX_API_BEGIN(NNGetOpHandle);
  check_not_null(op_name, "NNGetOpHandle", "op_name");
  check_not_null(op_out, "NNGetOpHandle", "op_out");
  *op_out = op_handle_of(nanomx::ops::get_op(op_name));
  NANOMX_API_END();
}

int MXSymbolGetAtomicSymbolInfo(AtomicSymbolCreator creator, const char** name,
                                const char** description, mx_uint* num_args,
                                const char*** arg_names, const char*** arg_type_infos,
                                const char*** arg_descriptions, const char** key_var_num_args,
                                const char** return_type) {
  NANOMX_API_BEGIN(MXSymbolGetAtomicSymbolInfo);
  constexpr const char* kFunction = "MXSymbolGetAtomicSymbolInfo";
  const nanomx::ops::Op& op = op_of(creator, kFunction);
  check_not_null(name, kFunction, "name");
  check_not_null(description, kFunction, "description");
  check_not_null(num_args, kFunction, "num_args");
  check_not_null(arg_names, kFunction, "arg_names");
  check_not_null(arg_type_infos, kFunction, "arg_type_infos");
  check_not_null(arg_descriptions, kFunction, "arg_descriptions");
  check_not_null(key_var_num_args, kFunction, "key_var_num_args");
  info_names.clear();
  info_types.clear();
  info_descriptions.clear();
  for (const std::string& input : op.inputs) {
    info_names.push_back(input.c_str());
    info_types.push_back(op.variadic() ? "NDArray-or-Symbol[]" : "NDArray-or-Symbol");
    info_descriptions.push_back("input array");
  }
  for (const std::string& key : op.keys) {
    info_names.push_back(key.c_str());
    info_types.push_back("string");
    info_descriptions.push_back("attribute, passed as text and parsed by the operator");
  }
  *name = op.name.c_str();
  *description = "";
  *num_args = static_cast<mx_uint>(info_names.size());
  *arg_names = info_names.data();
  *arg_type_infos = info_types.data();
  *arg_descriptions = info_descriptions.data();
  *key_var_num_args = op.num_inputs_key.c_str();
  if (return_type != nullptr) *return_type = "NDArray-or-Symbol";
  NANOMX_API_END();
}

int MXImperativeInvoke(AtomicSymbolCreator creator, int num_inputs, NDArrayHandle* inputs,
                       int* num_outputs, NDArrayHandle** outputs, int num_params,
                       const char** param_keys, const char** param_vals) {
  NANOMX_API_BEGIN(MXImperativeInvoke);
  check_not_null(creator, "MXImperativeInvoke", "op handle");
  check_not_null(num_outputs, "MXImperativeInvoke", "num_outputs");
  check_not_null(outputs, "MXImperativeInvoke", "outputs");
  NANOMX_CHECK(num_inputs >= 0 && num_params >= 0)
      << "MXImperativeInvoke: negative num_inputs or num_params";
  if (num_inputs > 0) check_not_null(inputs, "MXImperativeInvoke", "inputs");
  if (num_params > 0) {
    check_not_null(param_keys, "MXImperativeInvoke", "param_keys");
    check_not_null(param_vals, "MXImperativeInvoke", "param_vals");
  }
  const auto& op = op_of(creator, "MXImperativeInvoke");
  ArrayList<4> in(static_cast<size_t>(num_inputs));
  arrays_of(inputs, static_cast<size_t>(num_inputs), "MXImperativeInvoke", in);
  // The attribute list is kept per thread so that its strings' buffers are reused.
  static const nanomx::ops::Attrs kNoAttrs;
  const nanomx::ops::Attrs* attrs = &kNoAttrs;
  if (num_params > 0) {
    nanomx::ops::Attrs& kept = invoke_attrs;
    kept.resize(static_cast<size_t>(num_params));
    for (int i = 0; i < num_params; ++i) {
      check_not_null(param_keys[i], "MXImperativeInvoke", "param key");
      check_not_null(param_vals[i], "MXImperativeInvoke", "param value");
      kept[i].first.assign(param_keys[i]);
      kept[i].second.assign(param_vals[i]);
    }
    attrs = &kept;
  }
  const size_t num_given = *outputs != nullptr ? static_cast<size_t>(std::max(*num_outputs, 0)) : 0;
  ArrayList<4> given(num_given);
  if (num_given > 0) arrays_of(*outputs, num_given, "MXImperativeInvoke", given);
  // Autograd: one thread-local load and a branch when not recording.
  const bool recording = nanomx::autograd::is_recording();
  // The attributes as recorded: the thread's buffer may be reused by a call nested in this one
  // (a custom operator's body run inline by the naive engine).
  nanomx::ops::Attrs recorded_attrs;
  if (recording) {
    nanomx::autograd::check_outputs(given.span());
    recorded_attrs = *attrs;
  }
  nanomx::ops::OutputList results;
  size_t num_visible = 0;
  nanomx::ops::invoke_into(op, in.span(), *attrs, given.span(), results, 0, &num_visible);
  if (recording &&
      nanomx::autograd::record(op, recorded_attrs, in.span(), {results.data(), results.size()}) &&
      num_given > 0) {
    // The given outputs' handles become the recorded outputs.
    for (size_t j = 0; j < num_given; ++j) {
      array_of((*outputs)[j], "MXImperativeInvoke", "output handle")
          .set_autograd_entry(results[j].autograd_entry());
    }
  }
  if (*outputs == nullptr) {
    // The list is this thread's, valid until its next call (as MXNet's).
    // Hidden outputs (Dropout's mask) stay with the autograd record, not with the caller.
    NDArrayHandle* list = &invoke_output;
    if (num_visible > 1) {
      invoke_outputs.resize(num_visible);
      list = invoke_outputs.data();
    }
    for (size_t j = 0; j < num_visible; ++j) list[j] = new_handle(std::move(results[j]));
    *num_outputs = static_cast<int>(num_visible);
    *outputs = list;
  }
  NANOMX_API_END();
}

int MXRandomSeed(int seed) {
  NANOMX_API_BEGIN(MXRandomSeed);
  nanomx::ops::seed_random(static_cast<uint64_t>(static_cast<int64_t>(seed)));
  NANOMX_API_END();
}

int MXGetGPUCount(int* out) {
  NANOMX_API_BEGIN(MXGetGPUCount);
  check_not_null(out, "MXGetGPUCount", "out");
  *out = nanomx::num_gpus();
  NANOMX_API_END();
}

int MXGetGPUMemoryInformation64(int dev, uint64_t* free_mem, uint64_t* total_mem) {
  NANOMX_API_BEGIN(MXGetGPUMemoryInformation64);
  check_not_null(free_mem, "MXGetGPUMemoryInformation64", "free_mem");
  check_not_null(total_mem, "MXGetGPUMemoryInformation64", "total_mem");
  const nanomx::GpuMemoryInfo info = nanomx::gpu_memory_info(dev);
  *free_mem = info.free_bytes;
  *total_mem = info.total_bytes;
  NANOMX_API_END();
}

namespace nanomx::c_api {
NDArray& ndarray_of(NDArrayHandle handle, const char* function, const char* argument) {
  return array_of(handle, function, argument);
}
NDArrayHandle new_ndarray_handle(NDArray array) { return new_handle(std::move(array)); }
}  // namespace nanomx::c_api
