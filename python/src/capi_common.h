// What every wrapper file of nanomx._capi needs: turning a failed C call into the Python
// exception, handles as the integers Python holds, and C string lists.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ndarray_type.h"

namespace nanomx_python {

// A nonzero return code of a C API call: raises the C API's message as MXNetError.
inline void check(int rc) {
  if (rc != 0) {
    set_error_from_c_api();
    throw pybind11::error_already_set();
  }
}

// A C call made without the GIL (it may block: I/O, the image pipeline, the network), then
// check()ed with the GIL held again.
template <typename Call>
void check_unlocked(Call&& call) {
  int rc;
  {
    pybind11::gil_scoped_release release;
    rc = call();
  }
  check(rc);
}

inline void* handle(uintptr_t h) { return reinterpret_cast<void*>(h); }
inline uintptr_t as_int(const void* h) { return reinterpret_cast<uintptr_t>(h); }

// The C strings of `strings` (valid while `strings` lives).
inline std::vector<const char*> pointers(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  out.reserve(strings.size());
  for (const std::string& s : strings) out.push_back(s.c_str());
  return out;
}

}  // namespace nanomx_python
