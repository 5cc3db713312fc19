// nanomx._capi's symbol functions: thin wrappers over the MXSymbol* C calls
// (nanomx/c_api_symbol.h); nanomx/symbol/ builds the Python API on them. Handles are ints.
#include "capi_symbol.h"

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

std::vector<std::string> names(int (*fn)(SymbolHandle, uint32_t*, const char***), uintptr_t h) {
  uint32_t n = 0;
  const char** list = nullptr;
  check(fn(handle(h), &n, &list));
  return std::vector<std::string>(list, list + n);
}

py::list shape_list(uint32_t n, const int* ndim, const int** data) {
  py::list out;
  for (uint32_t i = 0; i < n; ++i) {
    py::tuple t(ndim[i]);
    for (int j = 0; j < ndim[i]; ++j) t[j] = data[i][j];
    out.append(t);
  }
  return out;
}

}  // namespace
}  // namespace nanomx_python

void nanomx_python::add_symbol_functions(py::module_& m) {
  m.def("symbol_create_variable", [](const std::string& name) {
    SymbolHandle out = nullptr;
    check(MXSymbolCreateVariable(name.c_str(), &out));
    return as_int(out);
  });
  m.def("symbol_create_atomic", [](uintptr_t op, const std::vector<std::string>& keys,
                                   const std::vector<std::string>& vals) {
    SymbolHandle out = nullptr;
    auto k = pointers(keys), v = pointers(vals);
    check(MXSymbolCreateAtomicSymbol(handle(op), static_cast<uint32_t>(k.size()), k.data(),
                                     v.data(), &out));
    return as_int(out);
  });
  // keys: one per argument, None for a positional one.
  m.def("symbol_compose", [](uintptr_t sym, const std::string& name,
                             const std::vector<std::optional<std::string>>& keys,
                             const std::vector<uintptr_t>& args) {
    std::vector<const char*> k;
    bool any_key = false;
    for (const auto& key : keys) {
      k.push_back(key ? key->c_str() : nullptr);
      any_key = any_key || key.has_value();
    }
    std::vector<SymbolHandle> a;
    for (uintptr_t x : args) a.push_back(handle(x));
    check(MXSymbolCompose(handle(sym), name.empty() ? nullptr : name.c_str(),
                          static_cast<uint32_t>(a.size()), any_key ? k.data() : nullptr, a.data()));
  });
  m.def("symbol_create_group", [](const std::vector<uintptr_t>& syms) {
    std::vector<SymbolHandle> a;
    for (uintptr_t x : syms) a.push_back(handle(x));
    SymbolHandle out = nullptr;
    check(MXSymbolCreateGroup(static_cast<uint32_t>(a.size()), a.data(), &out));
    return as_int(out);
  });
  m.def("symbol_copy", [](uintptr_t h) {
    SymbolHandle out = nullptr;
    check(MXSymbolCopy(handle(h), &out));
    return as_int(out);
  });
  m.def("symbol_free", [](uintptr_t h) { check(MXSymbolFree(handle(h))); });
  m.def("symbol_print", [](uintptr_t h) {
    const char* s = nullptr;
    check(MXSymbolPrint(handle(h), &s));
    return std::string(s);
  });
  m.def("symbol_get_name", [](uintptr_t h) -> std::optional<std::string> {
    const char* s = nullptr;
    int ok = 0;
    check(MXSymbolGetName(handle(h), &s, &ok));
    if (!ok) return std::nullopt;
    return std::string(s);
  });
  m.def("symbol_list_arguments", [](uintptr_t h) { return names(MXSymbolListArguments, h); });
  m.def("symbol_list_outputs", [](uintptr_t h) { return names(MXSymbolListOutputs, h); });
  m.def("symbol_list_auxiliary_states",
        [](uintptr_t h) { return names(MXSymbolListAuxiliaryStates, h); });
  m.def("symbol_num_outputs", [](uintptr_t h) {
    uint32_t n = 0;
    check(MXSymbolGetNumOutputs(handle(h), &n));
    return n;
  });
  m.def("symbol_get_internals", [](uintptr_t h) {
    SymbolHandle out = nullptr;
    check(MXSymbolGetInternals(handle(h), &out));
    return as_int(out);
  });
  m.def("symbol_get_children", [](uintptr_t h) {
    SymbolHandle out = nullptr;
    check(MXSymbolGetChildren(handle(h), &out));
    return as_int(out);
  });
  m.def("symbol_get_output", [](uintptr_t h, uint32_t i) {
    SymbolHandle out = nullptr;
    check(MXSymbolGetOutput(handle(h), i, &out));
    return as_int(out);
  });
  m.def("symbol_get_attr", [](uintptr_t h, const std::string& key) -> std::optional<std::string> {
    const char* s = nullptr;
    int ok = 0;
    check(MXSymbolGetAttr(handle(h), key.c_str(), &s, &ok));
    if (!ok) return std::nullopt;
    return std::string(s);
  });
  m.def("symbol_set_attr", [](uintptr_t h, const std::string& key, const std::string& value) {
    check(MXSymbolSetAttr(handle(h), key.c_str(), value.c_str()));
  });
  // [(key, value)]: recursive keys are "node$key".
  m.def("symbol_list_attr", [](uintptr_t h, bool recursive) {
    uint32_t n = 0;
    const char** list = nullptr;
    check(recursive ? MXSymbolListAttr(handle(h), &n, &list)
                    : MXSymbolListAttrShallow(handle(h), &n, &list));
    std::vector<std::pair<std::string, std::string>> out;
    for (uint32_t i = 0; i < n; ++i) out.emplace_back(list[2 * i], list[2 * i + 1]);
    return out;
  });
  m.def("symbol_tojson", [](uintptr_t h) {
    const char* s = nullptr;
    check(MXSymbolSaveToJSON(handle(h), &s));
    return std::string(s);
  });
  m.def("symbol_from_json", [](const std::string& json) {
    SymbolHandle out = nullptr;
    check(MXSymbolCreateFromJSON(json.c_str(), &out));
    return as_int(out);
  });
  m.def("symbol_save", [](uintptr_t h, const std::string& fname) {
    check(MXSymbolSaveToFile(handle(h), fname.c_str()));
  });
  m.def("symbol_load", [](const std::string& fname) {
    SymbolHandle out = nullptr;
    check(MXSymbolCreateFromFile(fname.c_str(), &out));
    return as_int(out);
  });
  // keys None: positional. Returns (arg_shapes, out_shapes, aux_shapes, complete) with () for
  // an unknown rank and 0 for an unknown dimension.
  m.def("symbol_infer_shape", [](uintptr_t h, std::optional<std::vector<std::string>> keys,
                                 const std::vector<std::vector<int>>& shapes, bool partial) {
    std::vector<uint32_t> ind{0};
    std::vector<int> data;
    for (const auto& s : shapes) {
      data.insert(data.end(), s.begin(), s.end());
      ind.push_back(static_cast<uint32_t>(data.size()));
    }
    std::vector<const char*> k;
    if (keys) k = pointers(*keys);
    uint32_t in_n, out_n, aux_n;
    const int *in_nd, *out_nd, *aux_nd;
    const int **in_d, **out_d, **aux_d;
    int complete = 0;
    auto fn = partial ? MXSymbolInferShapePartial : MXSymbolInferShape;
    check(fn(handle(h), static_cast<uint32_t>(shapes.size()), keys ? k.data() : nullptr, ind.data(),
             data.data(), &in_n, &in_nd, &in_d, &out_n, &out_nd, &out_d, &aux_n, &aux_nd, &aux_d,
             &complete));
    return py::make_tuple(shape_list(in_n, in_nd, in_d), shape_list(out_n, out_nd, out_d),
                          shape_list(aux_n, aux_nd, aux_d), complete != 0);
  });
  // Type flags, -1 unknown.
  m.def("symbol_infer_type", [](uintptr_t h, std::optional<std::vector<std::string>> keys,
                                const std::vector<int>& types) {
    std::vector<const char*> k;
    if (keys) k = pointers(*keys);
    uint32_t in_n, out_n, aux_n;
    const int *in_t, *out_t, *aux_t;
    int complete = 0;
    check(MXSymbolInferType(handle(h), static_cast<uint32_t>(types.size()),
                            keys ? k.data() : nullptr, types.data(), &in_n, &in_t, &out_n, &out_t,
                            &aux_n, &aux_t, &complete));
    return py::make_tuple(std::vector<int>(in_t, in_t + in_n),
                          std::vector<int>(out_t, out_t + out_n),
                          std::vector<int>(aux_t, aux_t + aux_n), complete != 0);
  });
}
