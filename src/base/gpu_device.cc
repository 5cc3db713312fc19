// How many GPUs this process can use, and why none when there are none (docs/cuda.md). A build
// without the CUDA backend answers 0, "this build has no CUDA support"; a build with it asks the
// CUDA runtime once (a machine without a driver or a device answers 0 with CUDA's reason).
#include <algorithm>
#include <mutex>
#include <string>

#include "nanomx/context.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "profiler/hooks.h"

#ifdef NANOMX_HAVE_CUDA
#include "base/cuda_util.h"
#endif

namespace nanomx {

namespace {

struct GpuQuery {
  int count = 0;
  std::string reason;  // why count is 0
};

const GpuQuery& gpu_query() {
  static const GpuQuery query = [] {
    GpuQuery q;
#ifdef NANOMX_HAVE_CUDA
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
#else
    q.reason = "this build has no CUDA support";
#endif
    return q;
  }();
  return query;
}

}  // namespace

#ifdef NANOMX_HAVE_CUDA
namespace cuda {
namespace {
thread_local cudaStream_t tls_stream = nullptr;
thread_local int tls_device = -1;
}  // namespace
cudaStream_t current_stream() { return tls_stream; }
void set_current_stream(cudaStream_t stream) { tls_stream = stream; }
int current_device() { return tls_device; }
void set_current_device(int dev_id) { tls_device = dev_id; }
}  // namespace cuda
#endif

bool cuda_built() {
#ifdef NANOMX_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int num_gpus() { return gpu_query().count; }

std::string gpu_unavailable_reason() { return gpu_query().count > 0 ? "" : gpu_query().reason; }

void check_gpu_id(int dev_id) {
  NANOMX_CHECK(dev_id >= 0) << "negative device id " << dev_id << " for gpu(" << dev_id << ")";
  const int n = num_gpus();
  NANOMX_CHECK(n > 0) << "gpu(" << dev_id << ") requested, but " << gpu_unavailable_reason();
  NANOMX_CHECK(dev_id < n) << "gpu(" << dev_id << ") requested, but only " << n << " GPU"
                           << (n == 1 ? " is" : "s are") << " visible (gpu(0) .. gpu(" << n - 1
                           << "))";
}

GpuMemoryInfo gpu_memory_info(int dev_id) {
  check_gpu_id(dev_id);
  GpuMemoryInfo info;
#ifdef NANOMX_HAVE_CUDA
  int previous = 0;
  NANOMX_CUDA_CALL(cudaGetDevice(&previous));
  NANOMX_CUDA_CALL(cudaSetDevice(dev_id));
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  NANOMX_CUDA_CALL(cudaSetDevice(previous));
  NANOMX_CUDA_CALL(status);
  info.free_bytes = free_bytes;
  info.total_bytes = total_bytes;
#endif
  return info;
}

}  // namespace nanomx
