// CUDA helpers for the layers that hold the CUDA backend's pieces (docs/cuda.md): the device
// query lives here in base, the allocator in storage, the GPU workers in engine and the kernels
// in ops. Only compiled in a build with the backend (NANOMX_HAVE_CUDA).
#pragma once

#ifdef NANOMX_HAVE_CUDA

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
// (engine), every other thread has none (nullptr) and must not launch work.
cudaStream_t current_stream();
void set_current_stream(cudaStream_t stream);
// The device of the calling thread's GPU worker (-1 on other threads).
int current_device();
void set_current_device(int dev_id);

}  // namespace nanomx::cuda

#endif  // NANOMX_HAVE_CUDA
