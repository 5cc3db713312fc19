// nanomx._capi's executor functions (capi_executor.cc), added to the module by capi_module.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace nanomx_python {
void add_executor_functions(pybind11::module_& m);
}  // namespace nanomx_python
