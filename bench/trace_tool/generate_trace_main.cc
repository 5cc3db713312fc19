// Writes the benchmark's synthetic nanomx trace to a file:
//   trace_bench_generate OUT.json EVENTS [--issue17 [--slower OP FACTOR]]
// --issue17 adds dependency flows and a ProfilerStep#N span every 1000 operators (the
// critical-path and diff benchmarks); --slower makes OP's runs FACTOR times as long.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "synthetic_trace.h"

int main(int argc, char** argv) {
  nanomx::trace::bench::SyntheticOptions options;
  bool usage = argc < 3;
  for (int i = 3; i < argc && !usage; ++i) {
    std::string arg = argv[i];
    if (arg == "--issue17") {
      options.dependency_flows = true;
      options.ops_per_step = 1000;
    } else if (arg == "--slower" && i + 2 < argc) {
      options.slower_op = argv[i + 1];
      options.slowdown = std::strtod(argv[i + 2], nullptr);
      i += 2;
    } else {
      usage = true;
    }
  }
  if (usage) {
    std::fprintf(stderr, "usage: %s OUT.json EVENTS [--issue17 [--slower OP FACTOR]]\n", argv[0]);
    return 2;
  }
  std::string text =
      nanomx::trace::bench::synthetic_nanomx_trace(std::strtoull(argv[2], nullptr, 10), options);
  FILE* file = std::fopen(argv[1], "wb");
  if (!file || std::fwrite(text.data(), 1, text.size(), file) != text.size() || std::fclose(file)) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
