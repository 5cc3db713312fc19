// Fuzz target: the single-array blob loader (load_blob: NDArray::Save of one array, what a
// pickled mx.nd.NDArray holds and MXNDArrayLoadFromRawBytes reads). Every rejection must be a
// nanomx::Error with a message; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nanomx/error.h"
#include "nanomx/ndarray.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nanomx::NDArray array = nanomx::load_blob(data, size, "fuzz input");
    array.wait_to_read();
  } catch (const nanomx::Error& error) {
    if (std::string_view(error.what()).empty()) __builtin_trap();
  }
  return 0;
}
