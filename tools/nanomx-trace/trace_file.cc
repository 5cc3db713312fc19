#include "trace_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace nanomx::trace {

namespace {
ReadLimits g_limits;
}  // namespace

void set_read_limits(const ReadLimits& limits) { g_limits = limits; }
const ReadLimits& read_limits() { return g_limits; }

uint64_t decompressed_cap(uint64_t file_bytes) {
  if (g_limits.max_decompressed_bytes != 0) return g_limits.max_decompressed_bytes;
  uint64_t relative =
      file_bytes > UINT64_MAX / kDecompressedRatio ? UINT64_MAX : file_bytes * kDecompressedRatio;
  return std::max(relative, kDecompressedFloor);
}

namespace {

std::string mib(uint64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buffer;
}

[[noreturn]] void throw_decompressed_cap(const std::string& path, uint64_t file_bytes) {
  std::string rule = g_limits.max_decompressed_bytes != 0
                         ? "set by --max-decompressed-mb"
                         : std::to_string(kDecompressedRatio) + " times the " + mib(file_bytes) +
                               " file, at least " + mib(kDecompressedFloor);
  throw TraceError(path + ": gzip data decompresses to more than " +
                   mib(decompressed_cap(file_bytes)) + " (the limit: " + rule +
                   "); a gzip bomb? Raise the limit with --max-decompressed-mb N (0: no limit)");
}

[[noreturn]] void throw_too_many_events(const std::string& path, size_t offset) {
  std::string where = offset == SIZE_MAX ? "" : ": byte " + std::to_string(offset);
  throw TraceError(path + where + ": more than " + std::to_string(g_limits.max_events) +
                   " events (the limit; raise it with --max-events N)");
}

[[noreturn]] void throw_not_object(const std::string& path, size_t index, size_t offset,
                                   char found);

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

void throw_not_object(const std::string& path, size_t index, size_t offset, char found) {
  throw TraceError(path + ": event " + std::to_string(index) + " (byte " + std::to_string(offset) +
                   ") is not a JSON object: expected '{', found " + describe_byte(found));
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

// The offset just past the '[' of the events array, or nullopt when `text` ends first.
std::optional<size_t> find_events_open(std::string_view text, const std::string& label,
                                       bool* object_form) {
  Scanner scanner(text);
  size_t pos = scanner.skip_space(0);
  if (pos >= text.size()) return std::nullopt;
  if (text[pos] == '[') return pos + 1;
  if (text[pos] != '{') {
    throw TraceError(label + ": byte " + std::to_string(pos) +
                     ": not a JSON trace: expected '{' or '[', found " + describe_byte(text[pos]));
  }
  *object_form = true;
  pos = scanner.skip_space(pos + 1);
  while (pos < text.size()) {
    if (text[pos] != '"') {
      throw TraceError(label + ": byte " + std::to_string(pos) + ": expected a key string, found " +
                       describe_byte(text[pos]));
    }
    auto key_end = scanner.skip_string(pos);
    if (!key_end) return std::nullopt;
    std::string_view key = text.substr(pos + 1, *key_end - pos - 2);
    pos = scanner.skip_space(*key_end);
    if (pos >= text.size()) return std::nullopt;
    if (text[pos] != ':') {
      throw TraceError(label + ": byte " + std::to_string(pos) + ": expected ':' after key \"" +
                       std::string(key) + "\", found " + describe_byte(text[pos]));
    }
    pos = scanner.skip_space(pos + 1);
    if (pos >= text.size()) return std::nullopt;
    if (key == "traceEvents") {
      if (text[pos] != '[') {
        throw TraceError(label + ": byte " + std::to_string(pos) +
                         ": \"traceEvents\" must be an array, found " + describe_byte(text[pos]));
      }
      return pos + 1;
    }
    auto value_end = scanner.skip_value(pos);
    if (!value_end || *value_end >= text.size()) return std::nullopt;
    pos = scanner.skip_space(*value_end);
    if (pos < text.size() && text[pos] == ',') pos = scanner.skip_space(pos + 1);
    if (pos < text.size() && text[pos] == '}') {
      throw TraceError(label +
                       ": the top-level object has no \"traceEvents\" key; expected "
                       "{\"traceEvents\": [...]}");
    }
  }
  return std::nullopt;
}

// Finds the events array (the document itself, or the value of a top-level "traceEvents" key)
// and the byte span of each complete element in it.
EventsArrayScan scan_events_array(std::string_view text, const std::string& label) {
  Scanner scanner(text);
  bool object_form = false;
  auto open = find_events_open(text, label, &object_form);
  if (!open) throw TraceError(label + ": the file ends before a \"traceEvents\" array begins");
  EventsArrayScan scan;
  size_t pos = *open - 1;
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
    if (text[pos] != '{') throw_not_object(label, scan.elements.size(), pos, text[pos]);
    if (scan.elements.size() >= g_limits.max_events) throw_too_many_events(label, pos);
    auto end = scanner.skip_value(pos);
    if (!end) break;  // cut inside this element
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
    if (out->size() + static_cast<size_t>(n) > decompressed_cap(*file_bytes)) {
      gzclose(file);
      throw_decompressed_cap(path, *file_bytes);
    }
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
  if (trace->events.size() > g_limits.max_events) throw_too_many_events(label, SIZE_MAX);
  return trace;
}

namespace {

// Bytes of a trace file, gunzipped on the fly when it is gzip-compressed.
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    FILE* raw = std::fopen(path.c_str(), "rb");
    if (!raw) throw TraceError(path + ": cannot open: " + std::strerror(errno));
    std::fseek(raw, 0, SEEK_END);
    file_bytes_ = static_cast<size_t>(std::ftell(raw));
    std::fseek(raw, 0, SEEK_SET);
    unsigned char magic[2] = {0, 0};
    bool gzip = std::fread(magic, 1, 2, raw) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    std::fseek(raw, 0, SEEK_SET);
    if (gzip) {
      std::fclose(raw);
      gz_ = gzopen(path.c_str(), "rb");
      if (!gz_) throw TraceError(path + ": cannot open: " + std::strerror(errno));
      gzbuffer(gz_, 1 << 20);
      cap_ = decompressed_cap(file_bytes_);
    } else {
      file_ = raw;
    }
  }
  ~ByteSource() {
    if (file_) std::fclose(file_);
    if (gz_) gzclose(gz_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Reads up to `size` bytes; fewer only at the end of the data.
  size_t read(char* destination, size_t size) {
    size_t done = 0;
    while (done < size) {
      size_t n;
      if (file_) {
        n = std::fread(destination + done, 1, size - done, file_);
        if (n == 0 && std::ferror(file_)) {
          throw TraceError(path_ + ": read error: " + std::strerror(errno));
        }
      } else {
        unsigned want = static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30));
        int got = gzread(gz_, destination + done, want);
        if (got < 0) {
          int code = 0;
          std::string message = gzerror(gz_, &code);
          throw TraceError(path_ + ": gzip data is corrupt after " + std::to_string(total_ + done) +
                           " decompressed bytes: " + message);
        }
        n = static_cast<size_t>(got);
      }
      if (n == 0) break;
      done += n;
      if (gz_ && total_ + done > cap_) throw_decompressed_cap(path_, file_bytes_);
    }
    total_ += done;
    return done;
  }

  size_t file_bytes() const { return file_bytes_; }
  size_t total() const { return total_; }

 private:
  std::string path_;
  FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  size_t file_bytes_ = 0;
  size_t total_ = 0;
  uint64_t cap_ = UINT64_MAX;  // decompressed bytes allowed (gzip only)
};

}  // namespace

namespace {

// "bytes B-E" of the `k`-th element of the run of whole elements text[begin, end), as offsets in
// the JSON text (`base` is the offset of text[0]).
std::string describe_span(const char* text, size_t begin, size_t end, size_t k, size_t base) {
  Scanner scanner(std::string_view(text, end));
  size_t pos = begin;
  for (size_t i = 0;; ++i) {
    while (pos < end && (is_space(text[pos]) || text[pos] == ',')) ++pos;
    auto element_end = scanner.skip_value(pos);
    if (pos >= end || !element_end) return "near byte " + std::to_string(base + begin);
    if (i == k) {
      return "bytes " + std::to_string(base + pos) + "-" + std::to_string(base + *element_end);
    }
    pos = *element_end;
  }
}

}  // namespace

StreamInfo stream_events(const std::string& path, const EventCallback& on_event,
                         size_t chunk_bytes) {
  ByteSource source(path);
  StreamInfo info;
  info.path = path;
  info.file_bytes = source.file_bytes();

  // buffer[0] is spare room for the '[' written in front of each chunk of events; the data
  // starts at buffer[1]; simdjson's padding always follows the data.
  std::vector<char> buffer;
  size_t length = 0;  // bytes of data in the buffer
  size_t base = 0;    // offset in the JSON text of the buffer's first data byte
  bool eof = false;
  auto data = [&]() { return buffer.data() + 1; };
  auto fill = [&](size_t want) {
    size_t needed = 1 + length + want + simdjson::SIMDJSON_PADDING;
    if (buffer.size() < needed) buffer.resize(std::max(needed, buffer.size() * 2));
    size_t got = source.read(data() + length, want);
    length += got;
    if (got < want) eof = true;
  };
  auto compact = [&](size_t consumed) {
    std::memmove(data(), data() + consumed, length - consumed);
    length -= consumed;
    base += consumed;
  };

  // The header, up to the '[' of the events array.
  size_t consumed = 0;
  while (true) {
    fill(chunk_bytes);
    size_t first = 0;
    while (first < length && is_space(data()[first])) ++first;
    if (first == length && eof) {
      throw TraceError(path + ": empty file (" + std::to_string(length) +
                       " bytes); expected a Chrome trace: a JSON object with \"traceEvents\" or "
                       "a JSON array of events");
    }
    auto open = find_events_open(std::string_view(data(), length), path, &info.object_form);
    if (open) {
      consumed = *open;
      break;
    }
    if (eof) throw TraceError(path + ": the file ends before a \"traceEvents\" array begins");
  }

  simdjson::dom::parser parser;
  size_t index = 0;
  size_t last_complete_end = base + consumed;  // offset just past the last complete element
  int fast_path_failures = 0;

  // Parses data[begin, end), a run of complete elements, as one array and hands them out.
  auto parse_run = [&](size_t begin, size_t end) -> bool {
    char* text = data();
    char saved_front = text[static_cast<std::ptrdiff_t>(begin) - 1];
    char saved_back = text[end];
    text[static_cast<std::ptrdiff_t>(begin) - 1] = '[';
    text[end] = ']';
    simdjson::dom::element root;
    auto error = parser.parse(text + begin - 1, end - begin + 2, false).get(root);
    text[static_cast<std::ptrdiff_t>(begin) - 1] = saved_front;
    text[end] = saved_back;
    if (error || !root.is_array()) return false;
    simdjson::dom::array events = root.get_array().value_unsafe();
    size_t first_index = index;
    for (simdjson::dom::element event : events) {
      if (index >= g_limits.max_events) throw_too_many_events(path, base + begin);
      try {
        on_event(event, index++);
      } catch (const TraceError& bad_event) {
        // The DOM keeps no offsets: find the event's bytes by scanning the run again.
        throw TraceError(std::string(bad_event.what()) + " (" +
                         describe_span(text, begin, end, index - 1 - first_index, base) + ")");
      }
    }
    return true;
  };

  bool closed = false;
  while (!closed) {
    if (!eof && length - consumed < chunk_bytes) {
      compact(consumed);
      consumed = 0;
      fill(chunk_bytes);
    }
    char* text = data();
    size_t begin = consumed;
    while (begin < length && (is_space(text[begin]) || text[begin] == ',')) ++begin;
    consumed = begin;
    if (begin == length) {
      if (eof) break;  // the array was never closed
      continue;
    }
    if (text[begin] == ']') {
      closed = true;
      break;
    }

    // Fast path: nanomx and most writers put one event per line, so the data up to the last
    // newline is usually a run of whole events. simdjson checks that by parsing it.
    if (fast_path_failures < 2) {
      size_t cut = length;
      if (!eof) {
        const void* newline = memrchr(text + begin, '\n', length - begin);
        cut = newline ? static_cast<size_t>(static_cast<const char*>(newline) - text) : begin;
      }
      size_t end = cut;
      while (end > begin && (is_space(text[end - 1]) || text[end - 1] == ',')) --end;
      if (end > begin) {
        if (parse_run(begin, end)) {
          consumed = cut;
          last_complete_end = base + end;
          continue;
        }
        ++fast_path_failures;  // pretty-printed, or the end of the array is in this chunk
      }
    }

    // Exact path: find the whole elements by scanning strings and brackets.
    Scanner scanner(std::string_view(text, length));
    std::vector<std::pair<size_t, size_t>> elements;
    size_t pos = begin;
    bool array_ends_here = false;
    while (pos < length) {
      if (is_space(text[pos]) || text[pos] == ',') {
        ++pos;
        continue;
      }
      if (text[pos] == ']') {
        array_ends_here = true;
        break;
      }
      if (text[pos] != '{') throw_not_object(path, index + elements.size(), base + pos, text[pos]);
      auto end = scanner.skip_value(pos);
      bool complete =
          end && (*end < length || text[pos] == '{' || text[pos] == '[' || text[pos] == '"');
      if (!complete || (*end >= length && !eof)) break;
      if (*end - pos > g_limits.max_event_bytes) {
        throw TraceError(path + ": event " + std::to_string(index + elements.size()) + " (bytes " +
                         std::to_string(base + pos) + "-" + std::to_string(base + *end) +
                         ") is longer than " + mib(g_limits.max_event_bytes) +
                         " (the limit on one event; raise it with --max-event-mb N)");
      }
      elements.emplace_back(pos, *end);
      pos = *end;
    }
    if (elements.empty()) {
      if (array_ends_here) {
        closed = true;
        break;
      }
      if (eof) break;  // cut inside an element
      if (length - begin > g_limits.max_event_bytes) {
        throw TraceError(path + ": event " + std::to_string(index) + " (from byte " +
                         std::to_string(base + begin) + ") is longer than " +
                         mib(g_limits.max_event_bytes) +
                         " (the limit on one event; raise it with --max-event-mb N)");
      }
      fill(std::max(chunk_bytes, length));  // one element larger than a chunk: read more
      continue;
    }
    size_t run_end = elements.back().second;
    if (!parse_run(elements.front().first, run_end)) {
      // Some element is malformed: find it and say where.
      simdjson::dom::parser single;
      for (size_t i = 0; i < elements.size(); ++i) {
        auto [element_begin, element_end] = elements[i];
        simdjson::dom::element element;
        auto error =
            single.parse(text + element_begin, element_end - element_begin, true).get(element);
        if (error) {
          throw TraceError(path + ": event " + std::to_string(index + i) + " (bytes " +
                           std::to_string(base + element_begin) + "-" +
                           std::to_string(base + element_end) +
                           ") is not valid JSON: " + simdjson::error_message(error));
        }
      }
      throw TraceError(path + ": events near byte " + std::to_string(base + begin) +
                       " are not valid JSON");
    }
    consumed = run_end;
    last_complete_end = base + run_end;
    if (array_ends_here) closed = true;
  }

  info.events = index;
  if (!closed) {
    // Read to the end, so the count of ignored bytes covers the whole tail.
    while (!eof) {
      compact(length);
      fill(chunk_bytes);
    }
    info.truncated = true;
    info.json_bytes = base + length;
    info.ignored_bytes = info.json_bytes - last_complete_end;
  } else {
    info.json_bytes = source.total();
  }
  return info;
}

}  // namespace nanomx::trace
