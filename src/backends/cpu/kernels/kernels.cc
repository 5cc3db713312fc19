// Registers every CPU kernel (the CPU backend's kernel provider: called once by the operator
// registry, after the definitions).
#include "backends/cpu/kernels/kernels.h"

#include "ops/registry.h"

namespace nanomx::ops {

void register_cpu_kernels() {
  cpu::register_elemwise_kernels();
  cpu::register_layout_kernels();
  cpu::register_reduce_kernels();
  cpu::register_linalg_kernels();
  cpu::register_init_kernels();
  cpu::register_index_kernels();
  cpu::register_random_kernels();
  cpu::register_math_kernels();
  cpu::register_nn_kernels();
  cpu::register_convolution_kernels();
  cpu::register_pooling_kernels();
  cpu::register_normalization_kernels();
  cpu::register_nn_layer_kernels();
  cpu::register_optimizer_kernels();
  cpu::register_backward_kernels();
}

}  // namespace nanomx::ops
