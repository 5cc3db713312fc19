// Loading a Chrome-trace file: plain or gzip-compressed JSON, in the object form
// ({"traceEvents": [...], ...}) or the array form ([...]), complete or cut short by a crash.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace nanomx::trace {

// Every error the tool reports: the message names the file, where, and what was expected.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the reader accepts, so that a hostile or broken file ends in a clear TraceError rather
// than exhausting memory (docs/nanomx-trace.md, "Limits"). Process-wide: the command line sets
// them once (--max-decompressed-mb, --max-event-mb, --max-events) before reading.
struct ReadLimits {
  // Decompressed bytes of a gzip file. 0 means the default rule: kDecompressedRatio times the
  // compressed size, and never less than kDecompressedFloor. UINT64_MAX lifts the cap.
  uint64_t max_decompressed_bytes = 0;
  // One element of the events array (and so any name or string in it), as JSON text. The
  // streamed reader holds one whole event in memory whatever its size.
  uint64_t max_event_bytes = uint64_t{16} << 20;
  // Elements of the events array.
  uint64_t max_events = 500'000'000;
  // "name" and "cat" of one event.
  uint64_t max_name_bytes = uint64_t{1} << 20;
};
constexpr uint64_t kDecompressedRatio = 64;
constexpr uint64_t kDecompressedFloor = uint64_t{256} << 20;

void set_read_limits(const ReadLimits& limits);
const ReadLimits& read_limits();
// The decompressed-size cap for a gzip file of `file_bytes` under the current limits.
uint64_t decompressed_cap(uint64_t file_bytes);

// A parsed trace. The DOM (and every string_view taken from it) lives as long as this object.
struct LoadedTrace {
  std::string path;
  size_t file_bytes = 0;     // size on disk
  size_t json_bytes = 0;     // size of the JSON text (after gunzip)
  size_t ignored_bytes = 0;  // tail of a truncated file that was not read
  bool truncated = false;    // the events array was never closed
  bool object_form = false;  // {"traceEvents": ...} rather than a bare array
  simdjson::dom::parser parser;
  simdjson::dom::array events;
  simdjson::dom::object root;  // valid only when object_form
};

// Reads and parses `path`. Throws TraceError for a missing, empty, non-JSON or malformed file.
std::unique_ptr<LoadedTrace> load_trace(const std::string& path);

// Parses JSON text already in memory (`label` names it in errors). Used by load_trace and tests.
std::unique_ptr<LoadedTrace> parse_trace(std::string text, const std::string& label,
                                         size_t file_bytes);

// What a streamed read learned about the file.
struct StreamInfo {
  std::string path;
  size_t file_bytes = 0;     // size on disk
  size_t json_bytes = 0;     // JSON bytes read (after gunzip)
  size_t ignored_bytes = 0;  // tail of a truncated file that was not read
  size_t events = 0;         // elements of the events array
  bool truncated = false;
  bool object_form = false;
};

using EventCallback = std::function<void(simdjson::dom::element event, size_t index)>;

// Reads `path` (plain or gzip) in chunks of about `chunk_bytes` and calls `on_event` for each
// element of the events array, in order. Memory stays at a few chunks whatever the file size.
// Each chunk of whole events is parsed by simdjson as one array; an element is valid only during
// its callback. Errors are those of load_trace, with offsets counted in the JSON text.
StreamInfo stream_events(const std::string& path, const EventCallback& on_event,
                         size_t chunk_bytes = 1 << 20);

// True when the first bytes are the gzip magic number.
bool is_gzip_file(const std::string& path);

}  // namespace nanomx::trace
