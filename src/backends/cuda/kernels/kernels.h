// The operators' CUDA kernels: every one with its operator's name.
#pragma once

#include <functional>
#include <string_view>

#include "ops/kernel.h"

namespace nanomx::ops {

// Every CUDA kernel with its operator's name, to `add` (register_cuda_kernels registers them;
// a test checks, without a GPU, that every name is an operator and none comes twice).
void for_each_cuda_kernel(const std::function<void(std::string_view, Kernel)>& add);
// The kernel provider of the CUDA backend: registers them when a GPU is visible (without one,
// gpu has no kernels, as in a build without CUDA).
void register_cuda_kernels();

}  // namespace nanomx::ops
