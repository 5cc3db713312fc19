// CUDA helpers shared by the CUDA backend's pieces (docs/cuda.md): the call check, and the
// stream of the calling GPU worker.
#pragma once

#include <cuda_runtime_api.h>

#include "nanomx/error.h"

// Throws nanomx's error for a failed CUDA runtime call, naming the call and CUDA's message.
#define NANOMX_CUDA_CALL(call)                                                     \
  do {                                                                             \
    const cudaError_t nanomx_cuda_status_ = (call);                                \
    NANOMX_CHECK(nanomx_cuda_status_ == cudaSuccess)                               \
        << #call << " failed: " << cudaGetErrorString(nanomx_cuda_status_) << " (" \
        << cudaGetErrorName(nanomx_cuda_status_) << ")";                           \
  } while (0)

namespace nanomx::cuda {

// The stream the operators of the calling thread launch on: a GPU worker sets its own stream
// (gpu_workers.cc), every other thread has none (nullptr) and must not launch work.
cudaStream_t current_stream();
void set_current_stream(cudaStream_t stream);

}  // namespace nanomx::cuda
