#include "profiler/json_string.h"

namespace nanomx::profiler {

void append_json_string(std::string* out, std::string_view text, JsonStringStyle style) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (style.short_escapes && (c == '\n' || c == '\r' || c == '\t')) {
      out->push_back('\\');
      out->push_back(c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
      ++i;
    } else if (style.html_safe && (c == '<' || c == '>')) {
      out->append(c == '<' ? "\\u003c" : "\\u003e");
      ++i;
    } else if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
      ++i;
    } else if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else {
      size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
      bool valid = len != 0 && c < 0xf5 && i + len <= n;
      for (size_t k = 1; valid && k < len; ++k) valid = (s[i + k] & 0xc0) == 0x80;
      if (valid && len == 3) {
        unsigned cp = ((c & 0x0fu) << 12) | ((s[i + 1] & 0x3fu) << 6);
        valid = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
      }
      if (valid && len == 4) {
        unsigned cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3fu) << 12);
        valid = cp >= 0x10000 && cp <= 0x10ffff;
      }
      if (valid) {
        out->append(reinterpret_cast<const char*>(s + i), len);
        i += len;
      } else {
        out->append("\\ufffd");
        ++i;
      }
    }
  }
  out->push_back('"');
}

}  // namespace nanomx::profiler
