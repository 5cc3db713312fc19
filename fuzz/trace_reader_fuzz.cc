// Fuzz target: nanomx-trace's reader, both ways a trace is read: whole (parse_trace, what
// `merge` uses, then build_model) and streamed from a file in small chunks (stream_model, what
// `summary` and `view` use), so chunk boundaries fall everywhere. A gzip input (magic 1f 8b)
// goes through the gunzip path of the streamed read. Every rejection must be a TraceError;
// a crash, a sanitizer report, std::bad_alloc or any other exception is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trace_file.h"
#include "trace_model.h"

namespace {

using namespace nanomx::trace;

// One scratch file per process: libFuzzer's -jobs/-fork workers run side by side.
const std::string& scratch_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/nanomx_trace_fuzz." + std::to_string(getpid()) +
           ".json";
  }();
  return path;
}

void check_message(const TraceError& error) {
  if (std::string_view(error.what()).empty()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Limits small enough that a forged size cannot reach libFuzzer's memory limit.
  ReadLimits limits;
  limits.max_decompressed_bytes = 64 << 20;
  limits.max_event_bytes = 1 << 20;
  limits.max_events = 1 << 20;
  set_read_limits(limits);

  ModelOptions everything;
  everything.keep_args = true;
  everything.assign_lanes = true;
  everything.keep_flows = true;
  try {
    auto trace = parse_trace(std::string(reinterpret_cast<const char*>(data), size), "fuzz", size);
    build_model(*trace, everything);
  } catch (const TraceError& error) {
    check_message(error);
  }

  FILE* file = std::fopen(scratch_path().c_str(), "wb");
  if (!file) return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  try {
    StreamInfo info;
    stream_model(scratch_path(), everything, &info, /*chunk_bytes=*/64);
  } catch (const TraceError& error) {
    check_message(error);
  }
  std::remove(scratch_path().c_str());  // no scratch files left behind in TMPDIR
  return 0;
}
