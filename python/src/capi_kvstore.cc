// nanomx._capi's key-value store functions: thin wrappers over the MXKVStore* C calls
// (nanomx/c_api_kvstore.h); nanomx/kvstore/ builds MXNet's KVStore on them. Every call that may
// wait (on the network, on the engine) releases the GIL; the updater and the server controller
// take it back to run Python.
#include "capi_kvstore.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "capi_common.h"
#include "nanomx/c_api.h"
#include "ndarray_type.h"

namespace py = pybind11;

namespace {

using nanomx_python::as_int;
using nanomx_python::check;
using nanomx_python::handle;

using Keys = std::variant<std::vector<int>, std::vector<std::string>>;

std::vector<NDArrayHandle> handles(const std::vector<uintptr_t>& list) {
  std::vector<NDArrayHandle> out;
  for (uintptr_t h : list) out.push_back(handle(h));
  return out;
}

// IntFn(num, int keys, vals) or StrFn(num, char keys, vals), without the GIL.
template <typename IntFn, typename StrFn>
void with_keys(const Keys& keys, const std::vector<uintptr_t>& values, IntFn int_fn, StrFn str_fn) {
  std::vector<NDArrayHandle> vals = handles(values);
  int rc = 0;
  if (const auto* ints = std::get_if<std::vector<int>>(&keys)) {
    if (ints->size() != vals.size()) throw py::value_error("one value per key");
    py::gil_scoped_release release;
    rc = int_fn(static_cast<mx_uint>(ints->size()), ints->data(), vals.data());
  } else {
    const auto& strs = std::get<std::vector<std::string>>(keys);
    if (strs.size() != vals.size()) throw py::value_error("one value per key");
    auto names = nanomx_python::pointers(strs);
    py::gil_scoped_release release;
    rc = str_fn(static_cast<mx_uint>(strs.size()), names.data(), vals.data());
  }
  check(rc);
}

py::object wrap(NDArrayHandle h) {
  PyObject* result = nanomx_python::wrap_handle(h);
  if (result == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

// Runs fn (which calls Python) with the GIL; a Python exception becomes a C++ one, which the C
// API turns into the failing call's error (the push, or the server's reply).
template <typename Fn>
void call_python(Fn&& fn) {
  py::gil_scoped_acquire gil;
  try {
    fn();
  } catch (py::error_already_set& e) {
    throw std::runtime_error(e.what());
  }
}

void int_updater(int key, NDArrayHandle recv, NDArrayHandle local, void* fn) {
  call_python([&] { (*static_cast<py::object*>(fn))(key, wrap(recv), wrap(local)); });
}

void str_updater(const char* key, NDArrayHandle recv, NDArrayHandle local, void* fn) {
  call_python([&] { (*static_cast<py::object*>(fn))(key, wrap(recv), wrap(local)); });
}

void controller(int head, const char* body, void* fn) {
  try {
    call_python([&] { (*static_cast<py::object*>(fn))(head, py::bytes(body)); });
  } catch (const std::exception& e) {
    MXAPISetLastError(e.what());
  }
}

}  // namespace

void nanomx_python::add_kvstore_functions(py::module_& m) {
  m.def("kv_create", [](const std::string& type) {
    KVStoreHandle out = nullptr;
    nanomx_python::check_unlocked([&] { return MXKVStoreCreate(type.c_str(), &out); });
    return as_int(out);
  });
  m.def("kv_free", [](uintptr_t h) { check(MXKVStoreFree(handle(h))); });
  m.def("kv_init", [](uintptr_t h, const Keys& keys, const std::vector<uintptr_t>& values) {
    with_keys(
        keys, values,
        [&](mx_uint n, const int* k, NDArrayHandle* v) {
          return MXKVStoreInit(handle(h), n, k, v);
        },
        [&](mx_uint n, const char** k, NDArrayHandle* v) {
          return MXKVStoreInitEx(handle(h), n, k, v);
        });
  });
  m.def("kv_push",
        [](uintptr_t h, const Keys& keys, const std::vector<uintptr_t>& values, int priority) {
          with_keys(
              keys, values,
              [&](mx_uint n, const int* k, NDArrayHandle* v) {
                return MXKVStorePush(handle(h), n, k, v, priority);
              },
              [&](mx_uint n, const char** k, NDArrayHandle* v) {
                return MXKVStorePushEx(handle(h), n, k, v, priority);
              });
        });
  m.def("kv_pull",
        [](uintptr_t h, const Keys& keys, const std::vector<uintptr_t>& outs, int priority) {
          with_keys(
              keys, outs,
              [&](mx_uint n, const int* k, NDArrayHandle* v) {
                return MXKVStorePull(handle(h), n, k, v, priority);
              },
              [&](mx_uint n, const char** k, NDArrayHandle* v) {
                return MXKVStorePullEx(handle(h), n, k, v, priority);
              });
        });
  // The callable is kept for the process's life (a store may call it until exit).
  m.def("kv_set_updater", [](uintptr_t h, py::object fn) {
    auto* kept = new py::object(std::move(fn));
    check(MXKVStoreSetUpdaterEx(handle(h), &int_updater, &str_updater, kept));
  });
  m.def("kv_type", [](uintptr_t h) {
    const char* type = nullptr;
    check(MXKVStoreGetType(handle(h), &type));
    return std::string(type);
  });
  m.def("kv_rank", [](uintptr_t h) {
    int rank = 0;
    check(MXKVStoreGetRank(handle(h), &rank));
    return rank;
  });
  m.def("kv_num_workers", [](uintptr_t h) {
    int size = 0;
    check(MXKVStoreGetGroupSize(handle(h), &size));
    return size;
  });
  m.def("kv_barrier", [](uintptr_t h) {
    nanomx_python::check_unlocked([&] { return MXKVStoreBarrier(handle(h)); });
  });
  m.def("kv_send_command", [](uintptr_t h, int command, const std::string& body) {
    nanomx_python::check_unlocked(
        [&] { return MXKVStoreSendCommmandToServers(handle(h), command, body.c_str()); });
  });
  m.def("kv_run_server", [](uintptr_t h, py::object fn) {
    auto* kept = new py::object(std::move(fn));
    nanomx_python::check_unlocked([&] { return MXKVStoreRunServer(handle(h), &controller, kept); });
  });
  m.def("kv_shutdown", [](bool clean) {
    nanomx_python::check_unlocked([&] { return MXKVStoreShutdown(clean ? 1 : 0); });
  });
}
