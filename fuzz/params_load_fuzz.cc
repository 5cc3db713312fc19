// Fuzz target: the `.params` loader (load_list: the list/dict body of MXNet's NDArray::Save
// files, magic 0x112), which reads files from anywhere. Every rejection must be a nanomx::Error
// with a message; a crash, a sanitizer report or another exception (std::bad_alloc from a
// forged size) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nanomx/error.h"
#include "nanomx/ndarray.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nanomx::LoadedArrays loaded = nanomx::load_list(data, size, "fuzz input");
    for (nanomx::NDArray& array : loaded.arrays) array.wait_to_read();
  } catch (const nanomx::Error& error) {
    if (std::string_view(error.what()).empty()) __builtin_trap();
  }
  return 0;
}
