// The objects behind the symbol and array handles, for the C API files of the layers above them
// (c_api_executor.cc): defined by c_api_symbol.cc and c_api_ndarray.cc, which own the tables.
#pragma once

#include "nanomx/c_api.h"
#include "nanomx/ndarray.h"
#include "symbol/symbol.h"

namespace nanomx::c_api {
// The live object of a handle; throws naming the function and the argument otherwise.
symbol::Symbol& symbol_from_handle(SymbolHandle handle, const char* function, const char* argument);
NDArray& ndarray_from_handle(NDArrayHandle handle, const char* function, const char* argument);
// A new handle for `array` (the caller frees it with MXNDArrayFree).
NDArrayHandle ndarray_to_handle(NDArray array);
}  // namespace nanomx::c_api
