// The host-emulated device itself (hostgpu.h): the CUDA semantics the backend's tests rely on it
// to keep. Built only with -DNANOMX_CUDA=EMULATED (the sanitizer builds of scripts/test).
#include <cublas_v2.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernel_emulation.h"

namespace {

struct Stream {
  Stream() { EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess); }
  ~Stream() { EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess); }
  cudaStream_t s = nullptr;
};

// Holds its stream until released: what is queued behind it stays queued.
struct Gate {
  explicit Gate(cudaStream_t s) {
    EXPECT_EQ(nanomx::hostgpu::enqueue(s,
                                       [this] {
                                         while (!open.load()) std::this_thread::yield();
                                       }),
              cudaSuccess);
  }
  std::atomic<bool> open{false};
};

TEST(HostGpu, StreamsRunTheirWorkInOrderAndAsynchronously) {
  Stream stream;
  Gate gate(stream.s);
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(nanomx::hostgpu::enqueue(stream.s, [&order, i] { order.push_back(i); }), cudaSuccess);
  }
  cudaEvent_t done;
  ASSERT_EQ(cudaEventCreateWithFlags(&done, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, stream.s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(done), cudaErrorNotReady);  // the host did not wait
  EXPECT_TRUE(order.empty());
  gate.open = true;
  ASSERT_EQ(cudaEventSynchronize(done), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(done), cudaSuccess);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(cudaEventDestroy(done), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(HostGpu, EventsTimeTheStreamNotTheHost) {
  Stream stream;
  cudaEvent_t a, b, untimed;
  ASSERT_EQ(cudaEventCreateWithFlags(&a, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&b, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);  // never recorded
  (void)cudaGetLastError();
  ASSERT_EQ(cudaEventRecord(a, stream.s), cudaSuccess);
  ASSERT_EQ(nanomx::hostgpu::enqueue(
                stream.s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }),
            cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, stream.s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, stream.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream.s), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 19.f);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, untimed), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read once
  for (cudaEvent_t e : {a, b, untimed}) EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
}

TEST(HostGpu, CopiesArePageableSynchronousPinnedStreamOrderedAndChecked) {
  Stream stream;
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&pinned, 64, cudaHostAllocPortable), cudaSuccess);
  std::vector<char> pageable(64, 'p');
  {
    Gate gate(stream.s);
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.open = true;
    });
    // From pageable memory: waits for the stream, done on return.
    ASSERT_EQ(cudaMemcpyAsync(device, pageable.data(), 64, cudaMemcpyHostToDevice, stream.s),
              cudaSuccess);
    EXPECT_TRUE(gate.open.load());
    opener.join();
  }
  {
    Gate gate(stream.s);
    // To pinned memory: queued behind the gate.
    std::memset(pinned, 0, 64);
    ASSERT_EQ(cudaMemcpyAsync(pinned, device, 64, cudaMemcpyDeviceToHost, stream.s), cudaSuccess);
    EXPECT_EQ(static_cast<char*>(pinned)[0], 0);
    gate.open = true;
    ASSERT_EQ(cudaStreamSynchronize(stream.s), cudaSuccess);
    EXPECT_EQ(static_cast<char*>(pinned)[63], 'p');
  }
  // A copy past the allocation's end, or whose kind contradicts its pointers, is refused.
  EXPECT_EQ(cudaMemcpy(device, pageable.data(), 65, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(pageable.data(), device, 8, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemsetAsync(pageable.data(), 0, 8, stream.s), cudaErrorInvalidValue);
  cudaPointerAttributes attributes;
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, static_cast<char*>(device) + 10), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pinned), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pageable.data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue);  // a second free
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  (void)cudaGetLastError();
}

TEST(HostGpu, DeviceMemoryIsBoundedAndFreedWhenTheStreamGetsThere) {
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  void* too_big = nullptr;
  EXPECT_EQ(cudaMalloc(&too_big, total + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(too_big, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  Stream stream;
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, 1 << 20, stream.s), cudaSuccess);
  size_t free_now = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_now, &total), cudaSuccess);
  EXPECT_EQ(free_now, free_before - (1 << 20));
  ASSERT_EQ(cudaFreeAsync(p, stream.s), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(p, stream.s), cudaErrorInvalidValue);  // already given back
  (void)cudaGetLastError();
  ASSERT_EQ(cudaStreamSynchronize(stream.s), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_now, &total), cudaSuccess);
  EXPECT_EQ(free_now, free_before);
}

__global__ void index_kernel(int* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = i * 10 + static_cast<int>(gridDim.x);
}

__global__ void block_sum_kernel(const int* in, int* out) {
  __shared__ int partial[64];
  partial[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

TEST(HostGpu, KernelsRunEveryThreadWithItsCoordinates) {
  Stream stream;
  int* out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), 100 * sizeof(int)), cudaSuccess);
  using nanomx::hostgpu::Threads;
  nanomx::hostgpu::launch(Threads::kOneAfterAnother, 4, 32, stream.s, index_kernel, out, 100);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> host(100);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), out, 400, cudaMemcpyDeviceToHost, stream.s), cudaSuccess);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(host[i], i * 10 + 4) << i;

  // Threads that meet at __syncthreads() run concurrently; blocks one after another.
  std::vector<int> values(3 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int>(i);
  int* in = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&in), values.size() * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, values.data(), values.size() * sizeof(int), cudaMemcpyHostToDevice),
            cudaSuccess);
  nanomx::hostgpu::launch(Threads::kConcurrent, 3, 64, stream.s, block_sum_kernel,
                          static_cast<const int*>(in), out);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), out, 3 * sizeof(int), cudaMemcpyDeviceToHost, stream.s),
            cudaSuccess);
  for (int b = 0; b < 3; ++b) EXPECT_EQ(host[b], 64 * 64 * b + 63 * 64 / 2) << b;

  // A configuration CUDA refuses runs nothing and is the launch's error.
  nanomx::hostgpu::launch(Threads::kOneAfterAnother, 1, 2048, stream.s, index_kernel, out, 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  nanomx::hostgpu::launch(Threads::kOneAfterAnother, 0, 32, stream.s, index_kernel, out, 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaFree(in), cudaSuccess);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST(HostGpuDeathTest, SyncthreadsInAKernelLaunchedOneThreadAfterAnotherIsNamed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream threads are running
  Stream stream;
  int* out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), 64 * sizeof(int)), cudaSuccess);
  EXPECT_DEATH(
      {
        nanomx::hostgpu::launch(nanomx::hostgpu::Threads::kOneAfterAnother, 1, 64, nullptr,
                                block_sum_kernel, static_cast<const int*>(out), out);
      },
      "launch_synced_kernel");
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

// The emulated cuBLAS, loaded as nanomx loads cuBLAS (NANOMX_HOSTGPU_CUBLAS is its path).
TEST(HostGpuDeathTest, CublasGemmIsColumnMajorAndChecksItsArguments) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream threads are running
  void* lib = dlopen(NANOMX_HOSTGPU_CUBLAS, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto create = reinterpret_cast<decltype(&cublasCreate_v2)>(dlsym(lib, "cublasCreate_v2"));
  auto set_stream =
      reinterpret_cast<decltype(&cublasSetStream_v2)>(dlsym(lib, "cublasSetStream_v2"));
  auto sgemm = reinterpret_cast<decltype(&cublasSgemm_v2)>(dlsym(lib, "cublasSgemm_v2"));
  auto destroy = reinterpret_cast<decltype(&cublasDestroy_v2)>(dlsym(lib, "cublasDestroy_v2"));
  ASSERT_TRUE(create && set_stream && sgemm && destroy);
  Stream stream;
  cublasHandle_t h = nullptr;
  ASSERT_EQ(create(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(set_stream(h, stream.s), CUBLAS_STATUS_SUCCESS);
  // Column-major A (2x3) and B (3x2); C (2x2) = A B.
  const float a[] = {1, 4, 2, 5, 3, 6};     // [[1 2 3] [4 5 6]]
  const float b[] = {7, 9, 11, 8, 10, 12};  // [[7 8] [9 10] [11 12]]
  float *da, *db, *dc;
  for (auto [p, bytes] :
       {std::pair{&da, sizeof a}, std::pair{&db, sizeof b}, std::pair{&dc, 16ul}}) {
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(p), bytes), cudaSuccess);
  }
  ASSERT_EQ(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dc, 0xff, 16, stream.s), cudaSuccess);  // NaNs: beta 0 must not read
  const float one = 1, zero = 0;
  ASSERT_EQ(sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, 2, db, 3, &zero, dc, 2),
            CUBLAS_STATUS_SUCCESS);
  float c[4];
  ASSERT_EQ(cudaMemcpyAsync(c, dc, sizeof c, cudaMemcpyDeviceToHost, stream.s), cudaSuccess);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{58, 139, 64, 154}));
  // C^T = B^T A^T through the transposes.
  ASSERT_EQ(sgemm(h, CUBLAS_OP_T, CUBLAS_OP_T, 2, 2, 3, &one, db, 3, da, 2, &zero, dc, 2),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaMemcpyAsync(c, dc, sizeof c, cudaMemcpyDeviceToHost, stream.s), cudaSuccess);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{58, 64, 139, 154}));
  // A leading dimension shorter than the rows is refused, as cuBLAS does.
  EXPECT_EQ(sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, 1, db, 3, &zero, dc, 2),
            CUBLAS_STATUS_INVALID_VALUE);
  // An operand reaching past its allocation is where a GPU would fault: named, and fatal.
  EXPECT_DEATH(
      (void)sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da + 1, 2, db, 3, &zero, dc, 2),
      "operand A .* outside any device allocation");
  EXPECT_EQ(destroy(h), CUBLAS_STATUS_SUCCESS);
  for (float* p : {da, db, dc}) EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST(HostGpu, DevicesAreCountedAndChecked) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);  // NANOMX_HOSTGPU_DEVICES unset
  EXPECT_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);
  EXPECT_EQ(std::string(cudaGetErrorString(cudaGetLastError())), "invalid device ordinal");
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 0), cudaSuccess);
  EXPECT_EQ(std::string(bus), "0000:01:00.0");
}

}  // namespace
