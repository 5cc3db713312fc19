// What a .cu file needs from nvcc to compile as C++ and run on the host-emulated device
// (hostgpu.h): blockIdx/threadIdx/blockDim/gridDim, __shared__, __syncthreads(), the atomics the
// kernels use, and hostgpu::launch, which checks a launch's configuration as CUDA does, copies
// the arguments and runs every (block, thread) of the grid in order on the launch's stream.
// Included by src/backends/cuda/kernels/device.cuh after the CUDA headers, only in an EMULATED
// build.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "hostgpu.h"

// The thread's coordinates, as nvcc's built-in variables.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

// A block's shared memory is one object for all its threads. Blocks run one after another and
// concurrent launches of kernels that synchronise are serialised (launch), so `static` is enough.
#undef __shared__
#define __shared__ static

// Device math that the host's libm lacks or puts in std only.
using std::isfinite;
inline double cospi(double x) { return std::cos(M_PI * x); }
inline double sinpi(double x) { return std::sin(M_PI * x); }
inline float cospif(float x) { return std::cos(static_cast<float>(M_PI) * x); }
inline float sinpif(float x) { return std::sin(static_cast<float>(M_PI) * x); }

namespace nanomx::hostgpu {

// How a launch runs a block's threads: one after another (fast; for kernels whose threads never
// wait for each other) or each on its own host thread, meeting at __syncthreads().
enum class Threads { kOneAfterAnother, kConcurrent };

inline thread_local std::barrier<>* t_block_barrier = nullptr;

inline std::mutex& shared_memory_mutex() {
  static std::mutex m;
  return m;
}

// The host threads that run a concurrent launch's block threads, kept between launches (creating
// 256 threads per launch made the reductions' tests several times slower under ThreadSanitizer).
// One launch at a time: callers hold shared_memory_mutex().
class BlockThreadPool {
 public:
  // Runs work(t) for every t in [0, n) at once, each on its own pool thread; returns when all
  // have returned.
  void run(unsigned n, const std::function<void(unsigned)>& work) {
    std::unique_lock lock(m_);
    while (threads_.size() < n) {
      const auto t = static_cast<unsigned>(threads_.size());
      threads_.emplace_back([this, t] { serve(t); });
    }
    work_ = &work;
    active_ = n;
    remaining_ = n;
    ++generation_;
    work_cv_.notify_all();
    done_cv_.wait(lock, [&] { return remaining_ == 0; });
    work_ = nullptr;
  }

 private:
  void serve(unsigned t) {
    uint64_t seen = 0;
    std::unique_lock lock(m_);
    for (;;) {
      work_cv_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (t >= active_) continue;
      const std::function<void(unsigned)>* work = work_;
      lock.unlock();
      (*work)(t);
      lock.lock();
      if (--remaining_ == 0) done_cv_.notify_one();
    }
  }

  std::mutex m_;
  std::condition_variable work_cv_, done_cv_;
  std::vector<std::thread> threads_;  // never joined: the pool lives as long as the process
  const std::function<void(unsigned)>* work_ = nullptr;
  unsigned active_ = 0, remaining_ = 0;
  uint64_t generation_ = 0;
};

inline BlockThreadPool& block_thread_pool() {
  static BlockThreadPool* pool = new BlockThreadPool;
  return *pool;
}

// Runs body() once per (block, thread) of the grid.
template <typename Body>
void run_grid(Threads mode, dim3 grid, dim3 block, const Body& body) {
  const unsigned per_block = block.x * block.y * block.z;
  auto each_block = [&](auto&& f) {
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) f(uint3{x, y, z});
  };
  auto set_thread = [&](unsigned t) {
    threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    blockDim = block;
    gridDim = grid;
  };
  if (mode == Threads::kOneAfterAnother) {
    each_block([&](uint3 b) {
      blockIdx = b;
      for (unsigned t = 0; t < per_block; ++t) {
        set_thread(t);
        body();
      }
    });
    return;
  }
  std::lock_guard lock(shared_memory_mutex());
  std::barrier<> barrier(per_block);
  block_thread_pool().run(per_block, [&](unsigned t) {
    set_thread(t);
    t_block_barrier = &barrier;
    each_block([&](uint3 b) {
      blockIdx = b;
      body();
      barrier.arrive_and_wait();  // the block ends for all its threads before the next starts
    });
    t_block_barrier = nullptr;
  });
}

// kernel<<<grid, block, 0, stream>>>(args...), on the host: the configuration checked as CUDA
// does (a bad one sets cudaErrorInvalidConfiguration and runs nothing), the arguments converted
// to the kernel's parameter types and copied at the launch, the grid run when the stream gets to
// it.
template <typename... P, typename... A>
void launch(Threads mode, dim3 grid, dim3 block, cudaStream_t stream, void (*kernel)(P...),
            A... args) {
  static_assert(sizeof...(P) == sizeof...(A), "a kernel launch passes every parameter");
  const uint64_t per_block = uint64_t(block.x) * block.y * block.z;
  if (per_block == 0 || per_block > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    set_last_error(cudaErrorInvalidConfiguration);
    return;
  }
  std::tuple<std::decay_t<P>...> params(static_cast<std::decay_t<P>>(args)...);
  (void)enqueue(stream, [mode, grid, block, kernel, params] {
    run_grid(mode, grid, block, [&] { std::apply(kernel, params); });
  });
}

}  // namespace nanomx::hostgpu

inline void __syncthreads() {
  if (nanomx::hostgpu::t_block_barrier == nullptr) {
    std::fprintf(stderr,
                 "hostgpu: a kernel called __syncthreads() but was launched with its threads one "
                 "after another; launch it with launch_synced_kernel "
                 "(src/backends/cuda/kernels/device.cuh)\n");
    std::abort();
  }
  nanomx::hostgpu::t_block_barrier->arrive_and_wait();
}

template <typename T>
T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;  // the old value either way
}
