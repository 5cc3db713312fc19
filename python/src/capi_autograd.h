// nanomx._capi's autograd and custom-operator functions (capi_autograd.cc, capi_custom.cc),
// added to the module by capi_module.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace nanomx_python {
void add_autograd_functions(pybind11::module_& m);
void add_custom_op_functions(pybind11::module_& m);
}  // namespace nanomx_python
