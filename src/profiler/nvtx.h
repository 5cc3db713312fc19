// NVTX ranges (docs/cuda.md): operators and user Task/Frame/Event show up by name in Nsight
// Systems when profiling is on. Header-only NVTX3 from the CUDA toolkit; without the CUDA
// backend these do nothing.
#pragma once

namespace nanomx::profiler::nvtx {

// A range on the calling thread's NVTX stack.
void push(const char* name);
void pop();

}  // namespace nanomx::profiler::nvtx
