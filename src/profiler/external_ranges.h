// Ranges mirrored to an external tool while profiling: a backend registers its tool's range
// calls (the CUDA backend: NVTX, so that Nsight Systems shows nanomx's names), and profiled
// operators and user Task/Frame/Event push a range named after them. Without one, nothing.
#pragma once

namespace nanomx::profiler {

struct ExternalRanges {
  void (*push)(const char* name) = nullptr;
  void (*pop)() = nullptr;
};

// At load, by a backend (src/backends/); a second registration replaces the first.
void set_external_ranges(ExternalRanges ranges);
// Whether a tool is registered (the callers skip the name's work otherwise).
bool external_ranges_on();
void external_range_push(const char* name);
void external_range_pop();

}  // namespace nanomx::profiler
