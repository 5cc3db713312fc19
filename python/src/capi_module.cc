// nanomx._capi: the Python extension. Each function is a thin wrapper over one C API call
// (include/nanomx/c_api.h) and nothing else, so that API profiling sees every call Python makes.
// Handles cross into Python as integers; the C API's handles carry a generation and are never
// reused (docs/c-api-handles.md), so a stale or made-up integer gives an error, never a crash.
// A C API failure raises nanomx.base.MXNetError (installed by set_error_class) with the C-side
// message. Calls that can block (waits, copies, files, dumps) release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "capi_autograd.h"
#include "capi_common.h"
#include "capi_executor.h"
#include "capi_io.h"
#include "capi_kvstore.h"
#include "capi_symbol.h"
#include "nanomx/c_api.h"
#include "ndarray_type.h"

namespace py = pybind11;

// A handle argument: an int the C API gave out, or None (the C API's null, which it rejects
// with a clear message where a handle is required).
struct Handle {
  void* ptr = nullptr;
};

namespace pybind11::detail {
template <>
struct type_caster<Handle> {
  PYBIND11_TYPE_CASTER(Handle, const_name("handle"));
  bool load(handle source, bool) {
    if (source.is_none()) {
      value.ptr = nullptr;
      return true;
    }
    if (!PyLong_Check(source.ptr())) return false;
    void* pointer = PyLong_AsVoidPtr(source.ptr());
    if (pointer == nullptr && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    value.ptr = pointer;
    return true;
  }
};
}  // namespace pybind11::detail

namespace {

PyObject* error_class = PyExc_RuntimeError;

}  // namespace

void nanomx_python::set_error_from_c_api() { PyErr_SetString(error_class, MXGetLastError()); }

namespace {

using nanomx_python::as_int;
using nanomx_python::check;

// Runs a C API call with the GIL released (for calls that may wait on the engine or on files).
template <typename Call>
void check_unlocked(Call&& call) {
  int rc;
  {
    py::gil_scoped_release release;
    rc = call();
  }
  check(rc);
}

void* as_handle(Handle handle) { return handle.ptr; }

// The library's element types (MXGetDTypeTable): MXNet type code, numpy name, element size.
struct DTypeTable {
  mx_uint size = 0;
  const int* codes = nullptr;
  const char** names = nullptr;
  const mx_uint* sizes = nullptr;
};
const DTypeTable& dtype_table() {
  static const DTypeTable table = [] {
    DTypeTable t;
    check(MXGetDTypeTable(&t.size, &t.codes, &t.names, &t.sizes));
    return t;
  }();
  return table;
}

// Element size and numpy name of an MXNet type code.
struct DTypeInfo {
  size_t size;
  const char* numpy_name;
};
DTypeInfo dtype_info(int dtype) {
  const DTypeTable& table = dtype_table();
  for (mx_uint i = 0; i < table.size; ++i) {
    if (table.codes[i] == dtype) return {table.sizes[i], table.names[i]};
  }
  throw py::value_error("nanomx: unsupported dtype code " + std::to_string(dtype));
}

// UTF-8 views of a list or tuple of str; the strings stay alive in `keep`.
void strings_from(py::handle seq, std::vector<const char*>& out, py::object& keep, const char* what,
                  const char* argument) {
  keep = py::reinterpret_steal<py::object>(PySequence_Fast(seq.ptr(), what));
  if (!keep) throw py::error_already_set();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(keep.ptr());
  PyObject** items = PySequence_Fast_ITEMS(keep.ptr());
  out.resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_ssize_t size = 0;
    out[i] = PyUnicode_AsUTF8AndSize(items[i], &size);
    if (out[i] == nullptr) throw py::error_already_set();
    // A C string ends at the first NUL: a NUL inside would cut the string silently.
    if (std::strlen(out[i]) != static_cast<size_t>(size)) {
      throw py::value_error(std::string("nanomx invoke: ") + argument + "[" + std::to_string(i) +
                            "] contains a NUL character at index " +
                            std::to_string(std::strlen(out[i])) +
                            "; strings passed to the C API cannot contain NUL");
    }
  }
}

// Every operator call that does not come through an arithmetic slot: MXImperativeInvoke on
// NDArray inputs, with string attributes; a new NDArray (or list), or `out` written and returned.
py::object invoke(Handle op, py::handle inputs, py::handle keys, py::handle vals, py::handle out) {
  thread_local std::vector<const char*> key_ptrs, val_ptrs;
  py::object keep_inputs = py::reinterpret_steal<py::object>(
      PySequence_Fast(inputs.ptr(), "nanomx invoke: inputs must be a sequence of NDArrays"));
  if (!keep_inputs) throw py::error_already_set();
  py::object keep_keys, keep_vals;
  strings_from(keys, key_ptrs, keep_keys, "nanomx invoke: keys must be a sequence of str", "keys");
  strings_from(vals, val_ptrs, keep_vals, "nanomx invoke: values must be a sequence of str",
               "vals");
  if (key_ptrs.size() != val_ptrs.size()) {
    throw py::value_error("nanomx invoke: " + std::to_string(key_ptrs.size()) + " keys but " +
                          std::to_string(val_ptrs.size()) + " values");
  }
  PyObject* result = nanomx_python::invoke_operator(
      as_handle(op), PySequence_Fast_ITEMS(keep_inputs.ptr()),
      PySequence_Fast_GET_SIZE(keep_inputs.ptr()), key_ptrs.data(), val_ptrs.data(),
      static_cast<int>(key_ptrs.size()), out.is_none() ? nullptr : out.ptr());
  if (result == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

// invoke as a METH_FASTCALL function: every generated operator function calls it, and pybind's
// argument dispatch cost about 300 ns of its 1 µs (bench/python_layers.py, docs/python.md).
PyObject* fast_invoke(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_Format(PyExc_TypeError,
                 "invoke(op, inputs, keys, vals, out) takes 5 arguments (%zd given)", nargs);
    return nullptr;
  }
  if (!PyLong_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "nanomx invoke: op must be an operator handle (int)");
    return nullptr;
  }
  void* op = PyLong_AsVoidPtr(args[0]);
  if (op == nullptr && PyErr_Occurred()) return nullptr;
  try {
    return invoke(Handle{op}, args[1], args[2], args[3], args[4]).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyMethodDef fast_invoke_def = {
    "invoke", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_invoke)),
    METH_FASTCALL, "invoke(op, inputs, keys, vals, out): MXImperativeInvoke"};

// The C string of a Python str argument. C strings end at the first NUL, so a name with a NUL
// inside would be cut silently: refuse it, naming the function and the argument.
const char* c_str(const std::string& s, const char* function, const char* argument) {
  const size_t nul = s.find('\0');
  if (nul != std::string::npos) {
    throw py::value_error(std::string(function) + ": " + argument +
                          " contains a NUL character at index " + std::to_string(nul) +
                          "; strings passed to the C API cannot contain NUL");
  }
  return s.c_str();
}

std::vector<const char*> c_strings(const std::vector<std::string>& strings, const char* function,
                                   const char* argument) {
  std::vector<const char*> out;
  out.reserve(strings.size());
  for (const std::string& s : strings) out.push_back(c_str(s, function, argument));
  return out;
}

void register_ndarray(py::module_& m) {
  m.def("create_none", [] {
    NDArrayHandle h = nullptr;
    check(MXNDArrayCreateNone(&h));
    return as_int(h);
  });
  m.def("create", [](const std::vector<int64_t>& shape, int dev_type, int dev_id, int dtype) {
    std::vector<mx_uint> dims;
    for (int64_t d : shape) {
      if (d < 0 || d > UINT32_MAX) {
        throw py::value_error("nanomx: shape dimension " + std::to_string(d) +
                              " is out of range (0 to 4294967295)");
      }
      dims.push_back(static_cast<mx_uint>(d));
    }
    NDArrayHandle h = nullptr;
    check(MXNDArrayCreateEx(dims.data(), static_cast<mx_uint>(dims.size()), dev_type, dev_id, 0,
                            dtype, &h));
    return as_int(h);
  });
  m.def("free", [](Handle h) { check(MXNDArrayFree(as_handle(h))); });
  m.def("shape", [](Handle h) {
    int ndim = 0;
    const int64_t* dims = nullptr;
    check(MXNDArrayGetShapeEx64(as_handle(h), &ndim, &dims));
    py::tuple t(ndim);
    for (int i = 0; i < ndim; ++i) t[i] = py::int_(dims[i]);
    return t;
  });
  m.def("dtype", [](Handle h) {
    int dtype = 0;
    check(MXNDArrayGetDType(as_handle(h), &dtype));
    return dtype;
  });
  m.def("context", [](Handle h) {
    int dev_type = 0, dev_id = 0;
    check(MXNDArrayGetContext(as_handle(h), &dev_type, &dev_id));
    return std::make_pair(dev_type, dev_id);
  });
  // Copies a C-contiguous host buffer into the array; its bytes must be the array's bytes.
  m.def("sync_copy_from", [](Handle h, py::handle source) {
    int dtype = 0;
    check(MXNDArrayGetDType(as_handle(h), &dtype));
    const size_t itemsize = dtype_info(dtype).size;
    Py_buffer view{};
    if (PyObject_GetBuffer(source.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
      throw py::error_already_set();
    }
    const size_t bytes = static_cast<size_t>(view.len);
    int rc = 0;
    if (bytes % itemsize == 0) {
      py::gil_scoped_release release;
      // The C API checks the element count against the array's size.
      rc = MXNDArraySyncCopyFromCPU(as_handle(h), view.buf, bytes / itemsize);
    }
    PyBuffer_Release(&view);
    if (bytes % itemsize != 0) {
      throw py::value_error("nanomx: copy into an NDArray: " + std::to_string(bytes) +
                            " bytes is not a whole number of " + std::to_string(itemsize) +
                            "-byte elements");
    }
    check(rc);
  });
  // The array's values as a new numpy array (waits for pending writes).
  m.def("to_numpy", [](Handle h) {
    int ndim = 0;
    const int64_t* dims = nullptr;
    check(MXNDArrayGetShapeEx64(as_handle(h), &ndim, &dims));
    std::vector<py::ssize_t> shape(dims, dims + ndim);
    int type_code = 0;
    check(MXNDArrayGetDType(as_handle(h), &type_code));
    // A none array has no dtype (-1); a 0-d array (shape ()) has one and gives a 0-d copy.
    if (type_code < 0) throw py::value_error("nanomx: the array is empty (none array, no shape)");
    py::array result{py::dtype(dtype_info(type_code).numpy_name), shape};
    size_t elements = 1;
    for (py::ssize_t d : shape) elements *= static_cast<size_t>(d);
    void* data = result.mutable_data();
    check_unlocked([&] { return MXNDArraySyncCopyToCPU(as_handle(h), data, elements); });
    return result;
  });
  m.def("wait_to_read",
        [](Handle h) { check_unlocked([&] { return MXNDArrayWaitToRead(as_handle(h)); }); });
  m.def("wait_to_write",
        [](Handle h) { check_unlocked([&] { return MXNDArrayWaitToWrite(as_handle(h)); }); });
  m.def("wait_all", [] { check_unlocked([] { return MXNDArrayWaitAll(); }); });
  m.def("slice", [](Handle h, uint32_t begin, uint32_t end) {
    NDArrayHandle out = nullptr;
    check(MXNDArraySlice(as_handle(h), begin, end, &out));
    return as_int(out);
  });
  m.def("at", [](Handle h, uint32_t index) {
    NDArrayHandle out = nullptr;
    check(MXNDArrayAt(as_handle(h), index, &out));
    return as_int(out);
  });
  m.def("reshape", [](Handle h, std::vector<int64_t> dims, bool reverse) {
    NDArrayHandle out = nullptr;
    check(MXNDArrayReshape64(as_handle(h), static_cast<int>(dims.size()), dims.data(), reverse,
                             &out));
    return as_int(out);
  });
  m.def("save", [](const std::string& fname, const std::vector<Handle>& handles,
                   const std::optional<std::vector<std::string>>& keys) {
    const char* file = c_str(fname, "nanomx save", "fname");
    std::vector<NDArrayHandle> hs;
    for (Handle h : handles) hs.push_back(as_handle(h));
    std::vector<const char*> key_ptrs;
    if (keys) {
      if (keys->size() != handles.size()) throw py::value_error("nanomx save: one key per array");
      key_ptrs = c_strings(*keys, "nanomx save", "a key");
    }
    check_unlocked([&] {
      return MXNDArraySave(file, static_cast<mx_uint>(hs.size()), hs.data(),
                           keys ? key_ptrs.data() : nullptr);
    });
  });
  m.def("load", [](const std::string& fname) {
    const char* file = c_str(fname, "nanomx load", "fname");
    mx_uint size = 0, name_size = 0;
    NDArrayHandle* arrays = nullptr;
    const char** names = nullptr;
    check_unlocked([&] { return MXNDArrayLoad(file, &size, &arrays, &name_size, &names); });
    std::vector<uintptr_t> hs;
    for (mx_uint i = 0; i < size; ++i) hs.push_back(as_int(arrays[i]));
    std::vector<std::string> ns(names, names + name_size);
    return std::make_pair(hs, ns);
  });
  m.def("save_raw_bytes", [](Handle h) {
    size_t size = 0;
    const char* data = nullptr;
    check_unlocked([&] { return MXNDArraySaveRawBytes(as_handle(h), &size, &data); });
    return py::bytes(data, size);
  });
  m.def("load_from_raw_bytes", [](py::buffer source) {
    py::buffer_info info = source.request();
    NDArrayHandle out = nullptr;
    const size_t bytes = static_cast<size_t>(info.size * info.itemsize);
    check(MXNDArrayLoadFromRawBytes(info.ptr, bytes, &out));
    return as_int(out);
  });
  // [(code, name, itemsize)] of every element type, for the Python side's dtype maps.
  m.def("dtype_table", [] {
    const DTypeTable& table = dtype_table();
    py::list out;
    for (mx_uint i = 0; i < table.size; ++i)
      out.append(py::make_tuple(table.codes[i], table.names[i], table.sizes[i]));
    return out;
  });
  m.def("list_op_names", [] {
    mx_uint size = 0;
    const char** names = nullptr;
    check(MXListAllOpNames(&size, &names));
    return std::vector<std::string>(names, names + size);
  });
  m.def("get_op_handle", [](const std::string& name) {
    OpHandle h = nullptr;
    check(NNGetOpHandle(c_str(name, "nanomx get_op_handle", "name"), &h));
    return as_int(h);
  });
  // (registered name, argument names, argument kinds) of an operator handle.
  m.def("op_info", [](Handle op) {
    const char *name = nullptr, *description = nullptr, *key_var = nullptr, *ret = nullptr;
    mx_uint num_args = 0;
    const char **arg_names = nullptr, **arg_types = nullptr, **arg_descriptions = nullptr;
    check(MXSymbolGetAtomicSymbolInfo(as_handle(op), &name, &description, &num_args, &arg_names,
                                      &arg_types, &arg_descriptions, &key_var, &ret));
    return py::make_tuple(std::string(name),
                          std::vector<std::string>(arg_names, arg_names + num_args),
                          std::vector<std::string>(arg_types, arg_types + num_args));
  });
  m.add_object("invoke", py::reinterpret_steal<py::object>(PyCFunction_NewEx(
                             &fast_invoke_def, nullptr, m.attr("__name__").ptr())));
  // A new NDArray owning a handle the C API just gave out.
  m.def("wrap", [](Handle h) {
    PyObject* result = nanomx_python::wrap_handle(as_handle(h));
    if (result == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(result);
  });
  m.def("set_ndarray_class", [](py::handle cls, py::handle numeric_types) {
    if (!nanomx_python::register_ndarray_class(cls.ptr(), numeric_types.ptr())) {
      throw py::error_already_set();
    }
  });
  m.def("random_seed", [](int seed) { check(MXRandomSeed(seed)); });
  m.def("gpu_count", [] {
    int n = 0;
    check(MXGetGPUCount(&n));
    return n;
  });
  m.def("gpu_memory_info", [](int dev) {
    uint64_t free_mem = 0, total_mem = 0;
    check(MXGetGPUMemoryInformation64(dev, &free_mem, &total_mem));
    return py::make_tuple(free_mem, total_mem);
  });
}

void register_profiler(py::module_& m) {
  m.def("set_config", [](const std::vector<std::string>& keys, const std::vector<std::string>& vals,
                         Handle kvstore) {
    if (keys.size() != vals.size()) throw py::value_error("nanomx set_config: one value per key");
    std::vector<const char*> k = c_strings(keys, "nanomx set_config", "a key"),
                             v = c_strings(vals, "nanomx set_config", "a value");
    check_unlocked([&] {
      return MXSetProcessProfilerConfig(static_cast<int>(k.size()), k.data(), v.data(),
                                        as_handle(kvstore));
    });
  });
  m.def("set_state", [](int state, int profile_process, Handle kvstore) {
    check_unlocked(
        [&] { return MXSetProcessProfilerState(state, profile_process, as_handle(kvstore)); });
  });
  m.def("dump", [](int finished, int profile_process, Handle kvstore) {
    check_unlocked(
        [&] { return MXDumpProcessProfile(finished, profile_process, as_handle(kvstore)); });
  });
  m.def("dumps", [](int reset, int format, int sort_by, int ascending) {
    const char* text = nullptr;
    check_unlocked(
        [&] { return MXAggregateProfileStatsPrintEx(&text, reset, format, sort_by, ascending); });
    return std::string(text == nullptr ? "" : text);
  });
  m.def("pause", [](int paused, int profile_process, Handle kvstore) {
    check_unlocked(
        [&] { return MXProcessProfilePause(paused, profile_process, as_handle(kvstore)); });
  });
  m.def("profile_step", [] {
    const char* finished = nullptr;
    check_unlocked([&] { return MXProfileStep(&finished); });
    return std::string(finished == nullptr ? "" : finished);
  });
  m.def("set_scope", [](const std::string& scope) {
    check(MXSetProfilerScope(c_str(scope, "nanomx set_scope", "scope")));
  });
  m.def("create_domain", [](const std::string& name) {
    ProfileHandle h = nullptr;
    check(MXProfileCreateDomain(c_str(name, "nanomx create_domain", "name"), &h));
    return as_int(h);
  });
  m.def("create_task", [](Handle domain, const std::string& name) {
    ProfileHandle h = nullptr;
    check(MXProfileCreateTask(as_handle(domain), c_str(name, "nanomx create_task", "name"), &h));
    return as_int(h);
  });
  m.def("create_frame", [](Handle domain, const std::string& name) {
    ProfileHandle h = nullptr;
    check(MXProfileCreateFrame(as_handle(domain), c_str(name, "nanomx create_frame", "name"), &h));
    return as_int(h);
  });
  m.def("create_event", [](const std::string& name) {
    ProfileHandle h = nullptr;
    check(MXProfileCreateEvent(c_str(name, "nanomx create_event", "name"), &h));
    return as_int(h);
  });
  m.def("create_counter", [](Handle domain, const std::string& name) {
    ProfileHandle h = nullptr;
    check(MXProfileCreateCounter(as_handle(domain), c_str(name, "nanomx create_counter", "name"),
                                 &h));
    return as_int(h);
  });
  m.def("destroy_handle", [](Handle h) { check(MXProfileDestroyHandle(as_handle(h))); });
  m.def("duration_start", [](Handle h) { check(MXProfileDurationStart(as_handle(h))); });
  m.def("duration_stop", [](Handle h) { check(MXProfileDurationStop(as_handle(h))); });
  m.def("set_counter",
        [](Handle h, uint64_t value) { check(MXProfileSetCounter(as_handle(h), value)); });
  m.def("adjust_counter",
        [](Handle h, int64_t delta) { check(MXProfileAdjustCounter(as_handle(h), delta)); });
  m.def("set_marker", [](Handle domain, const std::string& name, const std::string& scope) {
    check(MXProfileSetMarker(as_handle(domain), c_str(name, "nanomx set_marker", "name"),
                             c_str(scope, "nanomx set_marker", "scope")));
  });
}

}  // namespace

PYBIND11_MODULE(_capi, m) {
  m.doc() = "nanomx's C API, one thin function per C call (use the nanomx package instead)";
  nanomx_python::add_symbol_functions(m);
  nanomx_python::add_autograd_functions(m);
  nanomx_python::add_custom_op_functions(m);
  nanomx_python::add_executor_functions(m);
  nanomx_python::add_io_functions(m);
  nanomx_python::add_kvstore_functions(m);
  m.def(
      "set_error_class",
      [](py::handle cls) {
        if (!PyType_Check(cls.ptr()) ||
            !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                              reinterpret_cast<PyTypeObject*>(PyExc_Exception))) {
          throw py::type_error("set_error_class expects an exception class");
        }
        Py_INCREF(cls.ptr());  // kept for the life of the process
        error_class = cls.ptr();
      },
      "The exception class raised for C API failures (nanomx.base.MXNetError).");
  PyTypeObject* base = nanomx_python::create_ndarray_base_type();
  if (base == nullptr) throw py::error_already_set();
  m.add_object("NDArrayBase",
               py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(base)));
  register_ndarray(m);
  register_profiler(m);
}
