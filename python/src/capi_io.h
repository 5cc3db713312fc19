// nanomx._capi's data input functions (capi_io.cc), added to the module by capi_module.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace nanomx_python {
void add_io_functions(pybind11::module_& m);
}  // namespace nanomx_python
