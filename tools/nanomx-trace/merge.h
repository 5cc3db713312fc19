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
};

struct MergeResult {
  std::vector<MergedFile> files;
  ClockAnchor anchor = ClockAnchor::kNone;  // how the clocks were aligned
  size_t events = 0;
};

// Reads every input, shifts its timestamps onto the earliest file's time zero (CLOCK_MONOTONIC
// when all files come from one boot, else Unix time), keeps each file's processes apart, and
// writes one trace to `output`. Throws TraceError on unreadable input.
MergeResult merge_traces(const std::vector<std::string>& inputs, const std::string& output);

std::string anchor_name(ClockAnchor anchor);

}  // namespace nanomx::trace
