// Environment settings: NANOMX_<NAME>, with MXNET_<NAME> read as an alias.
#pragma once

#include <optional>
#include <string>
#include <string_view>

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx::env {

// The value of NANOMX_<name>, else MXNET_<name>, else nullopt.
std::optional<std::string> get(std::string_view name);
// As get(), parsed as an integer; throws naming the variable when the value is not one.
int get_int(std::string_view name, int default_value);

}  // namespace nanomx::env

#pragma GCC visibility pop
