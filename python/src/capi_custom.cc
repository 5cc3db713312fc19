// nanomx._capi's custom-operator registration: MXCustomOpRegister with C callbacks that call
// Python objects (nanomx/c_api_custom.h's ABI). nanomx/operator.py builds those objects from the
// user's CustomOpProp / CustomOp classes; here each callback takes the GIL, converts between C
// arrays and Python lists, and turns a Python exception into a printed traceback and a failed
// callback (the C API then fails the call with an error naming the callback).
#include <pybind11/stl.h>

#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "capi_autograd.h"
#include "capi_common.h"
#include "nanomx/c_api.h"
#include "ndarray_type.h"

namespace py = pybind11;

namespace {

using nanomx_python::check;

// Prints "Error in <what>:" and the Python traceback (as MXNet does, on stdout).
void report(const char* what, py::error_already_set& e) {
  std::string text;
  try {
    py::object format = py::module_::import("traceback").attr("format_exception");
    for (py::handle line : format(e.type(), e.value(), e.trace())) text += py::str(line);
  } catch (py::error_already_set&) {
    text = e.what();
  }
  py::print(std::string("Error in ") + what + ": " + text);
  // The reason, for the MXNetError the caller gets: "ValueError: <message>".
  std::string reason;
  try {
    reason =
        std::string(py::str(e.type().attr("__name__"))) + ": " + std::string(py::str(e.value()));
  } catch (py::error_already_set&) {
    reason = e.what();
  }
  MXAPISetLastError(reason.c_str());
}

// The factories of registered op types: factory(op_type, kwargs) -> property adapter.
std::unordered_map<std::string, py::object>& factories() {
  static auto* f = new std::unordered_map<std::string, py::object>;  // GIL-guarded, never freed
  return *f;
}

constexpr int kNumPropCallbacks = 8;

// One property adapter and the memory its callbacks hand back to C.
struct PropState {
  py::object obj;
  std::string op_type;
  std::vector<std::string> names;
  std::vector<char*> name_ptrs;
  std::vector<std::vector<int>> shapes;
  std::vector<int> deps;
  int (*fns[kNumPropCallbacks])(void) = {};
  void* ctxs[kNumPropCallbacks] = {};
};

struct OpState {
  py::object obj;
  std::string op_type;
  int (*fns[3])(void) = {};
  void* ctxs[3] = {};
};

template <typename Fn>
int (*as_callback(Fn fn))(void) {
  // Through void(*)(void), the generic function pointer type.
  return reinterpret_cast<int (*)(void)>(reinterpret_cast<void (*)(void)>(fn));
}

int list_names(PropState* s, const char* method, char*** out) {
  py::gil_scoped_acquire gil;
  try {
    s->names = s->obj.attr(method)().cast<std::vector<std::string>>();
    s->name_ptrs.clear();
    for (std::string& n : s->names) s->name_ptrs.push_back(n.data());
    s->name_ptrs.push_back(nullptr);
    *out = s->name_ptrs.data();
    return 1;
  } catch (py::error_already_set& e) {
    report((s->op_type + "." + method).c_str(), e);
    return 0;
  }
}

// Whether Python objects may still be touched. Once the interpreter is finalizing, a thread
// that takes the GIL is ended by CPython (an engine worker releasing a custom operator's state
// then aborted the process with "terminate called without an active exception"): such states
// are left to the process's end.
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

int prop_delete(void* state) {
  if (!python_alive()) return 1;
  py::gil_scoped_acquire gil;
  delete static_cast<PropState*>(state);
  return 1;
}
int prop_list_arguments(char*** out, void* state) {
  return list_names(static_cast<PropState*>(state), "list_arguments", out);
}
int prop_list_outputs(char*** out, void* state) {
  return list_names(static_cast<PropState*>(state), "list_outputs", out);
}
int prop_list_aux(char*** out, void* state) {
  return list_names(static_cast<PropState*>(state), "list_auxiliary_states", out);
}

// in: the first n_args slots; the adapter returns every slot's shape (args, outputs, aux).
int prop_infer_shape(int num_input, int* ndims, int** shapes, void* state) {
  auto* s = static_cast<PropState*>(state);
  py::gil_scoped_acquire gil;
  try {
    py::list given;
    for (int i = 0; i < num_input; ++i) {
      if (shapes[i] == nullptr && ndims[i] == 0) {
        given.append(py::none());
        continue;
      }
      given.append(py::tuple(py::cast(std::vector<int>(shapes[i], shapes[i] + ndims[i]))));
    }
    auto result = s->obj.attr("infer_shape_all")(given).cast<std::vector<std::vector<int>>>();
    if (static_cast<int>(result.size()) != num_input) {
      throw py::value_error("infer_shape returned " + std::to_string(result.size()) +
                            " shapes, expected " + std::to_string(num_input));
    }
    s->shapes = std::move(result);
    for (int i = 0; i < num_input; ++i) {
      ndims[i] = static_cast<int>(s->shapes[static_cast<size_t>(i)].size());
      shapes[i] = s->shapes[static_cast<size_t>(i)].data();
    }
    return 1;
  } catch (py::error_already_set& e) {
    report((s->op_type + ".infer_shape").c_str(), e);
    return 0;
  }
}

int prop_infer_type(int num_input, int* types, void* state) {
  auto* s = static_cast<PropState*>(state);
  py::gil_scoped_acquire gil;
  try {
    std::vector<int> given(types, types + num_input);
    auto result = s->obj.attr("infer_type_all")(given).cast<std::vector<int>>();
    if (static_cast<int>(result.size()) != num_input) {
      throw py::value_error("infer_type returned " + std::to_string(result.size()) +
                            " types, expected " + std::to_string(num_input));
    }
    for (int i = 0; i < num_input; ++i) types[i] = result[static_cast<size_t>(i)];
    return 1;
  } catch (py::error_already_set& e) {
    report((s->op_type + ".infer_type").c_str(), e);
    return 0;
  }
}

int prop_backward_dependency(const int* out_grad, const int* in_data, const int* out_data,
                             int* num_deps, int** deps, void* state) {
  auto* s = static_cast<PropState*>(state);
  py::gil_scoped_acquire gil;
  try {
    const int n_out = static_cast<int>(s->obj.attr("list_outputs")().cast<py::list>().size());
    const int n_in = static_cast<int>(s->obj.attr("list_arguments")().cast<py::list>().size());
    s->deps = s->obj
                  .attr("declare_backward_dependency")(std::vector<int>(out_grad, out_grad + n_out),
                                                       std::vector<int>(in_data, in_data + n_in),
                                                       std::vector<int>(out_data, out_data + n_out))
                  .cast<std::vector<int>>();
    *num_deps = static_cast<int>(s->deps.size());
    *deps = s->deps.data();
    return 1;
  } catch (py::error_already_set& e) {
    report((s->op_type + ".declare_backward_dependency").c_str(), e);
    return 0;
  }
}

int op_delete(void* state) {
  if (!python_alive()) return 1;
  py::gil_scoped_acquire gil;
  delete static_cast<OpState*>(state);
  return 1;
}

// Wraps the handles by tag into NDArrays (read-only where the body must not write) and calls
// the adapter's forward / backward.
int op_call(bool backward, int size, void** ptrs, int* tags, const int* reqs, int is_train,
            void* state) {
  auto* s = static_cast<OpState*>(state);
  py::gil_scoped_acquire gil;
  // Wrap every handle first: each one is ours to free, wrapped or not.
  py::list by_tag[5];
  bool wrapped_all = true;
  for (int i = 0; i < size; ++i) {
    const int tag = tags[i];
    if (!wrapped_all || tag < 0 || tag > 4) {
      MXNDArrayFree(ptrs[i]);
      wrapped_all = false;
      continue;
    }
    PyObject* array = nanomx_python::wrap_handle(ptrs[i]);
    if (array == nullptr) {
      wrapped_all = false;
      continue;
    }
    // Inputs, outputs (in backward) and output gradients are read-only.
    const bool writable = backward ? (tag == 2 || tag == 4) : (tag == 1 || tag == 4);
    reinterpret_cast<nanomx_python::NDArrayObject*>(array)->writable = writable;
    by_tag[tag].append(py::reinterpret_steal<py::object>(array));
  }
  const char* what = backward ? "CustomOp.backward" : "CustomOp.forward";
  try {
    if (!wrapped_all) throw py::error_already_set();
    const size_t n_req = by_tag[backward ? 2 : 1].size();
    std::vector<int> req(reqs, reqs + n_req);
    if (backward) {
      s->obj.attr("backward")(req, by_tag[3], by_tag[0], by_tag[1], by_tag[2], by_tag[4]);
    } else {
      s->obj.attr("forward")(is_train != 0, req, by_tag[0], by_tag[1], by_tag[4]);
    }
    return 1;
  } catch (py::error_already_set& e) {
    report(what, e);
    return 0;
  }
}

int op_forward(int size, void** ptrs, int* tags, const int* reqs, const int is_train, void* state) {
  return op_call(false, size, ptrs, tags, reqs, is_train, state);
}
int op_backward(int size, void** ptrs, int* tags, const int* reqs, const int is_train,
                void* state) {
  return op_call(true, size, ptrs, tags, reqs, is_train, state);
}

int prop_create_operator(const char* ctx, int num_inputs, unsigned** shapes, const int* ndims,
                         const int* dtypes, MXCallbackList* ret, void* state) {
  auto* s = static_cast<PropState*>(state);
  py::gil_scoped_acquire gil;
  try {
    py::list shape_list;
    for (int i = 0; i < num_inputs; ++i) {
      shape_list.append(py::cast(std::vector<unsigned>(shapes[i], shapes[i] + ndims[i])));
    }
    py::object op = s->obj.attr("create_operator")(std::string(ctx), shape_list,
                                                   std::vector<int>(dtypes, dtypes + num_inputs));
    auto* os = new OpState;
    os->obj = std::move(op);
    os->op_type = s->op_type;
    os->fns[kCustomOpDelete] = as_callback(&op_delete);
    os->fns[kCustomOpForward] = as_callback(&op_forward);
    os->fns[kCustomOpBackward] = as_callback(&op_backward);
    for (void*& c : os->ctxs) c = os;
    ret->num_callbacks = 3;
    ret->callbacks = os->fns;
    ret->contexts = os->ctxs;
    return 1;
  } catch (py::error_already_set& e) {
    report((s->op_type + ".create_operator").c_str(), e);
    return 0;
  }
}

int creator(const char* op_type, const int num_kwargs, const char** keys, const char** values,
            MXCallbackList* ret) {
  py::gil_scoped_acquire gil;
  try {
    auto it = factories().find(op_type);
    if (it == factories().end()) {
      throw py::key_error(std::string("custom operator ") + op_type + " has no Python factory");
    }
    py::dict kwargs;
    for (int i = 0; i < num_kwargs; ++i) kwargs[py::str(keys[i])] = py::str(values[i]);
    auto* s = new PropState;
    s->op_type = op_type;
    try {
      s->obj = it->second(std::string(op_type), kwargs);
    } catch (...) {
      delete s;
      throw;
    }
    s->fns[kCustomOpPropDelete] = as_callback(&prop_delete);
    s->fns[kCustomOpPropListArguments] = as_callback(&prop_list_arguments);
    s->fns[kCustomOpPropListOutputs] = as_callback(&prop_list_outputs);
    s->fns[kCustomOpPropListAuxiliaryStates] = as_callback(&prop_list_aux);
    s->fns[kCustomOpPropInferShape] = as_callback(&prop_infer_shape);
    s->fns[kCustomOpPropDeclareBackwardDependency] = as_callback(&prop_backward_dependency);
    s->fns[kCustomOpPropCreateOperator] = as_callback(&prop_create_operator);
    s->fns[kCustomOpPropInferType] = as_callback(&prop_infer_type);
    for (void*& c : s->ctxs) c = s;
    ret->num_callbacks = kNumPropCallbacks;
    ret->callbacks = s->fns;
    ret->contexts = s->ctxs;
    return 1;
  } catch (py::error_already_set& e) {
    report((std::string(op_type) + " (creating its CustomOpProp)").c_str(), e);
    return 0;
  }
}

}  // namespace

void nanomx_python::add_custom_op_functions(py::module_& m) {
  // factory(op_type, kwargs) -> an adapter (nanomx/operator.py's _PropAdapter).
  m.def("custom_op_register", [](const std::string& op_type, py::object factory) {
    factories()[op_type] = std::move(factory);
    check(MXCustomOpRegister(op_type.c_str(), &creator));
  });
}
