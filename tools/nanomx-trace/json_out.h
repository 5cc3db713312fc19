// Small helpers for writing JSON text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "profiler/json_string.h"

namespace nanomx::trace {

// Appends `text` as a JSON string literal (quotes included), with the profiler's escaper:
// control characters, quotes and backslashes are escaped ('\n', '\r', '\t' in their short
// form); '<' and '>' too, so the text is also safe inside an HTML <script>.
inline void append_json_string(std::string* out, std::string_view text) {
  profiler::append_json_string(out, text, {.short_escapes = true, .html_safe = true});
}

inline std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(&out, text);
  return out;
}

// Nanoseconds as microseconds with three decimals ("1234.567"), exact for any int64.
inline void append_ns_as_us(std::string* out, int64_t ns) {
  if (ns < 0) {
    out->push_back('-');
    ns = -ns;
  }
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  out->append(buffer);
}

// Appends several pieces in order. (Used instead of `"literal" + std::string`, which makes g++ 12
// report a false -Wrestrict at -O3.)
template <typename... Parts>
void append_all(std::string* out, const Parts&... parts) {
  (out->append(std::string_view(parts)), ...);
}

}  // namespace nanomx::trace
