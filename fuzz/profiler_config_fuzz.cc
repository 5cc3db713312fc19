// Fuzz target: the profiler configuration parser (profiler::parse_config), which sees whatever
// string key/value pairs MXProfileSetConfig and mx.profiler.set_config are given.
//
// The input is split into lines; each line is one pair, split at its first '=' (a line without
// one is a key with an empty value). Every rejection must be a nanomx::Error with a message;
// anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nanomx/error.h"
#include "nanomx/profiler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nanomx::profiler::KeyValues pairs;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      pairs.emplace_back(std::string(line), std::string());
    } else {
      pairs.emplace_back(std::string(line.substr(0, equals)), std::string(line.substr(equals + 1)));
    }
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  try {
    nanomx::profiler::Config config = nanomx::profiler::parse_config(pairs);
    (void)config;
  } catch (const nanomx::Error& error) {
    if (std::string_view(error.what()).empty()) __builtin_trap();  // every error says why
  }
  return 0;
}
