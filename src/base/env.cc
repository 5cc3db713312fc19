#include "nanomx/env.h"

#include <cerrno>
#include <cstdlib>

#include "nanomx/error.h"

namespace nanomx::env {

std::optional<std::string> get(std::string_view name) {
  for (const char* prefix : {"NANOMX_", "MXNET_"}) {
    const std::string key = std::string(prefix) + std::string(name);
    if (const char* value = std::getenv(key.c_str())) return std::string(value);
  }
  return std::nullopt;
}

int get_int(std::string_view name, int default_value) {
  const auto value = get(name);
  if (!value) return default_value;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(value->c_str(), &end, 10);
  NANOMX_CHECK(!value->empty() && *end == '\0' && errno == 0 && parsed >= INT32_MIN &&
               parsed <= INT32_MAX)
      << "environment variable NANOMX_" << name << " (or MXNET_" << name << ") = '" << *value
      << "' is not an integer";
  return static_cast<int>(parsed);
}

}  // namespace nanomx::env
