// The host-emulated GPU (docs/cuda.md, "Without a GPU: the host-emulated device"): the few
// entry points of the CUDA runtime that nanomx calls, implemented on the host, so that a build
// configured with -DNANOMX_CUDA=EMULATED runs the whole CUDA backend -- allocator, GPU workers,
// stream completion, device timing, the kernels (compiled as C++) and the cuBLAS calls -- on a
// machine without a GPU, under the sanitizers. It checks the backend's logic, not the GPU:
// a kernel's speed, the device's memory model and nvcc's code generation stay unchecked until
// scripts/gpu-check runs on a real one.
//
// What the emulation keeps of CUDA's semantics, because the backend's correctness depends on it:
//   - every created stream is a thread that runs its work in order, asynchronously to the host
//     (a missing synchronisation shows as a wrong result or a sanitizer report);
//   - copies from or to pageable host memory are synchronous, as CUDA's are; with pinned memory
//     or between device buffers they are stream-ordered;
//   - events complete when their stream reaches them and carry the time it did;
//   - cudaFreeAsync frees when the stream reaches it; device memory is bounded (cudaMalloc fails
//     with cudaErrorMemoryAllocation past NANOMX_HOSTGPU_MEMORY_MB, default 4096 per device);
//   - a kernel launch checks its configuration as CUDA does (cudaErrorInvalidConfiguration),
//     copies its arguments and runs every (block, thread) with blockIdx/threadIdx set.
// NANOMX_HOSTGPU_DEVICES sets how many devices there are (default 1; 0 = none, as a machine
// without a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace nanomx::hostgpu {

// Runs `work` on `stream` after everything enqueued before it: on the stream's thread for a
// created stream, at once on the calling thread for the default streams (legacy and
// per-thread). Returns cudaErrorInvalidResourceHandle for a destroyed or unknown stream.
cudaError_t enqueue(cudaStream_t stream, std::function<void()> work);

// Records `status` as the calling thread's last error (cudaGetLastError), as a failed launch does.
void set_last_error(cudaError_t status);

// Whether [ptr, ptr + bytes) lies inside one live device allocation.
bool is_device_range(const void* ptr, size_t bytes);

}  // namespace nanomx::hostgpu
