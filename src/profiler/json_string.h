// JSON string literals for everything the profiler writes (trace file and aggregate JSON).
#pragma once

#include <string>
#include <string_view>

namespace nanomx::profiler {

// Appends `text` as a JSON string literal, quotes included. Quotes, backslashes and control
// characters are escaped and bytes that are not valid UTF-8 become U+FFFD, so any name gives
// text that every JSON parser accepts.
void append_json_string(std::string* out, std::string_view text);

}  // namespace nanomx::profiler
