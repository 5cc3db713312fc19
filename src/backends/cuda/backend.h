#pragma once

namespace nanomx::cuda {
// Registers the CUDA backend (src/backends/backends.cc calls it at load).
void register_cuda_backend();
}  // namespace nanomx::cuda
