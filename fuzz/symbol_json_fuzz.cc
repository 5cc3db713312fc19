// Fuzz target: the symbol JSON loader (Symbol::from_json: mx.sym.load_json, MXSymbolCreateFromJSON)
// and what a loaded graph is then used for without running it (listing, printing, saving, which
// must load again). Every rejection must be a nanomx::Error with a message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nanomx/error.h"
#include "symbol/symbol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nanomx::symbol::Symbol s =
        nanomx::symbol::Symbol::from_json(std::string(reinterpret_cast<const char*>(data), size));
    s.list_arguments();
    s.list_outputs();
    s.internals();
    s.debug_str();
    const std::string json = s.to_json();
    if (nanomx::symbol::Symbol::from_json(json).to_json() != json) __builtin_trap();
  } catch (const nanomx::Error& error) {
    if (std::string_view(error.what()).empty()) __builtin_trap();
  }
  return 0;
}
