// nanomx._capi's key-value store functions (capi_kvstore.cc).
#pragma once

#include <pybind11/pybind11.h>

namespace nanomx_python {
void add_kvstore_functions(pybind11::module_& m);
}  // namespace nanomx_python
