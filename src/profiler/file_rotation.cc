// Rotating files (docs/profiler.md#rotating-files): a trace that reaches max_file_bytes is
// finished and recording goes on in the next file of its series, keeping the last max_files.
#include "profiler/file_rotation.h"

#include <unistd.h>

#include <string>
#include <string_view>

#include "profiler/profiler_state.h"

namespace nanomx::profiler {

std::string stem_of(const std::string& path) {
  constexpr std::string_view kJson = ".json";
  if (path.size() > kJson.size() &&
      path.compare(path.size() - kJson.size(), kJson.size(), kJson.data(), kJson.size()) == 0)
    return path.substr(0, path.size() - kJson.size());
  return path;
}

std::string series_path(const std::string& base, uint64_t index) {
  return index == 0 ? base : stem_of(base) + "." + std::to_string(index) + ".json";
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Called by the collector between two records (drain_all), so that no record is lost or
// written twice at the boundary: the old file's last commit comes before the new file starts.
void Profiler::rotate() {
  writer.write_held_finishes(clock);
  writer.commit(other_data());
  writer.close();
  start_file_drop_count();
  ++file_index;
  if (config.max_files > 0 && file_index >= config.max_files)
    ::unlink(series_path(file_base, file_index - config.max_files).c_str());
  writer.forget_finished_file();
  // The same ts = 0 as the file before: a series is stitched by concatenating its events.
  const uint64_t zero_ns = writer.zero_ns();
  writer.start_file(current_path(), config.duration_events, config.fsync, zero_ns,
                    writer.unit_ns());
}

}  // namespace nanomx::profiler
