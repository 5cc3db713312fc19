#include "csv_line.h"

#include <cstdio>

namespace nanomx::trace {
namespace {

// A character as the error message shows it: printable ASCII as itself, anything else by code.
std::string shown(char c) {
  unsigned char byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f) return std::string("'") + c + "'";
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "byte 0x%02x", byte);
  return buffer;
}

}  // namespace

bool split_csv_line(std::string_view line, std::vector<std::string>* fields, CsvLineError* error) {
  fields->clear();
  size_t i = 0;
  for (;;) {
    std::string& field = fields->emplace_back();
    size_t start = i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      for (;;) {
        size_t quote = line.find('"', i);
        if (quote == std::string_view::npos) {
          *error = {start + 1, fields->size() - 1,
                    "unterminated quote: the field that starts here has no closing quote on "
                    "this line"};
          return false;
        }
        field.append(line.substr(i, quote - i));
        i = quote + 1;
        if (i < line.size() && line[i] == '"') {  // "" inside a quoted field: one quote
          field.push_back('"');
          ++i;
          continue;
        }
        break;
      }
      if (i < line.size() && line[i] != ',') {
        *error = {i + 1, fields->size() - 1,
                  "expected a comma or the end of the line after the closing quote, found " +
                      shown(line[i]) + " (a quote inside a quoted field is written twice: \"\")"};
        return false;
      }
    } else {
      size_t end = line.find(',', i);
      if (end == std::string_view::npos) end = line.size();
      std::string_view bare = line.substr(i, end - i);
      size_t quote = bare.find('"');
      if (quote != std::string_view::npos) {
        *error = {i + quote + 1, fields->size() - 1,
                  "a quote inside a field that does not start with one; quote the whole field "
                  "and write the quote twice (\"\")"};
        return false;
      }
      field.assign(bare);
      i = end;
    }
    if (i >= line.size()) return true;
    ++i;  // the comma; a comma at the very end starts one more, empty, field
  }
}

}  // namespace nanomx::trace
