// Writes the benchmark's synthetic nanomx trace to a file: trace_bench_generate OUT.json EVENTS
#include <cstdio>
#include <cstdlib>
#include <string>

#include "synthetic_trace.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s OUT.json EVENTS\n", argv[0]);
    return 2;
  }
  std::string text =
      nanomx::trace::bench::synthetic_nanomx_trace(std::strtoull(argv[2], nullptr, 10));
  FILE* file = std::fopen(argv[1], "wb");
  if (!file || std::fwrite(text.data(), 1, text.size(), file) != text.size() || std::fclose(file)) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
