// The C API of the symbol layer (nanomx/c_api_symbol.h): symbols live in a handle table of
// their own kind, so a freed, forged or array handle passed as a symbol is refused.
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "c_api/c_api_common.h"
#include "c_api/c_api_objects.h"
#include "c_api/handle_table.h"
#include "nanomx/c_api.h"
#include "nanomx/ops.h"
#include "symbol/symbol.h"

using nanomx::symbol::Symbol;

namespace {

using SymbolTable = nanomx::c_api::HandleTable<Symbol, nanomx::c_api::HandleKind::kSymbol>;
SymbolTable& symbols() {
  static auto* table = new SymbolTable;  // never destroyed: handles may be freed at exit
  return *table;
}

Symbol& symbol_of(SymbolHandle h, const char* function, const char* argument = "symbol") {
  nanomx::c_api::check_not_null(h, function, argument);
  return symbols().get(h, function, argument);
}

SymbolHandle new_handle(Symbol s) { return symbols().emplace(std::move(s)); }

// Per-thread result buffers: valid until the next call of the same function on this thread.
thread_local std::string string_result;
thread_local std::vector<std::string> list_strings;
thread_local std::vector<const char*> list_pointers;

void set_list(const std::vector<std::string>& names, uint32_t* size, const char*** out) {
  list_strings = names;
  list_pointers.clear();
  for (const std::string& s : list_strings) list_pointers.push_back(s.c_str());
  *size = static_cast<uint32_t>(names.size());
  *out = list_pointers.data();
}

void check_out(const void* p, const char* function, const char* what) {
  nanomx::c_api::check_not_null(p, function, what);
}

// Shape results: ndim per shape and a pointer to its dims.
struct ShapeBuffers {
  std::vector<int> ndim;
  std::vector<std::vector<int>> dims;
  std::vector<const int*> pointers;
  void set(const std::vector<nanomx::ops::PartialShape>& shapes) {
    ndim.clear();
    dims.clear();
    pointers.clear();
    for (const auto& s : shapes) {
      std::vector<int> d;
      if (s.rank_known()) {
        for (int i = 0; i < s.ndim(); ++i) d.push_back(s.dim_known(i) ? static_cast<int>(s[i]) : 0);
      }
      ndim.push_back(static_cast<int>(d.size()));
      dims.push_back(std::move(d));
    }
    for (const auto& d : dims) pointers.push_back(d.data());
  }
};
thread_local ShapeBuffers shape_in, shape_out, shape_aux;
thread_local std::vector<int> type_in, type_out, type_aux;

int infer_shape_impl(const char* function, SymbolHandle sym, uint32_t num_args, const char** keys,
                     const uint32_t* arg_ind_ptr, const int* arg_shape_data,
                     uint32_t* in_shape_size, const int** in_shape_ndim, const int*** in_shape_data,
                     uint32_t* out_shape_size, const int** out_shape_ndim,
                     const int*** out_shape_data, uint32_t* aux_shape_size,
                     const int** aux_shape_ndim, const int*** aux_shape_data, int* complete) {
  const Symbol& s = symbol_of(sym, function);
  const std::vector<std::string> args = s.list_arguments();
  std::map<std::string, nanomx::ops::PartialShape> known;
  if (num_args > 0) {
    check_out(arg_ind_ptr, function, "arg_ind_ptr");
    check_out(arg_shape_data, function, "arg_shape_data");
  }
  for (uint32_t i = 0; i < num_args; ++i) {
    std::string name;
    if (keys == nullptr) {
      NANOMX_CHECK(i < args.size())
          << function << ": " << num_args << " positional shapes given, the symbol has "
          << args.size() << " arguments";
      name = args[i];
    } else {
      check_out(keys[i], function, "keys[i]");
      name = keys[i];
      bool found = false;
      // Keywords may name aux states too (MXNet's ListInputNames(kAll)).
      for (const auto& a : s.list_inputs()) found = found || a == name;
      if (!found) {
        std::ostringstream msg;
        msg << "InferShapeKeyword argument name " << name << " not found.\nCandidate arguments:";
        for (size_t j = 0; j < args.size(); ++j) msg << "\n\t[" << j << "]" << args[j];
        NANOMX_THROW() << msg.str();
      }
    }
    std::vector<int64_t> dims;
    for (uint32_t j = arg_ind_ptr[i]; j < arg_ind_ptr[i + 1]; ++j) {
      NANOMX_CHECK(arg_shape_data[j] >= 0)
          << function << ": argument " << name << " has a negative dimension " << arg_shape_data[j];
      dims.push_back(arg_shape_data[j] > 0 ? arg_shape_data[j] : 1);
    }
    nanomx::ops::PartialShape p{nanomx::Shape(std::span<const int64_t>(dims))};
    for (uint32_t j = arg_ind_ptr[i]; j < arg_ind_ptr[i + 1]; ++j) {
      if (arg_shape_data[j] == 0)
        p[static_cast<int>(j - arg_ind_ptr[i])] = nanomx::ops::PartialShape::kUnknownDim;
    }
    known[name] = p;
  }
  const auto r = nanomx::symbol::infer_shape(s, known);
  shape_in.set(r.args);
  shape_out.set(r.outputs);
  shape_aux.set(r.aux);
  *in_shape_size = static_cast<uint32_t>(r.args.size());
  *in_shape_ndim = shape_in.ndim.data();
  *in_shape_data = shape_in.pointers.data();
  *out_shape_size = static_cast<uint32_t>(r.outputs.size());
  *out_shape_ndim = shape_out.ndim.data();
  *out_shape_data = shape_out.pointers.data();
  *aux_shape_size = static_cast<uint32_t>(r.aux.size());
  *aux_shape_ndim = shape_aux.ndim.data();
  *aux_shape_data = shape_aux.pointers.data();
  *complete = r.complete ? 1 : 0;
  return 0;
}

}  // namespace

Symbol& nanomx::c_api::symbol_from_handle(SymbolHandle handle, const char* function,
                                          const char* argument) {
  return symbol_of(handle, function, argument);
}

int MXSymbolCreateVariable(const char* name, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolCreateVariable);
  check_out(name, "MXSymbolCreateVariable", "name");
  check_out(out, "MXSymbolCreateVariable", "out");
  *out = new_handle(Symbol::variable(name));
  NANOMX_API_END();
}

int MXSymbolCreateAtomicSymbol(AtomicSymbolCreator creator, uint32_t num_param, const char** keys,
                               const char** vals, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolCreateAtomicSymbol);
  check_out(out, "MXSymbolCreateAtomicSymbol", "out");
  const char *name = nullptr, *description = nullptr, *key_var = nullptr, *ret = nullptr;
  mx_uint num_args = 0;
  const char **arg_names = nullptr, **arg_types = nullptr, **arg_descriptions = nullptr;
  // Validates the op handle (and refuses other kinds) through the operator API.
  if (MXSymbolGetAtomicSymbolInfo(creator, &name, &description, &num_args, &arg_names, &arg_types,
                                  &arg_descriptions, &key_var, &ret) != 0) {
    NANOMX_THROW() << MXGetLastError();
  }
  nanomx::symbol::Kwargs attrs;
  for (uint32_t i = 0; i < num_param; ++i) {
    check_out(keys[i], "MXSymbolCreateAtomicSymbol", "keys[i]");
    check_out(vals[i], "MXSymbolCreateAtomicSymbol", "vals[i]");
    attrs.emplace_back(keys[i], vals[i]);
  }
  *out = new_handle(Symbol::atomic(nanomx::ops::get_op(name), attrs));
  NANOMX_API_END();
}

int MXSymbolCompose(SymbolHandle sym, const char* name, uint32_t num_args, const char** keys,
                    SymbolHandle* args) {
  NANOMX_API_BEGIN(MXSymbolCompose);
  Symbol& s = symbol_of(sym, "MXSymbolCompose");
  std::vector<Symbol> positional;
  std::vector<std::pair<std::string, Symbol>> named;
  for (uint32_t i = 0; i < num_args; ++i) {
    const Symbol& a = symbol_of(args[i], "MXSymbolCompose", "args[i]");
    if (keys != nullptr && keys[i] != nullptr) {
      named.emplace_back(keys[i], a);
    } else {
      positional.push_back(a);
    }
  }
  s.compose(positional, named, name ? name : "");
  NANOMX_API_END();
}

int MXSymbolCreateGroup(uint32_t num_symbols, SymbolHandle* syms, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolCreateGroup);
  check_out(out, "MXSymbolCreateGroup", "out");
  std::vector<Symbol> list;
  for (uint32_t i = 0; i < num_symbols; ++i)
    list.push_back(symbol_of(syms[i], "MXSymbolCreateGroup", "symbols[i]"));
  *out = new_handle(Symbol::group(list));
  NANOMX_API_END();
}

int MXSymbolCopy(SymbolHandle symbol, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolCopy);
  check_out(out, "MXSymbolCopy", "out");
  *out = new_handle(symbol_of(symbol, "MXSymbolCopy").copy());
  NANOMX_API_END();
}

int MXSymbolFree(SymbolHandle symbol) {
  NANOMX_API_BEGIN(MXSymbolFree);
  nanomx::c_api::check_not_null(symbol, "MXSymbolFree", "symbol");
  Symbol released = symbols().release(symbol, "MXSymbolFree", "symbol");
  NANOMX_API_END();
}

int MXSymbolPrint(SymbolHandle symbol, const char** out_str) {
  NANOMX_API_BEGIN(MXSymbolPrint);
  check_out(out_str, "MXSymbolPrint", "out_str");
  string_result = symbol_of(symbol, "MXSymbolPrint").debug_str();
  *out_str = string_result.c_str();
  NANOMX_API_END();
}

int MXSymbolGetName(SymbolHandle symbol, const char** out, int* success) {
  NANOMX_API_BEGIN(MXSymbolGetName);
  const Symbol& s = symbol_of(symbol, "MXSymbolGetName");
  *success = 0;
  if (!s.outputs.empty()) {
    bool single = true;
    for (const auto& e : s.outputs) single = single && e.node == s.outputs[0].node;
    if (single) {
      string_result = s.outputs[0].node->name;
      *out = string_result.c_str();
      *success = 1;
    }
  }
  NANOMX_API_END();
}

int MXSymbolListArguments(SymbolHandle symbol, uint32_t* out_size, const char*** out) {
  NANOMX_API_BEGIN(MXSymbolListArguments);
  set_list(symbol_of(symbol, "MXSymbolListArguments").list_arguments(), out_size, out);
  NANOMX_API_END();
}

int MXSymbolListOutputs(SymbolHandle symbol, uint32_t* out_size, const char*** out) {
  NANOMX_API_BEGIN(MXSymbolListOutputs);
  set_list(symbol_of(symbol, "MXSymbolListOutputs").list_outputs(), out_size, out);
  NANOMX_API_END();
}

int MXSymbolListAuxiliaryStates(SymbolHandle symbol, uint32_t* out_size, const char*** out) {
  NANOMX_API_BEGIN(MXSymbolListAuxiliaryStates);
  set_list(symbol_of(symbol, "MXSymbolListAuxiliaryStates").list_auxiliary_states(), out_size, out);
  NANOMX_API_END();
}

int MXSymbolGetNumOutputs(SymbolHandle symbol, uint32_t* output_count) {
  NANOMX_API_BEGIN(MXSymbolGetNumOutputs);
  *output_count = static_cast<uint32_t>(symbol_of(symbol, "MXSymbolGetNumOutputs").outputs.size());
  NANOMX_API_END();
}

int MXSymbolGetInternals(SymbolHandle symbol, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolGetInternals);
  check_out(out, "MXSymbolGetInternals", "out");
  *out = new_handle(symbol_of(symbol, "MXSymbolGetInternals").internals());
  NANOMX_API_END();
}

int MXSymbolGetChildren(SymbolHandle symbol, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolGetChildren);
  check_out(out, "MXSymbolGetChildren", "out");
  Symbol c = symbol_of(symbol, "MXSymbolGetChildren").children();
  *out = c.outputs.empty() ? nullptr : new_handle(std::move(c));
  NANOMX_API_END();
}

int MXSymbolGetOutput(SymbolHandle symbol, uint32_t index, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolGetOutput);
  check_out(out, "MXSymbolGetOutput", "out");
  *out = new_handle(symbol_of(symbol, "MXSymbolGetOutput")[index]);
  NANOMX_API_END();
}

int MXSymbolGetAttr(SymbolHandle symbol, const char* key, const char** out, int* success) {
  NANOMX_API_BEGIN(MXSymbolGetAttr);
  check_out(key, "MXSymbolGetAttr", "key");
  auto v = symbol_of(symbol, "MXSymbolGetAttr").get_attr(key);
  *success = v ? 1 : 0;
  if (v) {
    string_result = *v;
    *out = string_result.c_str();
  }
  NANOMX_API_END();
}

int MXSymbolSetAttr(SymbolHandle symbol, const char* key, const char* value) {
  NANOMX_API_BEGIN(MXSymbolSetAttr);
  check_out(key, "MXSymbolSetAttr", "key");
  check_out(value, "MXSymbolSetAttr", "value");
  symbol_of(symbol, "MXSymbolSetAttr").set_attr(key, value);
  NANOMX_API_END();
}

namespace {
void list_attr(const Symbol& s, bool recursive, uint32_t* out_size, const char*** out) {
  std::vector<std::string> flat;
  for (const auto& [k, v] : s.list_attr(recursive)) {
    flat.push_back(k);
    flat.push_back(v);
  }
  uint32_t n = 0;
  set_list(flat, &n, out);
  *out_size = n / 2;
}
}  // namespace

int MXSymbolListAttr(SymbolHandle symbol, uint32_t* out_size, const char*** out) {
  NANOMX_API_BEGIN(MXSymbolListAttr);
  list_attr(symbol_of(symbol, "MXSymbolListAttr"), true, out_size, out);
  NANOMX_API_END();
}

int MXSymbolListAttrShallow(SymbolHandle symbol, uint32_t* out_size, const char*** out) {
  NANOMX_API_BEGIN(MXSymbolListAttrShallow);
  list_attr(symbol_of(symbol, "MXSymbolListAttrShallow"), false, out_size, out);
  NANOMX_API_END();
}

int MXSymbolSaveToJSON(SymbolHandle symbol, const char** out_json) {
  NANOMX_API_BEGIN(MXSymbolSaveToJSON);
  check_out(out_json, "MXSymbolSaveToJSON", "out_json");
  string_result = symbol_of(symbol, "MXSymbolSaveToJSON").to_json();
  *out_json = string_result.c_str();
  NANOMX_API_END();
}

int MXSymbolCreateFromJSON(const char* json, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolCreateFromJSON);
  check_out(json, "MXSymbolCreateFromJSON", "json");
  check_out(out, "MXSymbolCreateFromJSON", "out");
  *out = new_handle(Symbol::from_json(json));
  NANOMX_API_END();
}

int MXSymbolSaveToFile(SymbolHandle symbol, const char* fname) {
  NANOMX_API_BEGIN(MXSymbolSaveToFile);
  check_out(fname, "MXSymbolSaveToFile", "fname");
  const std::string json = symbol_of(symbol, "MXSymbolSaveToFile").to_json();
  std::ofstream f(fname, std::ios::binary);
  NANOMX_CHECK(f) << "MXSymbolSaveToFile: cannot open " << fname << " for writing";
  f << json;
  f.close();
  NANOMX_CHECK(f) << "MXSymbolSaveToFile: writing " << fname << " failed";
  NANOMX_API_END();
}

int MXSymbolCreateFromFile(const char* fname, SymbolHandle* out) {
  NANOMX_API_BEGIN(MXSymbolCreateFromFile);
  check_out(fname, "MXSymbolCreateFromFile", "fname");
  check_out(out, "MXSymbolCreateFromFile", "out");
  std::ifstream f(fname, std::ios::binary);
  NANOMX_CHECK(f) << "MXSymbolCreateFromFile: cannot open " << fname;
  std::stringstream buf;
  buf << f.rdbuf();
  *out = new_handle(Symbol::from_json(buf.str()));
  NANOMX_API_END();
}

// MXSymbolInferShape and MXSymbolInferShapePartial are the same call (nanomx/c_api_symbol.h):
// one definition written under each C API name, which names the call in errors and profiles.
#define NANOMX_DEFINE_INFER_SHAPE(function)                                                        \
  int function(SymbolHandle sym, uint32_t num_args, const char** keys,                             \
               const uint32_t* arg_ind_ptr, const int* arg_shape_data, uint32_t* in_shape_size,    \
               const int** in_shape_ndim, const int*** in_shape_data, uint32_t* out_shape_size,    \
               const int** out_shape_ndim, const int*** out_shape_data, uint32_t* aux_shape_size,  \
               const int** aux_shape_ndim, const int*** aux_shape_data, int* complete) {           \
    NANOMX_API_BEGIN(function);                                                                    \
    infer_shape_impl(#function, sym, num_args, keys, arg_ind_ptr, arg_shape_data, in_shape_size,   \
                     in_shape_ndim, in_shape_data, out_shape_size, out_shape_ndim, out_shape_data, \
                     aux_shape_size, aux_shape_ndim, aux_shape_data, complete);                    \
    NANOMX_API_END();                                                                              \
  }
NANOMX_DEFINE_INFER_SHAPE(MXSymbolInferShape)
NANOMX_DEFINE_INFER_SHAPE(MXSymbolInferShapePartial)
#undef NANOMX_DEFINE_INFER_SHAPE

int MXSymbolInferType(SymbolHandle sym, uint32_t num_args, const char** keys,
                      const int* arg_type_data, uint32_t* in_type_size, const int** in_type_data,
                      uint32_t* out_type_size, const int** out_type_data, uint32_t* aux_type_size,
                      const int** aux_type_data, int* complete) {
  NANOMX_API_BEGIN(MXSymbolInferType);
  const Symbol& s = symbol_of(sym, "MXSymbolInferType");
  const std::vector<std::string> args = s.list_arguments();
  std::map<std::string, nanomx::DType> known;
  for (uint32_t i = 0; i < num_args; ++i) {
    std::string name;
    if (keys == nullptr) {
      NANOMX_CHECK(i < args.size())
          << "MXSymbolInferType: " << num_args << " positional types given, the symbol has "
          << args.size() << " arguments";
      name = args[i];
    } else {
      name = keys[i];
      bool found = false;
      // Keywords may name aux states too (MXNet's ListInputNames(kAll)).
      for (const auto& a : s.list_inputs()) found = found || a == name;
      if (!found) {
        std::ostringstream msg;
        msg << "InferTypeKeyword argument name " << name << " not found.\nCandidate arguments:";
        for (size_t j = 0; j < args.size(); ++j) msg << "\n\t[" << j << "]" << args[j];
        NANOMX_THROW() << msg.str();
      }
    }
    if (arg_type_data[i] == -1) continue;
    NANOMX_CHECK(nanomx::dtype_valid(arg_type_data[i]))
        << "MXSymbolInferType: argument " << name << " has unknown type flag " << arg_type_data[i];
    known[name] = static_cast<nanomx::DType>(arg_type_data[i]);
  }
  const auto r = nanomx::symbol::infer_type(s, known);
  auto fill = [](std::vector<int>& buf, const std::vector<nanomx::ops::PartialDType>& v) {
    buf.clear();
    for (const auto& t : v) buf.push_back(t ? static_cast<int>(*t) : -1);
  };
  fill(type_in, r.args);
  fill(type_out, r.outputs);
  fill(type_aux, r.aux);
  *in_type_size = static_cast<uint32_t>(type_in.size());
  *in_type_data = type_in.data();
  *out_type_size = static_cast<uint32_t>(type_out.size());
  *out_type_data = type_out.data();
  *aux_type_size = static_cast<uint32_t>(type_aux.size());
  *aux_type_data = type_aux.data();
  *complete = r.complete ? 1 : 0;
  NANOMX_API_END();
}
