// The operators' CUDA kernels (the float dtypes; the integer ones where docs/cuda.md says):
// argument checks and shapes in one file per operator family (gpu_kernel.h what they share), the
// device code in the .cu files, matrix products through cuBLAS (dot.cc).
#include "backends/cuda/kernels/kernels.h"

#include <utility>

#include "backends/cuda/kernels/gpu_kernel.h"
#include "nanomx/gpu.h"
#include "ops/kernel.h"

namespace nanomx::ops {

void for_each_cuda_kernel(const std::function<void(std::string_view, Kernel)>& add) {
  cuda_kernels::add_elemwise_kernels(add);
  cuda_kernels::add_backward_kernels(add);
  cuda_kernels::add_reduce_kernels(add);
  cuda_kernels::add_layout_kernels(add);
  cuda_kernels::add_index_kernels(add);
  cuda_kernels::add_init_kernels(add);
  cuda_kernels::add_random_kernels(add);
  cuda_kernels::add_nn_kernels(add);
  cuda_kernels::add_optimizer_kernels(add);
  cuda_kernels::add_linalg_kernels(add);
}

void register_cuda_kernels() {
  if (num_gpus() == 0) return;  // without a GPU, gpu has no kernels (as a build without CUDA)
  for_each_cuda_kernel([](std::string_view name, Kernel kernel) {
    register_kernel(name, DeviceType::kGPU, std::move(kernel));
  });
}

}  // namespace nanomx::ops
