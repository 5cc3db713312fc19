// `nanomx-trace convert`: .json <-> .json.gz, streaming in fixed-size chunks, so a file larger
// than memory converts too.
#pragma once

#include <cstdint>
#include <string>

namespace nanomx::trace {

struct ConvertResult {
  bool compressed = false;  // true: json -> gz; false: gz -> json
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

// The direction follows the output name: OUT ending in ".gz" compresses a plain input; any other
// OUT decompresses a gzip input. `progress` draws a bar on stderr (the CLI passes isatty(2)).
// Writes OUT.tmp and renames it, so a failure never leaves a partial OUT. Throws TraceError.
ConvertResult convert_file(const std::string& input, const std::string& output, bool progress,
                           int level = 6);

}  // namespace nanomx::trace
