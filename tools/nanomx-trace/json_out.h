// Small helpers for writing JSON text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace nanomx::trace {

// Appends `text` as a JSON string literal (quotes included). Control characters, quotes and
// backslashes are escaped; '<' and '>' too, so the text is also safe inside an HTML <script>.
inline void append_json_string(std::string* out, std::string_view text) {
  out->push_back('"');
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '<':
        out->append("\\u003c");
        break;
      case '>':
        out->append("\\u003e");
        break;
      default:
        if (u < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", u);
          out->append(buffer);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
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
