// The GPUs this process can use (docs/cuda.md): how many, why none, and their memory. A build
// without the CUDA backend has none ("this build has no CUDA support").
#pragma once

#include <cstddef>
#include <string>

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx {

// Whether this build has the CUDA backend.
bool cuda_built();
// How many CUDA devices this process can use: 0 in a build without CUDA, and 0 when the CUDA
// runtime sees no device (no driver, no GPU, CUDA_VISIBLE_DEVICES empty). Asked once.
int num_gpus();
// Why num_gpus() is 0 ("this build has no CUDA support", "no GPU is visible (CUDA: <why>)");
// empty when there are GPUs.
std::string gpu_unavailable_reason();
// Throws "gpu(<id>) requested, but <why>" unless 0 <= dev_id < num_gpus().
void check_gpu_id(int dev_id);
struct GpuMemoryInfo {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};
// The free and total memory of gpu(dev_id) (MXNet's gpu_memory_info); throws as check_gpu_id.
GpuMemoryInfo gpu_memory_info(int dev_id);

}  // namespace nanomx

#pragma GCC visibility pop
