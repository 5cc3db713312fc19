#pragma once

namespace nanomx::cuda {
// Makes NVTX the profiler's external ranges.
void register_nvtx_ranges();
}  // namespace nanomx::cuda
