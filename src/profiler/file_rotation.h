// The names of a trace file series (docs/profiler.md#rotating-files). A series is named after
// its base path: file 0 is the base itself and file N > 0 is `<stem>.N.json`, so the first file
// of a run that never rotates keeps exactly the configured name. Profiler::rotate (in
// file_rotation.cc) moves to the next file of the series.
#pragma once

#include <cstdint>
#include <string>

namespace nanomx::profiler {

// `path` without a trailing ".json" (unchanged when it has none, or is nothing but ".json").
std::string stem_of(const std::string& path);

// File `index` of the series named after `base`.
std::string series_path(const std::string& base, uint64_t index);

// The part of `path` after its last '/': otherData.rotation names the files of a series without
// their directory.
std::string base_name(const std::string& path);

}  // namespace nanomx::profiler
