// `nanomx-trace view`: one self-contained HTML page (no network, nothing loaded from outside)
// with a canvas timeline of the trace and its aggregate table; optionally the critical path, two
// traces with their diff, and the GPU memory per profiler scope.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanomx::trace {

struct ViewResult {
  size_t events = 0;  // elements of the trace's events array
  size_t rows = 0;    // timeline rows: threads that hold events, plus one per counter series
  size_t slices = 0;
  size_t page_bytes = 0;
  size_t input_bytes = 0;
  size_t truncated_bytes = 0;  // ignored tail of a truncated input
  size_t unclosed_begins = 0;
  size_t unmatched_ends = 0;
  size_t memory_scopes = 0;  // rows of the memory panel (scopes), when there is one
};

// Compression level of the embedded data (zlib 1..9). Level 6 makes the page only ~8% smaller
// than level 1 for twice the time of `view` on a 1 M-event trace.
ViewResult write_view(const std::string& input, const std::string& output, int level = 1);

struct ViewOptions {
  int level = 1;
  // Highlight the critical path (critical_path.h) of the trace or of one step; a trace without
  // an operation, or without that step, is an error.
  bool critical_path = false;
  std::optional<int64_t> step;
  // GPU memory profiles (memory_profile.h) for the "Memory per scope" panel, summed as
  // `nanomx-trace memory` sums them; none: no panel. Read before the trace, so that a bad file
  // fails fast.
  std::vector<std::string> memory_profiles;
};
ViewResult write_view(const std::string& input, const std::string& output,
                      const ViewOptions& options);

// Two traces in one page: BASE's processes ("... [BASE]") and NEW's ("... [NEW]") on one
// timeline, each run starting at time 0, with the diff table (`nanomx-trace diff`, by name) and
// NEW's operators table.
ViewResult write_diff_view(const std::string& base, const std::string& next,
                           const std::string& output, int level = 1);
// The same with options: their level and memory profiles (a critical path takes one trace).
ViewResult write_diff_view(const std::string& base, const std::string& next,
                           const std::string& output, const ViewOptions& options);

// The page's HTML around the data, built into the binary from viewer/ at build time.
extern const char* const kViewerHead;
extern const char* const kViewerTail;

}  // namespace nanomx::trace
