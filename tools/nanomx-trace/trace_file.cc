#include "trace_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace nanomx::trace {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string describe_byte(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  char buffer[32];
  if (u >= 0x20 && u < 0x7f) {
    std::snprintf(buffer, sizeof buffer, "'%c'", c);
  } else {
    std::snprintf(buffer, sizeof buffer, "byte 0x%02x", u);
  }
  return buffer;
}

// A structural scan used only when simdjson rejects the text: it finds the events array and the
// byte span of each element, so a truncated file can be cut after its last complete event and a
// malformed one can be reported with the offset of the bad event.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  size_t skip_space(size_t pos) const {
    while (pos < text_.size() && is_space(text_[pos])) ++pos;
    return pos;
  }

  // End (one past) of the JSON value starting at `pos`, or nullopt when the text ends first.
  // It does not validate; it only tracks strings and bracket depth.
  std::optional<size_t> skip_value(size_t pos) const {
    if (pos >= text_.size()) return std::nullopt;
    char c = text_[pos];
    if (c == '"') return skip_string(pos);
    if (c == '{' || c == '[') {
      int depth = 0;
      while (pos < text_.size()) {
        char d = text_[pos];
        if (d == '"') {
          auto end = skip_string(pos);
          if (!end) return std::nullopt;
          pos = *end;
          continue;
        }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') {
          if (--depth == 0) return pos + 1;
        }
        ++pos;
      }
      return std::nullopt;
    }
    // A number, true, false or null: runs until a delimiter.
    while (pos < text_.size() && !is_space(text_[pos]) && text_[pos] != ',' && text_[pos] != ']' &&
           text_[pos] != '}') {
      ++pos;
    }
    return pos;
  }

  std::optional<size_t> skip_string(size_t pos) const {
    ++pos;  // opening quote
    while (pos < text_.size()) {
      char c = text_[pos];
      if (c == '\\') {
        pos += 2;
        continue;
      }
      if (c == '"') return pos + 1;
      ++pos;
    }
    return std::nullopt;
  }

 private:
  std::string_view text_;
};

struct EventsArrayScan {
  size_t open = 0;               // offset of '['
  bool closed = false;           // the matching ']' was found
  size_t last_complete_end = 0;  // one past the last complete element (or past '[')
  std::vector<std::pair<size_t, size_t>> elements;  // [begin, end) of each complete element
};

// Finds the events array: the document itself, or the value of a top-level "traceEvents" key.
EventsArrayScan scan_events_array(std::string_view text, const std::string& label) {
  Scanner scanner(text);
  size_t pos = scanner.skip_space(0);
  EventsArrayScan scan;
  if (text[pos] == '{') {
    pos = scanner.skip_space(pos + 1);
    bool found = false;
    while (pos < text.size()) {
      if (text[pos] != '"') {
        throw TraceError(label + ": byte " + std::to_string(pos) +
                         ": expected a key string, found " + describe_byte(text[pos]));
      }
      auto key_end = scanner.skip_string(pos);
      if (!key_end) break;
      std::string_view key = text.substr(pos + 1, *key_end - pos - 2);
      pos = scanner.skip_space(*key_end);
      if (pos >= text.size()) break;
      if (text[pos] != ':') {
        throw TraceError(label + ": byte " + std::to_string(pos) + ": expected ':' after key \"" +
                         std::string(key) + "\", found " + describe_byte(text[pos]));
      }
      pos = scanner.skip_space(pos + 1);
      if (key == "traceEvents") {
        if (pos < text.size() && text[pos] != '[') {
          throw TraceError(label + ": byte " + std::to_string(pos) +
                           ": \"traceEvents\" must be an array, found " + describe_byte(text[pos]));
        }
        found = pos < text.size();
        break;
      }
      auto value_end = scanner.skip_value(pos);
      if (!value_end) break;
      pos = scanner.skip_space(*value_end);
      if (pos < text.size() && text[pos] == ',') pos = scanner.skip_space(pos + 1);
    }
    if (!found) {
      throw TraceError(label + ": the file ends before a \"traceEvents\" array begins");
    }
  } else if (text[pos] != '[') {
    throw TraceError(label + ": byte " + std::to_string(pos) +
                     ": not a JSON trace: expected '{' or '[', found " + describe_byte(text[pos]));
  }
  scan.open = pos;
  scan.last_complete_end = pos + 1;
  pos = scanner.skip_space(pos + 1);
  while (pos < text.size()) {
    if (text[pos] == ']') {
      scan.closed = true;
      return scan;
    }
    if (text[pos] == ',') {
      pos = scanner.skip_space(pos + 1);
      continue;
    }
    auto end = scanner.skip_value(pos);
    bool complete =
        end && (*end < text.size() || text[pos] == '{' || text[pos] == '[' || text[pos] == '"');
    if (!complete) break;  // cut inside this element
    scan.elements.emplace_back(pos, *end);
    scan.last_complete_end = *end;
    pos = scanner.skip_space(*end);
  }
  return scan;
}

// Parses each element alone to find the first malformed one; throws naming its offset.
void locate_bad_element(const EventsArrayScan& scan, std::string_view text,
                        const std::string& label, const char* whole_error) {
  simdjson::dom::parser parser;
  for (size_t i = 0; i < scan.elements.size(); ++i) {
    auto [begin, end] = scan.elements[i];
    simdjson::dom::element element;
    auto error = parser.parse(text.data() + begin, end - begin, true).get(element);
    if (error) {
      throw TraceError(label + ": event " + std::to_string(i) + " (bytes " + std::to_string(begin) +
                       "-" + std::to_string(end) +
                       ") is not valid JSON: " + simdjson::error_message(error));
    }
  }
  throw TraceError(label + ": invalid JSON outside the events array: " + whole_error);
}

void read_stdio_file(const std::string& path, std::string* out, size_t* file_bytes) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  std::fseek(file, 0, SEEK_END);
  long size = std::ftell(file);
  std::fseek(file, 0, SEEK_SET);
  if (size < 0) {
    std::fclose(file);
    throw TraceError(path + ": cannot determine the file size");
  }
  out->resize(static_cast<size_t>(size) + simdjson::SIMDJSON_PADDING);
  size_t got = std::fread(out->data(), 1, static_cast<size_t>(size), file);
  std::fclose(file);
  if (got != static_cast<size_t>(size)) throw TraceError(path + ": read error");
  out->resize(static_cast<size_t>(size));
  *file_bytes = static_cast<size_t>(size);
}

void read_gzip_file(const std::string& path, std::string* out, size_t* file_bytes) {
  FILE* raw = std::fopen(path.c_str(), "rb");
  if (!raw) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  std::fseek(raw, 0, SEEK_END);
  *file_bytes = static_cast<size_t>(std::ftell(raw));
  std::fclose(raw);
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(file, 1 << 20);
  out->clear();
  char chunk[1 << 16];
  while (true) {
    int n = gzread(file, chunk, sizeof chunk);
    if (n < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      throw TraceError(path + ": gzip data is corrupt after " + std::to_string(out->size()) +
                       " decompressed bytes: " + message);
    }
    if (n == 0) break;
    out->append(chunk, static_cast<size_t>(n));
  }
  gzclose(file);
}

}  // namespace

bool is_gzip_file(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return false;
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, file);
  std::fclose(file);
  return got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::string read_file_contents(const std::string& path) {
  std::string text;
  size_t file_bytes = 0;
  if (is_gzip_file(path)) {
    read_gzip_file(path, &text, &file_bytes);
  } else {
    read_stdio_file(path, &text, &file_bytes);
  }
  return text;
}

std::unique_ptr<LoadedTrace> load_trace(const std::string& path) {
  std::string text;
  size_t file_bytes = 0;
  if (is_gzip_file(path)) {
    read_gzip_file(path, &text, &file_bytes);
  } else {
    read_stdio_file(path, &text, &file_bytes);
  }
  return parse_trace(std::move(text), path, file_bytes);
}

std::unique_ptr<LoadedTrace> parse_trace(std::string text, const std::string& label,
                                         size_t file_bytes) {
  auto trace = std::make_unique<LoadedTrace>();
  trace->path = label;
  trace->file_bytes = file_bytes;
  trace->json_bytes = text.size();

  size_t first = 0;
  while (first < text.size() && is_space(text[first])) ++first;
  if (first == text.size()) {
    throw TraceError(
        label + ": empty file (" + std::to_string(text.size()) +
        " bytes); expected a Chrome trace: a JSON object with \"traceEvents\" or a JSON "
        "array of events");
  }
  if (text[first] != '{' && text[first] != '[') {
    throw TraceError(label + ": byte " + std::to_string(first) +
                     ": not a JSON trace: expected '{' or '[', found " +
                     describe_byte(text[first]));
  }

  // Fast path: the whole file is valid JSON. The buffer gets simdjson's padding in place.
  size_t size = text.size();
  if (text.capacity() < size + simdjson::SIMDJSON_PADDING) {
    text.reserve(size + simdjson::SIMDJSON_PADDING);
  }
  text.resize(size + simdjson::SIMDJSON_PADDING);
  simdjson::dom::element root;
  auto error = trace->parser.parse(text.data(), size, false).get(root);
  std::string_view view(text.data(), size);

  if (error) {
    // Slow path: find out whether the events array was cut short (a crash) or is malformed.
    EventsArrayScan scan = scan_events_array(view, label);
    if (scan.closed) locate_bad_element(scan, view, label, simdjson::error_message(error));
    trace->truncated = true;
    trace->ignored_bytes = size - scan.last_complete_end;
    std::string repaired(view.substr(0, scan.last_complete_end));
    repaired += view[first] == '{' ? "]}" : "]";
    size_t repaired_size = repaired.size();
    repaired.resize(repaired_size + simdjson::SIMDJSON_PADDING);
    auto repaired_error = trace->parser.parse(repaired.data(), repaired_size, false).get(root);
    if (repaired_error) {
      locate_bad_element(scan, view, label, simdjson::error_message(repaired_error));
    }
  }

  if (root.is_array()) {
    trace->events = root.get_array().value_unsafe();
  } else if (root.is_object()) {
    trace->object_form = true;
    trace->root = root.get_object().value_unsafe();
    simdjson::dom::element events;
    if (trace->root["traceEvents"].get(events)) {
      throw TraceError(label +
                       ": the top-level object has no \"traceEvents\" key; expected "
                       "{\"traceEvents\": [...]}");
    }
    if (!events.is_array()) {
      throw TraceError(label + ": \"traceEvents\" is not an array");
    }
    trace->events = events.get_array().value_unsafe();
  } else {
    throw TraceError(label + ": the top-level value is neither an object nor an array");
  }
  return trace;
}

}  // namespace nanomx::trace
