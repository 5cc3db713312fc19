// The NDArray handle table of c_api_ndarray.cc, for the other c_api_<layer>.cc files that take
// or give out array handles (autograd, custom operators).
#pragma once

#include "nanomx/c_api_ndarray.h"
#include "nanomx/ndarray.h"

namespace nanomx::c_api {
// The array behind a handle the C API gave out; throws naming function and argument otherwise.
NDArray& ndarray_of(NDArrayHandle handle, const char* function, const char* argument);
// A new handle owning `array` (the caller frees it with MXNDArrayFree).
NDArrayHandle new_ndarray_handle(NDArray array);
}  // namespace nanomx::c_api
