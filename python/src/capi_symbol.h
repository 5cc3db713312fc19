// nanomx._capi's symbol functions (capi_symbol.cc), added to the module by capi_module.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace nanomx_python {
void add_symbol_functions(pybind11::module_& m);
}  // namespace nanomx_python
