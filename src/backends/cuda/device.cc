// The CUDA devices this process can use (asked once: the first question loads the driver), their
// memory, and copies to and from them.
#include "backends/cuda/device.h"

#include <algorithm>
#include <string>

#include "backends/cuda/cuda_call.h"
#include "profiler/hooks.h"

namespace nanomx::cuda {
namespace {

struct DeviceQuery {
  int count = 0;
  std::string reason;  // why count is 0
};

const DeviceQuery& device_query() {
  static const DeviceQuery query = [] {
    DeviceQuery q;
    int n = 0;
    const cudaError_t status = cudaGetDeviceCount(&n);
    if (status != cudaSuccess) {
      q.reason = std::string("no GPU is visible (CUDA: ") + cudaGetErrorString(status) + ")";
      (void)cudaGetLastError();  // the failed query must not surface in a later call
    } else if (n == 0) {
      q.reason = "no GPU is visible (CUDA: no CUDA-capable device is detected)";
    } else {
      q.count = n;
      // The profiler's gpu/i rows exist from here on (memory counters, device timing rows).
      profiler::set_gpu_slot_count(std::min(n, profiler::kMaxGpuRows));
    }
    return q;
  }();
  return query;
}

thread_local cudaStream_t tls_stream = nullptr;

}  // namespace

cudaStream_t current_stream() { return tls_stream; }
void set_current_stream(cudaStream_t stream) { tls_stream = stream; }

int device_count() { return device_query().count; }

std::string unavailable_reason() { return device_query().reason; }

GpuMemoryInfo memory_info(int dev_id) {
  int previous = 0;
  NANOMX_CUDA_CALL(cudaGetDevice(&previous));
  NANOMX_CUDA_CALL(cudaSetDevice(dev_id));
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  NANOMX_CUDA_CALL(cudaSetDevice(previous));
  NANOMX_CUDA_CALL(status);
  return GpuMemoryInfo{free_bytes, total_bytes};
}

void copy(void* dst, Context, const void* src, Context, size_t bytes) {
  const cudaMemcpyKind kind = cudaMemcpyDefault;  // unified addressing tells the directions
  if (cudaStream_t stream = current_stream()) {
    NANOMX_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, kind, stream));
  } else {
    NANOMX_CUDA_CALL(cudaMemcpy(dst, src, bytes, kind));
  }
}

}  // namespace nanomx::cuda
