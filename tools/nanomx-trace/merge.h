// `nanomx-trace merge`: one timeline from the traces of several processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nanomx::trace {

enum class ClockAnchor { kMonotonic, kUnix, kNone };

struct MergedFile {
  std::string path;
  std::string label;  // "rank<r>" for MXNet's rank<r>_ files, else the file name without .json
  ClockAnchor anchor = ClockAnchor::kNone;
  int64_t shift_ns = 0;   // added to every ts of this file
  uint64_t pid_base = 0;  // this file's pids p became pid_base + p (see docs/nanomx-trace.md)
  size_t events = 0;
  // A part of a rotated series (otherData "rotation"): the series' name and this part's index;
  // the parts of one series are stitched into one process (one pid_base, one label), in index
  // order, each metadata event written once.
  std::string series;
  int64_t rotation_index = -1;
  size_t dropped_metadata = 0;      // metadata events identical to one an earlier part wrote
  bool series_starts_late = false;  // the first part given is not index 0
};

struct MergeResult {
  std::vector<MergedFile> files;
  ClockAnchor anchor = ClockAnchor::kNone;  // how the clocks were aligned
  size_t events = 0;
};

// Reads every input, stitches the parts of each rotated series into one process, shifts its
// timestamps onto the earliest file's time zero (CLOCK_MONOTONIC when all files come from one boot,
// else Unix time), keeps each file's processes apart, and writes one trace to `output`. Throws
// TraceError on unreadable input.
MergeResult merge_traces(const std::vector<std::string>& inputs, const std::string& output);

std::string anchor_name(ClockAnchor anchor);

}  // namespace nanomx::trace
