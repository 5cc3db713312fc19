// JSON string literals, one escaper for everything nanomx writes: the profiler's trace file and
// aggregate JSON, and nanomx-trace's merged traces and viewer pages.
#pragma once

#include <string>
#include <string_view>

namespace nanomx::profiler {

// What an escaper writes beyond what JSON requires. The defaults are the trace file's format.
struct JsonStringStyle {
  // '\n', '\r', '\t' as their two-character escapes; otherwise as \u000a, \u000d, \u0009.
  bool short_escapes = false;
  // '<' and '>' as \u003c / \u003e, so the literal is safe inside an HTML <script> element.
  bool html_safe = false;
};

// Appends `text` as a JSON string literal, quotes included. Quotes, backslashes and control
// characters are escaped and bytes that are not valid UTF-8 become U+FFFD, so any name gives
// text that every JSON parser accepts.
void append_json_string(std::string* out, std::string_view text, JsonStringStyle style = {});

}  // namespace nanomx::profiler
